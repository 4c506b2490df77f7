"""Run one fuzz `Case` through approx-opt and judge the outcome.

The contract: every input ends in output with exit code 0, or in ONE
clear error line with exit code 1: no traceback, no `internal error` (a bug of
ours caught by the last-resort handler), no hang over 5 s, no crash of the
interpreter. `run_in_process` calls `approx_opt.main.main()` (fast, an alarm
stops a hang); `run_in_subprocess` runs the real command (exit code, stderr,
crashes, and the upstream-MLIR fast path for large inputs)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.corpus import ROOT
from tests.fuzz.inputs import Case

HANG_SECONDS = 5.0
WARNING = re.compile(r":\d+: warning: ")
STARTUP_SECONDS = 20.0  # interpreter and imports of a command, not counted


@dataclass
class Outcome:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    problem: str | None = None  # why this is a finding; None when the contract holds

    @property
    def signature(self) -> str:
        """The problem with file names and numbers blanked: findings that are one bug group together."""
        text = re.sub(r"\S*/tmp\w*/\S*", "<file>", self.problem or "")
        return re.sub(r"\d+", "N", text)[:140]

    @property
    def verdict(self) -> str:
        return "finding" if self.problem else ("output" if self.rc == 0 else "error")


def time_limit(case: Case) -> float:
    """HANG_SECONDS, plus 1 s per 10 KB of input or per 50 levels of nesting, whichever
    is more: a large or deeply nested valid input is work (linear in its size; 1,000
    levels took up to 15 s on the shared 2-core machine), not a hang."""
    from approx_opt.op_text import nesting_depth

    text = case.data.decode("utf-8", "replace")
    return HANG_SECONDS + max(len(case.data) / 10_000, min(nesting_depth(text), 2048) / 50)


def judge(rc: int | None, stdout: str, stderr: str, seconds: float, hung: bool = False,
          case: Case | None = None) -> Outcome:
    out = Outcome(rc, stdout, stderr, seconds)
    # One-line warnings about the user's input (`FILE:LINE: warning: ...`) may come before the error.
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not WARNING.search(ln)]
    split = case is not None and "--split-input-file" in case.flags and "--list-knobs" not in case.flags
    chunks = 1 + len(SPLIT_LINE.findall(case.data.decode("utf-8", "replace"))) if split else 1
    if hung or seconds > (time_limit(case) if case is not None else HANG_SECONDS):
        out.problem = f"hang: no answer after {seconds:.1f} s"
    elif rc is None or rc < 0 or rc > 1:
        out.problem = f"exit code {rc}" + (f" (signal {-rc})" if rc is not None and rc < 0 else "")
    elif "Traceback" in stderr:
        out.problem = "traceback on stderr"
    elif "internal error" in stderr:
        out.problem = "internal error: " + (lines[0] if lines else "")
    elif rc == 1 and not 1 <= len(lines) <= chunks:
        out.problem = f"{len(lines)} lines on stderr for {'one error' if chunks == 1 else f'{chunks} chunks'}"
    elif rc == 1 and any("error:" not in ln for ln in lines):
        out.problem = f"error line without 'error:': {next(ln for ln in lines if 'error:' not in ln)[:200]}"
    elif rc == 1 and case is not None and case.located and any(not LOCATED.match(ln) for ln in lines):
        out.problem = f"error line without a location: {next(ln for ln in lines if not LOCATED.match(ln))[:200]}"
    elif rc == 0 and lines:
        out.problem = f"exit 0 with stderr: {lines[0][:200]}"
    elif case is not None and case.expect == "output" and rc != 0:
        out.problem = f"valid input rejected: {(lines or [''])[0][:200]}"
    return out


SPLIT_LINE = re.compile(r"^[ \t]*// -----[ \t]*\r?$", re.MULTILINE)  # approx_opt.main's marker lines
# Where an error is: a line (and column) of the input file, of a Python source or of the IR of MODULE:FUNCTION,
# or the configuration, the pipeline string or the command line when the error is theirs.
LOCATED = re.compile(r"^(?:\S.*?:\d+(?::\d+)?|<(?:config|pipeline|command line)>): error: ")
_LOCATION = re.compile(r"^(\S*?):(\d+):")


def size_difference(case: Case, small: Outcome, large: Outcome) -> str | None:
    """Why the answers for `case` and for it padded past the upstream parser's size
    differ (None when they agree): the verdict, the output, or the error (its line
    one further down in the padded file)."""
    if small.verdict != large.verdict:
        return f"size changes the answer: {small.verdict} below, {large.verdict} above the upstream path's size"
    if small.rc == 0 and small.stdout != large.stdout:
        return "size changes the output"
    if small.rc == 1:
        def same_file(line: str) -> str:  # each run writes its input in a folder of its own
            return re.sub(r"\S*/input\.mlir", "input.mlir", line)

        def shifted(line: str) -> str:
            return _LOCATION.sub(lambda m: f"{m.group(1)}:{int(m.group(2)) + 1}:", line, count=1)
        a = [shifted(same_file(ln)) for ln in small.stderr.splitlines() if ln.strip()]
        b = [same_file(ln) for ln in large.stderr.splitlines() if ln.strip()]
        if a != b:
            return f"size changes the error: {a[-1:]} below, {b[-1:]} above the upstream path's size"[:300]
    return None


def padded(case: Case) -> Case:
    """`case` with a first comment line that puts it past the upstream parser's size."""
    from approx_opt.upstream_import import FAST_PATH_MIN_CHARS

    pad = b"// " + b"x" * FAST_PATH_MIN_CHARS + b"\n"
    return dataclasses.replace(case, kind=case.kind + ":padded", data=pad + case.data)


