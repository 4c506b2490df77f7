"""Any OpenAI-compatible HTTP endpoint as an answer model, through the `openai`
client: vLLM, llama.cpp's server, a hosted API, or `serve.py` here.

Every request has a timeout (in all, not per read) and no retries (the cascade / Fallback decides what
to do next, not the client), and every failure is one ApproxError line naming
the endpoint: unreachable, too slow, an HTTP error status, malformed JSON, or an
answer without choices, text or sane log-probabilities. Confidence comes from token
log-probabilities when the server returns them (exp of their mean, as for local
models), else None. Generation options go in the request under their declared
names (`max_new_tokens` as `max_tokens`; the others, such as vLLM's
`repetition_penalty`, in the body beside the standard fields), so every declared
option reaches the server and the server decides what it accepts.

Every request is greedy (temperature 0) unless its op sets a temperature (sent as
the standard field) or another sampling option; a call drawing at random is never kept
(`settings.draws`). A greedy answer is a function of its request:
the model is `deterministic` and the autotuner keeps its calls' outputs
(`frontends.components.kept`) as it keeps a local model's, keyed by `identity()`
(URL, model, API, the fixed parts of the body) with the op's settings and
operands (the rest of the body)."""

from __future__ import annotations

import hashlib
import math
import queue
import threading
from dataclasses import replace

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import GENERATION, INSTRUCTION, Answer, AnswerModel, build_prompt, first_line

DEFAULT_TIMEOUT = 30.0
TEMPERATURE = 0.0  # greedy: the same request gets the same answer


