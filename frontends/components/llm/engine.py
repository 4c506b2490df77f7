"""SmolLM2 (or any Llama-shaped causal LM of transformers) and Gemma 3 through a CPU
inference engine: ONNX Runtime GenAI, or OpenVINO on the same ONNX build. Gemma 3 builds
with the builder's fixes of `engine_gemma` (its config, embedding scale, sliding window).

The engine's model is built offline from the same weights the torch path runs: the
float32 model with its LoRA adapters merged into the linear maps (`merged`), saved as
a transformers folder, then converted by onnxruntime-genai's model builder (fp32, or
int8 or int4 weight-only MatMulNBits; the prompt's logits at its last position only),
once, cached under `cache_dir()/engines/<key>` with its build time and size
(`build_info.json`). Nothing is downloaded: the builder reads the
saved folder.

Decoding is ours (`engine_decode.py`), token by token, with the same prompt ids (the
caller's tokenizer), greedy, the same stop rule and the same new-token budget as
`SmolLM2.generate`; the session runs on `threads` threads (1: the runs' rule).

`EngineSmolLM2` (`engine_model.py`) is the answer model whose exact configuration decodes
through an engine (and its int8 / bfloat16 values through the engine builds that run them);
`default_engine` offers the exact engine: the run settings' `engine` (`run_settings`;
APPROX_LLM_ENGINE overrides it; `torch`: eager torch), else `ort-fp32` on the CPU where this
extra imports, which the machine's probe then accepts or not (`policy.exact_engine`).

OpenVINO (`ov-*` in ENGINES) reads that ONNX build, made stateful, compiled when loaded,
at f32 compute or at its own default precision for this CPU; `ov-ort-int8` reads the
prompt through OpenVINO and writes the new tokens through onnxruntime.

Needs the `engine` extra (`pip install -e .[engine]`: onnxruntime-genai, onnx-ir; openvino)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import logging
import os
import runpy
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from torch import nn

from approx_dialect.diagnostics import ApproxError
from frontends.components import run_settings
from frontends.components.folders import cache_dir, exclusive_lock
from frontends.components.hf_loading import quiet_loading
from frontends.components.llm import engine_gemma

ENV = run_settings.ENGINE_ENV  # an ENGINES name (the exact path through that engine build), or TORCH
TORCH = "torch"  # the run settings' engine (APPROX_LLM_ENGINE) for eager torch
EXACT = "ort-fp32"  # the default exact engine: its greedy answers equal eager torch float32's (60/60 measured)
# name -> (engine, weights, compute hint): "ort" builds with onnxruntime-genai's model builder (int8:
# MatMulNBits, blocks of 32, accuracy level 4 = int8 activations: its CPU defaults); "ov" reads that ONNX
# into OpenVINO (its ONNX frontend knows the builder's com.microsoft ops); "ov+ort": the prompt through
# OpenVINO, the new tokens through onnxruntime (`engine_decode.OvOrtGreedy`); hint "f32" / "bf16": OpenVINO's
# INFERENCE_PRECISION_HINT, None: its default on this CPU (bf16 compute where the CPU has bf16
# instructions, dynamic int8 activations, u8 KV cache)
ENGINES = {"ort-fp32": ("ort", "fp32", None), "ort-int8": ("ort", "int8", None), "ort-int4": ("ort", "int4", None),
           "ov-f32": ("ov", "fp32", "f32"), "ov-int8": ("ov", "int8", "f32"), "ov-bf16": ("ov", "fp32", "bf16"),
           "ov-f32-auto": ("ov", "fp32", None), "ov-int8-auto": ("ov", "int8", None),
           "ov-ort-int8": ("ov+ort", "int8", "f32")}
# weights -> (the builder's -p, its --extra_options). Every build computes the prompt's logits at its last
# position only (prune_lm_head: the LM head is a fifth of a 678-token prefill; same answers, ort-fp32 1.84x -> 2.22x
# eager torch on 20 RAG questions here). int4: round-to-nearest symmetric 4-bit MatMulNBits (the
# tied embedding too, read by GatherBlockQuantized), blocks of 128 (measured on 6 RAG questions: 1.18x over
# ort-fp32 where the default blocks of 32 ran 0.96x, both changing most answers), int8 activations. No ov-int4:
# OpenVINO's ONNX frontend rejects GatherBlockQuantized; untied (shared_embeddings=false) it ran 0.63x ort-int4.
# AWQ / GPTQ would need calibration packages and data (not installed: the builds are offline). int8: asymmetric
# (uint8 with a zero point per block of 32): through OpenVINO at f32 compute the same answers as ort-fp32 on 57 of 60
# RAG questions here, where the builder's default symmetric int8 gave 53 at the same speed (1.36x vs 1.35x ort-fp32);
# keeping the LM head in float32 gave 55 (57 with asymmetric weights too, 1.31x); KV cache precision and OpenVINO's
# dynamic quantisation of activations changed nothing or only the speed (0.88x without it).
LAST_LOGITS = "prune_lm_head=true"
WEIGHTS = {"fp32": ("fp32", (LAST_LOGITS,)), "int8": ("int8", ("is_symmetric=false", LAST_LOGITS)),
           "int4": ("int4", ("block_size=128", "accuracy_level=4", LAST_LOGITS))}
ENGINE_PRECISIONS = {name: weights for name, (_, weights, _) in ENGINES.items()}
INFO = "build_info.json"
EXIT_MAPS = "exit_maps"  # the early-exit maps (smollm.attach_exit_maps), which no build runs


def available(engine: str = "ort") -> bool:
    """Whether onnxruntime-genai (and its builder's onnx_ir) import; with engine "ov" (or "ov+ort") also openvino."""
    try:
        import onnx_ir  # noqa: F401
        import onnxruntime_genai  # noqa: F401

        if engine.startswith("ov"):
            import openvino  # noqa: F401
    except ImportError:
        return False
    return True


def chosen_engine() -> str | None:
    """The engine variant the run settings name for the exact path (`run_settings`: APPROX_LLM_ENGINE
    over `engine`; None: unset or `torch`); a name that is none is a one-line ApproxError."""
    name = run_settings.current().engine
    if name is None or name == TORCH:
        return None
    if name not in ENGINES:
        where = run_settings.where_set("engine")
        raise ApproxError(f"{where}={name!r}: expected {TORCH} or one of {', '.join(ENGINES)}", where=where)
    return name


# ---------------------------------------------------------------- the merged weights

def merged(model) -> nn.Module:
    """A copy of `model` with every LoRALinear folded into a plain nn.Linear
    (W + scale * B A) and the early-exit maps dropped: the full-depth model the engine
    runs. The input model is left as it is."""
    from frontends.components.llm.span_model import fold_lora

    clone = copy.deepcopy(model)
    if hasattr(clone, EXIT_MAPS):
        delattr(clone, EXIT_MAPS)
    fold_lora(clone)
    return clone.eval()


def fingerprint(model) -> str:
    """A short hash of the weights and config the engine runs, those of `merged(model)`
    (the cache key); not of the folder it was loaded from (the GGUF's on the first load,
    the cache's after). Read off `model` itself where no adapter is left to fold (loaded
    models have folded theirs): no copy of its weights is made to look a build up."""
    from frontends.components.llm.span_model import LoRALinear

    if any(isinstance(m, LoRALinear) for m in model.modules()):
        model = merged(model)
    config = model.config.to_dict()
    config.pop("_name_or_path", None)
    h = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    for name, tensor in sorted(model.state_dict().items()):
        if name.startswith(f"{EXIT_MAPS}."):
            continue  # `merged` drops them: the engine runs the full depth
        h.update(name.encode())
        # a sample, every 97th byte of the float32 values: fast, still weight-specific
        h.update(tensor.detach().float().contiguous().numpy().reshape(-1).view(np.uint8)[::97].tobytes())
    return h.hexdigest()[:16]


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def builder_version() -> str:
    import onnxruntime_genai as og

    return getattr(og, "__version__", "?")


def build_ort(model, tokenizer, precision: str, out: Path | None = None, threads: int = 1) -> Path:
    """The onnxruntime-genai build of `model` (LoRA merged by the caller or here) at
    `precision` (a WEIGHTS name: "fp32", "int8" or "int4" weights), in `out` (default: the engine cache, keyed
    by the weights, precision and builder version); built once, reused after."""
    if precision not in WEIGHTS:
        raise ApproxError(f"onnxruntime-genai builds {', '.join(WEIGHTS)} here, got {precision!r}", where="engine")
    if not available():
        raise ApproxError("onnxruntime-genai is not installed (pip install -e .[engine])", where="engine")
    options = (*build_options(model, precision), *engine_gemma.key_names(model.config))
    tag = f"-{hashlib.sha256(' '.join(options).encode()).hexdigest()[:6]}" if options else ""  # new options: new build
    key = f"ort-{precision}{tag}-{fingerprint(model)}-{builder_version()}"
    out = Path(out) if out is not None else cache_dir() / "engines" / key
    out.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(out):  # one process builds, the others wait and read its build
        if not ((out / INFO).is_file() and (out / "genai_config.json").is_file()):
            _build_ort(merged(model), tokenizer, precision, out, threads)  # the copy only where a build is made
    return out


def build_lock(out: Path):
    """An exclusive lock beside the build folder `out` (given back when its holder dies)."""
    return exclusive_lock(out.parent / f"{out.name}.lock")


def _build_ort(model, tokenizer, precision: str, out: Path, threads: int) -> None:
    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=out.name + ".tmp."))
    try:
        hf = work / "hf"
        with quiet_loading():
            model.save_pretrained(hf)
            tokenizer.save_pretrained(hf)
        built = work / "onnx"
        kind, options = WEIGHTS[precision][0], build_options(model, precision)
        run_builder(["-i", str(hf), "-o", str(built), "-p", kind, "-e", "cpu", "-c", str(work / "cache")]
                    + (["--extra_options", *options] if options else []), model.config)
        if not (built / "genai_config.json").is_file():
            raise ApproxError("onnxruntime-genai's builder wrote no genai_config.json", where="engine")
        set_threads(built, threads)
        seconds = time.perf_counter() - start
        info = {"engine": "onnxruntime-genai", "precision": precision, "builder": builder_version(),
                "build_seconds": round(seconds, 1), "bytes": folder_size(built), "weights": fingerprint(model)}
        (built / INFO).write_text(json.dumps(info, indent=1))
        shutil.rmtree(out, ignore_errors=True)
        os.replace(built, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_options(model, precision: str) -> tuple[str, ...]:
    """The builder's --extra_options for `model` at `precision`: WEIGHTS', and for Gemma 3 its own
    (`engine_gemma`; those and its fixes' name change its builds' cache key, SmolLM2's stay)."""
    options = WEIGHTS[precision][1]
    if engine_gemma.is_gemma3(model.config):
        options = (*options, *engine_gemma.BUILD_OPTIONS)
    return options


def run_builder(args: list[str], config=None) -> None:
    """onnxruntime-genai's builder, run as its command line `python -m
    onnxruntime_genai.models.builder ARGS` runs it, but in this process: a new process spent
    4 of a build's 6 s importing torch and the builder again (the files it writes are the
    same, byte for byte). Offline; its output is kept back, and a failure is one line. One
    build at a time in a process (`_BUILDER`: it swaps `sys.argv` and the standard streams,
    and a served model's request threads may build variants). `config`: the transformers config
    of the model built, for the builder's fixes (`engine_gemma.builder_fixes`)."""
    with _BUILDER, engine_gemma.builder_fixes(config):
        _run_builder(args)


_BUILDER = threading.Lock()


def _run_builder(args: list[str]) -> None:
    import huggingface_hub.constants as hub

    log, argv, offline = io.StringIO(), sys.argv, hub.HF_HUB_OFFLINE
    sys.argv, hub.HF_HUB_OFFLINE = ["onnxruntime_genai.models.builder", *args], True  # as HF_HUB_OFFLINE=1 does
    # ONNX Runtime's int4 quantiser logs every node at INFO through a root handler of its own: kept back too
    quantiser = logging.getLogger("onnxruntime")
    level = quantiser.level
    quantiser.setLevel(logging.WARNING)
    # and, of an int8 build, an ERROR line that only says the embedding (a Gather) stays unquantised
    nbits = logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer")
    nbits.addFilter(_unquantised_gather)
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__", alter_sys=False)
    except SystemExit as err:  # its argument parser: the reason is its last line
        said = log.getvalue().strip().splitlines() or [f"exit status {err.code}"]
        raise ApproxError(f"onnxruntime-genai's builder failed: {said[-1]}", where="engine") from None
    except Exception as err:  # the builder raises plain Exceptions
        said = (str(err).strip().splitlines() or [""])[0]
        raise ApproxError(f"onnxruntime-genai's builder failed: {type(err).__name__}: {said}", where="engine") from None
    finally:
        sys.argv, hub.HF_HUB_OFFLINE = argv, offline
        quantiser.setLevel(level)
        nbits.removeFilter(_unquantised_gather)


def _unquantised_gather(record: logging.LogRecord) -> bool:
    return "Gather only supports 4 bits" not in record.getMessage()


def set_threads(folder: Path, threads: int) -> None:
    """The session of the build at `folder` runs on `threads` intra-op threads (one inter-op);
    rewritten only when that changes, by a rename (a process loading it never reads half a file)."""
    path = Path(folder) / "genai_config.json"
    config = json.loads(path.read_text())
    options = config["model"]["decoder"].setdefault("session_options", {})
    if (options.get("intra_op_num_threads"), options.get("inter_op_num_threads")) == (int(threads), 1):
        return
    options["intra_op_num_threads"], options["inter_op_num_threads"] = int(threads), 1
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(config, indent=4))
    os.replace(tmp, path)


def build(model, tokenizer, name: str, out: Path | None = None, threads: int = 1) -> Path:
    """The build of `model` for the engine variant `name` (an ENGINES key), cached."""
    if name not in ENGINES:
        raise ApproxError(f"unknown engine {name!r} (expected one of {', '.join(ENGINES)})", where="engine")
    engine, weights, _ = ENGINES[name]
    if engine.startswith("ov") and not available("ov"):
        raise ApproxError("openvino is not installed (pip install -e .[engine])", where="engine")
    # OpenVINO runs onnxruntime-genai's ONNX build of the same weights, compiled when loaded (engine_decode)
    return build_ort(model, tokenizer, weights, out, threads)


def build_info(folder: Path) -> dict:
    return json.loads((Path(folder) / INFO).read_text())


# ---------------------------------------------------------------- the answer model

def default_engine(device: str = "cpu") -> str | None:
    """The exact path's engine for a run on `device`: the run settings' where they name one
    (`chosen_engine`; `torch`: None, eager torch), else EXACT on the CPU where the engine extra
    imports, else None (torch)."""
    if run_settings.current().engine is not None:
        return chosen_engine()
    return EXACT if device == "cpu" and available() else None
