"""SmolLM2's exact path through an inference engine (onnxruntime-genai, and OpenVINO on
its ONNX where installed), on a tiny Llama-shaped model with LoRA adapters and a
byte-level tokenizer built here (nothing is downloaded): the merged weights compute what
the adapters do, the f32 engines give eager torch's greedy tokens and log-probabilities,
the int8 and int4 builds are other, smaller builds, the precision values int8, int4 and bfloat16
decode through the builds that run them, every other variant (and the switch set to torch) is
torch, and int4, which torch has no model of, is refused in one line where torch would run."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from approx_dialect.diagnostics import ApproxError
from frontends.components.kept import provider_identity
from frontends.components.llm import engine, engine_model

pytestmark = pytest.mark.skipif(not engine.available(), reason="onnxruntime-genai not installed (.[engine])")

CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_tokenizer():
    """A byte-level BPE tokenizer without merges (one token a byte) and the chat tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = SPECIAL + sorted(pre_tokenizers.ByteLevel.alphabet())
    raw = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.add_special_tokens(SPECIAL)
    return PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>", bos_token="<|im_start|>",
                                   unk_token="<|endoftext|>", pad_token="<|endoftext|>", chat_template=CHAT)


@pytest.fixture(scope="module")
def tiny():
    """A SmolLM2 answer model on a 2-layer random Llama (SmolLM2's shape, tied embeddings) whose
    linear maps carry random LoRA adapters."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from frontends.components.llm.smollm import SmolLM2, attach_lora

    torch.manual_seed(0)
    tok = byte_tokenizer()
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, rope_theta=10000.0, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config).float().eval()
    with torch.no_grad():
        for module in model.modules():  # larger weights than the init's: sharper, tie-free greedy choices
            if isinstance(module, torch.nn.Linear):
                module.weight.mul_(4)
    attach_lora(model, 4, 8.0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".lora_b" in name:
                p.normal_(0, 0.05)
    return SmolLM2(model, tok, name="tiny", max_new_tokens=8)


@pytest.fixture(scope="module")
def built(tiny, tmp_path_factory):
    """The tiny model through each engine variant (ONNX builds in a temporary folder, one per weights;
    the OpenVINO variants where openvino is installed)."""
    root = tmp_path_factory.mktemp("engines")
    names = [n for n, (kind, _, hint) in engine.ENGINES.items() if kind == "ort" or (hint and engine.available("ov"))]
    return {name: engine_model.EngineSmolLM2.through(tiny, name, builds=root) for name in names}


QUESTIONS = [("who?", ["alpha beta gamma", "delta"]), ("where is it", ["epsilon zeta"]), ("x", [])]


def test_merged_weights_compute_what_the_adapters_do(tiny):
    ids = torch.randint(3, 200, (1, 20))
    with torch.no_grad():
        expected = tiny.model(input_ids=ids).logits
        got = engine.merged(tiny.model)(input_ids=ids).logits
    assert torch.allclose(expected, got, atol=1e-4)
    assert any(".lora_" in n for n, _ in tiny.model.named_parameters())  # the input is left as it was


def test_the_build_key_is_the_weights_not_the_folder_they_came_from(tiny):
    """The first load reads the GGUF's folder, later ones the cache's: one build for both."""
    model = engine.merged(tiny.model)
    keys = set()
    for folder in ("/gguf/folder", "/cache/folder"):
        model.config._name_or_path = folder
        keys.add(engine.fingerprint(model))
    assert len(keys) == 1
    with torch.no_grad():
        model.lm_head.weight[0, 0] += 1.0
    assert engine.fingerprint(model) not in keys


def test_the_build_key_of_a_model_is_that_of_its_merged_copy_and_a_cached_build_copies_nothing(
        tiny, built, monkeypatch):
    """A model with its adapters unfolded, or folded with its exit maps still on (a loaded
    SmolLM2), keys the build its merged copy would; a build found in the cache is looked
    up without copying the model's weights."""
    from frontends.components.llm.smollm import attach_exit_maps
    from frontends.components.llm.span_model import fold_lora

    key = engine.fingerprint(engine.merged(tiny.model))
    assert engine.fingerprint(tiny.model) == key
    folded = copy.deepcopy(tiny.model)
    assert fold_lora(folded) > 0 and attach_exit_maps(folded, [1])
    assert engine.fingerprint(folded) == key
    monkeypatch.setattr(engine, "merged", lambda model: pytest.fail("a cached build's model was copied"))
    root = Path(built["ort-fp32"].build).parent
    assert engine.build(folded, tiny.tokenizer, "ort-fp32", root / "fp32") == Path(built["ort-fp32"].build)


