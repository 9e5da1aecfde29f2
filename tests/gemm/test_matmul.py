"""Argument rules of gpudissect.gemm and `gpudissect gemm`, and the gemm suite's helpers (CPU, no torch)."""

import importlib.util
import math

import pytest
from typer.testing import CliRunner

from gpudissect.bench.gemm import cases, ladder, vs_cublas
from gpudissect.cli_gemm import gemm_app, validate
from gpudissect.gemm import AUTO, BEST, BEST_FP8, RUNGS, check_dims, plan_layout

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_dims_k_and_n_multiples_of_8_m_free():
    check_dims(8, 16, 24)
    for m in (1, 7, 12, 100):  # TMA zero-fills A past row M and clips C's stores there
        check_dims(m, 16, 24)
    for m, n, k, bad in (
        (8, 20, 8, "N = 20 is not a multiple of 8: the rows of C"),
        (8, 8, 4, "K = 4 .*rows of A and B"),
    ):
        with pytest.raises(ValueError, match=bad):
            check_dims(m, n, k)
    with pytest.raises(ValueError, match="positive"):
        check_dims(0, 8, 8)
    with pytest.raises(ValueError, match="rung 1 .* M a multiple of its tile 128"):
        check_dims(100, 128, 64, rung=1)


def test_rung1_needs_whole_tiles():
    check_dims(256, 128, 64, rung=1)
    with pytest.raises(ValueError, match="rung 1.*multiple of its tile 128"):
        check_dims(136, 128, 64, rung=1)
    with pytest.raises(ValueError, match="not built"):
        check_dims(8, 8, 8, rung=max(RUNGS) + 1)


def test_layouts():
    assert plan_layout((64, 32), (32, 1), (32, 16), (1, 32), "bf16") == (64, 16, 32, True)
    assert plan_layout((64, 32), (32, 1), (32, 16), (16, 1), "fp16") == (64, 16, 32, False)
    with pytest.raises(ValueError, match="inner dimensions"):
        plan_layout((64, 32), (32, 1), (40, 16), (16, 1), "bf16")
    with pytest.raises(ValueError, match="A must be row-major"):
        plan_layout((64, 32), (1, 64), (32, 16), (16, 1), "bf16")
    with pytest.raises(ValueError, match="B must be contiguous"):
        plan_layout((64, 32), (32, 1), (32, 16), (32, 2), "bf16")
    with pytest.raises(ValueError, match="dtype fp32 is not supported"):
        plan_layout((64, 32), (32, 1), (32, 16), (16, 1), "fp32")
    with pytest.raises(ValueError, match="2-D"):
        plan_layout((2, 64, 32), (2048, 32, 1), (32, 16), (16, 1), "bf16")


def test_cli_refuses_bad_input_in_one_line():
    r = CliRunner().invoke(gemm_app, ["--m", "64", "--n", "100", "--k", "64"])
    assert r.exit_code == 2 and "N = 100 is not a multiple of 8" in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(gemm_app, ["--dtype", "fp32"])
    assert r.exit_code == 2 and "supported: bf16, fp16, e4m3" in r.output
    r = CliRunner().invoke(gemm_app, ["--dtype", "e4m3", "--rung", "5"])
    assert (
        r.exit_code == 2
        and "fp8 e4m3 is built on rungs " + ", ".join(str(x) for x in RUNGS if x >= 6) + ", not rung 5" in r.output
    )
    r = CliRunner().invoke(gemm_app, ["--dtype", "e4m3", "--k", "8200"])
    assert (
        r.exit_code == 2 and "K = 8200 is not a multiple of 16" in r.output and len(r.output.strip().splitlines()) == 1
    )
    # no rung named: the public default, per shape for every dtype
    assert validate(64, 64, 64, "e4m3", None) == AUTO == validate(64, 64, 64, "bf16", None)
    assert "e4m3" in RUNGS[BEST_FP8].dtypes
    with pytest.raises(ValueError, match="not built"):
        validate(64, 64, 64, "bf16", max(RUNGS) + 1)
    assert validate(7, 64, 64, "fp16", 20) == 20  # the small-M path, named by its number
    assert validate(7, 64, 64, "e4m3", 20) == 20  # fp8 too
    with pytest.raises(ValueError, match="K = 72 is not a multiple of 16"):
        validate(7, 64, 72, "e4m3", 20)


