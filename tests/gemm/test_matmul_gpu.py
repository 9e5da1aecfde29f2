"""The public matmul on a real GPU (the lent H100); skipped without one or without torch: any M, plans cached
and re-pointed at other tensors, batches, CUDA graph capture (a plan made inside the capture included),
torch.compile through the custom op, fp8 with odd M, and the rules refused in one line."""

from __future__ import annotations

import importlib.util

import pytest

from helpers import has_gpu

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="no torch"),
]


@pytest.fixture(scope="module")
def torch():
    import torch

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the TMA rungs need sm_90a")
    return torch


def _err(c, a, b):
    ref = a.float() @ b.float()
    return ((c.float() - ref).abs().max() / ref.abs().max()).item()


@pytest.mark.parametrize("rung", [None, 4, 6, 9, 10, 11, 12, 13])
@pytest.mark.parametrize("m", [1, 7, 16, 100, 129, 1000])
def test_any_m(torch, rung, m):
    from gpudissect.gemm import matmul

    g = torch.Generator(device="cuda").manual_seed(m)
    a = torch.randn(m, 1024, device="cuda", generator=g).bfloat16()
    bt = torch.randn(768, 1024, device="cuda", generator=g).bfloat16()
    c = matmul(a, bt.t(), rung=rung)
    assert c.shape == (m, 768) and _err(c, a, bt.t()) < 2e-2


# rungs 11-13 (192-, 160- and 224-column tiles; 12's and 13's C in 32-column boxes): one wave data-parallel (8B
# QKV at 512 tokens), several tiles per CTA (the epilogue's slot alternating over an odd count of boxes per tile),
# the head/tail and continuous stream-K splits, and a partial last tile column
WIDE = [
    (512, 6144, 4096),
    (3072, 3072, 1024),
    (512, 10240, 2048),
    (1000, 1000, 520),
    (4096, 4096, 512),
    (256, 2880, 8192),
]


@pytest.mark.parametrize("rung", [11, 12, 13])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("m,n,k", WIDE)
def test_wide_tiles(torch, rung, dtype, m, n, k):
    from gpudissect.gemm import matmul

    dt = torch.bfloat16 if dtype == "bf16" else torch.float16
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(dt)
    bt = torch.randn(n, k, device="cuda", generator=g).to(dt)
    for _ in range(2):  # the second call runs the cached plan (its workspace flags zeroed by the first)
        c = matmul(a, bt.t(), rung=rung)
        assert c.dtype == dt and _err(c, a, bt.t()) < 1e-2


@pytest.mark.parametrize("rung", [11, 12, 13])
@pytest.mark.parametrize("m,n,k", WIDE[:3])
def test_wide_tiles_fp8(torch, rung, m, n, k):
    from gpudissect.gemm import matmul

    a = (torch.randn(m, k, device="cuda") * 0.5).to(torch.float8_e4m3fn)
    bt = (torch.randn(n, k, device="cuda") * 0.5).to(torch.float8_e4m3fn)
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    c = matmul(a, bt.t(), rung=rung, scale_a=sa, scale_b=sb)
    ref = a.float() @ bt.float().t()
    assert c.dtype == torch.bfloat16 and ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-2


def test_small_outputs_are_fresh_tensors_made_like_a_template(torch):
    """A cached 16-bit call whose output is at most gemm.api.TEMPLATE_BYTES allocates it as torch.empty_like of a view
    of a shared buffer: each call's C is a new contiguous tensor of its own memory, never the buffer's; a larger
    output has no template."""
    from gpudissect.gemm import api, matmul

    a = torch.randn(64, 512, device="cuda").bfloat16()
    bt = torch.randn(256, 512, device="cuda").bfloat16()
    c1, c2 = matmul(a, bt.t()), matmul(a, bt.t())
    plan = api.plan_for(a, bt.t())
    assert plan is not None and plan.like is not None and plan.like.shape == (64, 256)
    store = plan.like.untyped_storage()
    for c in (c1, c2):
        assert c.stride() == (256, 1) and c.dtype == torch.bfloat16 and c.device == a.device
        assert not store.data_ptr() <= c.data_ptr() < store.data_ptr() + store.nbytes()
    assert c1.data_ptr() != c2.data_ptr() and torch.equal(c1, c2) and _err(c1, a, bt.t()) < 2e-2
    big_a = torch.randn(2048, 512, device="cuda").bfloat16()
    big_b = torch.randn(2048, 512, device="cuda").bfloat16()
    matmul(big_a, big_b.t())
    assert api.plan_for(big_a, big_b.t()).like is None  # 8 MiB of C: above the template's 4 MiB


def test_cached_plan_follows_new_tensors(torch):
    """The second and later calls of a signature re-point the cached launch: each result is its own
    operands' product (a stale tensor map would give the first call's)."""
    from gpudissect.gemm import matmul
    from gpudissect.gemm.api import cache_info

    before = cache_info()
    outs = []
    for _ in range(4):
        a = torch.randn(300, 2048, device="cuda").bfloat16()
        bt = torch.randn(4096, 2048, device="cuda").bfloat16()
        c = matmul(a, bt.t())
        outs.append((c, a, bt))
    for c, a, bt in outs:
        assert _err(c, a, bt.t()) < 2e-2
    after = cache_info()
    assert after["misses"] == before["misses"] + 1 and after["hits"] >= before["hits"] + 3