@pytest.mark.parametrize("name", ["ort-fp32", "ov-f32"])
def test_f32_engines_give_eager_torch_answers(tiny, built, name):
    if name not in built:
        pytest.skip("openvino not installed")
    fast = built[name]
    assert engine.build_info(fast.build)["precision"] == "fp32"
    for question, contexts in QUESTIONS:
        tokens, logps, prompt = tiny.generate(question, contexts, 8, stop_at_line_end=False)
        e_tokens, e_logps, e_prompt = fast.generate(question, contexts, 8, stop_at_line_end=False)
        assert (e_tokens, e_prompt) == (tokens, prompt) and len(tokens) >= 1
        assert e_logps == pytest.approx(logps, abs=1e-3)
        assert fast.answer(question, contexts, 8).text == tiny.answer(question, contexts, 8).text


def test_the_cache_handed_from_openvino_to_onnxruntime_continues_the_same_decode(tiny, built):
    """The int8 value's decoder (the prompt through OpenVINO, each new token through onnxruntime),
    run on the float32 build, gives eager torch's tokens: the prompt's cache reaches onnxruntime
    whole, every layer's keys and values in place."""
    from frontends.components.llm.engine_decode import OvOrtGreedy

    if "ov-f32" not in built:
        pytest.skip("openvino not installed")
    fp32 = built["ort-fp32"]
    fast = copy.copy(fp32)
    fast.decoder = OvOrtGreedy(fp32.build, 1, "f32")
    for question, contexts in QUESTIONS:
        tokens, logps, prompt = tiny.generate(question, contexts, 8, stop_at_line_end=False)
        e_tokens, e_logps, e_prompt = fast.generate(question, contexts, 8, stop_at_line_end=False)
        assert (e_tokens, e_prompt) == (tokens, prompt) and len(tokens) == 8
        assert e_logps == pytest.approx(logps, abs=1e-3)
    assert built["ov-ort-int8"].build == built["ort-int8"].build  # the same int8 build, read by both engines


def test_int8_is_another_build_and_variants_are_torch(tiny, built):
    fp32, int8 = built["ort-fp32"], built["ort-int8"]
    assert engine.build_info(int8.build)["precision"] == "int8"
    assert engine.build_info(int8.build)["bytes"] < engine.build_info(fp32.build)["bytes"]
    question, contexts = QUESTIONS[0]
    for name, model in built.items():  # every variant decodes (the int8 ones on other weights)
        assert len(model.generate(question, contexts, 8)[0]) >= 1, name
    for model in (fp32, int8):
        f16 = model.variant("float16")  # no engine runs it: torch's
        assert f16.decoder is None and not f16._engine_runs({})
        assert f16.generate(question, contexts, 4)[0] == tiny.variant("float16").generate(question, contexts, 4)[0]
    assert not fp32._engine_runs({"repetition_penalty": 1.2})  # generation options: the torch path


def test_precision_values_run_their_engine_builds(tiny, built):
    """int8 and bfloat16 decode through the engine builds that run them; with an early exit's
    layers or a per-token exit the same precision is torch's, on torch weights of that precision."""
    from frontends.components.llm.engine_model import precision_engines
    from frontends.components.llm.int8 import Int8Linear

    exact = built["ort-fp32"]
    question, contexts = QUESTIONS[0]
    assert exact.engines == precision_engines() and "int8" in exact.engines
    for precision, name in exact.engines.items():
        value = exact.with_precision(precision)
        assert value.decoder is not None and value.decoder is not exact.decoder and value._engine_runs({})
        assert value.build.name == engine.ENGINE_PRECISIONS[name] and exact.build.name == "fp32"
        assert len(value.generate(question, contexts, 4)[0]) >= 1
    q8 = exact.with_precision("int8")
    assert "model" not in q8.__dict__ or q8.__dict__["model"] is None  # torch's int8 weights: built on first need
    cut = exact.variant("int8", 1)
    assert cut.decoder is None and any(isinstance(m, Int8Linear) for m in cut.model.modules())
    assert any(isinstance(m, Int8Linear) for m in q8.model.modules())  # shared with the torch variants
    exit_ = q8.with_token_exit(90)
    assert not exit_._engine_runs({}) and exit_.model is q8.model
    # kept outputs: the engine model's are never read for torch's, nor one engine's for another's
    names = {provider_identity(m) for m in (tiny, *built.values())}
    assert len(names) == 1 + len(built)