@pytest.mark.skipif(HAS_TORCH, reason="checks the message shown without torch")
def test_cli_without_torch_says_so():
    r = CliRunner().invoke(gemm_app, ["--m", "64", "--n", "64", "--k", "64"])
    assert r.exit_code == 2 and "needs PyTorch" in r.output


@pytest.mark.skipif(HAS_TORCH, reason="checks the message shown without torch")
def test_matmul_without_torch_raises_import_error():
    from gpudissect.gemm import matmul

    with pytest.raises(ImportError):
        matmul(None, None)


def test_rung_geometry():
    r1, r2, r3, r4 = (RUNGS[i] for i in (1, 2, 3, 4))
    assert r1.smem_bytes == 4 * 256 * 32 * 2 and r1.threads == 128
    assert r2.threads == 128 and r3.threads == 384 and r4.threads == 384
    assert r3.smem_bytes == 4 * 384 * 64 * 2 + 1024 <= 227 * 1024
    assert r3.grid(8192, 8192, 132) == (64 * 32, 1, 1)
    assert r4.grid(8192, 8192, 132) == (132, 1, 1) and r4.grid(128, 256, 132) == (1, 1, 1)
    assert r1.grid(256, 512, 132) == (4, 2, 1)
    assert r2.grid(136, 264, 132) == (2 * 3, 1, 1)  # partial tiles: TMA zero-fills, stores are guarded
    r5 = RUNGS[5]
    assert r5.cluster == 2 and r5.grid(8192, 8192, 66) == (132, 1, 1)  # 66 resident clusters of 2
    assert r5.grid(136, 264, 66) == (4, 1, 1)  # one unit of 2 stacked tiles per B tile column
    assert r5.tile_config().cluster_m == 2


def test_check_bounds_and_rotation():
    assert cases.max_norm_bound("bf16", 4096) == pytest.approx(2 * 2**-8 + 4 * 2**-24 * 64)
    assert cases.max_norm_bound("fp16", 64) < cases.max_norm_bound("bf16", 64)
    assert cases.ref_tolerance(4096) == 1e-2
    assert cases.n_sets(8192, 8192, 8192, 50 << 20) == 2
    assert cases.n_sets(1024, 1024, 1024, 50 << 20) == 8


def test_shape_families():
    rect = vs_cublas.shapes_rect((1024,))
    assert len(rect) == 6 and ("2x1x1.1024", 2048, 1024, 1024) in rect and ("1x1x4.1024", 1024, 1024, 4096) in rect
    llama = vs_cublas.shapes_llama((16,))
    assert ("8b.qkv.16", 16, 6144, 4096) in llama and ("70b.down.16", 16, 8192, 28672) in llama
    assert all(n % 8 == 0 and k % 8 == 0 for _, _, n, k in llama)


