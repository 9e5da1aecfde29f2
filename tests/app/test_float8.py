"""The FP8 recipe (gpudissect.app.float8) on small CPU tensors; runs only where torch is installed
(CI has none: the app extra is optional), skipped otherwise."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
from gpudissect.app import float8 as f8  # noqa: E402


def _rel(a, b) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_scale_maps_amax_to_the_format_maximum():
    x = torch.tensor([[0.5, -3.0], [1.25, 2.0]])
    assert float(f8.amax(x)) == 3.0
    for dtype, top in ((f8.E4M3, 448.0), (f8.E5M2, 57344.0)):
        q = f8.quantize(x, dtype)
        assert q.data.dtype == dtype
        assert float(q.data.float().abs().max()) == top  # amax lands exactly on the largest finite value
        assert float(q.scale_inv) == pytest.approx(3.0 / top)


def test_zero_tensor_gets_scale_one_and_stays_zero():
    q = f8.quantize(torch.zeros(4, 4))
    assert float(q.scale_inv) == 1.0
    assert not bool(q.data.float().any())


def test_quantize_error_is_within_half_an_ulp_of_e4m3():
    torch.manual_seed(1)
    x = torch.randn(64, 64)
    q = f8.quantize(x)
    back = f8.dequantize(q)
    s = 1.0 / float(q.scale_inv)
    # e4m3: 3 fraction bits -> relative error <= 2^-4 for normals; subnormal step 2^-9 (absolute, scaled)
    err = (back - x).abs()
    bound = torch.maximum(x.abs() * 2.0**-4, torch.full_like(x, 2.0**-10 / s))
    assert bool((err <= bound * (1 + 1e-6)).all())
    assert not bool(torch.isnan(q.data.float()).any())


def test_scaling_does_not_depend_on_the_input_magnitude():
    torch.manual_seed(2)
    x = torch.randn(32, 32)
    a = f8.quantize(x)
    b = f8.quantize(x * 2.0**20)  # would overflow e4m3 unscaled
    assert torch.equal(a.data.view(torch.uint8), b.data.view(torch.uint8))


def test_float8_linear_matches_float64_within_the_stated_bounds():
    torch.manual_seed(3)
    x = torch.randn(64, 128, dtype=torch.bfloat16, requires_grad=True)
    w = (torch.randn(96, 128) / math.sqrt(128)).to(torch.bfloat16)
    lin = f8.Float8Linear(w.clone())
    y = lin(x)
    assert y.dtype == torch.bfloat16
    assert _rel(y, x.detach().double() @ w.double().t()) < 0.08
    g = torch.randn_like(y)
    y.backward(g)
    assert _rel(x.grad, g.double() @ w.double()) < 0.12
    assert _rel(lin.weight.grad, g.double().t() @ x.detach().double()) < 0.12


def test_backward_casts_the_gradient_to_e5m2(monkeypatch):
    seen = []
    real = f8.quantize

    def spy(t, dtype=f8.E4M3):
        seen.append(dtype)
        return real(t, dtype)

    monkeypatch.setattr(f8, "quantize", spy)
    x = torch.randn(16, 32, dtype=torch.bfloat16, requires_grad=True)
    lin = f8.Float8Linear(torch.randn(16, 32, dtype=torch.bfloat16))
    lin(x).sum().backward()
    assert seen == [f8.E4M3, f8.E4M3, f8.E5M2]  # x, W forward; dY backward


def test_inference_linear_casts_weights_once_and_drops_them():
    lin = torch.nn.Linear(64, 48, bias=True)
    m = f8.Float8InferenceLinear.from_linear(lin)
    assert m.weight_fp8.dtype == f8.E4M3 and not any(True for _ in m.parameters())
    x = torch.randn(5, 64)
    ref = lin(x).detach()
    assert _rel(m(x), ref) < 0.08


def test_swap_linears_replaces_all_but_the_kept_ones():
    net = torch.nn.Sequential(
        torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(32, 16)), torch.nn.Linear(16, 8)
    )
    n = f8.swap_linears(net, f8.Float8Linear.from_linear, keep=lambda name, lin: name == "3")
    assert n == 2
    assert isinstance(net[0], f8.Float8Linear) and isinstance(net[2][0], f8.Float8Linear)
    assert isinstance(net[3], torch.nn.Linear)


def test_forward_phases_compose_to_the_forward():
    torch.manual_seed(4)
    x = torch.randn(32, 64, dtype=torch.bfloat16)
    w = torch.randn(48, 64, dtype=torch.bfloat16)
    sx, sw = f8.phase_amax_scale(x, w)
    xq, wq = f8.phase_cast(x, w, sx, sw)
    y = f8.phase_gemm(xq, wq, torch.bfloat16)
    with torch.no_grad():
        assert torch.equal(y, f8.Float8Linear(w)(x))
