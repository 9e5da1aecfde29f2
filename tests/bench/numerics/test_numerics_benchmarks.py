"""CPU tests of the numerics suite (bench/numerics/): fragment packers, probe construction and the
hypotheses they separate, corner-case generators and the profiling statistics. No GPU: a fake runner
plays a tensor core that follows a chosen hypothesis, and the probes must find it back."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fakes import FakeDevice, bench_context
from gpudissect.bench import numerics as n
from gpudissect.bench.numerics import agreement, probe_bench, profiling, targets
from gpudissect.bench.numerics import runner as num_runner
from gpudissect.bench.tensor import mma as tm
from gpudissect.bench.tensor import wgmma as tw


class FakeRunner:
    """A tensor core that computes with the exact evaluator under hypothesis `hyp(ins)`."""

    def __init__(self, hyp, flush_subnormal_in: bool = False):
        self.hyp, self.flush = hyp, flush_subnormal_in
        self.launches = 0

    def supported(self, ins):
        return True

    def dots(self, ins, a, b, c):
        av, bv, cv = n.to_values(ins.a, a), n.to_values(ins.a, b), n.to_values(ins.c, c)
        if self.flush:
            tiny = 2.0 ** n.fmt_min_normal_exp(ins.a)
            av, bv = np.where(np.abs(av) < tiny, 0.0, av), np.where(np.abs(bv) < tiny, 0.0, bv)
        out = []
        for x, y, z in zip(av, bv, cv):
            if not (np.isfinite(x).all() and np.isfinite(y).all() and np.isfinite(z)):
                with np.errstate(all="ignore"):
                    out.append(float(np.sum(x * y) + z))
                continue
            prods = [Fraction(p) * Fraction(q) for p, q in zip(x, y)]
            out.append(n.predict(self.hyp(ins), prods, Fraction(z), ins.c))
        self.launches += 1
        return n.round_values(ins.c, np.array(out))


# ------------------------------------------------------------------ fragment layouts
@pytest.mark.parametrize("ins", n.MMA_INSTRS, ids=lambda i: i.key)
def test_mma_pack_matches_tensor_mma(ins):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << 16, (3, ins.m, ins.k)).astype(np.uint32)
    b = rng.integers(0, 1 << 16, (3, ins.k, ins.n)).astype(np.uint32)
    c = rng.integers(0, 1 << 16, (3, ins.m, ins.n)).astype(np.uint32)
    aw, bw, cw = n.mma_pack(ins, a, b, c)
    ib, cb = n.in_bits(ins.a), n.FMT[ins.c][3]
    for i in range(3):  # the single-matrix packer of tensor_mma, validated on the H100
        _, r, col = tm.layout_a(ins.m, ins.k, ib)
        assert np.array_equal(aw[i], tm.pack(a[i][r, col], ib))
        _, r, col = tm.layout_b(ins.k, ins.n, ib)
        assert np.array_equal(bw[i], tm.pack(b[i][r, col], ib))
        _, r, col = tm.layout_c(ins.m, ins.n, cb)
        assert np.array_equal(cw[i], tm.pack(c[i][r, col], cb))
    assert aw.shape[1:] == n.mma_variant(ins).regs()[0:1] + (32,)
    assert np.array_equal(n.mma_unpack_d(ins, cw), c)  # D has C's layout


@pytest.mark.parametrize("ins", n.WG_INSTRS, ids=lambda i: i.key)
def test_wgmma_pack_matches_tensor_wgmma(ins):
    rng = np.random.default_rng(2)
    bits = n.in_bits(ins.a)
    a = rng.integers(0, 1 << min(bits, 16), (2, 64, ins.k)).astype(np.uint32)
    b = rng.integers(0, 1 << min(bits, 16), (2, ins.k, 8)).astype(np.uint32)
    img = n.wg_pack_img(ins, a, b)
    assert img.shape == (2, n.IMG_BYTES)
    for i in range(2):
        want = np.concatenate(
            [tw.pack_operand(num_runner._to_bytes(ins.a, a[i])), tw.pack_operand(num_runner._to_bytes(ins.a, b[i].T))]
        )
        assert np.array_equal(img[i], want)
        # what the hardware reads through the kernel's descriptors (A: LBO 1024, B: LBO 128, SBO 128)
        got_a = tw.sim_read_operand(img[i], tw.make_desc(0, 1024, 128), 64)
        got_b = tw.sim_read_operand(img[i], tw.make_desc(2048, 128, 128), 8)
        assert np.array_equal(got_a, num_runner._to_bytes(ins.a, a[i]))
        assert np.array_equal(got_b, num_runner._to_bytes(ins.a, b[i].T))


@pytest.mark.parametrize("ins", [i for i in n.WG_INSTRS if i.a in ("f16", "e4m3")], ids=lambda i: i.key)
def test_wgmma_c_d_fragment_round_trip(ins):
    rng = np.random.default_rng(3)
    vals = rng.integers(-8, 8, (1, 64, 8)).astype(np.float64) / 4
    bits = n.round_values(ins.c, vals)
    regs = n.wg_pack_c(ins, bits)
    assert np.array_equal(regs[0], tw.sim_d_regs(vals[0], ins.tname, 8))
    assert np.array_equal(n.wg_unpack_d(ins, regs), bits)


def test_kernel_specs_one_instruction_each():
    assert len({s.name for s in n.SPECS.values()}) == len(n.INSTRS) + len(n.CHAIN_INSTRS)
    assert n.SPECS[n.CHAIN_INSTRS[0]].defines["CHAIN"] == n.CHAIN and n.SPECS[n.INSTRS[0]].defines["CHAIN"] == 1
    assert n.sass_pattern(n.Instr("wgmma", "e4m3", "f32", 64, 8, 32)).startswith(r"QGMMA\.64x8x32\.F32\.E4M3\.E4M3")
    assert n.sass_pattern(n.Instr("mma", "f16", "f32", 16, 8, 16)) == r"HMMA\.16816\.F32 "


class CopiesC(FakeDevice):
    """num_mma / num_wgmma of a tensor core whose A B is 0: D = C (D has C's fragment layout)."""

    def k_num_mma(self, launch, a, b, c, d, count):
        self.buf(d)[:] = self.buf(c)

    def k_num_wgmma(self, launch, img, c, d, count, one):
        self.buf(d)[:] = self.buf(c)


@pytest.mark.parametrize(
    "ins",
    [n.MMA_INSTRS[1], n.WG_INSTRS[0], n.WG_INSTRS[5], n.MMA_FP8_INSTRS[0], n.CHAIN_INSTRS[4]],
    ids=lambda i: i.key,
)
def test_runner_launches_one_instruction_per_instance_and_frees_its_buffers(ins):
    dev = CopiesC()
    ctx, _ = bench_context("numerics/tc_probes", dev)
    runner = n.Runner(ctx)
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1 << 8, (5, ins.m, ins.K)).astype(np.uint32)
    b = rng.integers(0, 1 << 8, (5, ins.K, ins.n)).astype(np.uint32)
    c = rng.integers(0, 1 << 16, (5, ins.m, ins.n)).astype(np.uint32)
    assert np.array_equal(runner.run(ins, a, b, c), c)
    assert dev.mem == {} and runner.launches == 1  # operands and D freed after the launch
    (launch,) = dev.launches
    want = ("num_mma", 1, 256) if ins.family == "mma" else ("num_wgmma", 2, 512)  # 4 warpgroups per block
    assert (launch.name, launch.grid, launch.block) == want and launch.spec == n.SPECS[ins]


