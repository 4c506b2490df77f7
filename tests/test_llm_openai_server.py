"""The OpenAI-compatible path, end to end: the `openai` client against a REAL
local server process (serve.py) running real models on 127.0.0.1: answers equal
the local models', timeouts and a killed server are one clear error within
seconds, and Fallback answers locally instead.

One server process serves the module (startup dominates the cost); the kill
test stops it and therefore runs last (tests run in file order)."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.escalation import Fallback
from frontends.components.llm.openai_backend import OpenAIAnswerModel
from frontends.components.llm.serve import LocalServer
from tests.test_llm_support import (  # noqa: F401 (one_torch_thread: autouse fixture)
    CONTEXTS,
    QUESTION,
    causal,
    one_torch_thread,
    tiny_gpt2,
    untrained_reader,
    untrained_reader_file,
)

DELAY = 30.0  # the "slow" model's fault-injected delay; clients give up long before
BOUND = DELAY / 2  # a clear error comes within this: a client that waited for an answer would take DELAY


@pytest.fixture(scope="module")
def server():
    path = tiny_gpt2(0)
    models = {"tiny": f"causal:{path}", "slow": f"causal:{path}", "reader": f"reader:{untrained_reader_file(0)}"}
    s = LocalServer(models,
                    delays={"slow": DELAY}, startup_timeout=180, env={"OMP_NUM_THREADS": "1"})
    with s:
        yield s


def test_models_are_listed(server):
    with urllib.request.urlopen(f"{server.url}/models", timeout=5) as resp:
        assert [m["id"] for m in json.load(resp)["data"]] == ["tiny", "slow", "reader"]


def test_completions_answer_equals_the_local_model(server):
    remote = OpenAIAnswerModel(server.url, "tiny", timeout=20)
    for n in (2, 5):
        a, b = remote.answer(QUESTION, CONTEXTS, n), causal(0).answer(QUESTION, CONTEXTS, n)
        assert a.text == b.text and a.new_tokens == n == b.new_tokens
        assert a.tokens_used == b.tokens_used
        assert a.confidence == pytest.approx(b.confidence, rel=1e-9)


def test_chat_completions(server):
    a = OpenAIAnswerModel(server.url, "tiny", api="chat", timeout=20).answer(QUESTION, CONTEXTS, 4)
    assert a.new_tokens == 4 and 0 < a.confidence <= 1 and a.tokens_used > 4


def test_a_prompt_level_call_equals_the_local_model(server):
    prompt = f"Rewrite the question for search: {QUESTION}"
    remote = OpenAIAnswerModel(server.url, "tiny", timeout=20, name="remote").complete(prompt, ["query"], 4)
    local = causal(0).complete(prompt, ["query"], 4)
    assert remote.query == remote.text == local.text and remote.new_tokens == 4
    assert remote.model == "remote" and remote.seconds > 0  # each call's time is recorded


def test_reader_behind_the_server_equals_the_local_reader(server):
    for api in ("completions", "chat"):
        a = OpenAIAnswerModel(server.url, "reader", api=api, timeout=60).answer(QUESTION, CONTEXTS, 5)
        b = untrained_reader(0).answer(QUESTION, CONTEXTS, 5)
        assert (a.text, a.tokens_used, a.new_tokens) == (b.text, b.tokens_used, b.new_tokens)
        assert a.confidence == pytest.approx(b.confidence, rel=1e-9)


def test_generation_options_reach_the_served_model(server):
    """A generation option goes in the request under its declared name and the served
    model applies it (the local model's answer under the same option); a served model
    without it refuses it in one line."""
    remote = OpenAIAnswerModel(server.url, "tiny", timeout=20)
    a = remote.answer(QUESTION, CONTEXTS, 8, repetition_penalty=1.5)
    b = causal(0).answer(QUESTION, CONTEXTS, 8, repetition_penalty=1.5)
    assert (a.text, a.new_tokens, a.tokens_used) == (b.text, b.new_tokens, b.tokens_used)
    assert a.text != remote.answer(QUESTION, CONTEXTS, 8).text
    with pytest.raises(ApproxError, match=r"HTTP 400 .*does not take the generation option 'repetition_penalty'"):
        OpenAIAnswerModel(server.url, "reader", timeout=20).answer(QUESTION, CONTEXTS, 5, repetition_penalty=1.5)


def test_timeout_is_one_clear_error_within_seconds(server):
    start = time.monotonic()
    with pytest.raises(ApproxError, match=r"no answer from model 'slow' within 0.5 s \(timeout\)") as err:
        OpenAIAnswerModel(server.url, "slow", timeout=0.5).answer(QUESTION, CONTEXTS, 2)
    assert time.monotonic() - start < BOUND and str(err.value).startswith(server.url)


def test_slow_backend_falls_back_to_a_local_model(server):
    start = time.monotonic()
    a = Fallback(OpenAIAnswerModel(server.url, "slow", timeout=0.5), causal(0)).answer(QUESTION, CONTEXTS, 3)
    assert time.monotonic() - start < BOUND
    assert a.text == causal(0).answer(QUESTION, CONTEXTS, 3).text and "timeout" in a.error


def test_http_errors_are_clear(server):
    with pytest.raises(ApproxError, match="HTTP 404 for model 'nope': model 'nope' is not served here"):
        OpenAIAnswerModel(server.url, "nope", timeout=5).answer(QUESTION, CONTEXTS, 2)
    with pytest.raises(ApproxError, match="a timeout in seconds"):
        OpenAIAnswerModel(server.url, "tiny", timeout=0)


def test_killed_server_is_a_clear_error_and_falls_back(server):  # last: stops the module's server
    server.stop()
    assert server.proc.poll() is not None
    remote = OpenAIAnswerModel(server.url, "tiny", timeout=DELAY)  # waited out, each call would take DELAY
    start = time.monotonic()
    with pytest.raises(ApproxError, match="cannot reach the endpoint for model 'tiny'"):
        remote.answer(QUESTION, CONTEXTS, 2)
    a = Fallback(remote, causal(0)).answer(QUESTION, CONTEXTS, 2)
    assert time.monotonic() - start < BOUND
    assert a.model == causal(0).name and "cannot reach" in a.error
    b = Fallback(remote, causal(0)).complete(f"Rewrite: {QUESTION}", ["query"], 2)  # a prompt-level call too
    assert b.query == causal(0).complete(f"Rewrite: {QUESTION}", ["query"], 2).text and "cannot reach" in b.error


def test_a_server_that_cannot_start_is_a_clear_error(tmp_path):
    with pytest.raises(ApproxError, match=r"model server exited with code 1: .*model spec .nope:1."):
        LocalServer({"x": "nope:1"}, startup_timeout=120).start()
