"""Components that really misbehave, shared by
tests/test_component_faults.py and bench/reliability_faults.py: an HTTP server
speaking the OpenAI API that answers 500s, malformed JSON, no text, impossible
log-probabilities, or too late; answer models that raise or return garbage;
tools that raise, return garbage or hang; a BM25 retriever whose index lookup
breaks; and a tunable RAG program whose approximate configurations use them.
Nothing here patches the code under test: each fault is a real component doing
the wrong thing."""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from frontends import Knob, SafetyContract, StaticTransform
from frontends.components.llm.base import Answer, AnswerModel
from frontends.components.llm.openai_backend import OpenAIAnswerModel
from frontends.components.retrieval import Bm25Retriever
from frontends.components.retrieval.bm25 import Bm25Search
from frontends.components.tools import ToolRegistry
from passes.knobs import KnobSpec

HTTP_FAULTS = ("http500", "badjson", "notjson", "nochoices", "nulltext", "inttext", "badlogprobs", "slow",
               "dribble", "hangup")
MODEL_FAULTS = ("raise", "none", "int_text", "nan_confidence", "bad_confidence", "empty")
TOOL_FAULTS = ("raise", "garbage", "hang")
HANG = 20.0  # how long a slow server / hanging tool / dribbled answer holds on (clients give up at TIMEOUT)
TIMEOUT = 0.2


# ------------------------------------------------------------------ LLM backend


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, data: bytes, ctype: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        fault = body.get("model")
        self.server.requests[fault] += 1
        choice = {"index": 0, "text": "Denver Broncos", "finish_reason": "stop"}
        if fault == "http500":
            return self._send(500, b'{"error": {"message": "CUDA out of memory", "type": "server_error"}}')
        if fault == "badjson":
            return self._send(200, b'{"choices": [{"text": "Den')
        if fault == "notjson":
            return self._send(200, b"<html>502 Bad Gateway</html>", "text/html")
        if fault == "nochoices":
            return self._send(200, b'{"choices": []}')
        if fault == "nulltext":
            return self._send(200, json.dumps({"choices": [{**choice, "text": None}]}).encode())
        if fault == "inttext":
            return self._send(200, json.dumps({"choices": [{**choice, "text": 42}]}).encode())
        if fault == "badlogprobs":
            lp = {"tokens": ["Denver"], "token_logprobs": [2.5], "top_logprobs": None, "text_offset": None}
            return self._send(200, json.dumps({"choices": [{**choice, "logprobs": lp}]}).encode())
        if fault == "slow":
            time.sleep(HANG)
            return self._send(200, json.dumps({"choices": [choice]}).encode())
        if fault == "dribble":  # one byte at a time: no single read ever waits past the client's timeout
            data = json.dumps({"choices": [choice]}).encode().ljust(int(HANG / (TIMEOUT / 2)) + 1)  # HANG s in all
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(TIMEOUT / 2)
            except OSError:
                pass
            return None
        if fault == "hangup":
            self.close_connection = True
            return None
        return self._send(404, json.dumps({"error": {"message": f"no fault {fault!r}"}}).encode())


class FaultServer:
    """A real HTTP server on 127.0.0.1 (a daemon thread): the model name of each
    request picks its fault (HTTP_FAULTS); `requests` counts them."""

    def __init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.requests = Counter()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="fault-server")

    @property
    def requests(self) -> Counter:
        return self.server.requests

    def model(self, fault: str, timeout: float = TIMEOUT) -> OpenAIAnswerModel:
        return OpenAIAnswerModel(self.url, fault, timeout=timeout)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------ answer models


class FaultyModel(AnswerModel):
    """Answers as `inner` does, except on every `every`-th call (1: always),
    where it commits `fault` (MODEL_FAULTS); `faults` counts them."""

    def __init__(self, inner: AnswerModel, fault: str, every: int = 1):
        self.inner, self.fault, self.every = inner, fault, every
        self.name, self.calls, self.faults = f"faulty-{fault}", 0, 0

    def _answer(self, question, contexts, max_new_tokens):
        self.calls += 1
        ans = self.inner.answer(question, contexts, max_new_tokens)
        if self.calls % self.every:
            return replace(ans, model=self.name, stages=())
        self.faults += 1
        if self.fault == "raise":
            raise RuntimeError("CUDA error: device-side assert triggered")
        if self.fault == "none":
            return None
        if self.fault == "int_text":
            return replace(ans, text=42, model=self.name, stages=())
        if self.fault == "nan_confidence":
            return replace(ans, confidence=math.nan, model=self.name, stages=())
        if self.fault == "bad_confidence":
            return replace(ans, confidence=7.5, model=self.name, stages=())
        return replace(ans, text="", confidence=0.99, model=self.name, stages=())  # "empty"


def non_empty(answer: Answer) -> bool:
    """A checker: an answer with some text."""
    return bool(answer.text.strip())


# ------------------------------------------------------------------ tools