# ------------------------------------------------------------------ formats
@pytest.mark.parametrize("fmt", ["f16", "bf16", "tf32", "e4m3", "e5m2", "f32"])
def test_values_bits_round_trip(fmt):
    vals = np.array([0.0, -0.0, 1.0, -1.5, 2.0 ** n.fmt_min_normal_exp(fmt), n.fmt_max(fmt)])
    bits = n.from_values(fmt, vals)
    back = n.to_values(fmt, bits)
    assert np.array_equal(back, vals) and np.array_equal(np.signbit(back), np.signbit(vals))
    with pytest.raises(ValueError):
        n.from_values(fmt, np.array([1.0 + 2.0**-30]))


def test_e5m2_infinity_decodes_as_infinity():
    assert n.to_values("e5m2", np.array([0x7C, 0xFC, 0x7E])).tolist()[:2] == [math.inf, -math.inf]
    assert math.isnan(n.to_values("e5m2", np.array([0x7E]))[0])


def test_round_to_modes():
    x = Fraction(1) + Fraction(3, 2**25)  # 1 + 1.5 ulp/2 of f32 -> between 1 and 1 + 2^-23
    assert n.round_to(x, "f32", "rne") == 1 + 2.0**-23
    assert n.round_to(x, "f32", "rtz") == 1.0
    assert n.round_to(-x, "f32", "rdown") == -(1 + 2.0**-23)
    assert n.round_to(Fraction(70000), "f16", "rne") == math.inf
    assert n.round_to(Fraction(70000), "f16", "rtz") == 65504.0
    assert n.round_to(Fraction(2) ** -20, "f16", "rne") == 2.0**-20  # subnormal kept


