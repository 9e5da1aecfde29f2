"""The fused FP8 cast (kernels/app_fp8cast.cu) and Float8FusedLinear on a real GPU with FP8 (the lent H100);
skipped without one or without torch: the e4m3 copy bit for bit against torch's
(x * scale).clamp(-448, 448).to(float8_e4m3fn) (x widened to float32 first: the kernel multiplies in
float32), the amax against x.abs().max() exactly, on odd sizes; the delayed scale step by step through a
short history; the linear against float64 on both GEMMs, its backward, and a CUDA graph replay."""

from __future__ import annotations

import importlib.util
import math

import pytest

from gpudissect.app import fp8cast
from helpers import has_gpu

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="no torch"),
]

SIZES = [1, 7, 8, 9, 15, 1000, 4097, 65536 + 3, 3 * (1 << 20) + 5, 24 * (1 << 20) + 11]


@pytest.fixture(scope="module")
def torch():
    import torch

    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("the fp8 cast needs compute capability 8.9 or newer")
    return torch


def _ref(torch, x, scale: float):
    s = torch.tensor(scale, dtype=torch.float32, device=x.device)
    return (x.float() * s).clamp(-448, 448).to(torch.float8_e4m3fn)


def _state(ff, torch, scale: float, history: int = 16):
    st = ff.CastState("cuda", history)
    st.words[fp8cast.SCALE] = scale
    st.primed = True  # cast with this scale, no first amax pass
    return st


def _same_bits(torch, a, b) -> int:
    """How many bytes differ."""
    return int((a.view(torch.uint8) != b.view(torch.uint8)).sum())


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("n", SIZES)
def test_cast_bit_for_bit_and_amax(torch, dtype, n):
    from gpudissect.app import float8_fused as ff

    g = torch.Generator(device="cuda").manual_seed(n)
    x = (torch.randn(n, device="cuda", generator=g) * 3).to(getattr(torch, dtype))
    amax = float(x.abs().max())
    # a scale that saturates the largest values and sends the smallest into e4m3's subnormals
    for scale in (448.0 / amax, 1.7 * 448.0 / amax, 0.013):
        st = _state(ff, torch, scale)
        q = ff.cast(x, st).data
        torch.cuda.synchronize()
        assert q.dtype == torch.float8_e4m3fn and q.shape == x.shape
        assert _same_bits(torch, q, _ref(torch, x, scale)) == 0, scale
        assert float(st.last_amax) == amax  # exact: a max picks one of the values
        inv = torch.tensor(scale, dtype=torch.float32, device="cuda").reciprocal()
        assert float(st.scale_inv) == float(inv)
        amax_acc, done = st.words[fp8cast.AMAX], st.words[fp8cast.DONE : fp8cast.DONE + 1].view(torch.int32)
        assert int(st.steps) == 1 and float(amax_acc) == 0.0 and int(done) == 0  # counters reset for the next call


def test_odd_shapes_and_views(torch):
    """A 2-D odd shape, a non-contiguous input and one at an odd offset (copied to aligned memory first)."""
    from gpudissect.app import float8_fused as ff

    x = torch.randn(333, 77, device="cuda").bfloat16()
    for v in (x, x.t(), x.flatten()[3:]):
        st = _state(ff, torch, 100.0)
        q = ff.cast(v, st).data
        assert _same_bits(torch, q, _ref(torch, v.contiguous(), 100.0).view(q.shape)) == 0
        assert float(st.last_amax) == float(v.abs().max())


def test_nan_propagates_and_zero_keeps_scale_one(torch):
    from gpudissect.app import float8_fused as ff

    x = torch.randn(5000, device="cuda").bfloat16()
    x[1234] = float("nan")
    st = _state(ff, torch, 10.0)
    q = ff.cast(x, st).data
    assert math.isnan(float(st.last_amax)) and math.isnan(float(q[1234].float()))
    assert float(st.scale) == 10.0  # a NaN history keeps the scale it had
    z = torch.zeros(4096, device="cuda", dtype=torch.bfloat16)
    st = ff.CastState("cuda")
    q = ff.cast(z, st).data
    assert float(st.scale) == 1.0 and float(st.scale_inv) == 1.0 and int(q.view(torch.uint8).sum()) == 0


