"""Argument rules of gpudissect.gemm and `gpudissect gemm`, and the gemm suite's helpers (CPU, no torch)."""

import importlib.util

import pytest
from typer.testing import CliRunner

from gpudissect.bench import gemm as bench
from gpudissect.cli_gemm import gemm_app, validate
from gpudissect.gemm import RUNGS, check_dims, plan_layout

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_dims_must_be_multiples_of_8():
    check_dims(8, 16, 24)
    for m, n, k, bad in ((12, 8, 8, "M = 12"), (8, 20, 8, "N = 20"), (8, 8, 4, "K = 4")):
        with pytest.raises(ValueError, match=bad):
            check_dims(m, n, k)
    with pytest.raises(ValueError, match="positive"):
        check_dims(0, 8, 8)


def test_rung1_needs_whole_tiles():
    check_dims(256, 128, 64, rung=1)
    with pytest.raises(ValueError, match="rung 1.*multiple of its tile 128"):
        check_dims(136, 128, 64, rung=1)
    with pytest.raises(ValueError, match="not built"):
        check_dims(8, 8, 8, rung=9)


def test_layouts():
    assert plan_layout((64, 32), (32, 1), (32, 16), (1, 32), "bf16") == (64, 16, 32, True)
    assert plan_layout((64, 32), (32, 1), (32, 16), (16, 1), "fp16") == (64, 16, 32, False)
    with pytest.raises(ValueError, match="inner dimensions"):
        plan_layout((64, 32), (32, 1), (40, 16), (16, 1), "bf16")
    with pytest.raises(ValueError, match="A must be row-major"):
        plan_layout((64, 32), (1, 64), (32, 16), (16, 1), "bf16")
    with pytest.raises(ValueError, match="B must be contiguous"):
        plan_layout((64, 32), (32, 1), (32, 16), (32, 2), "bf16")
    with pytest.raises(ValueError, match="not supported yet"):
        plan_layout((64, 32), (32, 1), (32, 16), (16, 1), "float8_e4m3fn")
    with pytest.raises(ValueError, match="2-D"):
        plan_layout((2, 64, 32), (2048, 32, 1), (32, 16), (16, 1), "bf16")


def test_cli_refuses_bad_input_in_one_line():
    r = CliRunner().invoke(gemm_app, ["--m", "100", "--n", "64", "--k", "64"])
    assert r.exit_code == 2 and "M = 100 is not a multiple of 8" in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(gemm_app, ["--dtype", "fp32"])
    assert r.exit_code == 2 and "supported: bf16, fp16" in r.output
    with pytest.raises(ValueError, match="not built"):
        validate(64, 64, 64, "bf16", 9)


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
    assert bench.max_norm_bound("bf16", 4096) == pytest.approx(2 * 2**-8 + 4 * 2**-24 * 64)
    assert bench.max_norm_bound("fp16", 64) < bench.max_norm_bound("bf16", 64)
    assert bench.ref_tolerance(4096) == 1e-2
    assert bench.n_sets(8192, 8192, 8192, 50 << 20) == 2
    assert bench.n_sets(1024, 1024, 1024, 50 << 20) == 8


def test_shape_families():
    rect = bench.shapes_rect((1024,))
    assert len(rect) == 6 and ("2x1x1.1024", 2048, 1024, 1024) in rect and ("1x1x4.1024", 1024, 1024, 4096) in rect
    llama = bench.shapes_llama((16,))
    assert ("8b.qkv.16", 16, 6144, 4096) in llama and ("70b.down.16", 16, 8192, 28672) in llama
    assert all(n % 8 == 0 and k % 8 == 0 for _, _, n, k in llama)


def test_model_figures_without_inputs(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUDISSECT_GEMM_MODEL_INPUTS", str(tmp_path / "absent.json"))
    assert bench.summary_path() is None


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

    figs = {"tc.wgmma.bf16_f32.m64n256k16.ss_rand_fma_per_clk_sm": 2048.0,
            "tc.mma.bf16_f32.m16n8k16.peak_fma_per_clk_sm": 1330.0, "mem.bw.shared_bytes_per_clk_sm": 128.0,
            "mem.bw.l2_bytes_per_clk": 4168.0, "mem.bw.dram_gbps": 3095.0, "mem.latency.l2_hit_cycles": 285.0,
            "mem.size.l2_bytes": 44553216.0, "tc.cublas.bf16.sm_clock_mhz": 1665.0}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(figs))
    monkeypatch.setenv("GPUDISSECT_GEMM_MODEL_INPUTS", str(path))
    ctx = _Ctx()
    bench._model_figures(ctx, {(4, 8192): (650.0, 1500.0), (1, 8192): (340.0, None)})
    assert ctx.figs["gemm.model.4.bound_8192"][0] in ("tensor", "shared", "l2", "dram", "latency")
    assert "1500 MHz" in ctx.figs["gemm.model.4.predicted_tflops_8192"][1]
    assert "1665 MHz" in ctx.figs["gemm.model.1.predicted_tflops_8192"][1]
    err = ctx.figs["gemm.model.median_abs_error"][0]
    assert isinstance(err, float) and 0 <= err < 1
    assert ctx.series_ == ["predicted"]


def test_model_figures_say_why_when_inputs_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDISSECT_GEMM_MODEL_INPUTS", str(tmp_path / "none.json"))
    ctx = _Ctx()
    bench._model_figures(ctx, {(4, 8192): (650.0, 1500.0)})
    assert str(ctx.figs["gemm.model.median_abs_error"][0]).startswith("n/a: no stored figures")