# ------------------------------------------------------------------ probes decide something
ALL_PROBE_MAKERS = [
    n.align_probes,
    n.rounding_probes,
    n.block_probes,
    n.c_probes,
    n.normalize_probes,
    n.out_rounding_probes,
]


@pytest.mark.parametrize("ins", n.INSTRS, ids=lambda i: i.key)
def test_every_probe_stage_separates_its_hypotheses(ins):
    base = n.Hyp(block_size=min(8, ins.k), align_frac_bits=13 if ins.a == "e4m3" else 24)
    for make in ALL_PROBE_MAKERS:
        probes = make(ins, base)
        if not probes:
            continue
        hyps = list(probes[0].predictions)
        # the probes of a stage together tell every pair of hypotheses apart ...
        sig = {h: tuple(p.predictions[h] for p in probes) for h in hyps}
        if make is n.align_probes:  # hypotheses above the largest j tested all look alike
            sig = {h: s for h, s in sig.items() if int(h) < len(probes)}
        if make is n.block_probes:  # block sizes are told apart when they differ below K
            sig = {h: s for h, s in sig.items() if int(h) < ins.k}
        if make is n.c_probes and base.block_size >= ins.k:
            continue  # one block: C position cannot matter
        assert len(set(sig.values())) == len(sig), f"{make.__name__}: hypotheses with identical predictions: {sig}"
        # ... and every input is representable exactly in the instruction's formats
        n.probe_bits(ins, probes)


@pytest.mark.parametrize("ins", n.INSTRS, ids=lambda i: i.key)
def test_subnormal_and_special_probes_build(ins):
    for p in n.subnormal_probes(ins):
        assert len(set(p.predictions.values())) == 2, p.label
        a, b, c = n.probe_bits(ins, [p])
        if p.label.startswith("subnormal in"):
            va = n.to_values(ins.a, a)
            assert (np.abs(va[va != 0]) < 2.0 ** n.fmt_min_normal_exp(ins.a)).any() or (
                np.abs(n.to_values(ins.a, b)) < 2.0 ** n.fmt_min_normal_exp(ins.a)
            )[0, 0]
    extra = n.special_probes(ins) + n.tf32_probes(ins) + n.fp8_probes(ins)
    n.probe_bits(ins, extra)
    if ins.a == "tf32":
        preds = [p.predictions for p in n.tf32_probes(ins)]
        assert any(len(set(d.values())) == 3 for d in preds)