def test_int4_is_an_engine_build_only(tiny, built):
    """int4 decodes its own, smaller build (named apart from fp32's, so kept outputs are never
    shared); torch has no int4 model: asking for one (no engine, an early exit's layers, a
    per-token exit, generation options) is one line that says so."""
    exact, question, contexts = built["ort-fp32"], *QUESTIONS[0]
    q4 = exact.with_precision("int4")
    assert exact.engines["int4"] == "ort-int4" and q4.decoder is not exact.decoder and q4._engine_runs({})
    info = engine.build_info(q4.build)
    assert info["precision"] == "int4" and info["bytes"] < engine.build_info(exact.build)["bytes"]
    assert len(q4.generate(question, contexts, 4)[0]) >= 1
    assert provider_identity(q4) != provider_identity(exact) and q4.name != exact.name
    for ask in (lambda: tiny.with_precision("int4"), lambda: exact.variant("int4", 1),
                lambda: q4.with_token_exit(90), lambda: q4.generate(question, contexts, 4, repetition_penalty=1.2)):
        with pytest.raises(ApproxError, match="int4 runs only through an inference engine build") as err:
            ask()
        assert "\n" not in str(err.value)


def test_an_op_asking_for_an_engine_value_builds_no_torch_model(tiny, built):
    """A generate op reaches a precision value through `variant_for` (the runtime makes the
    variant before it times the call): an engine value's variant decodes its build and
    leaves torch's weights of that precision unbuilt (int4 has none: it failed there)."""
    from frontends.components.settings import GenerateSettings

    exact, question, contexts = built["ort-fp32"], *QUESTIONS[0]
    value = exact.variant_for(GenerateSettings(model="tiny", precision="int4"))
    assert value.decoder is not None and value.__dict__.get("model") is None
    assert value.answer(question, contexts, 4).new_tokens >= 1 and value.__dict__.get("model") is None


def test_switch(tiny, monkeypatch):
    monkeypatch.delenv(engine.ENV, raising=False)
    assert engine_model.through_engine(tiny) is tiny  # unset: eager torch
    assert engine.default_engine("cpu") == engine.EXACT and engine.default_engine("cuda") is None
    monkeypatch.setenv(engine.ENV, "ort-fp16")
    with pytest.raises(ApproxError, match="expected torch or one of") as err:
        engine_model.through_engine(tiny)
    assert "\n" not in str(err.value)
    monkeypatch.setenv(engine.ENV, "ort-fp32")
    assert engine.chosen_engine() == "ort-fp32"
    monkeypatch.setenv(engine.ENV, "torch")
    assert engine.default_engine("cpu") is None and engine_model.through_engine(tiny) is tiny
    monkeypatch.setenv(engine.ENV, "ov-bf16")
    assert engine.default_engine("cpu") == "ov-bf16"


def test_a_failing_build_says_so_in_one_line_and_leaves_the_process_as_it_was(tmp_path):
    """The builder runs in this process: its failure is one ApproxError line, and the
    command line and offline switch it ran under are given back."""
    import sys

    import huggingface_hub.constants as hub

    argv, offline = list(sys.argv), hub.HF_HUB_OFFLINE
    with pytest.raises(ApproxError, match=r"builder failed: .*") as err:
        engine.run_builder(["-i", str(tmp_path / "missing"), "-o", str(tmp_path / "out"), "-p", "int3", "-e", "cpu"])
    assert "\n" not in str(err.value)
    assert sys.argv == argv and hub.HF_HUB_OFFLINE == offline
