"""The generate op's exact path on a GPU: the compiled decode (static KV cache, one CUDA
graph per token) gives the eager path's greedy tokens. Runs where CUDA is (the device
machine: `python -m pytest tests/test_llm_gpu.py`); skipped elsewhere."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device: the compiled GPU decode path is tested on a GPU machine")


def test_compiled_decode_gives_the_eager_tokens():
    from frontends.components.llm.gpu_decode import CompiledGreedy, eager_greedy, smollm2_shape

    torch.backends.cuda.matmul.allow_tf32 = False
    model = smollm2_shape()
    decoder = CompiledGreedy(model, max_len=1024)
    gen = torch.Generator().manual_seed(1)
    for length in (300, 517, 900, 411):
        ids = torch.randint(100, 49000, (1, length), generator=gen).to("cuda")
        tokens, logps = decoder(ids, 16)
        assert tokens == eager_greedy(model, ids, 16), length
        assert len(logps) == 16 and all(lp <= 0 for lp in logps)


def test_a_stop_ends_decoding_after_its_token():
    from frontends.components.llm.gpu_decode import CompiledGreedy, smollm2_shape

    model = smollm2_shape()
    decoder = CompiledGreedy(model, max_len=1024)
    ids = torch.randint(100, 49000, (1, 400), generator=torch.Generator().manual_seed(2)).to("cuda")
    full, _ = decoder(ids, 12)
    stopped, _ = decoder(ids, 12, stop=lambda toks: len(toks) == 5)
    assert stopped == full[:5]