TRUTHS = [
    dict(block_size=8, align_frac_bits=25, align_rounding="truncate", out_rounding="rtz", c_position="first"),
    dict(block_size=16, align_frac_bits=23, align_rounding="truncate", out_rounding="rne", c_position="first"),
    dict(block_size=4, align_frac_bits=24, align_rounding="rne", out_rounding="rne", c_position="last"),
    dict(block_size=16, align_frac_bits=26, align_rounding="floor", out_rounding="rtz", c_position="first"),
]


@pytest.mark.parametrize(
    "truth",
    TRUTHS,
    ids=lambda t: f"b{t['block_size']}.F{t['align_frac_bits']}.{t['align_rounding']}.{t['out_rounding']}",
)
@pytest.mark.parametrize("ins", [n.INSTRS[0], n.INSTRS[1], n.INSTRS[6], n.INSTRS[8]], ids=lambda i: i.key)
def test_probes_find_the_hypothesis_a_fake_tensor_core_follows(ins, truth):
    def hyp(i):
        t = dict(truth, block_size=min(truth["block_size"], i.k))
        if i.a == "e4m3":
            t["align_frac_bits"] = 13
        return n.Hyp(**t)

    f = n.probe_instruction(FakeRunner(hyp), ins)
    want = hyp(ins)
    assert f.decided["align_frac_bits"] == want.align_frac_bits
    assert f.decided["align_rounding"] == want.align_rounding
    assert f.decided["block_size"] == want.block_size
    assert f.decided["normalize"] == "per_block"
    if want.block_size < ins.k:
        assert f.decided["c_position"] == want.c_position
    if f.notes["out_rounding"].startswith("n/a"):
        assert ins.c == "f32" and want.align_frac_bits < 23
    else:
        assert f.decided["out_rounding"] == want.out_rounding
    assert f.decided["subnormal_in"] == "keep"
    params = f.params()
    assert params["block_size"] == want.block_size and params["align_frac_bits"] == want.align_frac_bits


def test_probes_see_per_add_normalisation_and_flushed_subnormals():
    ins = n.INSTRS[4]
    f = n.probe_instruction(
        FakeRunner(lambda i: n.Hyp(normalize="per_add", align_frac_bits=23), flush_subnormal_in=True), ins
    )
    assert f.decided["normalize"] == "per_add"
    assert f.decided["subnormal_in"] == "flush"


def test_decisions_refuse_inconsistent_patterns():
    ps = n.align_probes(n.INSTRS[0], n.Hyp())
    for j, p in enumerate(ps):
        p.got = 0.0 if j in (3, 5) else 1.0  # kept, kept, kept, dropped, kept, dropped ...
    assert n.decide_align_bits(ps)[0] is None
    bp = n.block_probes(n.INSTRS[0], n.Hyp(align_frac_bits=24))
    for j, p in enumerate(bp):
        p.got = 1.0 if j % 2 else 0.0
    assert n.decide_block(bp, 16)[0] is None