class OpenAIAnswerModel(AnswerModel):
    """`api="completions"` sends `build_prompt(question, contexts)` to
    /v1/completions; `api="chat"` sends it as the user message (after a system
    message with the instruction) to /v1/chat/completions. A prompt-level call
    (`complete`) sends its prompt alone (the user message, no system message).
    Each answer's `seconds` is the time of its request.

    `keep=False`: its calls' outputs are not kept, every call sends its request (a
    server whose greedy answers vary, e.g. batched on a GPU, or whose weights change
    behind the same URL and model name). A failed or timed-out request is never kept.
    `requests_sent` counts the requests this object sent (failed ones included)."""

    supports = GENERATION | {"template"}

    def __init__(self, base_url: str, model: str, *, api: str = "completions", api_key: str = "none",
                 timeout: float = DEFAULT_TIMEOUT, max_new_tokens: int = 32, logprobs: bool = True,
                 name: str | None = None, keep: bool = True):
        if api not in ("completions", "chat"):
            raise ApproxError(f"api must be 'completions' or 'chat', got {api!r}", where=base_url)
        if not timeout or timeout <= 0:
            raise ApproxError(f"a timeout in seconds (> 0) is required, got {timeout!r}", where=base_url)
        import openai

        self.base_url, self.model, self.api, self.timeout = base_url.rstrip("/"), model, api, float(timeout)
        self.max_new_tokens, self.logprobs = max_new_tokens, logprobs
        self.name = name or f"{model}@{self.base_url}"
        self.deterministic = bool(keep)  # greedy requests: their answers may be kept
        self.client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=self.timeout, max_retries=0)
        self._counting = threading.Lock()
        self.requests_sent = 0

    def identity(self) -> str:
        """What names this model's kept outputs across processes: everything in a
        request's body that the op's settings and operands do not say (URL, model, API,
        log-probabilities asked for, the default max_tokens, the answer's model name, the
        prompt's fixed text and the temperature), never the API key or the timeout."""
        form = repr((build_prompt("{question}", ["{context}"]), INSTRUCTION, TEMPERATURE))
        digest = hashlib.sha256(form.encode()).hexdigest()[:12]
        return (f"{type(self).__module__}.{type(self).__qualname__}:{self.name}:{self.base_url}:{self.model}:"
                f"{self.api}:logprobs={bool(self.logprobs)}:max_tokens={self.max_new_tokens}:{digest}")

    def _request(self, prompt: str, max_tokens: int, system: str | None = INSTRUCTION, options=None):
        """The response within `timeout` seconds in all: the client's own timeout is
        per read, so a server sending a byte now and then would hold it for ever."""
        box: queue.Queue = queue.Queue(1)
        with self._counting:
            self.requests_sent += 1

        def run():
            try:
                box.put((True, self._send(prompt, max_tokens, system, options or None)))
            except BaseException as err:  # noqa: BLE001 - handed to the caller below
                box.put((False, err))

        threading.Thread(target=run, daemon=True, name=f"request {self.name}").start()
        try:
            ok, value = box.get(timeout=self.timeout + 0.05)
        except queue.Empty:
            raise ApproxError(f"no answer from model '{self.model}' within {self.timeout:g} s (timeout)",
                              where=self.base_url) from None
        if not ok:
            raise value
        return value

    def _send(self, prompt: str, max_tokens: int, system: str | None, options: dict | None):
        import openai

        options = dict(options or {})
        temperature = options.pop("temperature", TEMPERATURE)  # the op's, where it sets one
        options = options or None
        try:
            if self.api == "chat":
                messages = [{"role": "system", "content": system}] if system else []
                messages.append({"role": "user", "content": prompt})
                return self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=max_tokens,
                                                           temperature=temperature, logprobs=self.logprobs or None,
                                                           extra_body=options)
            return self.client.completions.create(model=self.model, prompt=prompt, max_tokens=max_tokens,
                                                  temperature=temperature, logprobs=1 if self.logprobs else None,
                                                  extra_body=options)
        except openai.APITimeoutError:
            raise ApproxError(f"no answer from model '{self.model}' within {self.timeout:g} s (timeout)",
                              where=self.base_url) from None
        except openai.APIConnectionError as err:
            cause = err.__cause__ or err
            raise ApproxError(f"cannot reach the endpoint for model '{self.model}': {type(cause).__name__}: {cause}",
                              where=self.base_url) from None
        except openai.APIStatusError as err:
            raise ApproxError(f"HTTP {err.status_code} for model '{self.model}': {_status_message(err)}",
                              where=self.base_url) from None
        except (openai.APIResponseValidationError, ValueError) as err:  # malformed JSON, wrong shape
            raise ApproxError(f"malformed answer for model '{self.model}': {type(err).__name__}: {err}",
                              where=self.base_url) from None

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None, **options) -> Answer:
        resp = self._request(build_prompt(question, contexts), max_new_tokens or self.max_new_tokens, options=options)
        ans = self._read(resp)
        return replace(ans, text=first_line(ans.text))

    def _complete(self, prompt: str, max_new_tokens: int | None, one_line: bool, **options) -> Answer:
        return self._read(self._request(prompt, max_new_tokens or self.max_new_tokens, system=None, options=options))

    def _read(self, resp) -> Answer:
        """The answer of a response (its whole text); a response without choices,
        text or sane log-probabilities is one ApproxError line."""
        if not getattr(resp, "choices", None):
            raise ApproxError(f"answer for model '{self.model}' has no choices", where=self.base_url)
        choice = resp.choices[0]
        text = choice.message.content if self.api == "chat" else choice.text
        if not isinstance(text, str):
            raise ApproxError(f"answer for model '{self.model}' has no text (got {type(text).__name__})",
                              where=self.base_url)
        lps = _logprobs(choice, self.api)
        if lps and not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x <= 1e-6 for x in lps):
            raise ApproxError(f"answer for model '{self.model}' has log-probabilities that are not numbers <= 0",
                              where=self.base_url)
        usage = getattr(resp, "usage", None)
        completion = getattr(usage, "completion_tokens", None) or (len(lps) if lps else 0)
        total = getattr(usage, "total_tokens", None) or completion
        conf = math.exp(sum(lps) / len(lps)) if lps else None
        return Answer(text, conf, int(total), 0.0, self.name, new_tokens=int(completion))


def _logprobs(choice, api: str) -> list[float] | None:
    lp = getattr(choice, "logprobs", None)
    if lp is None:
        return None
    if api == "chat":
        return [t.logprob for t in (lp.content or [])] or None
    return [x for x in (lp.token_logprobs or []) if x is not None] or None


def _status_message(err) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"]).splitlines()[0]
    return str(err).splitlines()[0]
