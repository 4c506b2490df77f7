"""Torch models through torch-mlir, the approx pipeline and the JIT: exact at knob 0,
substitution gives the variant's output, precision gives f32/f16 arithmetic op by op."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from approx_dialect.diagnostics import ApproxError  # noqa: E402
from approx_opt.driver import run_pipeline  # noqa: E402
from approx_opt.jit import compile_module  # noqa: E402
from frontends.torch_export import weights_of  # noqa: E402
from frontends.torch_frontend import TorchProgram, import_torch  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)

F32 = dict(rtol=1e-5, atol=1e-6)


class MLP(torch.nn.Module):
    def __init__(self, i=6, h=16, o=4):
        super().__init__()
        self.l1, self.l2 = torch.nn.Linear(i, h), torch.nn.Linear(h, o)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class ConvBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(y.mean(dim=(2, 3)))


class Attention(torch.nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.q, self.k, self.v, self.ln = (torch.nn.Linear(d, d), torch.nn.Linear(d, d),
                                           torch.nn.Linear(d, d), torch.nn.LayerNorm(d))

    def forward(self, x):
        a = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) / 8 ** 0.5, -1)
        return self.ln(x + a @ self.v(x))


def ref(model, *args, double=False):
    with torch.no_grad():
        if double:
            import copy
            model, args = copy.deepcopy(model).double(), [a.double() for a in args]
        return model.eval()(*args).numpy()


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model, small, x = MLP(), MLP(h=4), torch.randn(5, 6)
    return model, small, x, TorchProgram(model, [x], variants={1: small})


def test_knobs_are_read_from_the_annotations(mlp):
    *_, prog = mlp
    specs = {s.name: (s.transform_type, s.values) for s in prog.knobs()}
    assert specs == {"forward": ("func_substitute", (0, 1)),
                     "forward_exact": ("precision_reduce", (0, 1, 2)),
                     "approx_forward_1": ("precision_reduce", (0, 1, 2))}


def test_knob_0_equals_torch(mlp):
    model, _, x, prog = mlp
    y = prog.build({})(x)
    np.testing.assert_allclose(y, ref(model, x), **F32)
    np.testing.assert_allclose(y, ref(model, x, double=True), rtol=1e-12, atol=1e-14)
    assert np.array_equal(prog.build({"forward": {"knob_val": 0}, "forward_exact": {"knob_val": 0}})(x.numpy()), y)


def test_substitution_runs_the_variant(mlp):
    model, small, x, prog = mlp
    y = prog.build({"forward": {"knob_val": 1}})(x)
    np.testing.assert_allclose(y, ref(small, x, double=True), rtol=1e-12, atol=1e-14)
    assert np.abs(y - ref(model, x)).max() > 0.1
    # the variant's own precision knob
    y32 = prog.build({"forward": {"knob_val": 1}, "approx_forward_1": {"knob_val": 1}})(x)
    np.testing.assert_allclose(y32, ref(small, x), **F32)


def _emulated(model, x, dtype):
    """The MLP in numpy, every op rounded to `dtype`, in linalg's order (k ascending)."""
    def linear(a, lin):
        w = lin.weight.detach().double().numpy().astype(dtype)
        b = lin.bias.detach().double().numpy().astype(dtype)
        acc = np.zeros((a.shape[0], w.shape[0]), dtype)
        for k in range(a.shape[1]):
            acc = acc + a[:, k, None] * w.T[None, k, :]
        return acc + b

    h = linear(x.double().numpy().astype(dtype), model.l1)
    return linear(np.where(h > 0, h, dtype(0)), model.l2).astype(np.float64)


@pytest.mark.parametrize("knob,dtype", [(1, np.float32), (2, np.float16)])
def test_precision_knob_computes_in_f32_and_f16(mlp, knob, dtype):
    model, _, x, prog = mlp
    y = prog.build({"forward_exact": {"knob_val": knob}})(x)
    assert np.array_equal(y, _emulated(model, x, dtype))
    exact = ref(model, x, double=True)
    err = np.abs(y - exact).max() / np.abs(exact).max()
    assert (1e-9 < err < 1e-6) if knob == 1 else (1e-5 < err < 1e-2)
    if knob == 1:
        np.testing.assert_allclose(y, ref(model, x), **F32)  # torch's own f32