# ------------------------------------------------------------------ corner generators
@pytest.mark.parametrize("ins", n.INSTRS, ids=lambda i: i.key)
def test_agreement_inputs_stress_corners(ins):
    rng = np.random.default_rng(4)
    A, B, C, sc = n.agreement_inputs(ins, 60, rng)
    av = n.to_values(ins.a, A)
    tiny = 2.0 ** n.fmt_min_normal_exp(ins.a)
    sub = sc == n.SCENARIOS.index("subnormal")
    assert ((np.abs(av[sub]) < tiny) & (av[sub] != 0)).mean() > 0.3
    ovf = sc == n.SCENARIOS.index("overflow")
    assert (np.abs(av[ovf]) >= 2.0 ** (n.fmt_max_exp(ins.a) - 2)).all()
    spec = sc == n.SCENARIOS.index("special")
    assert (~np.isfinite(av[spec])).any() and np.isfinite(av[~spec]).all()
    can = sc == n.SCENARIOS.index("cancel")
    h = ins.k // 2
    pa = av[can][:, :, :h] * n.to_values(ins.a, B[can])[:, None, :h, 0]
    pb = av[can][:, :, h : 2 * h] * n.to_values(ins.a, B[can])[:, None, h : 2 * h, 0]
    assert np.mean(np.sign(pa) == -np.sign(pb)) > 0.9  # pairs of nearly opposite products
    a, b, c, d = n.flatten_dots(ins, A, B, C, C)
    assert a.shape == (60 * ins.m * ins.n, ins.k) and np.array_equal(b[ins.n + 1], B[0, :, 1])
    assert np.array_equal(a[ins.n + 1], A[0, 1])


# ------------------------------------------------------------------ profiling statistics
def test_profile_inputs_follow_the_paper():
    a, b, c = n.profile_inputs("mul", 100)
    assert (a[:, 1] == 0).all() and (c == 0).all() and a.dtype == np.float32
    a2, _, _ = n.profile_inputs("add", 100)
    assert np.array_equal(a2[:, 0], a[:, 0])  # same seed, same sequence for every type
    _, _, c3 = n.profile_inputs("acc", 100)
    assert (c3 != 0).all()


def test_profile_stats_on_synthetic_data():
    ref = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    gpu = ref + np.array([0.0, 0.5, 0.0, -1.0])
    s = n.profile_stats(gpu, ref)
    assert s["mean_abs_err"] == pytest.approx(0.375) and s["max_abs_err"] == 1.0 and s["frac_nonzero"] == 0.5
    assert n.profile_stats(ref, ref)["mean_abs_err"] == 0.0


def test_low_precision_init_gives_zero_multiplication_error_on_an_exact_core():
    """With values initialised in bf16, an exact tensor core matches the fp32 CPU product (Table 12);
    initialised in fp32, the conversion error shows."""
    ins = n.INSTRS[2]
    r = FakeRunner(lambda i: n.Hyp(block_size=16, align_frac_bits=40))
    low = n.profile_case(r, ins, "mul", "low", 200)["vs_fp32"]
    f32 = n.profile_case(r, ins, "mul", "fp32", 200)["vs_fp32"]
    assert low["mean_abs_err"] == 0.0 and f32["mean_abs_err"] > 1e-4


def test_round_values_rne():
    x = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-9])
    assert n.to_values("bf16", n.round_values("bf16", x)).tolist() == [1.0, 1 + 2.0**-6, 1.0]
    assert n.to_values("e4m3", n.round_values("e4m3", np.array([1000.0])))[0] == 448.0


# ------------------------------------------------------------------ the three benchmarks, end to end
def _model_runner(true_params):
    nm = pytest.importorskip("gpudissect.numerics.model", reason="helper A's model (gpudissect.numerics) not present")

    class ModelRunner:
        """The 'hardware' is gpudissect.numerics.model with parameters the probes must find back."""

        launches = 0

        def __init__(self, ctx):
            pass

        def supported(self, ins):
            return True

        def run(self, ins, A, B, C):
            a, b, c, _ = n.flatten_dots(ins, A, B, C, C)
            return nm.dot(true_params(ins), a, b, c).astype(np.uint32).reshape(C.shape)

        def dots(self, ins, a, b, c):
            return nm.dot(true_params(ins), a, b, c).astype(np.uint32)

    return nm, ModelRunner