def test_delayed_scaling_through_a_short_history(torch):
    """History 2: the first call primes with the tensor's own amax; each later call casts with 448 / the
    largest of the last two amaxes and saturates what lies above it."""
    from gpudissect.app import float8_fused as ff

    def f32(v: float) -> float:
        return float(torch.tensor(v, dtype=torch.float32))

    def expect(a: float) -> float:
        return float(torch.tensor(448.0, dtype=torch.float32) / torch.tensor(a, dtype=torch.float32))

    base = torch.randn(10007, device="cuda").bfloat16()
    x1, x2, x3 = base, base * 2, base / 4
    a1, a2, a3 = (f32(float(t.abs().max())) for t in (x1, x2, x3))
    st = ff.CastState("cuda", history=2)
    used = []
    for x, want_used, want_next in (
        (x1, expect(a1), expect(a1)),  # primed: its own amax
        (x2, expect(a1), expect(a2)),  # scaled by the history: x2's top saturates
        (x3, expect(a2), expect(a2)),  # a2 still in the history
        (x3, expect(a2), expect(a3)),  # a2 has left it
    ):
        q = ff.cast(x, st).data
        assert _same_bits(torch, q, _ref(torch, x, want_used)) == 0
        assert float(st.scale) == want_next
        used.append(float(st.scale_inv))
    assert int(st.steps) == 5  # the priming pass and four casts
    assert used == [
        float(1 / torch.tensor(v, dtype=torch.float32)) for v in (expect(a1), expect(a1), expect(a2), expect(a2))
    ]


def _rel(a, b) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize("gemm", ["torch", "ours"])
@pytest.mark.parametrize("m", [16, 100, 2048])
def test_linear_forward_backward(torch, gemm, m):
    from gpudissect.app import float8_fused as ff

    if gemm == "ours" and torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("our FP8 GEMM needs sm_90a")
    torch.manual_seed(m)
    w = torch.randn(768, 1024, device="cuda", dtype=torch.bfloat16) / math.sqrt(1024)
    lin = ff.Float8FusedLinear(w.clone(), gemm=gemm)
    x = torch.randn(m, 1024, device="cuda", dtype=torch.bfloat16)
    ref = x.double() @ w.double().t()
    with torch.no_grad():
        for _ in range(3):  # primed, then delayed twice: the same input gives the same scale
            y = lin(x)
            assert y.dtype == torch.bfloat16 and _rel(y, ref) < 0.08
    if m % 16:  # the backward's wgrad GEMM runs over the rows: _scaled_mm wants them a multiple of 16
        return
    xg = x.clone().requires_grad_(True)
    y = lin(xg)
    gy = torch.randn_like(y)
    y.backward(gy)
    assert _rel(y.detach(), ref) < 0.08
    assert _rel(xg.grad, gy.double() @ w.double()) < 0.12
    assert _rel(lin.weight.grad, gy.double().t() @ x.double()) < 0.12


def test_linear_under_graph_capture(torch):
    """A captured forward replays the casts (the state moves on the device) and follows new inputs."""
    from gpudissect.app import float8_fused as ff

    w = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16) / 16
    lin = ff.Float8FusedLinear(w.clone())
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        lin(x)  # primes both states before the capture
        torch.cuda.synchronize()
        steps = int(lin.w_state.steps)
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.cuda.graph(g):
            y = lin(x)
        torch.cuda.current_stream().wait_stream(s)
        for k in range(3):
            x.copy_(torch.randn_like(x))
            g.replay()
            torch.cuda.synchronize()
            assert _rel(y, x.double() @ w.double().t()) < 0.08
            assert int(lin.w_state.steps) == steps + k + 1


def test_layer_fused_matches_fp32(torch):
    """The decoder layer with fused FP8 linears (weights cast every forward) within the layer benchmark's
    tolerance of the FP32 layer, second call (delayed scale)."""
    import copy

    from gpudissect.app import float8, float8_fused
    from gpudissect.app.layer import build_layer
    from gpudissect.app.layer_run import TOL

    ref_layer = build_layer(512, 1408, 8, torch.float32, "cuda", seed=3)
    x = torch.randn(2, 64, 512, device="cuda")
    with torch.no_grad():
        ref = ref_layer(x) - x
        for gemm, kind in (("torch", "fp8_fused"), ("ours", "fp8_fused_ours")):
            if gemm == "ours" and torch.cuda.get_device_capability() != (9, 0):
                continue
            m = copy.deepcopy(ref_layer).to(torch.bfloat16)
            float8.swap_linears(m, lambda lin, gemm=gemm: float8_fused.Float8FusedLinear.from_linear(lin, gemm=gemm))
            xb = x.bfloat16()
            m(xb)
            err = _rel(m(xb).float() - xb.float(), ref)
            assert err <= TOL[kind], (kind, err)