def test_model_figures_without_inputs(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUDISSECT_GEMM_MODEL_INPUTS", str(tmp_path / "absent.json"))
    assert ladder.summary_path() is None


class _Ctx:
    """Just enough of BenchContext to collect what _model_figures emits."""

    def __init__(self):
        self.props = {"sm_count": 132}
        self.figs, self.series_ = {}, []

    def figure(self, key, value, unit, kind, method, spread=None, check="ok", note=""):
        self.figs[key] = (value, method, note)

    def series(self, name, *a, **k):
        self.series_.append(name)


def test_model_figures_from_measured_ladder(tmp_path, monkeypatch):
    import json

    figs = {
        "tc.wgmma.bf16_f32.m64n256k16.ss_rand_fma_per_clk_sm": 2048.0,
        "tc.mma.bf16_f32.m16n8k16.peak_fma_per_clk_sm": 1330.0,
        "mem.bw.shared_bytes_per_clk_sm": 128.0,
        "mem.bw.l2_bytes_per_clk": 4168.0,
        "mem.bw.dram_gbps": 3095.0,
        "mem.latency.l2_hit_cycles": 285.0,
        "mem.size.l2_bytes": 44553216.0,
        "tc.cublas.bf16.sm_clock_mhz": 1665.0,
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(figs))
    monkeypatch.setenv("GPUDISSECT_GEMM_MODEL_INPUTS", str(path))
    ctx = _Ctx()
    ladder._model_figures(ctx, {(4, 8192): (650.0, 1500.0), (1, 8192): (340.0, None)})
    assert ctx.figs["gemm.model.4.bound_8192"][0] in ("tensor", "shared", "l2", "dram", "latency")
    assert "1500 MHz" in ctx.figs["gemm.model.4.predicted_tflops_8192"][1]
    assert "1665 MHz" in ctx.figs["gemm.model.1.predicted_tflops_8192"][1]
    err = ctx.figs["gemm.model.median_abs_error"][0]
    assert isinstance(err, float) and 0 <= err < 1
    assert ctx.series_ == ["predicted"]


def test_model_figures_say_why_when_inputs_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDISSECT_GEMM_MODEL_INPUTS", str(tmp_path / "none.json"))
    ctx = _Ctx()
    ladder._model_figures(ctx, {(4, 8192): (650.0, 1500.0)})
    assert str(ctx.figs["gemm.model.median_abs_error"][0]).startswith("n/a: no stored figures")


def test_e4m3_rules():
    check_dims(64, 64, 32, 6, "e4m3")
    check_dims(64, 64, 24, 6, "bf16")  # 16-bit rows need K % 8 only
    with pytest.raises(ValueError, match="K = 24 is not a multiple of 16"):
        check_dims(64, 64, 24, 7, "e4m3")
    with pytest.raises(ValueError, match="built on rungs 6, 7"):
        check_dims(64, 64, 32, 5, "e4m3")
    with pytest.raises(ValueError, match="rung 5 has no e4m3 build"):
        RUNGS[5].defines("e4m3")
    # matmul's default rung for fp8 is the first with an fp8 build; B column-major as _scaled_mm takes it
    assert plan_layout((64, 32), (32, 1), (32, 16), (1, 32), "e4m3") == (64, 16, 32, True)
    with pytest.raises(ValueError, match="built on rungs"):
        plan_layout((64, 32), (32, 1), (32, 16), (1, 32), "e4m3", rung=4)


def test_new_rung_geometry():
    r6, r7 = RUNGS[6], RUNGS[7]
    for r in (r6, r7):
        assert r.threads == 384 and r.tma_store and r.function == "gemm_ws" and r.cluster_size == 2
        # 4 stages of 48 KiB + two 8 KiB C boxes per consumer warpgroup + 1 KiB alignment slack
        assert r.smem_bytes == 4 * 384 * 128 + 2 * 2 * 8192 + 1024 <= 232448
        assert r.dtypes == ("bf16", "fp16", "e4m3")
    assert r6.defines("e4m3") | {} == {
        "GM_RUNG": 6,
        "GM_F16": 0,
        "GM_BM": 128,
        "GM_BN": 256,
        "GM_STAGES": 4,
        "GM_CONSUMERS": 2,
        "GM_GROUP": 8,
        "GM_CLM": 2,
        "GM_CLN": 1,
        "GM_FP8": 1,
        "GM_WAIT_HINT": 10_000_000,
        "GM_NOZERO": 1,
    }
    assert "GM_WAIT_HINT" not in RUNGS[1].defines("bf16")  # the cp.async rung waits on no mbarrier
    assert r7.defines("fp16")["GM_CLN"] == 2 and r7.defines("fp16")["GM_CLM"] == 1 and r7.defines("fp16")["GM_F16"] == 1
    # rung 7: units of 2 tiles side by side along N (one 256-row A tile multicast to both)
    assert r7.grid(8192, 8192, 66) == (132, 1, 1) and r7.grid(136, 264, 66) == (2 * 2, 1, 1)
    assert r6.grid(136, 264, 66) == (4, 1, 1)
    assert RUNGS[5].cluster_size == 2 and RUNGS[4].cluster_size == 1


def test_model_sees_the_tma_store_and_fp8():
    c5, c6 = RUNGS[5].tile_config(), RUNGS[6].tile_config()
    assert c5.c_sector_writes == 2.0 and c6.c_sector_writes == 1.0
    f8 = RUNGS[6].tile_config("e4m3")
    assert f8.in_bytes == 1 and f8.bk == 128 and RUNGS[7].tile_config().cluster_n == 2
    from gpudissect.analysis.gemm_model import Machine, predict

    h100 = Machine(132, 1755.0, 2048.0, 1330.0, 128.0, 4168.0, 3095.0, 285.0, 50 << 20)
    p5, p6 = predict(h100, c5, 4096, 4096, 4096), predict(h100, c6, 4096, 4096, 4096)
    # the same tile: only the C write traffic differs, half the sector writes
    c_half = 128 * 256 * 2 / 64 / (4168.0 / 132)
    assert p5.cycles_per_kblock["l2"] - p6.cycles_per_kblock["l2"] == pytest.approx(c_half)


def test_fp8_bound():
    assert cases.fp8_bound(8192) == pytest.approx(2 * 2**-8 + 256 * 2**-13)
    assert cases.fp8_bound(32) < cases.fp8_bound(64) < 0.05


def test_tally_files_every_vs_cublas_job_without_error():
    """The e4m3 square job (the last of vs_cublas) has no square curve; it once raised KeyError there."""
    from gpudissect.models import Point

    sq: dict[str, list[Point]] = {"bf16": [], "fp16": []}
    ratios: dict[str, list[float]] = {"rect": [], "llama": []}
    p = Point(8192, 700.0)
    for group, dt in [("square", "bf16"), ("square", "fp16"), ("rect", "bf16"), ("llama", "bf16"), ("square", "e4m3")]:
        vs_cublas.tally(sq, ratios, group, dt, p, 1.01)
    assert [len(v) for v in sq.values()] == [1, 1] and ratios == {"rect": [1.01], "llama": [1.01]}


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize(
    "units,clusters,kb",
    [
        (81, 66, 36),
        (144, 66, 16),
        (256, 66, 64),
        (1024, 66, 128),
        (16, 66, 16),
        (132, 66, 64),
        (1, 66, 1),
        (3, 66, 2),
        (67, 66, 1),
        (200, 7, 5),
        (128, 66, 32),
        (65, 66, 3),
        (131, 66, 2),
        (131, 66, 200),
        (256, 66, 128),
        (384, 66, 64),
        (640, 66, 128),
        (100, 66, 7),
        (199, 66, 1000),
    ],
)
def test_stream_k_schedule_covers_every_k_block_once(units, clusters, kb, full):
    from gpudissect.analysis.gemm_model import stream_k_dp
    from gpudissect.gemm.variants import stream_k_schedule

    sched = stream_k_schedule(units, clusters, kb, stream_k_dp(units, clusters, kb, full))
    seen = [[0] * kb for _ in range(units)]
    written: dict[int, tuple[int, int]] = {}  # slot -> (writer cluster, unit)
    for c, work in enumerate(sched):
        for u, k0, k1, slot, waits in work:
            assert 0 <= k0 < k1 <= kb
            for k in range(k0, k1):
                seen[u][k] += 1
            assert (slot >= 0) == (k0 > 0) and (waits == ()) == (k0 > 0 or k1 == kb)
            if slot >= 0:
                assert slot not in written and 0 <= slot < 2 * clusters  # the workspace has 2 slots per cluster
                written[slot] = (c, u)
    assert all(x == 1 for row in seen for x in row)
    # every partial is added exactly once, by the cluster holding that tile's first k-blocks
    consumed = set()
    for work in sched:
        for u, _k0, _k1, _slot, waits in work:
            for w in waits:
                assert w not in consumed and written[w][1] == u, (w, written.get(w), u)
                consumed.add(w)
    assert consumed == set(written)
    # the k-blocks are balanced: clusters' loads differ by at most one tile's worth plus one block
    loads = [sum(k1 - k0 for _, k0, k1, _, _ in w) for w in sched]
    assert max(loads) - min(loads) <= kb + 1 or units < clusters


def test_head_tail_split_keeps_the_heads_in_step():
    """The head/tail split of 4096^3's last wave (256 units, 66 clusters, 64 k-blocks, dp 198 forced: rung
    10's rule declines it): 58 heads of 57 k-blocks starting together at k-block 0 on clusters 0-57 and the
    58 tails of 7 k-blocks spread over the 8 idle clusters (50-51 each); no load exceeds a head's."""
    from gpudissect.gemm.variants import stream_k_schedule

    sched = stream_k_schedule(256, 66, 64, 198)
    heads = [w[-1] for w in sched[:58]]
    assert all(seg[1:3] == (0, 57) for seg in heads) and [seg[0] for seg in heads] == list(range(198, 256))
    tail_loads = [sum(k1 - k0 for u, k0, k1, _, _ in w if u >= 198) for w in sched[58:]]
    assert sum(tail_loads) == 58 * 7 and max(tail_loads) <= 57 and max(tail_loads) - min(tail_loads) <= 1


def test_stream_k_rung_model_and_grid():
    r = RUNGS[8]
    assert (
        r.stream_k
        and r.grid(2304, 2304, 66) == (132, 1, 1)
        and r.workspace_bytes(132) == (2 * 132 * 128 * 256 * 4, 2 * 132 * 2 * 4)
    )

    assert "GM_SK" in r.defines("bf16") and "GM_SK" not in RUNGS[6].defines("bf16")


def test_stream_k_rule_splits_only_a_thin_last_wave():
    """Rung 8 splits when there is more than one wave and a last wave at most half full (2304: 81 units
    on 66 clusters); data-parallel otherwise (1024: 16 units; 4096: 256 units, the last wave 58/66 full;
    whole waves)."""
    from gpudissect.gemm.variants import stream_k_schedule

    def split(units: int) -> bool:
        dp = RUNGS[8].dp_units(units * 256, 256, 8 * 64, 66)  # units x 1 of 256 x 256, K = 8 k-blocks
        return any(k0 > 0 or k1 < 8 for w in stream_k_schedule(units, 66, 8, dp) for _, k0, k1, _, _ in w)

    assert [split(u) for u in (81, 144, 400, 16, 64, 66, 132, 256, 100)] == [True] * 3 + [False] * 6


def test_stream_k_full_rule_splits_a_fuller_last_wave_alone():
    """Rung 10 keeps rung 8's split of a thin last wave (1-1.5 waves) and splits a last wave more than half
    full on its own where the cost model (head_tail_time, SK_RUN_KBLOCKS per run) beats the whole wave:
    8192^3 and 16384x4096x4096 (34 of 66 clusters) and 4096x10240x8192 (46, 128 k-blocks) split, as
    they gained on the GPU; 4096^3 (58: 8 idle clusters, 7-8 tail runs each), 8192x4096x4096 (50) and
    4096x2048x2048 (62) stay whole, as the split lost there; one wave or less never splits."""
    from gpudissect.analysis.gemm_model import SK_RUN_KBLOCKS, head_tail_time, stream_k_dp

    r8, r10 = RUNGS[8], RUNGS[10]
    assert r10.stream_k_full and not r8.stream_k_full and r10.defines("bf16") == r8.defines("bf16") | {"GM_RUNG": 10}
    split = {(8192, 8192, 8192): 15 * 66, (16384, 4096, 4096): 15 * 66, (4096, 10240, 8192): 9 * 66}
    whole = {(4096, 4096, 4096): 256, (8192, 4096, 4096): 512, (4096, 2048, 2048): 128, (4096, 4096, 8192): 256}
    for (m, n, k), dp in (split | whole).items():
        assert r10.dp_units(m, n, k, 66) == dp, (m, n, k)
        assert r8.dp_units(m, n, k, 66) == -(-m // 256) * -(-n // 256)  # rung 8 leaves them all whole
    assert r10.dp_units(2304, 2304, 2304, 66) == r8.dp_units(2304, 2304, 2304, 66) == 0  # 81 units: thin
    assert r10.dp_units(2048, 2048, 4096, 66) == 64 and r10.dp_units(16384, 16384, 16384, 66) == 61 * 66
    assert RUNGS[6].dp_units(4096, 4096, 4096, 66) == 256  # not a stream-K rung: everything data-parallel
    # 8192^3: heads of 66 k-blocks (+ one run's cost), 34 tails of 62 over 32 idle clusters in <= 2 runs
    assert head_tail_time(34, 66, 128) == pytest.approx(max(66 + SK_RUN_KBLOCKS, 66 + 2 * SK_RUN_KBLOCKS))
    assert head_tail_time(60, 66, 1) == 1.0  # heads take the whole k-range: nothing to split
    with pytest.raises(ValueError):
        stream_k_dp(0, 66, 8)


def test_power_split_efficiency_and_registration():
    from gpudissect.bench.gemm.power import efficiency
    from gpudissect.bench.registry import REGISTRY, load_all

    per_ghz, per_w = efficiency(700.0, 1400.0, 700.0)
    assert per_ghz == pytest.approx(500.0) and per_w == pytest.approx(1.0)
    assert all(math.isnan(x) for x in efficiency(700.0, math.nan, 0.0))
    load_all()
    b = REGISTRY["gemm/power_split"]
    # each size runs the public default's rung: rung 6 at 4096 (nothing to split), rung 10 at 8192; rung 1
    # where the GPU has no wgmma (declared too, so that it is compiled and its SASS checked there)
    labels = [k.label for k in b.kernels]
    assert b.suite == "gemm" and labels == [f"gemm.cu[rung{BEST}.bf16]", "gemm.cu[rung6.bf16]", "gemm.cu[rung1.bf16]"]


def test_describe_schedule_names_the_split():
    from gpudissect.gemm.variants import describe_schedule

    r10 = RUNGS[10]
    assert describe_schedule(r10, 4096, 4096, 4096, 66).endswith("64 k-blocks each: all data-parallel")
    s = describe_schedule(r10, 8192, 8192, 8192, 66)
    assert "15 waves data-parallel" in s and "heads of 66 k-blocks on 34 clusters, tails of 62 on the 32 idle ones" in s
    assert "last 81 units spread evenly over the 66 clusters" in describe_schedule(r10, 2304, 2304, 2304, 66)
    assert "all data-parallel" in describe_schedule(RUNGS[6], 8192, 8192, 8192, 66)  # no stream-K on rung 6
    assert describe_schedule(RUNGS[3], 4096, 4096, 4096, 132) == "one CTA per tile (not persistent)"


def test_short_batch_squares_run_in_quick_mode_too():
    """The short-batch comparison is made at squares both modes measure, and its batches are shorter than
    the quick mode's 15 ms ones (or it would not separate clock from power)."""
    assert set(vs_cublas.SHORT_BATCH_SQUARES) <= set(vs_cublas.SQUARE_QUICK) & set(vs_cublas.SQUARE_FULL)
    assert 0 < vs_cublas.SHORT_BATCH_MS < 15.0 and vs_cublas.SHORT_BATCH_PAIRS >= 10


def test_per_shape_default_picks_the_small_tile_where_the_pairs_fill_waves_badly():
    """Rung 9 (128x128) where rung 10's 256x256 pairs fill <= 4 waves with a last wave <= 60 % full
    (66 clusters: 1024-1536, 2304, 2560, 3072, 3328, 3840, Llama QKV at 1024 tokens, Llama-8B gate/up at 512);
    elsewhere (a last wave >= 74 % full at 1792, 2048, 2816, 3584, 4096; more than 4 waves from 4352 up) rung 10
    where it splits, rung 6 where not; fp8 alike. (This is the pick among the 256- and 128-column
    tiles; rung 11's rule on top of it: the next test.)"""
    from gpudissect.gemm.variants import DATA_PARALLEL, RUNGS, SMALL_TILE
    from gpudissect.gemm.variants import _fill_pick as pick_rung

    small = [(n, n, n) for n in (1024, 1280, 1536, 2304, 2560, 3072, 3328, 3840)]
    small += [(1024, 6144, 4096), (1024, 10240, 8192), (512, 28672, 4096)]
    big = [(n, n, n) for n in (1792, 2048, 2816, 3584, 4096, 4352, 8192, 16384)] + [
        (1024, 4096, 4096),
        (1024, 8192, 8192),
    ]
    assert all(pick_rung(*s, "bf16", 66) == SMALL_TILE == 9 for s in small)
    # among the rest: rung 10 where its rule splits some units along K, rung 6 (same kernel, no stream-K code) where not
    for s in big:
        splits = RUNGS[BEST].dp_units(*s, 66) < RUNGS[BEST].units(*s[:2])
        assert pick_rung(*s, "fp16", 66) == (BEST if splits else DATA_PARALLEL), s
    assert DATA_PARALLEL == 6 and [pick_rung(n, n, n, "bf16", 66) for n in (3840, 4096, 8192, 16384)] == [
        SMALL_TILE,
        6,
        BEST,
        BEST,
    ]
    assert [pick_rung(n, n, n, "e4m3", 66) for n in (1024, 2048, 3840, 8192)] == [SMALL_TILE, 6, SMALL_TILE, BEST]
    check_dims(8, 8, 8, AUTO)  # AUTO checks as the rungs it picks from
    check_dims(16, 16, 16, AUTO, "e4m3")
    with pytest.raises(ValueError, match="multiple of 16"):
        check_dims(16, 16, 24, AUTO, "e4m3")


def test_wide_tiles_where_they_fill_the_waves_and_the_fill_pick_does_not():
    """The widest of rungs 13 (256 x 224 pairs), 11 (256 x 192) and 12 (256 x 160) whose pairs fill at least 95 % of
    their waves' cluster slots, where the fill pick is rung 9 (its narrow tiles, whatever their fill) or fills under
    90 %: 8B gate/up at 256 and 512 tokens, 70B gate/up at 256 and 3328^3 on rung 13; 8B QKV at 512 and 1024 tokens,
    3072^3 and 4352^3 on rung 11; 70B QKV at 256, 512 and 1024 tokens on rung 12. Not where every wide pair leaves a
    wave partly idle (2048, 4096), where the fill pick is rung 6 or 10 and fills its waves (3584, 8192, 2048 tokens),
    nor where it is rung 10 with a stream-K split last wave under 15 % of the clusters (5120: 4 of 66, 5888: 1).
    fp8 alike (matmul's fp8 default is AUTO too). Without clusters known (0) never a wide tile."""
    from gpudissect.gemm.variants import WIDE_TILES, _fill_pick, pick_rung, wave_fill

    assert WIDE_TILES == (13, 11, 12) and wave_fill(64, 66) > 0.96 and wave_fill(67, 66) == 67 / 132
    r13 = [(512, 28672, 4096), (256, 28672, 4096), (256, 57344, 8192), (3328, 3328, 3328)]
    r11 = [(512, 6144, 4096), (1024, 6144, 4096), (3072, 3072, 3072), (4352, 4352, 4352)]
    r12 = [(256, 10240, 8192), (512, 10240, 8192), (1024, 10240, 8192)]
    kept = [(n, n, n) for n in (2048, 3584, 4096, 5120, 5888, 8192)]
    kept += [(2048, 6144, 4096), (2048, 28672, 4096), (2048, 10240, 8192)]
    for dt in ("bf16", "fp16", "e4m3"):
        got = [pick_rung(*s, dt, 66) for s in r13 + r11 + r12]
        assert got == [13] * len(r13) + [11] * len(r11) + [12] * len(r12), (dt, got)
        assert all(pick_rung(*s, dt, 66) == _fill_pick(*s, dt, 66) not in WIDE_TILES for s in kept), dt
    assert pick_rung(1024, 6144, 4096, "e4m3", 0) == 10 == pick_rung(1024, 6144, 4096, "bf16", 0)  # no clusters known


def test_small_m_against_a_long_k_splits_every_unit_in_every_dtype():
    """split_all (rung 10, every unit's k-blocks spread over all clusters): both Llama-3 down projections (K = 3.5 N)
    at 16 and 128 tokens, in bf16, fp16 and e4m3 alike (fp8 measured so: profiles/gemm-fp8-pick/tile_fp8_small.txt);
    not at 512 tokens (a full tile of rows), not where K < 2 N, not where the units fill more than half the clusters."""
    from gpudissect.gemm.variants import split_all

    down = [(4096, 14336), (8192, 28672)]
    others = [(6144, 4096), (4096, 4096), (28672, 4096), (10240, 8192), (8192, 8192), (57344, 8192)]
    for dt in ("bf16", "fp16", "e4m3"):
        assert all(split_all(m, n, k, dt, 66) for m in (16, 128) for n, k in down), dt
        assert not any(split_all(512, n, k, dt, 66) for n, k in down), dt
        assert not any(split_all(m, n, k, dt, 66) for m in (16, 128) for n, k in others), dt
        assert not split_all(16, 4096, 14336, dt, 30)  # 16 units on 30 clusters: more than half of them