def test_benchmarks_end_to_end_against_the_model(monkeypatch, tmp_path, run_bench):
    def true_params(ins):
        f32 = ins.c == "f32"
        return nm.TCParams(
            in_fmt=ins.a,
            acc_fmt=ins.c,
            k=ins.k,
            block_size=min(ins.k, 8 if ins.family == "mma" else 16),
            align_frac_bits=13 if ins.a in ("e4m3", "e5m2") else 25,
            out_rounding="rtz" if f32 else "rne",
            inter_block_rounding="rtz" if f32 else "rne",
            inter_fmt="f32",
        )

    nm, runner = _model_runner(true_params)
    for mod in (probe_bench, agreement, profiling):
        monkeypatch.setattr(mod, "Runner", runner)
    monkeypatch.setattr(targets, "sass_of", lambda ctx, spec, fn: None)  # no disassembler: the declared SASS
    monkeypatch.setattr(profiling, "PROFILE_INSTRS", n.PROFILE_INSTRS[:2])
    monkeypatch.setenv("GPUDISSECT_PRESETS_OUT", str(tmp_path / "presets.json"))
    monkeypatch.setenv("GPUDISSECT_VECTORS_OUT", str(tmp_path / "vectors.npz"))
    r = run_bench("numerics/tc_probes")
    assert r.status == "ok", r.message
    assert not r.twice
    assert r.value("num.mma.f16_f32.block_size") == 8 and r.value("num.wgmma.f16_f32.block_size") == 16
    assert r.value("num.wgmma.e4m3_f32.align_frac_bits") == 13 and r.value("num.wgmma.e4m3_f32.block_size") == 16
    assert r.value("num.wgmma.f16_f32.out_rounding") == "rtz" and r.value("num.wgmma.f16_f16.out_rounding") == "rne"
    assert r.value("num.subnormal_inputs") == "keep"
    # read from the SASS each variant declares on sm_90 (no disassembler here): fp8 mma.sync emulated
    assert r.value("num.mma.e4m3_f32.implementation") == "emulated"
    assert r.value("num.wgmma.e4m3_f32.implementation") == "native" == r.value("num.mma.bf16_f32.implementation")
    assert "2 x HMMA.16816.F32" in r.figures["num.mma.e4m3_f32.implementation"].note
    from gpudissect.numerics.presets import load_presets

    presets = load_presets(str(tmp_path / "presets.json"))["sm_90"]
    assert presets["wgmma.m64n8k16.f32.f16.f16"][0].block_size == 16 and presets["wgmma.m64n8k16.f32.f16.f16"][1]
    monkeypatch.setattr(probe_bench, "INSTRS", [n.INSTRS[0], n.INSTRS[4]])
    r = run_bench("numerics/tc_model_agreement")
    assert r.status == "ok", r.message
    # one block: wgmma.f16_f32 (block 16 = k); mma.f16_f32 has two blocks of 8 here, so it goes with the chains
    assert r.value("num.model.agreement_rate") == 1.0 and r.value("num.model.samples") == 1 << 17
    assert "wgmma.f16_f32" in r.figures["num.model.agreement_rate"].method
    # mma.f16_f32 and the chains of 4 of both: the model chains them as the 'hardware' does
    assert r.value("num.model.multi_block_agreement_rate") == 1.0
    assert r.value("num.model.multi_block_samples") == 3 * (1 << 14)
    assert "mma.f16_f32 (2 blocks of 8)" in r.figures["num.model.multi_block_agreement_rate"].method
    seed = r.value("num.model.seed")
    assert 0 <= seed < 2**53 and float(seed) == seed
    z = np.load(tmp_path / "vectors.npz")
    assert z["wgmma.m64n8k16.f32.f16.f16.a"].shape == (4096, 16) and z["mma.m16n8k16.f32.f16.f16.a"].shape == (512, 16)
    r = run_bench("numerics/tc_profiling")
    assert r.status == "ok", r.message
    assert r.value("num.profile.mma.f16_f32.init_f16.mul.mean_abs_err") == 0.0
    assert r.value("num.profile.mma.f16_f32.init_fp32.mul.mean_abs_err") > 0
    assert r.value("num.profile.mma.f16_f16.init_f16.mul.mean_abs_err.vs_fp32cvtf16") == 0.0


