"""Torch models through torch-mlir and the JIT (frontends/torch_frontend.py): the
exact model run by MLIR against torch eager on the CPU, and speedup / QoS per knob
(substitution by smaller variants, precision), all measured in the same run.

Model: MLP 512-2048-512 (ReLU, random weights), batch 64, inputs on a random
32-dimensional subspace. Variants (substitution knob k = 1, 2, 3): the model pruned
to 1024, 512, 128 hidden units (largest contribution), output layer refitted by least
squares on 4096 calibration inputs, disjoint from the measured batch.
QoS = 1 - ||y_exact - y||2 / ||y_exact||2 against MLIR's knob 0 (f64). Times: medians
after a warm-up. The JIT runs on one thread; torch eager is shown with its default
threads and with one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from frontends import torch_iree  # noqa: E402
from frontends.torch_frontend import TorchProgram  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self, d: int = 512, h: int = 2048):
        super().__init__()
        self.l1, self.l2 = torch.nn.Linear(d, h), torch.nn.Linear(h, d)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def pruned(teacher: MLP, hidden: int, calib: torch.Tensor) -> MLP:
    """A smaller MLP: the `hidden` hidden units of `teacher` with the largest
    contribution on `calib` (||activation|| * ||outgoing weights||), the output layer
    refitted by least squares to the teacher's outputs on `calib`."""
    w1, b1, w2 = teacher.l1.weight.detach(), teacher.l1.bias.detach(), teacher.l2.weight.detach()
    with torch.no_grad():
        act, target = torch.relu(calib @ w1.T + b1), teacher(calib)
    keep = (act.norm(dim=0) * w2.norm(dim=0)).argsort(descending=True)[:hidden]
    design = torch.cat([act[:, keep], torch.ones(len(calib), 1)], 1).double()
    fit = torch.linalg.lstsq(design, target.double()).solution.float()
    student = MLP(teacher.l1.in_features, hidden)
    with torch.no_grad():
        student.l1.weight.copy_(w1[keep])
        student.l1.bias.copy_(b1[keep])
        student.l2.weight.copy_(fit[:-1].T)
        student.l2.bias.copy_(fit[-1])
    return student.eval()


def inputs(n: int, basis: torch.Tensor) -> torch.Tensor:
    """Inputs on a low-dimensional subspace (as real data lies near one)."""
    return torch.randn(n, basis.shape[0]) @ basis


def median_time(call, repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(d: int = 512, h: int = 2048, batch: int = 64, hidden=(1024, 512, 128), rank: int = 32,
         repeat: int = 7) -> list[dict]:
    warnings.filterwarnings("ignore", category=FutureWarning)
    torch.manual_seed(0)
    model, basis = MLP(d, h).eval(), torch.randn(rank, d) / rank ** 0.5
    calib = inputs(4096, basis)
    variants = {k: pruned(model, n, calib) for k, n in enumerate(hidden, 1)}
    x = inputs(batch, basis)  # drawn after (disjoint from) the calibration inputs
    start = time.perf_counter()
    prog = TorchProgram(model, [x], variants=variants)
    import_s = time.perf_counter() - start

    print(f"## torch models: MLP {d}-{h}-{d}, batch {batch}, through torch-mlir and the JIT")
    print(f"(import of the model and {len(variants)} variants: {import_s:.1f} s; QoS = 1 - ||y_exact - y||2 / "
          f"||y_exact||2, exact = MLIR knob 0 (f64); medians of {repeat} runs after a warm-up)\n")
    rows = []
    threads = torch.get_num_threads()
    with torch.no_grad():
        eager = {}
        for label, m, xx in [("f32", model, x), ("f64", MLP(d, h).double().eval(), x.double())]:
            if label == "f64":
                m.load_state_dict(model.state_dict())
            torch.set_num_threads(threads)
            eager[label] = median_time(lambda: m(xx), repeat)
            torch.set_num_threads(1)
            eager[label + " 1 thread"] = median_time(lambda: m(xx), repeat)
        torch.set_num_threads(threads)
    exact_fn = prog.build({})
    exact_t = median_time(lambda: exact_fn(x), repeat)
    print("| run | time (ms) | MLIR exact (f64) time / this time |")
    print("|---|---|---|")
    print(f"| MLIR exact, knob 0 (f64, 1 thread) | {exact_t * 1e3:.1f} | 1.00 |")
    for label, t in eager.items():
        name = f"torch eager {label}" + ("" if "thread" in label else f" ({threads} threads)")
        print(f"| {name} | {t * 1e3:.1f} | {exact_t / t:.2f} |")
        rows.append({"run": name, "time_s": t, "ratio": exact_t / t})

    y_exact = exact_fn(x)
    print("\n| substitution k | precision | time (ms) | speedup vs exact | speedup vs f32 (k=0) | QoS |")
    print("|---|---|---|---|---|---|")
    measured = {}
    for k in (0, *variants):
        fname = "forward_exact" if k == 0 else f"approx_forward_{k}"
        for p in (0, 1, 2):
            fn = prog.build({"forward": {"knob_val": k}, fname: {"knob_val": p}})
            y = fn(x)
            qos = 1 - np.linalg.norm(y_exact - y) / np.linalg.norm(y_exact)
            measured[k, p] = (median_time(lambda: fn(x), repeat), qos)
    f32_t = measured[0, 1][0]
    for (k, p), (t, qos) in measured.items():
        print(f"| {k} (hidden {h if k == 0 else hidden[k - 1]}) | {('f64', 'f32', 'f16')[p]} | {t * 1e3:.1f} "
              f"| {exact_t / t:.2f}x | {f32_t / t:.2f}x | {qos:.6f} |")
        rows.append({"k": k, "precision": p, "time_s": t, "speedup": exact_t / t, "qos": qos})
    if torch_iree.available():
        print("\n| IREE llvm-cpu, 1 thread (local-sync): substitution k | precision | time (ms) "
              "| speedup vs MLIR JIT exact | JIT time / IREE time | QoS |")
        print("|---|---|---|---|---|---|")
        for k, p in [(0, 0), (0, 1), (0, 2), (2, 1)]:
            fname = "forward_exact" if k == 0 else f"approx_forward_{k}"
            fn = prog.build({"forward": {"knob_val": k}, fname: {"knob_val": p}}, backend="iree")
            y = fn(x)
            t = median_time(lambda: fn(x), repeat)
            qos = 1 - np.linalg.norm(y_exact - y) / np.linalg.norm(y_exact)
            print(f"| {k} | {('f64', 'f32', 'f16')[p]} | {t * 1e3:.1f} | {exact_t / t:.2f}x "
                  f"| {measured[k, p][0] / t:.2f} | {qos:.6f} |")
            rows.append({"backend": "iree", "k": k, "precision": p, "time_s": t, "speedup": exact_t / t, "qos": qos})
    else:
        print("\n(IREE not installed: pip install 'approx-toolchain[iree]' adds the IREE rows)")
    return rows


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
