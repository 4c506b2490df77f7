"""approx-tune when the surroundings fail (a second run on the same study, an output
folder that cannot be made, standard output closed, a damaged database): one line
saying what and where, never `internal error:`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from autotuner.cli import main
from autotuner.study import one_run_per_sqlite_study

ROOT = Path(__file__).resolve().parents[1]
MLIR = str(ROOT / "examples/mlir/adaptive_sum.mlir")


def run_argv(out) -> list[str]:
    return ["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--trials", "2",
            "--mode", "static", "--repeats", "1", "--no-progress", "--out", str(out)]


def one_line_error(capsys, argv) -> str:
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    assert code == 1 and "internal error" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    out = tmp_path_factory.mktemp("env")
    assert main(run_argv(out)) == 0
    return out


def test_a_second_run_on_a_study_in_use_is_told_so(capsys, tuned):
    db = tuned / "study.db"
    with one_run_per_sqlite_study(f"sqlite:///{db}", "adaptive_sum.mlir:mean"):  # what another run holds
        err = one_line_error(capsys, run_argv(tuned))
    assert err == (f"{db}: error: study 'adaptive_sum.mlir:mean' is in use by another `approx-tune run`; wait for "
                   "it to end, or give another --out (--jobs N runs several workers on one study)")
    assert main(run_argv(tuned)) == 0  # free again


def test_an_output_folder_that_is_a_file(capsys, tmp_path):
    (tmp_path / "f").write_text("")
    assert one_line_error(capsys, run_argv(tmp_path / "f")) == f"{tmp_path / 'f'}: error: the output folder is a file"
    err = one_line_error(capsys, run_argv(tmp_path / "f" / "sub"))
    assert err == f"{tmp_path / 'f' / 'sub'}: error: cannot create the output folder: Not a directory"


def test_standard_output_closed(capsys, monkeypatch, tuned):
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", Closed())
    code = main(["report", "--out", str(tuned)])
    err = capsys.readouterr().err
    assert code == 1 and err == "error: cannot write the output: standard output is closed\n"


def test_a_damaged_study_database(capsys, tuned, tmp_path):
    import shutil

    out = tmp_path / "damaged"
    shutil.copytree(tuned, out)
    for extra in out.glob("study.db-*"):
        extra.unlink()
    data = bytearray((out / "study.db").read_bytes())
    data[:100] = b"\xde\xad" * 50  # the header page
    (out / "study.db").write_bytes(bytes(data))
    err = one_line_error(capsys, run_argv(out))
    assert err.startswith(f"sqlite:///{out / 'study.db'}: error: cannot open the study storage: ") and \
        "not a database" in err, err