def test_static_transform_and_decision_tree():
    from frontends import DecisionTree, StaticTransform

    torch.manual_seed(1)
    model, small, x = MLP(), MLP(h=4), torch.randn(5, 6)
    static = TorchProgram(model, [x], static_transform=StaticTransform("func_substitute", 1, approx_kernel=small))
    np.testing.assert_allclose(static.build({})(x), ref(small, x), **F32)
    assert [s.current for s in static.knobs() if s.name == "forward"] == [{"knob_val": 1}]
    tree = DecisionTree(state_function=lambda x: x.abs().mean() * 100, state_indices=[0], thresholds=[100],
                        decisions=[1, 0], transform_type="func_substitute", approx_kernels={1: small},
                        thresholds_lower=[0], thresholds_upper=[1000])
    prog = TorchProgram(model, [x], decision_tree=tree)
    (spec,) = [s for s in prog.knobs() if s.name == "forward"]
    assert spec.kind == "ladder" and spec.current == {"thresholds": [100], "decisions": [1, 0]}
    f = prog.build({})
    quiet, loud = x * 0.1, x * 3  # state ~8 -> variant; ~240 -> exact
    np.testing.assert_allclose(f(quiet), ref(small, quiet), **F32)
    np.testing.assert_allclose(f(loud), ref(model, loud), **F32)
    g = prog.build({"forward": {"thresholds": [5], "decisions": [1, 0]}})
    np.testing.assert_allclose(g(quiet), ref(model, quiet), **F32)
    with pytest.raises(ApproxError, match="picks variants"):
        TorchProgram(model, [x], static_transform=StaticTransform("loop_perforate", 2))


@pytest.mark.parametrize("make,shape", [(ConvBlock, (2, 3, 8, 8)), (Attention, (2, 5, 8))])
def test_conv_and_attention_blocks(make, shape):
    torch.manual_seed(2)
    model, x = make(), torch.randn(*shape)
    with torch.no_grad():  # non-trivial batch-norm statistics
        for name, buf in model.named_buffers():
            if buf.is_floating_point():
                buf.uniform_(0.5, 1.5)
    prog = TorchProgram(model, [x])
    np.testing.assert_allclose(prog.build({})(x), ref(model, x), **F32)
    np.testing.assert_allclose(prog.build({})(x), ref(model, x, double=True), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(prog.build({"forward_exact": {"knob_val": 1}})(x), ref(model, x), rtol=1e-4, atol=1e-5)


def test_import_torch_text_runs_through_the_pipeline():
    torch.manual_seed(3)
    model, x = MLP(), torch.randn(3, 6)
    text = import_torch(model, x, name="mlp", double=True)
    assert "func.func @mlp(" in text and "linalg.generic" in text and "dense_resource" not in text
    fn = compile_module(run_pipeline(text, "approx-pipeline")).fn("mlp")
    weights = [w.double().numpy() for w in weights_of(model)[1]]
    np.testing.assert_allclose(fn(x.double().numpy(), *weights), ref(model, x, double=True), rtol=1e-12)
    inline = import_torch(model, x, name="mlp", inline_weights=True)
    y = compile_module(run_pipeline(inline, "approx-pipeline")).fn("mlp")(x.numpy())
    np.testing.assert_allclose(y, ref(model, x), **F32)


MATMULS = """
func.func @mm(%a: tensor<7x33xf64>, %b: tensor<33x17xf64>, %c: tensor<3x7x5xf64>, %d: tensor<3x5x9xf64>)
    -> (tensor<7x17xf64>, tensor<3x7x9xf64>) {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<7x17xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<7x17xf64>) -> tensor<7x17xf64>
  %r = linalg.matmul ins(%a, %b : tensor<7x33xf64>, tensor<33x17xf64>) outs(%f : tensor<7x17xf64>) -> tensor<7x17xf64>
  %e2 = tensor.empty() : tensor<3x7x9xf64>
  %f2 = linalg.fill ins(%z : f64) outs(%e2 : tensor<3x7x9xf64>) -> tensor<3x7x9xf64>
  %r2 = linalg.batch_matmul ins(%c, %d : tensor<3x7x5xf64>, tensor<3x5x9xf64>) outs(%f2 : tensor<3x7x9xf64>) -> tensor<3x7x9xf64>
  return %r, %r2 : tensor<7x17xf64>, tensor<3x7x9xf64>
}
"""  # noqa: E501 (MLIR text)


def test_loop_reordering_is_bit_identical():
    from torch_mlir import ir, passmanager

    from frontends.torch_loops import interchange

    with ir.Context():
        m = ir.Module.parse(MATMULS)
        passmanager.PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))").run(m.operation)
        plain = str(m)
        assert interchange(m) == 2  # both matmuls: the reduction moves out of the innermost loop
        reordered = str(m)
    assert '["parallel", "reduction", "parallel"]' in reordered
    assert '["parallel", "parallel", "reduction", "parallel"]' in reordered
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in [(7, 33), (33, 17), (3, 7, 5), (3, 5, 9)]]
    a, b = (compile_module(t).fn("mm")(*args) for t in (plain, reordered))
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    np.testing.assert_allclose(a[0], args[0] @ args[1], rtol=1e-12)


