"""A generation option reaches every decoding loop of a model that claims it, or is refused
where the program is declared: the loops choose each token by one function (`next_token`:
the argmax after the options' logits processors), a greedy model claims no sampling or
search option (`base.NOT_GREEDY`), and a call whose options draw at random is never
answered from kept outputs. Tiny random-weight models only (a GPT-2 folder, a Llama built
here): their tokens are noise, the plumbing is real."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from frontends.components.llm.base import drawing
from frontends.components.llm.next_token import next_token
from tests.test_declared_settings import PENALTY, hf_tokens
from tests.test_llm_support import causal, one_torch_thread, tiny_gpt2  # noqa: F401 (autouse fixture)

ROOT = Path(__file__).resolve().parents[1]
N = 12


@pytest.fixture(scope="module")
def llama():
    """A 2-layer, 32-wide Llama with random weights (the shape the per-token exit and the
    GPU decode read) and a prompt of 12 random ids."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config).eval()
    return model, torch.randint(3, 128, (1, 12), generator=torch.Generator().manual_seed(1))


def test_the_next_token_is_the_argmax_after_the_processors():
    logits = torch.tensor([0.5, 2.0, 2.0, -1.0])
    assert next_token(logits) == 1 and next_token(logits.view(1, -1)) == 1  # a tie: the first
    assert next_token(logits.numpy()) == 1 and next_token(np.float32([[3.0, 1.0]])) == 0
    seen = torch.tensor([[1]])

    def ban_seen(ids, scores):
        assert scores.shape == (1, 4) and scores.dtype == torch.float32
        return scores.index_fill(1, ids[0], -1e9)

    assert next_token(logits.to(torch.bfloat16), ban_seen, seen) == 2
    assert next_token(logits, ban_seen, lambda: seen) == 2  # the ids built only when asked for


def loops(model, ids, options: dict) -> dict[str, list[int]]:
    """`N` tokens after `ids` from each decoding loop written here that reads a Llama, under
    the generation `options` (their logits processors; the engine's loop takes none: a call
    with options runs torch's variant)."""
    from frontends.components.llm import engine_decode, token_exit
    from frontends.components.llm.generation import processors
    from frontends.components.llm.gpu_decode import CompiledGreedy

    process = processors(model, options, ids.shape[1])
    got = {"token_exit": token_exit.greedy(model, ids, N, None, (), lambda t: False, processors=process).tokens}
    with torch.compiler.set_stance("force_eager"):  # the compiled step's arithmetic, uncompiled (no CUDA here)
        got["gpu_decode"] = CompiledGreedy(model, max_len=64)(ids, N, processors=process)[0]
    if not options:
        from transformers import DynamicCache

        from frontends.components.llm.gpu_decode import cache_keyword

        cache = {cache_keyword(model): DynamicCache(config=model.config)}
        with torch.inference_mode():
            first = model(input_ids=ids, use_cache=True, **cache).logits[0, -1].numpy()

            def advance(token: int, fed: int):
                return model(input_ids=torch.tensor([[token]]), use_cache=True, **cache).logits[0, -1].numpy()

            got["engine_decode"] = engine_decode.greedy(first, advance, N, lambda t: False)[0]
    return got


def test_at_knob_0_every_loop_takes_the_argmax_generate_takes(llama):
    model, ids = llama
    want = hf_tokens(model, ids, N)
    assert loops(model, ids, {}) == {"token_exit": want, "gpu_decode": want, "engine_decode": want}
    lm = causal(0)
    prompt = "Context: the cat sat on the mat.\nQuestion: who sat?\nAnswer:"
    assert list(lm.generate(prompt, N).token_ids) == hf_tokens(lm.model, lm.tokenizer(prompt, return_tensors="pt")
                                                               ["input_ids"], N)


def test_an_honoured_option_changes_the_tokens_of_every_loop_claiming_it(llama):
    model, ids = llama
    plain, want = hf_tokens(model, ids, N), hf_tokens(model, ids, N, repetition_penalty=PENALTY)
    assert want != plain  # the penalty changes this prompt's greedy tokens
    assert loops(model, ids, {"repetition_penalty": PENALTY}) == {"token_exit": want, "gpu_decode": want}


def test_which_options_draw_at_random():
    assert drawing({"temperature": 0.7, "top_p": 1.0, "top_k": 1, "num_beams": 4, "repetition_penalty": 1.3}) \
        == ("temperature",)
    assert drawing({"temperature": 0.0, "do_sample": 0}) == ()
    assert drawing({"do_sample": 1, "top_p": 0.9, "top_k": 40}) == ("do_sample", "top_k", "top_p")


