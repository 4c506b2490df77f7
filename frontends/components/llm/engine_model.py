"""SmolLM2 (and Gemma 3: `EngineGemma3`) whose exact configuration, and the precision values
an engine runs well, decode through an inference engine build (`engine.py`); everything else
is torch.

The exact configuration (float32, every layer, no per-token exit, no extra generation
options) runs the exact engine (`ort-fp32`: its greedy answers equal eager torch's).
Precision values map to engine builds of the same weights (`precision_engines`): int8 ->
onnxruntime-genai's int8-weight build (its prompt through OpenVINO where installed),
bfloat16 -> OpenVINO at bf16 compute where the CPU has bf16 instructions (elsewhere
torch's bfloat16, which the knob probe then judges), int4 -> onnxruntime-genai's
int4-weight build. A variant that an engine cannot run (an early
exit's layers, a per-token exit, generation options) is the torch variant of the same
precision, built on first need; int4 has none (ENGINE_ONLY): asking for one is an ApproxError."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import torch

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm import engine as eng
from frontends.components.llm import engine_decode
from frontends.components.llm.gemma import Gemma3
from frontends.components.llm.smollm import SmolLM2, check_window

ENGINE_ONLY = SmolLM2.missing  # precision -> why torch has no variant of it


def engine_only(precision: str, where: str, why: str = "", missing: dict[str, str] = ENGINE_ONLY) -> None:
    """An ApproxError when `precision` has no torch variant (`missing`: the model class's, precision
    -> why; `why`: what asked for torch)."""
    if precision in missing:
        raise ApproxError(f"{missing[precision]}{why}", where=where)


def precision_engines() -> dict[str, str]:
    """{precision value: the engine variant that runs it} with the engines installed here.
    int8: the int8-weight build (weight-only, as the precision table says), its prompt through
    OpenVINO at f32 compute and its new tokens through onnxruntime (on the probe's RAG prompts
    ~1.5x over the exact engine, where OpenVINO alone ran ~1.3x and onnxruntime-genai alone
    1.12x: `engine_decode`), onnxruntime-genai's without openvino; bfloat16:
    OpenVINO's bf16 compute, only where the CPU has bf16 instructions; int4: onnxruntime-genai's
    int4 build (OpenVINO does not read it, `engine.WEIGHTS`)."""
    from frontends.components.machine import BF16_FLAGS, cpu_has

    if not eng.available("ov"):
        return {"int8": "ort-int8", "int4": "ort-int4"}
    found = {"int8": "ov-ort-int8", "int4": "ort-int4"}
    if cpu_has(BF16_FLAGS):
        found["bfloat16"] = "ov-bf16"
    return found


class EngineSmolLM2(SmolLM2):
    """SmolLM2 with `engine` as its exact path and `engines` (precision -> engine variant)
    for the precision values an engine runs; see the module docstring."""

    engine: str | None = None  # the exact configuration's ENGINES name
    build: Path | None = None  # that engine build's folder (of this variant's engine)
    decoder: Any = None  # the engine_decode decoder of this variant (None: a torch variant)
    engines: dict[str, str]  # precision value -> the ENGINES name that runs it
    threads: int = 1  # the engines' threads
    builds: Path | None = None  # the folder holding the builds (None: the engine cache)
    _torch_models: dict[str, Any]  # precision -> torch's model of it, shared by the variants

    @classmethod
    def through(cls, lm: SmolLM2, engine: str, threads: int = 1, builds: Path | None = None,
                engines: dict[str, str] | None = None):
        """`lm` with its exact path through `engine` and its precision values through `engines`
        (default `precision_engines()`); `builds`: the folder holding the builds (default the cache)."""
        if engine not in eng.ENGINES:
            raise ApproxError(f"unknown engine {engine!r} (expected one of {', '.join(eng.ENGINES)})", where=lm.name)
        if cls is EngineSmolLM2 and isinstance(lm, Gemma3):
            cls = EngineGemma3  # Gemma's turn and stop tokens
        if lm.model.device.type != "cpu":
            raise ApproxError(f"the engine {engine} runs on the CPU, not on {lm.model.device.type}", where=lm.name)
        other = cls.__new__(cls)
        other.__dict__.update({k: v for k, v in lm.__dict__.items() if not k.startswith("_variant")})
        other.engine, other.threads, other.builds = engine, threads, builds
        other.engines = dict(precision_engines() if engines is None else engines)
        other.precisions = type(lm).precisions | frozenset(other.engines)  # int4 only where an engine runs it
        other._torch_models = {}  # precision -> the torch model of that precision, shared by the variants
        other.build, other.decoder = other._engine_build(engine)
        return other

    def _engine_build(self, name: str):
        """(folder, decoder) of the engine variant `name` of these weights, built once."""
        folder = None if self.builds is None else Path(self.builds) / eng.ENGINE_PRECISIONS[name]
        built = eng.build(self._root().__dict__["model"], self.tokenizer, name, folder, self.threads)
        return built, engine_decode.decoder(name, built, self.threads)

    def _root(self):
        return self.__dict__.get("_variant_root", self)

    @property
    def model(self):
        """The torch model: for an engine variant, that of its precision, built on first need
        (an early exit's layers, a per-token exit, generation options run torch)."""
        model = self.__dict__.get("model")
        if model is None:
            root = self._root()
            models = root._torch_models
            if self.precision not in models:
                engine_only(self.precision, self.name, ": an early exit's layers, a per-token exit and generation "
                                                       "options run torch", self.missing)
                models[self.precision] = SmolLM2.build_variant(root, self.precision, None).model
            model = self.__dict__["model"] = models[self.precision]
        return model

    @model.setter
    def model(self, value) -> None:
        self.__dict__["model"] = value

    def values_text(self) -> str:
        """'bfloat16=ov-bf16,int8=ov-ort-int8': which engine runs which precision value."""
        return ",".join(f"{p}={e}" for p, e in sorted(self.engines.items()))

    def identity(self) -> str:
        """What names this provider's outputs across processes (kept outputs): the engine
        builds its values run, so an engine's outputs are never read for torch's."""
        where = f"{self.engine}:{Path(self.build).name}[{self.values_text()}]"
        return f"{type(self).__module__}.{type(self).__name__}:{self.name}:{where}:{self.values_builds()}"

    def values_builds(self) -> str:
        """A digest of how each precision value's engine is built and run (the builder's
        options, the compute hint): a build made another way never reads these outputs."""
        how = {p: (eng.ENGINES[e], eng.WEIGHTS[eng.ENGINES[e][1]]) for p, e in sorted(self.engines.items())}
        return hashlib.sha256(repr(how).encode()).hexdigest()[:8]

    @property
    def probe_name(self) -> str:
        """The knob probe's name for this model: its figures are the engines', not torch's
        (and a value's engine built another way is probed again)."""
        return f"{self.name}@{self.engine}[{self.values_text()}]#{self.values_builds()}"

    def build_variant(self, precision, layers):
        if layers is None and precision in self.engines:
            other = copy.copy(self)
            other.__dict__["model"] = None  # the torch model of `precision`, on first need
            other.precision = precision  # (the variant cache sets it too)
            other.build, other.decoder = self._engine_build(self.engines[precision])
            return other
        engine_only(precision, self.name, f" (asked for {precision} with an early exit's layers, which run torch)",
                    self.missing)
        other = super().build_variant(precision, layers)
        other.decoder = None  # a torch variant
        return other

    def warm_decoder(self) -> None:
        """Nothing for an engine variant (it decodes on the CPU; asking its torch model's
        device would build that model: a copy of the weights, and none at all for int4)."""
        if self.decoder is None:
            super().warm_decoder()

    def with_token_exit(self, percent):
        if percent is not None:
            engine_only(self.precision, self.name,
                        f" (asked for {self.precision} with a per-token exit, which runs torch)", self.missing)
        return super().with_token_exit(percent)

    def _engine_runs(self, options) -> bool:
        return self.decoder is not None and self.layers is None and self.token_exit is None and not options

    @torch.inference_mode()
    def generate_turn(self, content: str, max_new_tokens: int | None = None, stop_at_line_end: bool = True,
                      **options):
        if not self._engine_runs(options):
            return super().generate_turn(content, max_new_tokens, stop_at_line_end, **options)
        tokens, logps, prompt, _ = self.generate_scored(content, (), max_new_tokens, stop_at_line_end)
        return tokens, logps, prompt

    @torch.inference_mode()
    def generate_scored(self, content: str, continuations, max_new_tokens: int | None = None,
                        stop_at_line_end: bool = True, **options):
        if not self._engine_runs(options):
            return super().generate_scored(content, continuations, max_new_tokens, stop_at_line_end, **options)
        n = max_new_tokens or self.max_new_tokens
        ids = self.tokenizer(self.turn(content), add_special_tokens=False)["input_ids"]
        window = min(self._root().__dict__["model"].config.max_position_embeddings, self.decoder.window)
        check_window(len(ids), max([n, *(len(c) for c in continuations)]), window, self.name)
        tokens, logps, scores = self.decoder.scored(ids, n, self.stop_rule(stop_at_line_end), continuations)
        return tokens, logps, len(ids), scores


class EngineGemma3(EngineSmolLM2, Gemma3):
    """Gemma 3 with its exact path and precision values through engine builds, as
    EngineSmolLM2 (Gemma3's prompt turn, stop tokens, knobs and torch variants; the build
    made as torch runs it by `engine_gemma`'s builder fixes)."""


def through_engine(lm, engine: str | None = None, threads: int = 1, builds: Path | None = None,
                   engines: dict[str, str] | None = None):
    """`lm` (a SmolLM2 or a Gemma3) with its exact path through `engine` (default: the run
    settings' engine, `engine.chosen_engine`; None there: `lm` itself, eager torch) and its
    precision values through `engines` (default `precision_engines()`). The machine's choice
    (the probe's) is `policy.exact_path`'s."""
    engine = engine or eng.chosen_engine()
    if engine is None:
        return lm
    return EngineSmolLM2.through(lm, engine, threads, builds, engines)  # EngineGemma3 for a Gemma3