def test_bad_inputs_are_clear_errors(mlp):
    model, _, x, prog = mlp
    f = prog.build({})
    with pytest.raises(ApproxError, match=r"input 0: expected shape \(5, 6\).*got \(4, 6\)"):
        f(torch.randn(4, 6))
    with pytest.raises(ApproxError, match="takes 1 input"):
        f(x, x)
    with pytest.raises(ApproxError, match="expected float64 values, got int32"):
        f(np.zeros((5, 6), np.int32))
    with pytest.raises(ApproxError, match=r"variant 1 returns \[\(\(5, 3\).*the model returns \[\(\(5, 4\)"):
        TorchProgram(model, [x], variants={1: MLP(o=3)})
    with pytest.raises(ApproxError, match="needs variants"):
        TorchProgram(model, [x], static_transform=1)
    with pytest.raises(ApproxError, match="knob value 3 is not among its values"):
        prog.build({"forward_exact": {"knob_val": 3}})
    with pytest.raises(ApproxError, match="1 thresholds need 2 decisions"):
        TorchProgram(model, [x], variants={1: MLP(h=4)}, decision_tree=dict(state_function=torch.sum,
                                                                            thresholds=[1], decisions=[1]))
    with pytest.raises(ApproxError, match=r"static_transform 2 is not 0 or a variant \(\[1\]\)"):
        TorchProgram(model, [x], variants={1: MLP(h=4)}, static_transform=2)
    with pytest.raises(ApproxError, match="backend must be"):
        TorchProgram(model, [x], backend="tpu")


class Sorts(torch.nn.Module):
    def forward(self, x):
        return torch.sort(x, -1)[0]


class FFT(torch.nn.Module):
    def forward(self, x):
        return torch.fft.fft(x).real


def test_unsupported_ops_are_named():
    x = torch.randn(3, 4)
    want = r"test_torch_frontend.py:\d+: error: Sorts: .*tm_tensor.sort.*unsupported op"
    with pytest.raises(ApproxError, match=want):
        TorchProgram(Sorts(), [x])
    with pytest.raises(ApproxError, match=r"cannot lower torch.aten.fft_fft to linalg-on-tensors"):
        import_torch(FFT(), x)


@pytest.mark.slow
def test_iree_backend_runs_the_same_program():
    pytest.importorskip("iree.runtime", reason="the optional extra iree is not installed (pip install -e '.[iree]')")
    from frontends import DecisionTree

    torch.manual_seed(4)
    model, small, x = MLP(), MLP(h=4), torch.randn(5, 6)
    tree = DecisionTree(state_function=lambda x: x.abs().mean() * 100, state_indices=[0], thresholds=[100],
                        decisions=[1, 0], transform_type="func_substitute", approx_kernels={1: small})
    f = TorchProgram(model, [x], decision_tree=tree, backend="iree").build({"approx_forward_1": {"knob_val": 1}})
    np.testing.assert_allclose(f(x * 3), ref(model, x * 3, double=True), rtol=1e-12, atol=1e-14)  # f64 kept
    np.testing.assert_allclose(f(x * 0.1), ref(small, x * 0.1), **F32)  # variant, in f32
