"""TMA and async-copy host logic on the CPU: tensor-map parameters and limits, copy plans, the sums
each CTA must find (against an element-by-element emulation of the copies), and the derivations."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import FakeDevice, bench_context
from gpudissect.bench.hopper import tma as h
from gpudissect.bench.hopper.tma import plans as h_plans
from gpudissect.bench.registry import REGISTRY, resolve_params
from gpudissect.errors import GpuDissectError

MiB = 1 << 20


# ---------------------------------------------------------------------------------------
# Tensor maps
# ---------------------------------------------------------------------------------------
def test_tensor_map_strides_box_and_tiles():
    tm = h.TensorMap("float32", (8192, 96), (64, 32))
    assert tm.rank == 2 and tm.elsize == 4
    assert tm.strides == (8192 * 4,)
    assert tm.box_bytes == 64 * 32 * 4 == 8192
    assert tm.tiles == (128, 3) and tm.nbytes == 8192 * 96 * 4
    t3 = h.TensorMap("float32", (1024, 256, 32), (16, 16, 8))
    assert t3.strides == (4096, 4096 * 256)
    assert t3.tiles == (64, 16, 4)
    t1 = h.TensorMap("int64", (1 << 20,), (256,))
    assert t1.strides == () and t1.box_bytes == 2048
    h.validate_tensor_map(tm, 0x7F0000000000)
    h.validate_tensor_map(t3, 0x100)
    h.validate_tensor_map(t1, 0x10)


@pytest.mark.parametrize(
    "tm, addr, msg",
    [
        (h.TensorMap("float32", (1024, 512), (512, 2)), 0, r"box dimension 0 is 512, must be 1..256"),
        (h.TensorMap("float32", (1024, 512), (32, 0)), 0, r"box dimension 1 is 0"),
        (h.TensorMap("float32", (1024, 64), (2, 8)), 0, r"inner box dimension is 8 bytes .* multiple of 16"),
        (h.TensorMap("int64", (1024,), (1,)), 0, r"inner box dimension is 8 bytes"),
        (h.TensorMap("float32", (6, 64), (4, 8)), 0, r"global stride 1 is 24 bytes, must be a multiple of 16"),
        (h.TensorMap("float32", (64, 64), (16, 16)), 0x1008, r"global address 0x1008 is not 16-byte aligned"),
        (h.TensorMap("float32", (4,) * 6, (4,) * 6), 0, r"rank 6 outside 1..5"),
        (h.TensorMap("float16", (64,), (16,)), 0, r"unknown data type 'float16'; valid: float32, int64"),
        (h.TensorMap("float32", (64, 64), (16,)), 0, r"box has 1 dimensions, the tensor 2"),
        (h.TensorMap("float32", (0, 64), (16, 16)), 0, r"global dimension 0 is 0"),
        (h.TensorMap("float32", ((1 << 32) + 4,), (16,)), 0, r"global dimension 0 is .* must be 1..2\^32"),
        (h.TensorMap("float32", (1000, 64), (16, 16)), 0, r"dimension 0 \(1000\) is not a multiple of its box \(16\)"),
    ],
)
def test_invalid_tensor_maps_are_rejected_with_the_reason(tm, addr, msg):
    with pytest.raises(GpuDissectError, match=msg):
        h.validate_tensor_map(tm, addr)


def test_encode_validates_before_calling_the_driver():
    """An invalid map never reaches cuTensorMapEncodeTiled (no driver on CI: a driver call would fail
    differently)."""
    with pytest.raises(GpuDissectError, match="multiple of 16"):
        h.encode_tensor_map(h.TensorMap("float32", (64, 64), (2, 16)), 0x1000)


# ---------------------------------------------------------------------------------------
# Copy plans: the paper's sizes and shapes
# ---------------------------------------------------------------------------------------
def _plans(total: int) -> list[tuple[str, h.CopyPlan]]:
    return (
        [("bulk", h.plan_bulk(total, b)) for b in h.BULK_SIZES]
        + [("1d", h.plan_tensor(total, b, "int64")) for b in h.T1D_BOXES]
        + [("2d", h.plan_tensor(total, b)) for b in h.T2D_BOXES]
        + [("2dp", h.plan_tensor(total, b, row=h.PACKED_ROW)) for b in h.T2D_PACKED_BOXES]
        + [("3d", h.plan_tensor(total, b)) for b in h.T3D_BOXES]
        + [("shape", h.plan_tensor(total, b)) for b in h.SHAPES_16K]
    )


def test_plans_have_the_papers_copy_sizes():
    plans = _plans(512 * MiB)
    size = {k: [p.chunk_bytes for kk, p in plans if kk == k] for k in ("bulk", "1d", "2d", "2dp", "3d", "shape")}
    KB = 1024
    assert size["bulk"] == [1 * KB, 2 * KB, 4 * KB, 8 * KB, 12 * KB, 16 * KB]
    assert size["1d"] == [512, 768, 1024, 1280, 1536, 2048]  # int64: 0.5 .. 2 KB, box <= 256 elements
    assert size["2d"] == size["2dp"] == size["3d"] == size["bulk"]
    assert size["shape"] == [16 * KB] * 5
    for kind, p in plans:
        assert p.moved <= 512 * MiB and p.moved >= 0.95 * 512 * MiB, (kind, p.label, p.moved)
        if p.tmap is not None:
            h.validate_tensor_map(p.tmap, 0)
            assert p.moved == p.tmap.nbytes  # the tiles cover the tensor exactly
    assert [p.label for k, p in plans if k == "2d"] == ["16x16", "32x16", "32x32", "64x32", "96x32", "64x64"]
    # 32 KB rows: each 2D box is `y` separate runs; rows one box wide: each box is one contiguous run
    assert all(abs(p.tmap.dims[0] - h.ROW_2D) < p.tmap.box[0] for k, p in plans if k == "2d")
    assert all(p.tmap.dims[0] == p.tmap.box[0] == h.PACKED_ROW for k, p in plans if k == "2dp")


def test_plans_refuse_what_cannot_work():
    with pytest.raises(GpuDissectError, match="multiple of 16"):
        h.plan_bulk(MiB, 1000)
    with pytest.raises(GpuDissectError, match="box dimension 0 is 512"):
        h.plan_tensor(64 * MiB, (512, 2))
    with pytest.raises(GpuDissectError, match="too small"):
        h.plan_tensor(MiB, (16, 16, 256))  # not even one 256-deep slab of 1024 x 256 floats
    with pytest.raises(GpuDissectError, match="rank 4"):
        h.plan_tensor(64 * MiB, (16, 16, 4, 4))


def test_every_plan_fits_four_ctas_per_sm_and_keeps_sums_exact():
    """Fig. 3 goes to 4 CTAs per SM: their stage rings must fit an H100 SM's shared memory, and one
    thread's float sum must stay below 2^24 (exact) at every CTA count."""
    smem_per_sm, per_cta_reserved = 233472, 1024
    for kind, p in _plans(512 * MiB):
        assert 4 * (h.smem_for(p.chunk_bytes, 3) + per_cta_reserved) <= smem_per_sm, (kind, p.label)
        assert h.stage_stride(p.chunk_bytes) % 1024 == 0 and h.stage_stride(p.chunk_bytes) >= p.chunk_bytes
        for m in h.MULTIPLES:
            assert h.per_thread_bound(p, m * 132, h.BLOCK, 3) < 1 << 24


