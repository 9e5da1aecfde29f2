"""The small-M path (gemm.small) on a real GPU (the lent H100); skipped without one, without torch or off
sm_90a. Through the public matmul (rung=SMALL) on the Llama-3-8B projection shapes at 1-100 tokens against an
fp32 reference within the benchmark's bound (bench/gemm/cases.py max_norm_bound); every token tile forced; the
plan re-pointed at other tensors; launches back to back (the tile counters reset by the last CTA: a stale
count would skip or double a fix-up) and bit-identical (the partials summed in a fixed order); ragged N and K;
graph capture; the default's dispatch (gemm.small.default_variant); the e4m3 build of every variant, forced."""

from __future__ import annotations

import importlib.util

import pytest

from helpers import has_gpu

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="no torch"),
]

LLAMA8B = {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}
TOKENS = (1, 7, 16, 33, 64, 100)


@pytest.fixture(scope="module")
def torch():
    import torch

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the small-M path needs wgmma (sm_90a)")
    return torch


def _operands(torch, m, n, k, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    w = torch.randn(n, k, device="cuda", generator=g).to(dtype)  # the weight, N x K: B = w.t() column-major
    return a, w


def _check(torch, c, a, w, dtype="bf16"):
    """max|c - ref| / max|ref| within the benchmark's bound, ref = the fp32 product (no TF32)."""
    from gpudissect.bench.gemm.cases import max_norm_bound

    ref = torch.matmul(a.float(), w.float().t())
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    bound = max_norm_bound(dtype, a.shape[1])
    assert err <= bound, f"{tuple(a.shape)} x {tuple(w.shape)}: error {err:.3g} > bound {bound:.3g}"


@pytest.fixture(autouse=True)
def no_tf32(torch):
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = old


@pytest.mark.parametrize("proj", list(LLAMA8B))
@pytest.mark.parametrize("m", TOKENS)
def test_llama_shapes(torch, proj, m):
    from gpudissect.gemm import SMALL, matmul, plan_for, small

    n, k = LLAMA8B[proj]
    a, w = _operands(torch, m, n, k, torch.bfloat16, m * 7 + n)
    c = matmul(a, w.t(), rung=SMALL)
    assert c.shape == (m, n) and c.dtype == torch.bfloat16
    _check(torch, c, a, w)
    plan = plan_for(a, w.t(), rung=SMALL)
    assert plan is not None and plan.rung == SMALL
    # the variant of the default's rule (gemm.small.default_variant), its grid within the CTAs the SMs hold
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    v = plan.launch.variant
    assert v == small.default_variant(m, n, "bf16", sms, k, props.L2_cache_size)
    grid = plan.launch.grid
    assert plan.launch.splits == grid[1] and (grid[0] * grid[1] * grid[2] <= sms * v.ctas_per_sm or grid[1] == 1)
    if m <= 16 and proj != "gate_up":  # 32-48 weight tiles: K split to fill the SMs
        assert plan.launch.splits > 1


@pytest.mark.parametrize("index", range(8))
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_every_token_tile(torch, index, dtype):
    """Each variant the default may run (two and one CTA per SM) forced on a shape that splits K, with M = 7 (one
    token tile) and M = 2 MP + 3 (three)."""
    from gpudissect.gemm.small import DEFAULTS
    from gpudissect.gemm.small_launch import prepare_small

    v = DEFAULTS[index]
    mp = v.mp
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    for m in (7, 2 * mp + 3):
        a, w = _operands(torch, m, 2048, 4096, tdt, mp + m)
        c = torch.full((m, 2048), float("nan"), device="cuda", dtype=tdt)
        launch = prepare_small(dtype, a.data_ptr(), w.data_ptr(), c.data_ptr(), m, 2048, 4096, v)
        assert launch.splits > 1 and launch.grid[0] == -(-m // mp)
        launch(torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        _check(torch, c, a, w, dtype)


def test_plan_follows_new_tensors_and_counters_reset(torch):
    """One signature called on four operand sets (the plan re-pointed each time), each twice in a row: every
    result its own operands' product, the repeat bit-identical; another shape of the same variant in between
    shares the counters and workspace."""
    from gpudissect.gemm import SMALL, matmul
    from gpudissect.gemm.api import cache_info

    before = cache_info()
    outs = []
    for i in range(4):
        a, w = _operands(torch, 16, 4096, 2048, torch.bfloat16, 100 + i)  # shapes no other test plans
        c1 = matmul(a, w.t(), rung=SMALL)
        x, y = _operands(torch, 9, 3072, 2048, torch.bfloat16, 200 + i)
        cx = matmul(x, y.t(), rung=SMALL)
        c2 = matmul(a, w.t(), rung=SMALL)
        outs.append((c1, c2, a, w, cx, x, y))
    torch.cuda.synchronize()
    for c1, c2, a, w, cx, x, y in outs:
        _check(torch, c1, a, w)
        _check(torch, cx, x, y)
        assert torch.equal(c1, c2)
    after = cache_info()
    assert after["misses"] == before["misses"] + 2 and after["hits"] >= before["hits"] + 10


def test_many_launches_in_a_row(torch):
    """50 back-to-back launches on one stream, no sync between: all equal to the first (a counter left
    non-zero by one launch would make a later one skip or repeat its fix-up)."""
    from gpudissect.gemm import SMALL, matmul

    a, w = _operands(torch, 16, 4096, 14336, torch.bfloat16, 3)
    outs = [matmul(a, w.t(), rung=SMALL) for _ in range(50)]
    torch.cuda.synchronize()
    _check(torch, outs[0], a, w)
    assert all(torch.equal(o, outs[0]) for o in outs[1:])


@pytest.mark.parametrize("m,n,k", [(5, 1000, 4104), (16, 136, 200), (128, 264, 72), (40, 4096, 8), (300, 2048, 1024)])
def test_ragged_shapes(torch, m, n, k):
    """N not a multiple of the 128-row weight tile, K not of the 64-wide k-block (TMA zero-fills both), tiny K,
    and M past one 128-token tile."""
    from gpudissect.gemm import SMALL, matmul

    a, w = _operands(torch, m, n, k, torch.bfloat16, m + n + k)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert matmul(a, w.t(), out=out, rung=SMALL) is out
    _check(torch, out, a, w)


def test_row_major_b_and_batches(torch):
    from gpudissect.gemm import SMALL, matmul

    a = torch.randn(3, 5, 512, device="cuda").bfloat16()
    b = torch.randn(512, 1024, device="cuda").bfloat16()  # row-major B: transposed into a copy per call
    c = matmul(a, b, rung=SMALL)
    ref = torch.matmul(a.float(), b.float())
    assert c.shape == (3, 5, 1024) and ((c.float() - ref).abs().max() / ref.abs().max()).item() < 1e-2


def test_graph_capture(torch):
    """The plan made inside the capture (kernel load, workspace allocated and its counters zeroed there);
    replays follow new data and stay deterministic."""
    from gpudissect.gemm import SMALL, matmul

    a, w = _operands(torch, 24, 4096, 4096, torch.bfloat16, 11)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            c = matmul(a, w.t(), rung=SMALL)
    torch.cuda.current_stream().wait_stream(s)
    for _ in range(2):
        a.copy_(torch.randn_like(a))
        g.replay()
        torch.cuda.synchronize()
        _check(torch, c, a, w)
        first = c.clone()
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(c, first)


def test_default_takes_it_below_the_threshold(torch, monkeypatch):
    from gpudissect.gemm import SMALL, clear_cache, matmul, plan_for, small

    a, w = _operands(torch, 16, 4096, 4096, torch.bfloat16, 5)
    big = torch.randn(256, 4096, device="cuda").bfloat16()
    monkeypatch.setattr(small, "SMALL_M_MAX", 128)
    clear_cache()
    try:
        _check(torch, matmul(a, w.t()), a, w)
        assert plan_for(a, w.t()).rung == SMALL
        assert plan_for(a, w.t()).launch.variant.name == "small16c1"  # 32 weight tiles: one CTA per SM
        matmul(big, w.t())
        assert plan_for(big, w.t()).rung != SMALL  # above the threshold: the ladder
        e4 = a.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        w8 = w.to(torch.float8_e4m3fn)
        _check_fp8(torch, matmul(e4, w8.t(), scale_a=one, scale_b=one), e4, w8, 1.0)  # fp8 by the same rule
        assert plan_for(e4, w8.t()).rung == SMALL and plan_for(e4, w8.t()).launch.variant.name == "small16c1"
    finally:
        clear_cache()


def _fp8(torch, m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.randn(m, k, device="cuda", generator=g) * 0.5).to(torch.float8_e4m3fn)
    w = (torch.randn(n, k, device="cuda", generator=g) * 0.5).to(torch.float8_e4m3fn)
    return a, w


def _check_fp8(torch, c, a, w, scale):
    """C = scale (A W^T) in bf16 against the float product of the fp8 values (exact inputs; fp32 accumulation by
    the tensor cores, bf16 out): within 2 % of the largest entry."""
    ref = scale * (a.float() @ w.float().t())
    assert c.dtype == torch.bfloat16 and c.shape == ref.shape
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    assert err < 2e-2, f"{tuple(a.shape)} x {tuple(w.shape)}: error {err:.3g}"


@pytest.mark.parametrize("index", range(8))
def test_every_token_tile_fp8(torch, index):
    """The e4m3 build of each variant (a k-block of 128 of K, wgmma k32, C scaled by scale_a scale_b in bf16) forced
    on a shape that splits K and on one that does not, with one and three token tiles."""
    from gpudissect.gemm.small import DEFAULTS
    from gpudissect.gemm.small_launch import prepare_small

    v = DEFAULTS[index]
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(3.0, device="cuda")
    for m, n, k in ((7, 2048, 4096), (2 * v.mp + 3, 2048, 8192), (5, 28672, 1024)):
        a, w = _fp8(torch, m, n, k, v.mp + m)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        launch = prepare_small(
            "e4m3", a.data_ptr(), w.data_ptr(), c.data_ptr(), m, n, k, v, scale_a=sa.data_ptr(), scale_b=sb.data_ptr()
        )
        assert launch.grid[0] == -(-m // v.mp)
        launch(torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        _check_fp8(torch, c, a, w, 1.5)


@pytest.mark.parametrize("m,n,k", [(16, 4096, 14336), (1, 6144, 4096), (100, 4096, 4096), (9, 1000, 4112)])
def test_fp8_through_matmul(torch, m, n, k):
    """matmul(rung=SMALL) on e4m3: new scales per call (the plan re-points them), ragged N and K (TMA zero-fills a
    partial 128-wide k-block), back-to-back calls bit-identical."""
    from gpudissect.gemm import SMALL, matmul, plan_for

    a, w = _fp8(torch, m, n, k, m + n)
    outs = []
    for s in (1.0, 0.25, 4.0):
        sa, sb = torch.tensor(s, device="cuda"), torch.tensor(2.0, device="cuda")
        c = matmul(a, w.t(), rung=SMALL, scale_a=sa, scale_b=sb)
        outs.append(c)
        _check_fp8(torch, c, a, w, 2.0 * s)
    assert plan_for(a, w.t(), rung=SMALL).rung == SMALL
    again = matmul(
        a, w.t(), rung=SMALL, scale_a=torch.tensor(1.0, device="cuda"), scale_b=torch.tensor(2.0, device="cuda")
    )
    torch.cuda.synchronize()
    assert torch.equal(again, outs[0])


def test_refusals(torch):
    from gpudissect.gemm import SMALL, matmul

    a, w = _operands(torch, 4, 64, 64, torch.bfloat16, 1)
    e4 = a.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    with pytest.raises(ValueError, match="float8_e4m3fn inputs need scale_a"):
        matmul(e4, w.to(torch.float8_e4m3fn).t(), rung=SMALL)
    with pytest.raises(ValueError, match="scale_a / scale_b apply to float8_e4m3fn inputs only"):
        matmul(a, w.t(), rung=SMALL, scale_a=one, scale_b=one)


@pytest.mark.parametrize("dtype", ["bf16", "e4m3"])
def test_the_gemm_command_times_the_small_m_path(torch, dtype):
    """`gpudissect gemm` on a decode shape runs what matmul runs, the small-M path (its e4m3 build with the scales of
    the quantised operands), checks it against cuBLAS and prints the ratio."""
    from typer.testing import CliRunner

    from gpudissect.cli_gemm import gemm_app

    r = CliRunner().invoke(gemm_app, ["--m", "16", "--n", "4096", "--k", "4096", "--dtype", dtype, "--pairs", "3"])
    assert r.exit_code == 0, r.output
    assert "the small-M path (rung 20, small16c1) (the per-shape default)" in r.output
    assert "check: ok" in r.output and "ours / cuBLAS" in r.output
