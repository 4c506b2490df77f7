"""Any Hugging Face `transformers` causal LM from a local folder as an answer
model, with greedy decoding written as an explicit loop (KV cache, one token per
step) so that `max_new_tokens` is exactly the truncation of that loop: the
output at n tokens is the first n tokens of the output at N > n. Generation
options (`repetition_penalty`, ...) choose each token after the logits processors
transformers' `generate` builds for them (`generation.processors`, `next_token`).

Confidence = geometric mean of the chosen tokens' probabilities
(exp of the mean log-probability), the usual length-normalised sequence score.
Nothing is downloaded: the folder must hold the weights and the tokenizer."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from approx_dialect.diagnostics import ApproxError
from frontends.components.hf_loading import quiet_loading
from frontends.components.llm.base import Answer, AnswerModel, build_prompt, first_line
from frontends.components.llm.generation import processors, transformers_options
from frontends.components.llm.next_token import next_token
from frontends.components.variants import Variants

DEFAULT_MAX_NEW_TOKENS = 32


@dataclass(frozen=True)
class Generation:
    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    prompt_tokens: int
    finish_reason: str  # "length" | "stop"

    def tokens(self, tokenizer) -> list[str]:
        return [tokenizer.decode([t]) for t in self.token_ids]


class CausalLM(Variants, AnswerModel):
    supports = frozenset({"precision", "template"}) | transformers_options()
    deterministic = True  # greedy decoding on the process's torch threads

    def __init__(self, model, tokenizer, name: str = "causal-lm", max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS):
        self.model, self.tokenizer, self.name = model.eval(), tokenizer, name
        self.max_new_tokens = max_new_tokens
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else model.config.eos_token_id
        self.eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])

    @classmethod
    def from_path(cls, path: str | Path, name: str | None = None, **kw) -> CausalLM:
        path = Path(path)
        if not (path / "config.json").is_file():
            raise ApproxError("no transformers model here (config.json missing)", where=str(path))
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            with quiet_loading():
                tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
        except (OSError, ValueError) as err:
            raise ApproxError(f"cannot load the causal LM: {str(err).splitlines()[0]}", where=str(path)) from None
        return cls(model, tok, name or path.name, **kw)

    def build_variant(self, precision: str, layers: int | None) -> CausalLM:
        other = copy.copy(self)
        other.model = copy.deepcopy(self.model).to(getattr(torch, precision))
        return other

    def context_window(self) -> int | None:
        cfg = self.model.config
        return getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)

    @torch.inference_mode()
    def generate(self, prompt: str, max_new_tokens: int | None = None, stop: tuple[str, ...] = (),
                 **options) -> Generation:
        """Greedy continuation of `prompt`: at most `max_new_tokens` tokens, ending
        early at EOS (counted) or when a `stop` string appears (cut before it); each
        token chosen under the generation `options`."""
        n = max_new_tokens or self.max_new_tokens
        ids = self.tokenizer(prompt, return_tensors="pt")["input_ids"]
        window = self.context_window()
        if window is not None:
            if n >= window:
                raise ApproxError(f"max_new_tokens {n} does not fit the context window of {window}", where=self.name)
            ids = ids[:, -(window - n):]  # keep the end of the prompt (the question)
        out: list[int] = []
        past, step, lps, finish = None, ids, [], "length"
        process = processors(self.model, options, int(ids.shape[1]))
        for _ in range(n):
            result = self.model(input_ids=step, past_key_values=past, use_cache=True)
            logits = result.logits[0, -1].float()
            logp = torch.log_softmax(logits, dim=-1)  # the chosen token's log-probability is the model's
            nxt = next_token(logits, process, lambda: torch.cat([ids, torch.tensor([out], dtype=ids.dtype)], 1))
            out.append(nxt)
            lps.append(float(logp[nxt]))
            if nxt in self.eos:
                finish = "stop"
                break
            if stop and any(s in self._decode(out) for s in stop):
                finish = "stop"
                break
            past, step = result.past_key_values, torch.tensor([[nxt]])
        text = self._decode(out)
        if finish == "stop" and stop:
            cut = min((text.index(s) for s in stop if s in text), default=len(text))
            text = text[:cut]
        return Generation(text, tuple(out), tuple(lps), int(ids.shape[1]), finish)

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None, **options) -> Answer:
        g = self.generate(build_prompt(question, contexts), max_new_tokens, **options)
        return Answer(first_line(g.text), sequence_confidence(g.logprobs), g.prompt_tokens + len(g.token_ids),
                      0.0, self.name, new_tokens=len(g.token_ids))

    def _complete(self, prompt: str, max_new_tokens: int | None, one_line: bool, **options) -> Answer:
        g = self.generate(prompt, max_new_tokens, ("\n",) if one_line else (), **options)
        return Answer(g.text, sequence_confidence(g.logprobs), g.prompt_tokens + len(g.token_ids), 0.0, self.name,
                      new_tokens=len(g.token_ids))


def sequence_confidence(logprobs) -> float:
    """exp(mean log-probability) of the generated tokens; 0 for none."""
    return math.exp(sum(logprobs) / len(logprobs)) if logprobs else 0.0