def test_out_and_row_major_b(torch):
    from gpudissect.gemm import matmul

    a = torch.randn(256, 512, device="cuda").half()
    b = torch.randn(512, 384, device="cuda").half()  # row-major B: transposed into a copy
    out = torch.empty(256, 384, device="cuda", dtype=torch.float16)
    assert matmul(a, b, out=out) is out and _err(out, a, b) < 2e-2
    with pytest.raises(ValueError, match="out must be a contiguous 256 x 384"):
        matmul(a, b, out=torch.empty(256, 385, device="cuda", dtype=torch.float16))


def test_batches(torch):
    from gpudissect.gemm import matmul

    a = torch.randn(3, 50, 256, device="cuda").bfloat16()
    bt = torch.randn(512, 256, device="cuda").bfloat16()
    c = matmul(a, bt.t())
    assert c.shape == (3, 50, 512) and _err(c, a, bt.t()) < 2e-2
    b3 = torch.randn(3, 512, 256, device="cuda").bfloat16().transpose(1, 2)
    c3 = matmul(a, b3)
    assert c3.shape == (3, 50, 512) and _err(c3, a, b3) < 2e-2


def test_graph_capture_and_replay(torch):
    """Captured twice: a signature seen before capture, and one whose plan is made inside the capture (its
    kernel load and stream-K workspace zeroing must not break the capture). Replays follow new data."""
    from gpudissect.gemm import matmul

    a = torch.randn(512, 4096, device="cuda").bfloat16()
    bt = torch.randn(8192, 4096, device="cuda").bfloat16()
    a2 = torch.randn(77, 1024, device="cuda").bfloat16()
    bt2 = torch.randn(2048, 1024, device="cuda").bfloat16()
    matmul(a, bt.t())  # warm: the plan exists before the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            c = matmul(a, bt.t())
            c2 = matmul(a2, bt2.t())  # first call of this signature: planned inside the capture
    torch.cuda.current_stream().wait_stream(s)
    for _ in range(2):
        a.copy_(torch.randn_like(a))
        a2.copy_(torch.randn_like(a2))
        g.replay()
        torch.cuda.synchronize()
        assert _err(c, a, bt.t()) < 2e-2 and _err(c2, a2, bt2.t()) < 2e-2


def test_torch_compile(torch):
    from gpudissect.gemm import matmul

    def f(x, w):
        return torch.relu(matmul(x, w.t())) * 2

    x = torch.randn(200, 1024, device="cuda").bfloat16()
    w = torch.randn(512, 1024, device="cuda").bfloat16()
    got = torch.compile(f, fullgraph=True)(x, w)
    assert torch.equal(got, f(x, w))


def test_fp8_odd_m(torch):
    from gpudissect.gemm import matmul

    a = (torch.randn(45, 1024, device="cuda") * 0.5).to(torch.float8_e4m3fn)
    bt = (torch.randn(512, 1024, device="cuda") * 0.5).to(torch.float8_e4m3fn)
    sa = torch.tensor(0.5, device="cuda")
    sb = torch.tensor(2.0, device="cuda")
    c = matmul(a, bt.t(), scale_a=sa, scale_b=sb)
    ref = (a.float() @ bt.float().t()) * 1.0
    assert c.dtype == torch.bfloat16 and ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-2


def test_rules_in_one_line(torch):
    from gpudissect.gemm import matmul

    a = torch.randn(64, 100, device="cuda").bfloat16()
    with pytest.raises(ValueError, match="K = 100 is not a multiple of 8"):
        matmul(a, torch.randn(100, 64, device="cuda").bfloat16())
    a = torch.randn(64, 128, device="cuda").bfloat16()
    with pytest.raises(ValueError, match="N = 60 is not a multiple of 8"):
        matmul(a, torch.randn(60, 128, device="cuda").bfloat16().t())
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        big = torch.randn(65 * 128 + 4, device="cuda").bfloat16()
        matmul(big[4:].view(65, 128)[:64], torch.randn(128, 64, device="cuda").bfloat16())


def test_the_readmes_gpu_example(torch):
    """The README's `python gpu` block, run on tensors of the names it uses (CI runs the other blocks)."""
    import re

    from helpers import ROOT

    (code,) = re.findall(r"^```python gpu\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.S | re.M)
    x = torch.randn(3, 77, 1024, device="cuda").bfloat16()
    w = torch.randn(512, 1024, device="cuda").bfloat16()
    x8, w8 = (t.float().clamp(-448, 448).to(torch.float8_e4m3fn) for t in (x[0], w))
    sx = torch.tensor(1.0, device="cuda")
    sw = torch.tensor(1.0, device="cuda")
    env = {"x": x, "w": w, "x8": x8, "w8": w8, "sx": sx, "sw": sw}
    exec(compile(code, "README.md", "exec"), env)
    assert env["y"].shape == (3, 77, 512) and env["y8"].shape == (77, 512)