def _write_inputs(case: Case, workdir: Path) -> list[str]:
    """Write the case's files into `workdir`; the approx-opt arguments for it."""
    if case.python:  # a module of its own name (imported by approx-opt from `workdir`)
        module = "fuzzpy_" + hashlib.sha1(case.data + str(workdir).encode()).hexdigest()[:16]
        (workdir / f"{module}.py").write_bytes(case.data)
        argv = ["--from-python", f"{module}:f"]
    else:
        src = workdir / "input.mlir"
        src.write_bytes(case.data)
        argv = [str(src)]
    if case.passes:
        argv.append(f"--passes={case.passes}")
    if case.config is not None:
        cfg = workdir / "config.json"
        cfg.write_text(case.config, encoding="utf-8", errors="surrogatepass")
        argv += ["--apply-config", str(cfg)]
    return argv + list(case.flags)


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so `main()`'s last-resort handler lets it through."""


def _alarm(signum, frame):
    raise _Hang()


def run_in_process(case: Case, workdir: Path | None = None) -> Outcome:
    """`main()` in this interpreter (SystemExit caught; an alarm stops a hang). A
    `size` case runs twice, as it is and padded, and must get the same answer."""
    outcome = _run_in_process(case, workdir)
    if case.kind.startswith("size") and not outcome.problem:
        large = _run_in_process(padded(case), workdir)
        outcome.problem = large.problem or size_difference(case, outcome, large)
        outcome.seconds = max(outcome.seconds, large.seconds)
    return outcome


def _run_in_process(case: Case, workdir: Path | None = None) -> Outcome:
    from approx_opt.main import main

    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        argv = _write_inputs(case, Path(tmp))
        sys.path.insert(0, tmp)
        out, err = io.StringIO(), io.StringIO()
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, time_limit(case) + 1)
        start = time.perf_counter()
        hung = False
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = main(argv)
                except SystemExit as e:  # argparse
                    rc = e.code if isinstance(e.code, int) else 1
                except _Hang:
                    rc, hung = None, True
                except BaseException as e:  # noqa: BLE001 -- escaped main(): a finding
                    rc = None
                    err.write(f"Traceback (escaped main): {type(e).__name__}: {e}\n")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            sys.path.remove(tmp)
            for name in [m for m in sys.modules if m.startswith("fuzzpy_")]:
                del sys.modules[name]
        return judge(rc, out.getvalue(), err.getvalue(), time.perf_counter() - start, hung, case)


def run_in_subprocess(case: Case, workdir: Path | None = None, timeout: float | None = None) -> Outcome:
    """The real `approx-opt` command: exit code, stderr, crashes; killed after `timeout` s
    of work (interpreter start-up and imports, ~1 s, are not counted)."""
    timeout = time_limit(case) if timeout is None else timeout
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        argv = _write_inputs(case, Path(tmp))
        probe = Path(tmp) / "started"
        # Time the work, not the imports: the child touches `probe` once it is ready.
        code = ("import sys, pathlib; from approx_opt.main import main; "
                f"pathlib.Path({str(probe)!r}).touch(); sys.exit(main(sys.argv[1:]))")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), tmp])}
        proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=ROOT, env=env)
        start = time.time()
        try:
            stdout, stderr = proc.communicate(timeout=timeout + STARTUP_SECONDS)
            hung = False
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            hung = True
        began = probe.stat().st_mtime if probe.exists() else start
        return judge(None if hung else proc.returncode, stdout.decode("utf-8", "replace"),
                     stderr.decode("utf-8", "replace"), time.time() - began, hung, case)


if __name__ == "__main__":  # `python -m tests.fuzz.oracle FILE [PASSES]`: judge one file by hand
    data = Path(sys.argv[1]).read_bytes()
    o = run_in_subprocess(Case("manual", data, sys.argv[2] if len(sys.argv) > 2 else "approx-pipeline"))
    print(o.verdict, o.rc, f"{o.seconds:.2f}s", o.problem or "", o.stderr.strip()[:500], sep="\n")
