"""The generate op's exact path on a GPU: eager `generate` against the compiled decode
(static KV cache, one CUDA graph per token), SmolLM2-135M's shape with random weights
(the same kernels and cost as the real weights), float32, TF32 off, batch 1, prompts of
300-900 tokens, 16 new tokens forced; paired per prompt (the two run back to back) and
the tokens compared. Run where CUDA is:

    python bench/gpu_decode_bench.py --prompts 40
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    import torch

    from frontends.components.llm.gpu_decode import CompiledGreedy, eager_greedy, smollm2_shape

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: run this on a GPU machine", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    model = smollm2_shape(dtype=getattr(torch, args.dtype))
    decoder = CompiledGreedy(model, max_len=1024)
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(100, 49000, (1, int(n)), generator=gen).cuda()
               for n in torch.randint(300, 900, (args.prompts,), generator=gen)]
    t0 = time.perf_counter()
    decoder(prompts[0], args.tokens)  # compiles the step and captures its graph: outside the timed passes
    eager_greedy(model, prompts[0], args.tokens)
    print(f"warm-up (compile + capture): {time.perf_counter() - t0:.1f} s")

    def timed(fn):
        torch.cuda.synchronize()
        t = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        return out, time.perf_counter() - t

    eager_s, compiled_s, same = [], [], 0
    for i, ids in enumerate(prompts):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        got = {}
        for which in order:
            if which == 0:
                got[0], dt = timed(lambda: eager_greedy(model, ids, args.tokens))
                eager_s.append(dt)
            else:
                (got[1], _), dt = timed(lambda: decoder(ids, args.tokens))
                compiled_s.append(dt)
        same += got[0] == got[1]
    ratio = sum(eager_s) / sum(compiled_s)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {args.dtype}, {args.prompts} prompts, "
          f"{args.tokens} tokens: eager {1000 * statistics.mean(eager_s):.0f} ms per question "
          f"(median {1000 * statistics.median(eager_s):.0f}), compiled {1000 * statistics.mean(compiled_s):.1f} ms "
          f"(median {1000 * statistics.median(compiled_s):.1f}): {ratio:.2f}x; same tokens on {same} of {len(prompts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
