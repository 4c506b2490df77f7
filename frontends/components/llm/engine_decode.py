"""Greedy decoding of an engine build (`engine.py`): token by token, with the caller's
prompt ids, its stop rule and new-token budget, on `threads` threads.

Three decoders read the same ONNX build: onnxruntime-genai's (`OrtGreedy`); OpenVINO's,
the build made stateful and compiled when loaded (`OvGreedy`); and one that reads the
prompt through OpenVINO and writes the new tokens through onnxruntime (`OvOrtGreedy`).
The third exists because the two engines are fast at different halves of the work on a
CPU: OpenVINO's int8 prefill (int8 weights, activations quantised on the fly) ran 1.57x
onnxruntime-genai's float32 on the probe's RAG prompts here, where onnxruntime's own int8
prefill ran 1.06x; but each new token, a read of every weight, took OpenVINO ~18 ms and
onnxruntime's int8 matrix-vector kernel ~8-11 ms (`bench/engine_probe.py`). The prompt's
key/value cache moves from one to the other once per call.

Each decoder also scores continuations (`scored`): the log-probability of each token of
each given continuation after the same prompt, read once (a verifier's candidates), its
cache rewound to the prompt's end between them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from frontends.components.llm.engine import ENGINES, set_threads
from frontends.components.llm.next_token import next_token

PAST, PRESENT = "past_key_values", "present"  # the builder's cache input / output names


def decoder(name: str, folder: Path, threads: int = 1):
    """The greedy decoder of the build at `folder` for the engine variant `name`."""
    engine, _, hint = ENGINES[name]
    if engine == "ort":
        return OrtGreedy(folder, threads)
    return (OvOrtGreedy if engine == "ov+ort" else OvGreedy)(folder, threads, hint)


def log_softmax_at(logits, token: int) -> float:
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    top = logits.max()
    return float(logits[token] - top - np.log(np.exp(logits - top).sum()))


def greedy(logits, advance, n: int, stop) -> tuple[list[int], list[float]]:
    """Greedy tokens from the prompt's `logits`: each the argmax (`next_token`; a call with
    generation options runs torch's variant, `engine_model`), with its log-probability,
    until `n` or `stop(tokens)`; `advance(token, fed)` feeds a token (the `fed`-th new one)
    and returns the next logits."""
    tokens: list[int] = []
    logps: list[float] = []
    while len(tokens) < n:
        token = next_token(logits)
        logps.append(log_softmax_at(logits, token))
        tokens.append(token)
        if len(tokens) == n or stop(tokens):
            break
        logits = advance(token, len(tokens))
    return tokens, logps


def teacher_forced(logits, advance, continuation) -> list[float]:
    """The log-probability of each token of `continuation` (ids) after the prompt whose
    `logits` are given; `advance(token, fed)` as for `greedy`."""
    logps: list[float] = []
    for i, token in enumerate(continuation):
        logps.append(log_softmax_at(logits, token))
        if i + 1 < len(continuation):
            logits = advance(token, i + 1)
    return logps


class OrtGreedy:
    """Greedy decoding of an onnxruntime-genai build: `(ids, n, stop)` -> (tokens, log-probs)."""

    def __init__(self, folder: Path, threads: int = 1):
        import onnxruntime_genai as og

        set_threads(folder, threads)
        self.og, self.folder = og, Path(folder)
        self.model = og.Model(str(folder))
        self.window = json.loads((self.folder / "genai_config.json").read_text())["model"]["context_length"]

    def __call__(self, ids, n: int, stop) -> tuple[list[int], list[float]]:
        return self.scored(ids, n, stop, ())[:2]

    def scored(self, ids, n: int, stop, continuations) -> tuple[list[int], list[float], list[list[float]]]:
        """(greedy tokens, their log-probabilities, each continuation's token log-probabilities)."""
        og = self.og
        ids = np.asarray(ids, dtype=np.int32).reshape(1, -1)
        longest = max([n, *(len(c) for c in continuations)])
        params = og.GeneratorParams(self.model)
        params.set_search_options(max_length=int(ids.shape[1] + longest), do_sample=False, num_beams=1,
                                  repetition_penalty=1.0, min_length=0)
        gen = og.Generator(self.model, params)
        gen.append_tokens(ids)
        first = gen.get_logits().copy()  # those the first token is chosen on
        tokens: list[int] = []
        logps: list[float] = []
        while len(tokens) < n and not gen.is_done():
            logits = gen.get_logits()
            gen.generate_next_token()
            token = int(gen.get_next_tokens()[0])
            logps.append(log_softmax_at(logits, token))
            tokens.append(token)
            if stop(tokens):
                break

        def advance(token: int, fed: int):
            gen.append_tokens(np.array([[token]], dtype=np.int32))
            return gen.get_logits()

        scores = []
        for continuation in continuations:
            gen.rewind_to(int(ids.shape[1]))
            scores.append(teacher_forced(first, advance, continuation))
        return tokens, logps, scores


def openvino_graph(onnx: Path):
    """The stateful OpenVINO model of the ONNX build at `onnx`."""
    import openvino as ov
    from openvino._offline_transformations import apply_make_stateful_transformation

    graph = ov.Core().read_model(str(Path(onnx) / "model.onnx"))
    pairs = {i.any_name: i.any_name.replace(PAST, PRESENT) for i in graph.inputs if i.any_name.startswith(PAST)}
    apply_make_stateful_transformation(graph, pairs)
    return graph


def ov_properties(threads: int, hint: str | None) -> dict:
    props = {"INFERENCE_NUM_THREADS": str(threads), "NUM_STREAMS": "1", "PERFORMANCE_HINT": "LATENCY"}
    if hint:
        props["INFERENCE_PRECISION_HINT"] = hint
    return props


class OvGreedy:
    """Greedy decoding of onnxruntime-genai's ONNX build at `folder` through OpenVINO: read by
    its ONNX frontend (which knows the builder's com.microsoft ops), made stateful (the KV cache
    lives in the request, reset per call), compiled for this CPU on `threads` threads at the
    precision `hint` (None: the plugin's default here). Compiled at each load (`compile_seconds`):
    OpenVINO IR cannot hold the frontend's GroupQueryAttention extension op, and a compiled blob
    exported and imported again (openvino 2026.4) computes NaNs; NNCF's `compress_weights`
    rejects the graph (that op's outputs have a dynamic type), hence the builder's int8 weights."""

    def __init__(self, folder: Path, threads: int = 1, hint: str | None = None):
        import openvino as ov

        self.ov, self.folder = ov, Path(folder)
        config = json.loads((self.folder / "genai_config.json").read_text())["model"]
        self.window = config["context_length"]
        decoder = config["decoder"]
        self.kv_shape = (1, decoder["num_key_value_heads"], 0, decoder["head_size"])
        start = time.perf_counter()
        self.compiled = ov.Core().compile_model(openvino_graph(self.folder), "CPU", ov_properties(threads, hint))
        self.compile_seconds = time.perf_counter() - start
        self.request = self.compiled.create_infer_request()
        self.logits = self.compiled.output("logits")

    def prompt(self, ids) -> np.ndarray:
        """The logits after the prompt `ids`, its cache left in the request."""
        request = self.request
        request.reset_state()
        for state in request.query_state():  # an empty cache of batch 1 (the default state has batch 0)
            state.state = self.ov.Tensor(np.zeros(self.kv_shape, dtype=np.float32))
        ids = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        return self.step(ids, ids.shape[1])

    def step(self, ids: np.ndarray, length: int) -> np.ndarray:
        out = self.request.infer({"input_ids": ids, "attention_mask": np.ones((1, length), dtype=np.int64)})
        return out[self.logits][0, -1]

    def __call__(self, ids, n: int, stop) -> tuple[list[int], list[float]]:
        return self.scored(ids, n, stop, ())[:2]

    def scored(self, ids, n: int, stop, continuations) -> tuple[list[int], list[float], list[list[float]]]:
        """`OrtGreedy.scored`: the prompt's cache kept and put back before each continuation."""
        length = len(ids)
        logits = self.prompt(ids)
        kept = [(state, state.state.data.copy()) for state in self.request.query_state()] if continuations else []

        def advance(token: int, fed: int) -> np.ndarray:
            return self.step(np.array([[token]], dtype=np.int64), length + fed)

        tokens, logps = greedy(logits, advance, n, stop)
        scores = []
        for continuation in continuations:
            for state, data in kept:
                state.state = self.ov.Tensor(data.copy())
            scores.append(teacher_forced(logits, advance, continuation))
        return tokens, logps, scores


class OvOrtGreedy(OvGreedy):
    """The prompt through OpenVINO (`OvGreedy.prompt`), each new token through an onnxruntime
    session of the same ONNX file, the cache handed over once per call (the builder's
    `past_key_values.N.key` / `.value` inputs, `present.N.*` outputs) and bound once: see the
    module docstring."""

    def __init__(self, folder: Path, threads: int = 1, hint: str | None = None):
        import onnxruntime as ort

        super().__init__(folder, threads, hint)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = int(threads), 1
        self.ort = ort
        self.session = ort.InferenceSession(str(self.folder / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.past = [i.name for i in self.session.get_inputs() if i.name.startswith(PAST)]

    def cache(self, room: int) -> dict:
        """The prompt's cache from the OpenVINO request, by the onnxruntime input it feeds (the
        stateful model names each state after its input and output joined), in buffers with
        `room` more positions: onnxruntime writes each new token's keys and values in place
        (the same buffer bound as the layer's past and present) instead of copying the
        whole cache every token."""
        states = {s.name: s.state.data for s in self.request.query_state()}
        buffers = {}
        for name in self.past:
            state = states[name + name.replace(PAST, PRESENT)]
            buffer = np.zeros((*state.shape[:2], state.shape[2] + room, state.shape[3]), dtype=np.float32)
            buffer[:, :, :state.shape[2]] = state
            buffers[name] = self.ort.OrtValue.ortvalue_from_numpy(buffer)
        return buffers

    def scored(self, ids, n: int, stop, continuations) -> tuple[list[int], list[float], list[list[float]]]:
        """`OrtGreedy.scored`: each continuation from the prompt's cache in OpenVINO's request
        (onnxruntime's decoding leaves it as the prompt made it)."""
        logits, length = self.prompt(ids), len(ids)
        tokens, logps = greedy(logits, self.advance(length, n), n, stop)
        return tokens, logps, [teacher_forced(logits, self.advance(length, len(c)), c) for c in continuations]

    def advance(self, length: int, room: int):
        """`advance(token, fed)` for new tokens after the prompt of `length` through onnxruntime,
        the prompt's cache bound once, on the first token fed, with `room` more positions."""
        binding = None

        def advance(token: int, fed: int) -> np.ndarray:
            nonlocal binding
            if binding is None:  # bound once per call, on the first new token fed
                binding = self.session.io_binding()
                binding.bind_output("logits", "cpu")  # first: get_outputs() lists the outputs as bound
                for name, value in self.cache(room).items():
                    binding.bind_ortvalue_input(name, value)
                    binding.bind_ortvalue_output(name.replace(PAST, PRESENT), value)
            binding.bind_cpu_input("input_ids", np.array([[token]], dtype=np.int64))
            binding.bind_cpu_input("attention_mask", np.ones((1, length + fed), dtype=np.int64))
            self.session.run_with_iobinding(binding)
            return binding.get_outputs()[0].numpy()[0, -1]

        return advance