TEMPERATURE = ('Setting("temperature", "float", "call", "tokens drawn at this temperature (0: greedy)", '
               'low=0),')
PROBE = '''
import json, sys
from types import SimpleNamespace
from approx_dialect.diagnostics import ApproxError
from frontends import CausalLM, Generate, Knob, OpenAIAnswerModel, Prompt, Tune
from frontends.components.llm.smollm import SmolLM2
from frontends.components.settings import GenerateSettings, draws

lm = CausalLM.from_path(sys.argv[1], name="tiny")
out = {"supports": {"causal": "temperature" in CausalLM.supports, "smollm": "temperature" in SmolLM2.supports,
                    "endpoint": "temperature" in OpenAIAnswerModel.supports}, "refused": []}


def refused(make):
    try:
        make()
    except ApproxError as err:
        out["refused"].append(str(err))
    else:
        out["refused"].append(None)


def ask_with(component):
    def ask(question, contexts):
        return component(question, contexts).text
    return Knob()(ask)


refused(lambda: Generate("answer", lm, temperature=0.7))
refused(lambda: Prompt("rewrite", lm, template="{question}", temperature=0.7))
refused(lambda: ask_with(Generate("answer", lm, tune=[Tune.param("temperature", 0.7)])).knobs())
refused(lambda: lm.answer("q", ["c"], 2, temperature=0.7))

sent = []


def create(**body):
    sent.append([body["temperature"], body["extra_body"]])
    return SimpleNamespace(choices=[SimpleNamespace(text=f"answer {len(sent)}", logprobs=None)], usage=None)


llm = OpenAIAnswerModel("http://127.0.0.1:9/v1", "m", timeout=5, name="llm", logprobs=False)
llm.client = SimpleNamespace(completions=SimpleNamespace(create=create))
program = ask_with(Generate("answer", llm, max_new_tokens=4, tune=[Tune.param("temperature", 0.7)]))
assert program.keep_outputs(sys.argv[2])
texts = {}
with program.reuse.reading():
    for knob in (0, 0, 1, 1):
        texts.setdefault(knob, []).append(program.build({"answer.temperature": {"knob_val": knob}})("q", ["c"]))
hot = GenerateSettings(model="llm", temperature=0.7)
out.update(sent=sent, texts=texts, counts=program.reuse_counts(),
           draws={"endpoint": draws(llm, hot), "greedy": draws(llm, GenerateSettings(model="llm", temperature=None)),
                  "causal": draws(lm, hot)})
print(json.dumps(out))
'''


def test_a_sampling_option_is_refused_for_a_greedy_model_and_a_drawing_call_is_never_kept(tmp_path):
    """`temperature` declared in one line (in a copy of the toolchain): a transformers model
    (greedy) does not claim it, so writing it, tuning it or passing it is one line naming
    the model and the option; an endpoint claims it and sends it as the standard field,
    and its calls at a temperature > 0 run every time while its greedy ones are kept."""
    for package in ("approx_dialect", "passes", "approx_opt", "frontends"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "approx_dialect" / "component.py"
    text = source.read_text()
    anchor = "GENERATE_SETTINGS = (\n"
    assert text.count(anchor) == 1
    source.write_text(text.replace(anchor, anchor + "    " + TEMPERATURE + "\n"))
    (tmp_path / "probe.py").write_text(PROBE)  # a file: decorated functions are lowered from their source
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "probe.py", str(tiny_gpt2(0)), str(tmp_path / "kept.db")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["supports"] == {"causal": False, "smollm": False, "endpoint": True}
    greedy = "its decoding is greedy: no sampling, no beam search"
    declared = f"'temperature' is not supported by its provider tiny ({greedy})"
    assert got["refused"][0] == f"<component>: error: component 'answer' (component.generate): {declared}"
    assert got["refused"][1] == f"<component>: error: component 'rewrite' (component.generate): {declared}"
    tuned = got["refused"][2]  # refused where the program is lowered: its line named
    assert tuned.endswith(f": error: component 'answer' (component.generate): {declared}") and "probe.py:" in tuned
    assert got["refused"][3].startswith("tiny: error: 'tiny' does not take the generation option 'temperature'")
    assert got["refused"][3].endswith(f"; {greedy})")
    assert got["sent"] == [[0.0, None], [0.7, None], [0.7, None]]  # greedy once (then kept), hot twice
    assert got["texts"] == {"0": ["answer 1", "answer 1"], "1": ["answer 2", "answer 3"]}
    assert got["counts"] == {"reused": 1, "run": 1, "requests_sent": 3, "requests_kept": 1}
    assert got["draws"] == {"endpoint": ["temperature"], "greedy": [], "causal": []}
