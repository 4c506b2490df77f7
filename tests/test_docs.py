"""The pages say what the code does: every command of the README runs, and every flag
that the reference pages name exists in the CLI's --help, so renaming a flag or
breaking a tour step fails here.

Convention: each line of a ```sh block in README.md is one command; the blocks run
in order, each in a fresh folder (with `examples/` linked in) and the project's
`.venv/bin` first on PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FLAG_PAGES = [ROOT / "docs" / "approx-opt.md", ROOT / "docs" / "autotuner.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

# README commands not run here, each with the reason: keep this short.
NOT_RUN = {
    "make demo": "tunes a system end to end: about 5 minutes",
    "make test": "runs this test suite, this file included",
    "python -m frontends.components.llm.serve --model smol=smollm2 --port 8000 &":
        "a model server left running; tests/test_own_pipeline.py starts one and runs the program",
    "approx-tune profile examples.own_pipeline:pipeline --inputs examples.own_pipeline:make_inputs -n 4":
        "needs the model server above; tests/test_own_pipeline.py runs it",
    "approx-tune run examples.own_pipeline:pipeline --inputs examples.own_pipeline:make_inputs --metric containment "
    "--mode static --trials 6 --repeats 1 --eval-ratio 2 --budget 0.2 --out reports/own":
        "needs the model server above (about 30 s with it)",
}


def fenced_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, body, line of the opening fence) of each fenced block."""
    return [(m[1], m[2], text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def sh_blocks() -> list[tuple[int, list[str]]]:
    """(line, commands) of each ```sh block of the README."""
    return [(line, [c.strip() for c in body.splitlines() if c.strip()])
            for lang, body, line in fenced_blocks(README.read_text()) if lang == "sh"]


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "MPLBACKEND": "Agg", "COLUMNS": "200"}


def test_readme_blocks_are_labelled():
    """A command in an unlabelled or differently labelled block would escape the test below."""
    langs = {lang for lang, _, _ in fenced_blocks(README.read_text())}
    assert langs <= {"sh", "python", "mlir"}, f"README.md: fenced blocks must be sh, python or mlir, not {langs}"
    commands = [c for _, block in sh_blocks() for c in block]
    assert len(commands) >= 6 and set(NOT_RUN) <= set(commands), "NOT_RUN names a command the README lacks"


@pytest.mark.slow
@pytest.mark.parametrize("line, commands", [pytest.param(line, cmds, id=f"README.md:{line}") for line, cmds
                                            in sh_blocks() if set(cmds) - set(NOT_RUN)])
def test_readme_commands_run(line, commands, tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for command in commands:
        if command in NOT_RUN:
            continue
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env(), capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"README.md:{line}: `{command}` exited {done.returncode}:\n{done.stderr[-2000:]}"


def test_links_resolve():
    """Each relative link of the README and the docs pages names a file that exists."""
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    broken = [f"{page.relative_to(ROOT)}: {target}" for page in pages
              for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text())
              if not (page.parent / target).exists()]
    assert len(pages) >= 9 and not broken, f"broken links: {broken}"


def help_texts() -> str:
    """approx-opt --help, approx-tune --help and the --help of each approx-tune command."""
    def run(*argv: str) -> str:
        done = subprocess.run(argv, env=env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    tune = run("approx-tune", "--help")
    commands = re.search(r"\{([a-z,]+)\}", tune)[1].split(",")
    assert "run" in commands
    return "\n".join([run("approx-opt", "--help"), tune, *(run("approx-tune", c, "--help") for c in commands)])


@pytest.fixture(scope="module")
def cli_flags() -> set[str]:
    return set(FLAG.findall(help_texts()))


def test_flag_pattern():
    assert FLAG.findall("`--a-b`, [--x1 N] a--b kill -9 --") == ["--a-b", "--x1"]


@pytest.mark.parametrize("page", FLAG_PAGES, ids=lambda p: p.name)
def test_documented_flags_exist(page, cli_flags):
    named = set(FLAG.findall(page.read_text()))
    assert len(named) >= 5 and {"--trials", "--apply-config"} <= cli_flags
    missing = sorted(named - cli_flags)
    assert not missing, f"docs/{page.name} names flags that no --help lists: {', '.join(missing)}"
