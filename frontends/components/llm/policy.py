"""The machine policy for the LLMs the project loads (SmolLM2, Gemma 3): which path their exact
configuration runs on this machine, and which precision values pay here. The example systems
and a user's own pipeline call the same two functions:

    lm = exact_path(SmolLM2.load(adapter))          # through the engine where it pays here
    answer = Generate("answer", lm, tune=[Tune.precision(*paying_precisions(lm))])

The exact path (`exact_engine`) is decided per model family (`FAMILIES`), each on its own
model: where the run settings name no engine (`run_settings`), on the CPU with the engine
extra installed, the engine build `engine.EXACT` takes the exact path where the family's model
answers the probe (`rag_probe`: PROBE_QUESTIONS on three SQuAD passages, PROBE_TOKENS new
tokens) through it at least EXACT_MIN_GAIN times faster than eager torch float32, and as torch
does on every question (`machine.paying_values`: paired, once per machine, cached as
`<family>.exact_path`); elsewhere eager torch stays, said in one line. Engines differ by CPU:
ONNX Runtime GenAI fp32 ran SmolLM2 2.24x eager torch on an AMD EPYC with AVX-512 bf16, 1.07x
on a Xeon with AMX; Gemma 3 1.48x on an AVX2-only EPYC (bench/*engine_probe*.json).

The precision values (`paying_precisions`) are the LLM_PRECISIONS a model builds, less those
this CPU has no arithmetic for (`precision_candidates`, untimed), that answer a probe faster
than float32 and as float32 does on most of it (`machine.paying_values`)."""

from __future__ import annotations

import functools
import json
import sys

from approx_dialect.diagnostics import ApproxError
from frontends.components import run_settings
from frontends.components.folders import cache_dir, data_dir

# family -> (module, class) of its answer model; Gemma3 first (it is a SmolLM2 too)
FAMILIES = {"gemma3": ("frontends.components.llm.gemma", "Gemma3"),
            "smollm2": ("frontends.components.llm.smollm", "SmolLM2")}
# questions of the knob probes (on the first three SQuAD dev paragraphs) and their new tokens at most
PROBE_QUESTIONS = ("Which team won the game?", "Who was the most valuable player?", "Where was the game played?")
PROBE_TOKENS = 16
EXACT_MIN_GAIN = 1.05  # an engine takes the exact path where it runs at least this much faster than eager torch
# candidates of an LLM's precision knob, least approximate first (int4: only through an engine build)
LLM_PRECISIONS = ("bfloat16", "float16", "int8", "int4")
_EXACT: dict = {}  # (family, device, cache dir) -> the engine chosen (None: eager torch), once per process


def family(model) -> str | None:
    """The FAMILIES name of `model` (a SmolLM2, a Gemma3 or either through an engine), None for
    any other model; torch is not imported to tell (a model of a family has imported it)."""
    for name, (module, cls) in FAMILIES.items():
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(model, getattr(loaded, cls)):
            return name
    return None


@functools.lru_cache(maxsize=1)
def probe_passages() -> tuple[str, ...]:
    """The first three paragraphs of SQuAD v1.1 dev (under `data_dir()`): the probe's contexts."""
    path = data_dir() / "squad" / "dev-v1.1.json"
    try:
        articles = json.loads(path.read_text())["data"]
    except (OSError, ValueError, KeyError) as err:
        raise ApproxError(f"the knob probe's SQuAD passages: {err} (set APPROX_DATA_DIR to the benchmark data "
                          "folder)", where=str(path)) from None
    return tuple(p["context"] for a in articles for p in a["paragraphs"])[:3]


def rag_probe() -> list[tuple[str, list[str]]]:
    """(question, contexts) pairs of the knob probes: PROBE_QUESTIONS on `probe_passages`."""
    return [(q, list(probe_passages())) for q in PROBE_QUESTIONS]


def probe_answers(model, probe, max_new_tokens: int):
    """`model`'s answers to `probe` ((question, contexts) pairs), one by one: a probe's
    hopeless value stops its warm-up early (`machine.measure_speedups`)."""
    return (model.answer(q, contexts, max_new_tokens).text for q, contexts in probe)


def probe_log(suffix: str = ""):
    """Where a probe says why a value is left out: one line in the process that started the
    run, nothing in a worker process (it builds the system again: the first has said it)."""
    import multiprocessing

    return None if multiprocessing.parent_process() else (lambda line: print(f"[knobs] {line}{suffix}", flush=True))


def exact_engine(model) -> str | None:
    """The engine the exact configuration of `model`'s family runs through on this machine
    (None: eager torch); `model`: a model of a family, or a FAMILIES name. The run settings'
    engine decides where set (APPROX_LLM_ENGINE; `torch`: eager torch); a GPU run, or a model
    off the CPU, keeps torch (its compiled decode); without the engine extra torch stays, in
    one line. Otherwise the probe decides (the module docstring), on `model` with the QA prompt
    (`qa_twin`), or for a name on the family's base model, loaded only where no figure is cached."""
    name = model if isinstance(model, str) else family(model)
    if name not in FAMILIES:
        raise ApproxError(f"no exact-path policy for {name or type(model).__name__} (families: "
                          f"{', '.join(FAMILIES)})", where="policy")
    from frontends.components.llm.engine import EXACT, available, chosen_engine

    settings = run_settings.current()
    if settings.engine is not None:
        return chosen_engine()  # the run's own choice, unprobed
    where = settings.device if isinstance(model, str) else model.model.device.type
    key = (name, where, str(cache_dir()))
    if where != "cpu":
        return None
    if key not in _EXACT and not available():
        log = probe_log()
        if log is not None:
            log(f"{name}.exact_path = {EXACT} left out: the engine extra is not installed (pip install -e .[engine]); "
                "the exact path stays eager torch")
        _EXACT[key] = None
    if key not in _EXACT:
        _EXACT[key] = EXACT if _probed(name, model, EXACT) else None
    return _EXACT[key]