# ---------------------------------------------------------------------------------------
# Expected sums against an element-by-element emulation of the copies
# ---------------------------------------------------------------------------------------
def _emulate(values: np.ndarray, plan: h.CopyPlan, grid: int) -> np.ndarray:
    """What each CTA sums if every copy moves what the tensor map (or bulk address) describes:
    chunks b, b + grid, ... of CTA b; each box read element by element from the global strides."""
    out = np.zeros(grid, np.int64)
    words = values.astype(np.int64)
    for c in range(plan.nchunks):
        org = h.chunk_origin(plan, c)
        if plan.tmap is None:
            s = words[org[0] : org[0] + plan.chunk_bytes // 4].sum()
        else:
            tm = plan.tmap
            f = tm.elsize // 4
            strides = (tm.elsize, *tm.strides)  # bytes per step of each dimension
            s = 0
            for idx in np.ndindex(*reversed(tm.box)):
                pos = [o + i for o, i in zip(org, reversed(idx))]
                assert all(p < d for p, d in zip(pos, tm.dims)), "a box reaches out of the tensor"
                byte = sum(p * st for p, st in zip(pos, strides))
                s += words[byte // 4 : byte // 4 + f].sum()
        out[c % grid] += s
    return out


@pytest.mark.parametrize(
    "kind, box, dtype",
    [
        ("bulk", 1024, None),
        ("1d", (64,), "int64"),
        ("2d", (32, 16), "float32"),
        ("2d", (96, 32), "float32"),
        ("2dp", (256, 4), "float32"),
        ("3d", (8, 8, 4), "float32"),
        ("3d", (16, 16, 12), "float32"),
        ("3d", (4, 4, 256), "float32"),
    ],
)
def test_cta_sums_match_an_emulation_of_the_copies(monkeypatch, kind, box, dtype):
    # small tensors so the element-by-element emulation stays quick (set where plan_tensor reads them)
    monkeypatch.setattr(h_plans, "ROW_2D", 192)
    monkeypatch.setattr(h_plans, "ROW_3D", 16)
    monkeypatch.setattr(h_plans, "PLANE_3D", 12)
    rng = np.random.default_rng(0)
    total = 3 * 4 * 16 * 12 * 256 if box == (4, 4, 256) else 96 * 1024
    values = rng.integers(0, 4, total // 4, dtype=np.uint8)
    row = h.PACKED_ROW if kind == "2dp" else None
    plan = h.plan_bulk(total, box) if kind == "bulk" else h.plan_tensor(total, box, dtype, row)
    assert plan.nchunks > 7
    ts = h.tile_sums(values, plan)
    assert len(ts) == plan.nchunks and ts.sum() == values[: plan.moved // 4].sum()
    for grid in (1, 3, 7):
        want = _emulate(values, plan, grid)
        got = h.cta_sums(ts, grid)
        assert np.array_equal(got, want.astype(np.float64)), (grid, got, want)


def test_tile_order_is_x_fastest():
    """A wrong chunk order (y fastest) moves the same total but gives CTAs other tiles: the per-CTA
    check sees it."""
    values = np.random.default_rng(1).integers(0, 4, 128 * 64, dtype=np.uint8)
    tm = h.TensorMap("float32", (128, 64), (16, 16))  # 8 x 4 tiles
    plan = h.CopyPlan("2d", tm.box_bytes, 32, tm)
    ts = h.tile_sums(values, plan)
    grid = values.reshape(64, 128)
    assert ts[1] == grid[0:16, 16:32].sum()  # chunk 1 is the next tile along x
    assert ts[8] == grid[16:32, 0:16].sum()  # chunk 8 starts the next row of tiles
    assert h.chunk_origin(plan, 9) == (16, 16)
    swapped = ts.reshape(4, 8).T.reshape(-1)
    assert swapped.sum() == ts.sum()
    assert not np.array_equal(h.cta_sums(swapped, 3), h.cta_sums(ts, 3))


# ---------------------------------------------------------------------------------------
# Derivations
# ---------------------------------------------------------------------------------------
def _r(kind, size, mult, gbps, ok=True, label=""):
    return h.Rate(kind, label or f"{size}", size, mult, gbps, gbps - 1, gbps + 1, ok)


def test_peaks_ignore_failed_and_other_sizes():
    rates = [
        _r("bulk", 16384, 1, 2500),
        _r("bulk", 16384, 4, 3100),
        _r("bulk", 8192, 4, 3200),
        _r("bulk", 16384, 3, 3300, ok=False),
        _r("2d", 16384, 2, 3000),
    ]
    assert h.peak(rates, "bulk", 16384).gbps == 3100  # the failed 3300 does not count
    assert h.peak(rates, "bulk").gbps == 3200
    assert h.peak(rates, "2d").mult == 2
    assert h.peak(rates, "3d") is None


def test_latency_offset_is_the_median_difference():
    med, lo, hi = h.latency_offset([330, 335, 740, 745], [276, 280, 684, 686])
    assert (med, lo, hi) == (np.median([54, 55, 56, 59]), 54, 59)
    with pytest.raises(ValueError):
        h.latency_offset([], [])


def test_speedups_on_the_papers_h800_table():
    """003 Table XIII, 8x8: AsyncPipe vs SyncShare at 1..32 blocks/SM."""
    bp = [1, 2, 4, 8, 16, 32]
    asyn = dict(zip(bp, [516.69, 998.45, 1808.5, 2931.29, 3315.38, 3615.99]))
    sync = dict(zip(bp, [327.86, 646.58, 1191.48, 2117.56, 2736.06, 2861.75]))
    sp = h.speedups(sync, asyn)
    best, at = h.best_speedup(sp)
    assert at == 1 and best == pytest.approx(516.69 / 327.86)
    assert h.mean_gain_pct(sp) == pytest.approx(41.6, abs=0.1)
    # 32x32: AsyncPipe loses everywhere; the best case is still reported, below 1
    asyn32 = dict(zip(bp, [5570.17, 6112.92, 6372.73, 6496.21, 6592.66, 6592.87]))
    sync32 = dict(zip(bp, [5782.03, 6280.8, 6465.53, 6600.58, 6649.46, 6631.11]))
    best32, _ = h.best_speedup(h.speedups(sync32, asyn32))
    assert best32 < 1 and h.mean_gain_pct(h.speedups(sync32, asyn32)) < 0
    assert h.speedups({1: 0.0, 2: 10.0}, {1: 5.0}) == {}
    with pytest.raises(ValueError):
        h.best_speedup({})


def test_gemm_dims_and_reference():
    assert h.gemm_dims(8, 4, 132, 2048) == (32, 1056, 2048)
    with pytest.raises(GpuDissectError, match="not a multiple of the block size 32"):
        h.gemm_dims(32, 1, 132, 2000)
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (40, 64)).astype(np.float32)
    b = rng.integers(-3, 4, (64, 24)).astype(np.float32)
    rows, cols = rng.integers(0, 40, 50), rng.integers(0, 24, 50)
    ref, tol = h.reference_entries(a, b, rows, cols)
    full = a.astype(np.float64) @ b.astype(np.float64)
    assert np.array_equal(ref, full[rows, cols])
    c32 = (a @ b).astype(np.float32)  # fp32 product: within the tolerance; an off-by-one entry is not
    assert (np.abs(c32[rows, cols] - ref) <= tol).all()
    assert tol.max() < 1.0


def test_parameters_are_checked():
    with pytest.raises(GpuDissectError, match="at least 256 MiB"):
        resolve_params(REGISTRY["hopper/tma_throughput"], {"buffer_bytes": "128M"}, {})
    assert len(_plans(h.MIN_BUFFER)) == 35  # the smallest buffer allowed holds every plan
    with pytest.raises(GpuDissectError, match="1 .. 4"):
        resolve_params(REGISTRY["hopper/tma_throughput"], {"stages": "5"}, {})
    with pytest.raises(GpuDissectError, match="multiple of 16"):
        resolve_params(REGISTRY["hopper/tma_latency"], {"stride": "24"}, {})
    with pytest.raises(GpuDissectError, match="multiple of 32"):
        resolve_params(REGISTRY["hopper/async_copy_matmul"], {"k": "1000"}, {})
    assert REGISTRY["hopper/tma_latency"].min_cc == (9, 0) == REGISTRY["hopper/tma_throughput"].min_cc
    assert REGISTRY["hopper/async_copy_matmul"].min_cc == (8, 0)


# ---------------------------------------------------------------------------------------
# SASS beyond the required patterns (needs cuobjdump)
# ---------------------------------------------------------------------------------------
@pytest.mark.sass
def test_only_the_async_kernels_use_ldgsts():
    from gpudissect.sass.disasm import find_tool
    from gpudissect.sasscheck import check_spec

    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    funcs, _ = check_spec(h.ASYNC)
    for bs in h.BLOCK_SIZES:
        assert "LDGSTS" not in funcs[f"mm_sync_{bs}"]
        for cp in h.CP_BYTES:
            sass = funcs[f"mm_async{cp}_{bs}"]
            assert "LDGSTS" in sass and "LDG.E " not in sass  # every global read is asynchronous
    tma, _ = check_spec(h.TMA)
    assert "LDG" not in tma["tma_chase"]  # the chase reads global memory through the copy engine only


# ---------------------------------------------------------------------------------------
# The report paths on synthetic measurements (what the GPU run emits)
# ---------------------------------------------------------------------------------------
def test_latency_report_on_a_two_step_curve():
    ctx, run = bench_context("hopper/tma_latency")
    figs = run.figures
    xs = [int(4096 * 1.4**i) for i in range(40)]
    cg = [277.0 if x < 24e6 else 530.0 if x < 50e6 else 686.0 for x in xs]
    tma = [c + 54.0 + (i % 3) for i, c in enumerate(cg)]
    h._derive_latency(ctx, xs, tma, cg)
    assert not run.twice, f"figures {run.twice} emitted twice"
    assert figs["tma.latency_offset_cycles"].value == 55.0
    assert figs["tma.latency.knee_count"].value == figs["tma.latency.cg_knee_count"].value == 2
    assert figs["tma.latency.l2_hit_cycles"].value == pytest.approx(332, abs=1)
    assert figs["tma.latency.plateau2_cycles"].value == pytest.approx(585, abs=1)
    assert figs["tma.latency.dram_cycles"].value == pytest.approx(741, abs=1)
    assert 17e6 < figs["tma.latency.knee1_bytes"].value < 24e6 < figs["tma.latency.knee2_bytes"].value < 50e6


def test_throughput_report_ratios_and_failures():
    ctx, run = bench_context("hopper/tma_throughput")
    figs, series = run.figures, run.series
    rates = []
    for m in h.MULTIPLES:
        rates += [h.Rate("bulk", f"{b // 1024} KB", b, m, 2000 + 50 * m + b / 100, 1, 1) for b in h.BULK_SIZES]
        rates += [h.Rate("1d", f"{b} x int64", b * 8, m, 1000.0 + m, 1, 1) for (b,) in h.T1D_BOXES]
        rates += [h.Rate("2d", "x".join(map(str, b)), int(np.prod(b)) * 4, m, 2800.0 + m, 1, 1) for b in h.T2D_BOXES]
        rates += [
            h.Rate("2dp", "x".join(map(str, b)), int(np.prod(b)) * 4, m, 2850.0 - m, 1, 1) for b in h.T2D_PACKED_BOXES
        ]
        rates += [
            h.Rate("3d", "x".join(map(str, b)), int(np.prod(b)) * 4, m, 2500.0, 1, 1, ok=m != 2) for b in h.T3D_BOXES
        ]
        rates += [h.Rate("shape", "x".join(map(str, b)), 16384, m, 2600.0 + m, 1, 1) for b in h.SHAPES_16K]
    stream = h.Rate("stream", "4 blocks/SM x 512", 16, 4, 2900.0, 2890, 2910)
    h._report_throughput(ctx, rates, stream, 512 << 20, 2, 3, 3)
    assert not run.twice, f"figures {run.twice} emitted twice"
    assert figs["tma.bulk_16k_peak_gbps"].value == pytest.approx(2000 + 200 + 163.84)
    assert figs["tma.bulk_16k_vs_stream"].value == round(2363.84 / 2900, 4)
    # the 2D figure is the better layout (rows one box wide here), the strided one is kept beside it
    assert figs["tma.tensor2d_peak_gbps"].value == 2849.0
    assert "rows one box wide" in figs["tma.tensor2d_peak_gbps"].note
    assert figs["tma.tensor2d_strided_peak_gbps"].value == 2804.0
    assert figs["tma.tensor2d_packed_peak_gbps"].value == 2849.0
    assert figs["tma.tensor2d_vs_stream"].value == round(2849 / 2900, 4)
    assert figs["tma.tensor2d_strided_vs_stream"].value == round(2804 / 2900, 4)
    assert "target" in figs["tma.tensor2d_vs_stream"].note and not figs["tma.tensor2d_strided_vs_stream"].note
    assert figs["tma.stream_read_gbps"].value == 2900.0
    # one 3D CTA count failed its check: the 3D figures say so and carry no number
    assert figs["tma.tensor3d_peak_gbps"].check == "failed" and figs["tma.tensor3d_peak_gbps"].value == "FAILED"
    assert figs["tma.shape16k.4x4x256_peak_gbps"].value == 2604.0
    assert {s.figure for s in series} == {
        "tma_throughput_bulk",
        "tma_throughput_1d",
        "tma_throughput_2d",
        "tma_throughput_2d_packed",
        "tma_throughput_3d",
        "tma_box_shapes_16k",
    }


def test_paired_ratios_use_the_best_of_several_kinds():
    """The target ratio comes from the two sides timed in alternation: copy time 1, read time 1.05 with
    equal bytes gives 1.05; the configuration timed is the best one of the kinds asked for."""

    class Alternating(FakeDevice):
        """Runs each side once; the copy then times 1 ms, the read 1.05, 1.06, 1.07 ms in turn."""

        def alternate_ms(self, a, b, pairs):
            a(), b()
            return [(1.0, 1.05 + 0.01 * (i % 3)) for i in range(pairs)]

        def k_tensor2d_read(self, launch, *args):
            pass

        def k_dram_read(self, launch, *args):
            pass

    dev = Alternating()
    ctx, _ = bench_context("hopper/tma_throughput", dev)
    size = 512 * MiB
    plans = [("2d", h.plan_tensor(size, (64, 32))), ("2dp", h.plan_tensor(size, (256, 8), row=h.PACKED_ROW))]
    rates = [
        h.Rate("2d", "64x32", 8192, 3, 2800.0, 1, 1),
        h.Rate("2dp", "256x8", 8192, 2, 2900.0, 1, 1),
        h.Rate("2dp", "256x8", 8192, 4, 2950.0, 1, 1, ok=False),
    ]
    maps = {pl: b"\0" * 128 for _, pl in plans}
    stream = h.Rate("stream", "2 blocks/SM x 1024", 16, 2, 2900.0, 1, 1)
    med, lo, hi = h._paired_ratio(ctx, rates, [*plans], maps, ("2d", "2dp"), None, stream, 0, 0, size, 3)
    assert (med, lo, hi) == (pytest.approx(1.06), pytest.approx(1.05), pytest.approx(1.07))
    launched = [launch.name for launch in dev.launches]
    assert "tensor2d_read" in launched and launched.count("tensor2d_read") == launched.count("dram_read")
    assert h._paired_ratio(ctx, rates, plans, maps, ("3d",), None, stream, 0, 0, size, 3) is None


def test_async_report_on_the_papers_table():
    from gpudissect.models import Point

    ctx, run = bench_context("hopper/async_copy_matmul")
    figs, series = run.figures, run.series
    bp = list(h.PAPER_BPSM)
    table = {
        8: ([516.69, 998.45, 1808.5, 2931.29, 3315.38, 3615.99], [327.86, 646.58, 1191.48, 2117.56, 2736.06, 2861.75]),
        16: (
            [2650.06, 4531.02, 5038.26, 5510.76, 5728.71, 5929.61],
            [2372.41, 3821.71, 4713.84, 5147.53, 5309.23, 5512.41],
        ),
        32: (
            [5570.17, 6112.92, 6372.73, 6496.21, 6592.66, 6592.87],
            [5782.03, 6280.8, 6465.53, 6600.58, 6649.46, 6631.11],
        ),
    }
    results = {}
    for bs, (asyn, sync) in table.items():
        for name in h.VARIANTS:
            ys = sync if name == "SyncShare" else asyn
            results[(name, bs)] = {nb: Point(nb, y, y, y, 3, {"ok": True}) for nb, y in zip(bp, ys)}
    h._report_async(ctx, results, bp, 114, 2048, 3)
    assert not run.twice, f"figures {run.twice} emitted twice"
    assert figs["async_copy.asyncpipe_speedup_8x8"].value == round(516.69 / 327.86, 4)
    assert figs["async_copy.asyncpipe_mean_gain_8x8_pct"].value == pytest.approx(41.6, abs=0.05)
    assert figs["async_copy.asyncpipe_speedup_32x32"].value < 1
    assert figs["async_copy.syncshare.32x32.peak_gflops"].value == 6649.46
    assert {s.figure for s in series} >= {
        "async_copy_8x8",
        "async_copy_16x16",
        "async_copy_32x32",
        "async_copy_speedup",
    }
