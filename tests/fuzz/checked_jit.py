"""Run MLIR functions bounds-checked, in a child process that may abort.

`CheckedJit().run(text, func, args)` compiles `text` with
`compile_module(..., check_bounds=True)` in a long-lived worker
(`tests.fuzz.jit_worker`) and returns what happened: `Ran` (the result and the
arguments after the call, so stores are visible), `Refused` (a clear ApproxError)
or `Died` (the worker aborted: the runtime verification message, or a crash).
A dead or hung worker is replaced for the next call."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from tests.fuzz.corpus import ROOT
from tests.fuzz.jit_worker import decode, encode


@dataclass
class Ran:
    result: object
    args: list


@dataclass
class Refused:
    error: str


@dataclass
class Died:
    rc: int | None
    message: str  # the worker's stderr: MLIR prints the failed check there

    @property
    def out_of_bounds(self) -> bool:
        return "out-of-bounds" in self.message


class CheckedJit:
    def __init__(self, timeout: float = 60.0):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.calls = 0

    def _start(self) -> None:
        self.err = tempfile.TemporaryFile()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.jit_worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, cwd=ROOT, env=env, text=True)

    def _stop(self) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        rc = proc.wait(timeout=10)
        for f in (proc.stdin, proc.stdout):
            f.close()
        return rc

    def close(self) -> None:
        self._stop()

    def run(self, text: str, func: str, args: list, check_bounds: bool = True):
        if self.proc is None or self.proc.poll() is not None:
            self._stop()
            self._start()
        self.calls += 1
        job = {"text": text, "func": func, "args": [encode(a) for a in args], "check_bounds": check_bounds}
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
            line = self.proc.stdout.readline() if ready else None
        except BrokenPipeError:
            line = ""
        if not line:  # the worker died (abort, crash) or hung
            hung = line is None
            rc = self._stop()
            self.err.seek(0)
            message = self.err.read().decode("utf-8", "replace")
            self.err.close()
            return Died(None if hung else rc, ("hung: " if hung else "") + message)
        reply = json.loads(line)
        if "error" in reply:
            return Refused(reply["error"])
        return Ran(decode(reply["result"]), [decode(a) for a in reply["args"]])