def make_tools(timeout: float | None = TIMEOUT) -> ToolRegistry:
    """`convert` (exact) with substitutes 1 (rounded rate: approximate, works),
    2 (raises), 3 (garbage: a string), 4 (hangs for HANG s)."""
    reg = ToolRegistry(timeout=timeout)

    def rounded(amount: float, rate: float) -> float:
        return amount * round(rate, 1)

    def raises(amount: float, rate: float) -> float:
        return amount / (rate - rate)

    def garbage(amount: float, rate: float) -> float:
        return "NaN EUR"

    def hangs(amount: float, rate: float) -> float:
        time.sleep(HANG)
        return amount * rate

    @reg.register(substitutes=[rounded, raises, garbage, hangs],
                  check=lambda r: isinstance(r, float) and math.isfinite(r))
    def convert(amount: float, rate: float) -> float:
        """Convert an amount of money.

        Args:
            amount: the amount
            rate: the exchange rate
        """
        return amount * rate

    return reg


# ------------------------------------------------------------------ retriever


class FlakySearch(Bm25Search):
    """A BM25 search whose index lookup breaks on every `every`-th query."""

    def __init__(self, search: Bm25Search, every: int = 1):
        super().__init__(search.fn, search.index, search.level, search.top_k)
        self.every, self.calls, self.faults = every, 0, 0

    def prepare(self, question):
        self.calls += 1
        if self.calls % self.every == 0:
            self.faults += 1
            raise KeyError(f"index shard {self.calls % 7} unavailable")
        return super().prepare(question)


# ------------------------------------------------------------------ decorated functions (SafetyContract)

ACTIVE: dict = {}  # "exact"/"approx" answer models, "search"/"flaky" retrievers, set by the caller
RECOVERED = Counter()


def cheap_answer(question, contexts):
    return ACTIVE["approx"].answer(question, contexts).text


def answer_ok(text, question, contexts):
    return isinstance(text, str) and text.strip() != ""


def exact_answer(question, contexts):
    RECOVERED["answer"] += 1
    return ACTIVE["exact"].answer(question, contexts).text


@Knob(static_transform=StaticTransform("func_substitute", 1, approx_kernel=cheap_answer),
      safety_contract=SafetyContract(answer_ok, exact_answer))
def contracted_answer(question, contexts):
    return ACTIVE["exact"].answer(question, contexts).text


def cheap_retrieve(question):
    return ACTIVE["flaky"](question).ids.tolist()


def hits_ok(ids, question):
    return len(ids) > 0


def exact_retrieve(question):
    RECOVERED["retrieve"] += 1
    return ACTIVE["search"](question).ids.tolist()


@Knob(static_transform=StaticTransform("func_substitute", 1, approx_kernel=cheap_retrieve),
      safety_contract=SafetyContract(hits_ok, exact_retrieve))
def contracted_retrieve(question):
    return ACTIVE["search"](question).ids.tolist()


# ------------------------------------------------------------------ a tunable program with faulty configurations


class FaultyRag:
    """Retrieve (knob `retriever`: 0 BM25 top 3, 1 top 1, 2 the flaky retriever)
    then answer (knob `answer`: 0 the exact model, 1 it with 2 tokens at most,
    2 an endpoint answering HTTP 500, 3 a model returning garbage, 4 an endpoint
    too slow for its timeout) from the first passages (knob `passages`: 0 all,
    k the first k). Configurations using a faulty one (retriever 2, answer 2-4:
    33 of 45) fail on their first input."""

    name = "faulty_rag"

    def __init__(self, corpus, exact: AnswerModel, server: FaultServer):
        self.corpus, self.exact = list(corpus), exact
        self.bm25 = Bm25Retriever(self.corpus, top_k=3)
        search = self.bm25.build({})
        self.searches = [search, Bm25Search(search.fn, search.index, search.level, 1),
                         FlakySearch(search)]
        self.models = [exact, None, server.model("http500"), FaultyModel(exact, "int_text"), server.model("slow")]

    def knobs(self) -> list[KnobSpec]:
        return [KnobSpec("retriever", "retrieve", "func_substitute", "static", (0, 1, 2), current={"knob_val": 0}),
                KnobSpec("answer", "answer", "func_substitute", "static", (0, 1, 2, 3, 4), current={"knob_val": 0}),
                KnobSpec("passages", "answer", "param", "static", (0, 1, 2), current={"knob_val": 0})]

    def build(self, config: dict):
        r = config.get("retriever", {}).get("knob_val", 0)
        a = config.get("answer", {}).get("knob_val", 0)
        search, model, limit = self.searches[r], self.models[a] or self.exact, 2 if a == 1 else None
        keep = config.get("passages", {}).get("knob_val", 0) or None

        def run(question):
            contexts = [self.corpus[i] for i in search(question).ids.tolist()][:keep]
            return model.answer(question, contexts, limit).text

        return run


def is_faulty(knobs: dict) -> bool:
    """Does a FaultyRag configuration use a faulty component?"""
    return knobs["retriever"]["knob_val"] == 2 or knobs["answer"]["knob_val"] >= 2