def _probed(name: str, model, engine: str) -> bool:
    """Whether `engine` pays as the exact path of family `name` (the probe of `exact_engine`)."""
    from frontends.components.llm.engine_model import through_engine
    from frontends.components.machine import paying_values

    probe, models = rag_probe(), {}

    def model_at(value):  # eager torch (None) or the engine `value`; made once, only to measure
        if None not in models:
            models[None] = qa_twin(model) if not isinstance(model, str) else base_model(name)
        if value not in models:
            models[value] = through_engine(models[None], value)
        return models[value]

    def run_at(value):
        return probe_answers(model_at(value), probe, PROBE_TOKENS)

    return bool(paying_values(f"{name}.exact_path", run_at, [engine], min_gain=EXACT_MIN_GAIN, min_same=1.0,
                              device="cpu", log=probe_log("; the exact path stays eager torch"), build=model_at))


def family_class(name: str):
    import importlib

    module, cls = FAMILIES[name]
    return getattr(importlib.import_module(module), cls)


def qa_twin(model):
    """Eager torch `model`'s weights with the family's own QA prompt (a tools writer's prompt
    takes no passages): what the exact-path probe answers with."""
    return family_class(family(model))(model.model, model.tokenizer, name=model.name, exits=model.exits)


def base_model(name: str):
    """The base model of family `name` (no adapters), float32 on the CPU."""
    return family_class(name).load(None, device="cpu")


def exact_path(llm):
    """`llm` with its exact path as this machine's policy has it (`exact_engine`): through that
    engine's build (`engine_model.through_engine`), or `llm` itself, eager torch. A model of no
    family, or one through an engine already, comes back as it is."""
    from frontends.components.llm.engine_model import EngineSmolLM2, through_engine

    if family(llm) is None or isinstance(llm, EngineSmolLM2):
        return llm
    engine = exact_engine(llm)
    return through_engine(llm, engine) if engine else llm


def paying_precisions(model, probe=None, max_new_tokens: int = PROBE_TOKENS) -> list[str]:
    """The LLM_PRECISIONS that `model` builds (`precision_candidates`; a cascade stage of
    its op that builds no variant of one runs its own precision), that answer `probe`
    ((question, contexts) pairs; default `rag_probe()`) faster than float32 on this machine
    and as float32 does on most of it (`machine.paying_values`: paired, probed once, cached
    per machine under the model's `probe_name`; each value's build untimed, its answers one
    by one, so a hopeless value's warm-up stops early). A value left out says why in one
    line, in the process that started the run (a worker process builds the system again:
    that one has said it already)."""
    from frontends.components.machine import paying_values

    probe = rag_probe() if probe is None else probe

    def run_at(precision):
        return probe_answers(model if precision is None else model.with_precision(precision), probe, max_new_tokens)

    log = probe_log()
    what = f"{getattr(model, 'probe_name', model.name)}.precision"  # an engine-backed model's figures are its own
    return paying_values(what, run_at, precision_candidates(model, what, log), device=run_settings.current().device,
                         log=log, build=model.with_precision)


def precision_candidates(model, what: str, log=None) -> list[str]:
    """The LLM_PRECISIONS `model` builds (int4 only through an engine), but, untimed, those
    torch computes in a format this CPU has no arithmetic for: float16 without
    `machine.FP16_FLAGS` (its probe's first answer alone took 20 s here), bfloat16 and the
    int8 variant (bfloat16 activations) without `machine.BF16_FLAGS` (0.26x and 0.76x
    float32 for Gemma on an AVX2-only EPYC, a 5-minute probe), unless an engine build runs
    the value (`model.engines`). One line to `log` for each left out (those the run settings
    leave out are kept: `paying_values` says that instead)."""
    from frontends.components.machine import BF16_FLAGS, FP16_FLAGS, cpu_has, left_out

    through_engine = getattr(model, "engines", {}) or {}
    device = run_settings.current().device

    def why_not(v) -> str | None:
        if v not in model.precisions:
            return getattr(model, "missing", {}).get(v, f"{model.name} has no {v} variant")
        if device != "cpu" or v in through_engine:
            return None
        if v == "float16" and not cpu_has(FP16_FLAGS):
            return f"this CPU has no float16 arithmetic ({', '.join(FP16_FLAGS)}): torch converts, slower than float32"
        if v in ("bfloat16", "int8") and not cpu_has(BF16_FLAGS):
            what = "bfloat16" if v == "bfloat16" else "the int8 variant's bfloat16 activations"
            return f"this CPU has no bfloat16 arithmetic ({', '.join(BF16_FLAGS)}) for {what}: torch converts, " \
                   "slower than float32"
        return None

    keep = [v for v in LLM_PRECISIONS if why_not(v) is None or v in left_out()]
    for v in (v for v in LLM_PRECISIONS if v not in keep and log is not None):
        log(f"{what} = {v} left out: {why_not(v)}")
    return keep