def test_agreement_reports_a_model_that_differs():
    """Probes find F = 25; a hardware whose low bits differ elsewhere (here: C joins after the products)
    must show up as disagreements, not be hidden."""

    def hw(ins):
        return nm.TCParams(
            in_fmt=ins.a,
            acc_fmt=ins.c,
            k=ins.k,
            block_size=ins.k,
            align_frac_bits=25,
            out_rounding="rtz",
            inter_block_rounding="rtz",
            c_in_first_block=False,
            inter_fmt="f32",
        )

    nm, runner = _model_runner(hw)
    ins = n.INSTRS[0]
    r = runner(None)
    A, B, C, _ = n.agreement_inputs(ins, 60, np.random.default_rng(5))
    a, b, c, d = n.flatten_dots(ins, A, B, C, r.run(ins, A, B, C))
    other = nm.dot(
        nm.TCParams(
            in_fmt="f16",
            acc_fmt="f32",
            k=16,
            block_size=16,
            align_frac_bits=25,
            out_rounding="rtz",
            inter_block_rounding="rtz",
        ),
        a,
        b,
        c,
    ).astype(np.uint32)
    eq, _ = n.same_bits("f32", d, other)
    assert 0 < (~eq).sum()


@pytest.mark.parametrize("ref", ["exact", "nominal"])
def test_probe_parameters_reproduce_a_model_hardware(ref):
    """Whatever the alignment reference, the parameters the probes derive make the model agree with a
    'hardware' that is the model under other (hidden) parameters, bit for bit on corner-case dots."""

    def hw(ins):
        return nm.TCParams(
            in_fmt=ins.a,
            acc_fmt=ins.c,
            k=ins.k,
            block_size=8,
            align_frac_bits=24,
            align_ref=ref,
            out_rounding="rtz",
            inter_block_rounding="rtz",
            inter_fmt="f32",
        )

    nm, runner = _model_runner(hw)
    ins = n.INSTRS[0]
    f = n.probe_instruction(runner(None), ins)
    assert f.decided["align_ref"] == ref
    params = agreement._tcparams(f.params())
    assert params.align_frac_bits == 24 and params.block_size == 8
    A, B, C, _ = n.agreement_inputs(ins, 120, np.random.default_rng(6))
    a, b, c, d = n.flatten_dots(ins, A, B, C, runner(None).run(ins, A, B, C))
    eq, nan = n.same_bits("f32", d, nm.dot(params, a, b, c).astype(np.uint32))
    assert (eq | nan).all()


def test_monotonicity_counts_decreases():
    class Decreasing(FakeRunner):
        def dots(self, ins, a, b, c):  # returns -a_0 b_0: raising a_0 lowers D
            v = -(n.to_values(ins.a, a[:, 0]) * n.to_values(ins.a, b[:, 0]))
            return n.round_values(ins.c, v)

    class Exact(FakeRunner):
        def dots(self, ins, a, b, c):
            v = (n.to_values(ins.a, a) * n.to_values(ins.a, b)).sum(axis=1) + n.to_values(ins.c, c)
            return n.round_values(ins.c, v)

    ins = n.INSTRS[6]
    viol, pairs, ex = n.monotonicity(Decreasing(None), ins, np.random.default_rng(0), 256)
    assert viol > 0.9 * pairs and ex
    assert n.monotonicity(Exact(None), ins, np.random.default_rng(0), 256)[0] == 0


# ------------------------------------------------------------------ past one block (issue 9 §6)
def _emulated_fp8_mma(ins):
    """What ptxas makes of fp8 mma.sync m16n8k32 on sm_90: two f16 HMMA over the k indices j mod 4 in
    (0, 1) and (2, 3), then C by FADD / HADD2."""
    nm = pytest.importorskip("gpudissect.numerics.model")
    f32 = ins.c == "f32"
    return nm.TCParams(
        in_fmt=ins.a,
        acc_fmt=ins.c,
        k=32,
        block_size=16,
        block_interleave=2,
        c_in_first_block=False,
        c_add="ieee",
        out_rounding="rne",
        inter_fmt=ins.c,
        inter_block_rounding="rtz" if f32 else "rne",
        align_frac_bits=26,
        align_ref="nominal",
        c_ref_offset=1,
        zero_sign="positive",
        nan_out=0x7FFFFFFF if f32 else 0x7FFF,
        overflow="inf",
    )


@pytest.mark.parametrize("ins", [n.MMA_FP8_INSTRS[0], n.MMA_FP8_INSTRS[3]], ids=lambda i: i.key)
def test_probes_find_an_interleaved_two_block_instruction(ins):
    import dataclasses

    want = _emulated_fp8_mma(ins)
    nm, runner = _model_runner(lambda i: want)
    f = n.probe_instruction(runner(None), ins)
    assert f.perm == [j for j in range(32) if j % 4 < 2] + [j for j in range(32) if j % 4 >= 2]
    assert f.decided["block_interleave"] == 2 and f.decided["c_add"] == "ieee_rne"
    assert f.decided["inter_block"] == f"{ins.c}/{'rtz' if ins.c == 'f32' else 'rne'}"
    found = agreement._tcparams(f.params())
    diff = {
        x.name: (getattr(found, x.name), getattr(want, x.name))
        for x in dataclasses.fields(want)
        if getattr(found, x.name) != getattr(want, x.name)
    }
    assert not diff


def test_layout_decisions():
    ins = n.MMA_FP8_INSTRS[0]
    ps = n.layout_probes(ins)
    assert [int(p.label.split()[0][2:]) for p in ps] == list(range(2, 32))
    for p in ps:  # a tensor core with blocks {j mod 4 in (0, 1)}, {j mod 4 in (2, 3)}
        p.got = p.predictions["later block" if int(p.label.split()[0][2:]) % 4 >= 2 else "same block"]
    perm, _ = n.decide_layout(ps, 32)
    assert n.interleave_of(perm, 32, 16) == 2 and n.interleave_of(list(range(32)), 32, 16) == 0
    assert n.interleave_of(perm[:2] + perm[3:] + perm[2:3], 32, 16) is None
    ps[5].got = 1.0  # neither prediction
    assert n.decide_layout(ps, 32)[0] is None


@pytest.mark.parametrize("mode", ["separate", "wide:f32/rne", "fused"])
def test_chain_probes_find_what_passes_between_instructions(mode):
    """A chain of 4 f16 -> f16 mma: each D rounded to f16 (PTX), the sum kept in f32, or one block."""
    nm = pytest.importorskip("gpudissect.numerics.model")
    single = nm.TCParams(
        in_fmt="f16",
        acc_fmt="f16",
        k=16,
        block_size=16,
        align_frac_bits=26,
        align_ref="nominal",
        c_ref_offset=1,
        out_rounding="rne",
        inter_block_rounding="rne",
        inter_fmt="f32",
    )
    ci = n.CHAIN_INSTRS[1]
    chained = nm.TCParams.from_dict(
        {
            **{
                f: getattr(single, f)
                for f in ("in_fmt", "acc_fmt", "align_frac_bits", "align_ref", "c_ref_offset", "out_rounding")
            },
            **agreement.chain_params({"k": 16, "block_size": 16}, mode, ci.K),
        }
    )

    class Chain:
        def supported(self, ins):
            return True

        def dots(self, ins, a, b, c):
            return nm.dot(chained if mode != "separate" else single, a, b, c).astype(np.uint32)

    h = n.Hyp(block_size=16, align_frac_bits=25, out_rounding="rne")
    cf = n.probe_chain(Chain(), ci, h)
    assert cf.mode == mode, cf.note
