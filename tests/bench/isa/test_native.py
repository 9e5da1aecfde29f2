"""Native instruction table and scheduler mapping (isa suite, 002 §4.1 / §2.2), CPU only: each kernel's
timed loop is the instruction under test (counted per loop iteration in the SASS), the chain models, the
issue-rate analysis and the scheduler inference on synthetic data, and both benchmarks against a fake
device whose kernels write the CPU replay and made-up clock records."""

import re

import numpy as np
import pytest

from fakes import FakeDevice, run_bench
from gpudissect.analysis import issue_rate as ir
from gpudissect.bench.isa import fragments, native, native_arch, native_ops, native_peaks, native_replay, scheduler
from gpudissect.capability import CI_ARCHES, Target
from gpudissect.device.cuda import Buffer
from gpudissect.sass.disasm import find_tool

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def test_table_covers_the_issue_list():
    keys = {o.key for o in native_ops.ops()}
    want = {
        "ffma",
        "fadd",
        "fmul",
        "fmnmx",
        "fsetp",
        "hfma2",
        "hadd2",
        "hmul2",
        "hfma2_bf16",
        "dfma",
        "dadd",
        "dmul",
        "imad",
        "imad_wide",
        "iadd3",
        "lop3",
        "shf",
        "vimnmx",
        "isetp",
        "popc",
        "flo",
        "brev",
        "prmt",
        "sel",
        "mufu_ex2",
        "mufu_lg2",
        "mufu_rsq",
        "mufu_rcp",
        "mufu_sin",
        "mufu_cos",
        "mufu_sqrt",
        "mufu_tanh",
        "f2i",
        "i2fp",
        "f2f",
        "f2fp",
        "shfl",
        "vote",
        "redux",
        "match",
        "lds",
        "sts",
        "bar",
        "viaddmnmx",
        "vimnmx3",
    }
    assert want <= keys and len(keys) >= 40
    for o in native_ops.ops():
        assert all(h in keys for h in o.helpers), o.key
        assert re.fullmatch(r"[a-z0-9_]+", o.key)


def test_every_op_has_a_kernel_branch():
    from gpudissect.device.compiler import kernel_source

    src = kernel_source("isa_native.cu")
    for o in native_ops.ops():
        assert f"defined({o.define})" in src, o.key


@needs_cuobjdump
@pytest.mark.sass
def test_timed_loop_is_the_instruction():
    """In every kernel the loop that is timed holds exactly BODY x count instances of the opcode, and the
    opcode (with its declared helper instructions) makes up the loop: at most 4 other instructions."""
    from concurrent.futures import ThreadPoolExecutor

    from gpudissect.sasscheck import check_spec

    with ThreadPoolExecutor(max_workers=4) as ex:  # NVRTC and cuobjdump release the GIL
        specs = dict(
            zip([o.key for o in native_ops.ops()], ex.map(check_spec, [native.SPECS[o.key] for o in native_ops.ops()]))
        )
    for o in native_ops.ops():
        funcs, checks = specs[o.key]
        assert all(c.found for c in checks), (o.key, [c.pattern for c in checks if not c.found])
        for ilp in o.ilps:
            body, n = ir.timed_loop(funcs[f"isa_ilp{ilp}"], o.pattern)
            assert n == o.body * o.count, (o.key, ilp, n)
            helpers_per_step = 1 if o.helpers or o.key in ("redux",) else 0
            others = len(body) - n - helpers_per_step * o.body
            extra = 2 * ilp if o.key == "vote" else 0  # vote: predicates re-made per chain and iteration
            assert others <= 4 + extra, (o.key, ilp, others, body[:12])


@needs_cuobjdump
@pytest.mark.sass
def test_sched_kernel_is_ffma_chains():
    from gpudissect.sasscheck import check_spec

    funcs, _ = check_spec(native.SPECS["ffma"])
    body, n = ir.timed_loop(funcs["sched_ffma"], native_ops.op("ffma").pattern)
    assert n == native_ops.BODY and len(body) <= native_ops.BODY + 4


@pytest.mark.parametrize("key", [o.key for o in native_ops.ops()])
def test_models_run_and_exact_chains_stay_exact(key):
    o = native_ops.op(key)
    inp = native_replay.make_inputs(o)
    out = native_replay.chain_model(o, inp, 3)
    assert set(out) == set(o.ilps)
    for ilp, w in out.items():
        assert w.shape == (ilp, 32) and w.dtype == np.uint64
        assert native_replay.check_words(o, w[None], w) == ""
    if o.key in ("ffma", "fadd", "fmul", "dfma", "dadd", "dmul", "hfma2", "hadd2", "hmul2", "hfma2_bf16"):
        # integer-valued chains: every value exactly representable, so the model is exact
        v = native_replay.from_words(out[1], o.dtype)
        if o.dtype in ("f32", "f64") and o.key not in ("fmul", "dmul"):
            assert np.all(v == np.round(v)) and np.all(np.abs(v) < 2**10)


@pytest.mark.parametrize(
    "key",
    [
        "ffma",
        "fadd",
        "fmul",
        "dfma",
        "hfma2",
        "hadd2",
        "hmul2",
        "hfma2_bf16",
        "imad",
        "iadd3",
        "shfl",
        "lds",
        "dmul",
        "dadd",
        "ffma_reuse",
        "hfma2_reuse",
        "dfma_ureg",
    ],
)
def test_a_kernel_that_skipped_a_step_fails_the_check(key):
    o = native_ops.op(key)
    inp = native_replay.make_inputs(o)
    a, b = native_replay.chain_model(o, inp, 3)[1], native_replay.chain_model(o, inp, 4)[1]
    assert native_replay.check_words(o, b[None], a) != "", key


def test_lds_walk_does_not_return_to_its_start():
    o = native_ops.op("lds")
    inp = native_replay.make_inputs(o)
    for iters in (25, 65):
        for ilp, w in native_replay.chain_model(o, inp, iters).items():
            assert not np.array_equal(w, native_replay.to_words(inp.x0[:ilp], "u32")), (iters, ilp)


def test_block_rates_and_clock():
    # 2 blocks x 2 warps; warp spans 1000 and 1200 cycles for 500 instructions each
    rec = np.array(
        [[0, 1000, 0, 0, 500], [100, 1200, 0, 50, 600], [0, 2000, 1, 0, 1000], [0, 2000, 1, 0, 1000]], np.uint64
    ).reshape(-1)
    lat, rate = ir.block_rates(rec, 2, 500)
    assert lat[0] == pytest.approx((2 + 2.2) / 2) and rate[0] == pytest.approx(1000 / 1200)
    assert rate[1] == pytest.approx(0.5)
    assert ir.clock_mhz(rec, 2)[0] == pytest.approx(1200 / 600 * 1e3)


def test_steady_state_and_helpers():
    cells = [ir.Cell(w, i, 4.0, r, r, r) for (w, i, r) in ((1, 1, 10), (4, 2, 120), (8, 4, 127), (16, 8, 128))]
    best, start = ir.steady_state(cells)
    assert best.rate == 128 and (start.warps, start.ilp) == (8, 4)
    assert ir.helper_corrected(13.0, 1, [4.0]) == 9.0
    assert ir.helper_corrected(10.0, 2, []) == 5.0


def _pairs(rule, n=16, hi=64.0, lo=32.0, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return {
        (a, b): (lo if rule(a) == rule(b) else hi) * (1 + noise * rng.standard_normal())
        for a in range(n)
        for b in range(a + 1, n)
    }


@pytest.mark.parametrize("n", [2, 4, 8])
def test_scheduler_inference_finds_the_modulo_rule(n):
    pairs = _pairs(lambda w: w % n, noise=0.01)
    cut = ir.split_two_levels(pairs)
    assert cut is not None
    conflicts = [k for k, v in pairs.items() if v < cut]
    classes = ir.classes_from_conflicts(16, conflicts)
    assert len(set(classes)) == n and ir.modulo_rule(classes) == n


def test_scheduler_inference_other_rules_and_no_structure():
    pairs = _pairs(lambda w: w // 4)  # blocks of 4 consecutive warps: no modulo rule
    cut = ir.split_two_levels(pairs)
    classes = ir.classes_from_conflicts(16, [k for k, v in pairs.items() if v < cut])
    assert len(set(classes)) == 4 and ir.modulo_rule(classes) is None
    flat = _pairs(lambda w: w, hi=64.0, lo=64.0, noise=0.01)
    assert ir.split_two_levels(flat) is None


def test_sched_rates_over_the_active_warps():
    # 1 block x 4 warps: warps 1 and 3 active, spans 100..1100 and 300..1300 clock64 cycles
    rec = np.zeros((1, 4, scheduler.SCHED_REC), np.uint64)
    rec[0, 1, :2], rec[0, 3, :2] = (100, 1100), (300, 1300)
    assert scheduler.sched_rates(rec.reshape(-1), [1, 3], 4, 600)[0] == pytest.approx(2 * 600 / 1200)


def test_loop_bodies_parse_backward_branches():
    text = "\n".join(
        [
            "/*0000*/ MOV R1, c[0x0][0x28] ;",
            "/*0010*/ FFMA R2, R2, R3, R4 ;",
            "/*0020*/ NOP ;",
            "/*0030*/ FFMA R2, R2, R3, R4 ;",
            "/*0040*/ @P0 BRA 0x10 ;",
            "/*0050*/ EXIT ;",
        ]
    )
    body, n = ir.timed_loop(text, r"FFMA ")
    assert n == 2 and len(body) == 3


class _Ctx:
    """Collects what a benchmark emits (the figure/series path, no GPU)."""

    quick = True
    target = Target.parse("sm_90a")

    def __init__(self):
        self.figures, self.series_names, self.failures = {}, [], []

    def figure(self, key, value, unit, kind, method, spread=None, check="ok", note=""):
        self.figures[key] = (value if check == "ok" else "FAILED", unit, check)

    def series(self, name, *a, figure="", **kw):
        self.series_names.append((figure, name))

    def soft_check(self, cond, msg):
        return cond


def test_figures_from_synthetic_cells(monkeypatch):
    """Every instruction gets a latency and a throughput figure; helpers are subtracted; a failed
    chain stores FAILED for itself and for the instructions that need it as a helper. The peak forms store the
    throughput under the instruction's name, the 8-pair forms under <name>_bank_limited, and each tabled
    instruction a ratio to its unit's peak."""
    monkeypatch.setattr(native, "_loop_sass", lambda *a: None)
    chosen = list(native_ops.ops())
    results = {}
    for o in chosen:
        lat = {"fsel": 4.0, "fsetp": 8.0, "fadd": 4.0, "mufu_lg2": 11.0}.get(o.key, 6.0)
        cells = {(w, i): ir.Cell(w, i, lat, 10.0 * w * i, 9.0 * w * i, 11.0 * w * i) for w in (1, 2) for i in o.ilps}
        results[o.key] = (cells, "chains differ" if o.key == "lds" else "")
    ctx = _Ctx()
    native._figures(ctx, chosen, results, 25)
    f = ctx.figures
    assert f["isa.latency.ffma_cycles"][0] == 6.0
    assert f["isa.latency.fsetp_cycles"][0] == pytest.approx(4.0)  # the FSETP+FSEL step (8) minus FSEL (4)
    assert f["isa.latency.mufu_lg2_cycles"][0] == pytest.approx(7.0)  # 11 - FADD 4
    assert f["isa.latency.fmnmx_cycles"][0] == pytest.approx(6.0)  # per instruction, two per step
    assert f["isa.latency.lds_cycles"][2] == "failed" and f["isa.latency.sts_cycles"][2] == "failed"
    assert f["isa.throughput.ffma_per_clk_sm"][0] == 160.0
    assert f["isa.native.instructions_measured"][0] == sum(o.latency for o in chosen) - 1
    for k in ("ffma", "hfma2", "dfma"):
        assert f"isa.throughput.{k}_bank_limited_per_clk_sm" in f and f"isa.latency.{k}_cycles" in f
        assert f"isa.latency.{k}_bank_limited_cycles" not in f and f"isa.latency.{k}_reuse_cycles" not in f
    assert f["isa.throughput.dfma_peak_ratio"][0] == pytest.approx(160 / 64, abs=1e-4)
    assert f["isa.throughput.imad_peak_ratio"][0] == pytest.approx(160 / 64, abs=1e-4)
    assert f["isa.throughput.hfma2_peak_ratio"][0] == pytest.approx(160 / 128, abs=1e-4)
    assert {k for k in f if k.endswith("_peak_ratio")} == {
        f"isa.throughput.{k}_peak_ratio"
        for k in ("ffma", "fadd", "fmul", "hfma2", "dfma", "dadd", "dmul", "imad")
        for k in (k, f"{k}_bank_limited")
        if not k.endswith("_bank_limited") or k.split("_")[0] in ("ffma", "hfma2", "dfma")
    }
    assert {g for g, _ in ctx.series_names} >= {"latency_table.floating_point", "throughput_table.integer_dpx"}


class _IsaDevice(FakeDevice):
    """Kernels that write the CPU replay of their chains and made-up clock records: isa_ilp<i> at 4 cycles
    per instruction and warp and one warp instruction per clock per SM, on a 2 GHz clock; sched_ffma with
    4 sub-cores (warp % 4) that issue one FFMA per clock each."""

    def _ilp(self, launch, ops, zero, init, iters, out, rec, bconst):
        o = native_ops.op(next(iter(launch.spec.defines))[3:].lower())
        ilp, w = int(launch.name.removeprefix("isa_ilp")), launch.block // 32
        want = native_replay.chain_model(o, native_replay.make_inputs(o), iters)[ilp]
        self.upload(np.broadcast_to(want, (launch.grid * w, ilp, 32)).copy(), Buffer(out, 0))
        per_warp = native_replay.steps_per_chain(ilp, iters, o.body) // 2 * ilp * o.count
        cycles = per_warp * max(4 / ilp, w)
        r = np.zeros((launch.grid, w, 5), np.uint64)
        r[:, :, 1], r[:, :, 4] = cycles, cycles // 2
        self.upload(r, Buffer(rec, 0))

    k_isa_ilp1 = k_isa_ilp2 = k_isa_ilp4 = k_isa_ilp8 = _ilp

    def k_sched_ffma(self, launch, ops, init, mask, iters, out, rec):
        o, w = native_ops.op("ffma"), launch.block // 32
        active = [x for x in range(w) if mask >> x & 1]
        got = np.zeros((launch.grid, w, 8, 32), np.uint64)
        got[:, active] = native_replay.chain_model(o, native_replay.make_inputs(o, seed=3), iters)[8]
        self.upload(got, Buffer(out, 0))
        busiest = max(sum(1 for x in active if x % 4 == c) for c in range(4))
        r = np.zeros((launch.grid, w, scheduler.SCHED_REC), np.uint64)
        r[:, active, 1] = iters * native_ops.BODY * busiest
        r[:, :, 2] = np.arange(w)
        self.upload(r, Buffer(rec, 0))


def test_native_instructions_against_a_fake_device(monkeypatch):
    # the peak ratio's reason reads the timed loop's SASS: two sources in bank 0 on every FFMA
    monkeypatch.setattr(native, "_loop_sass", lambda *a: _loop("FFMA R4, R4, R5, R6", "FFMA R8, R8, R5, R6"))
    run = run_bench("isa/native_instructions", {"ops": "ffma,ffma_reuse,fsel,fsetp"}, _IsaDevice(sm_count=2))
    assert run.status == "ok", run.message
    assert run.value("clock.native_instructions.sm_mhz") == pytest.approx(2000.0)
    assert run.value("isa.latency.ffma_cycles") == pytest.approx(4.0)
    assert run.value("isa.latency.fsetp_cycles") == pytest.approx(0.0)  # FSETP+FSEL at 4 minus FSEL at 4
    assert run.value("isa.throughput.ffma_per_clk_sm") == pytest.approx(32.0)  # the reuse form's
    assert run.value("isa.throughput.ffma_bank_limited_per_clk_sm") == pytest.approx(32.0)
    assert run.value("isa.throughput.ffma_peak_ratio") == pytest.approx(32.0 / 128)
    note = run.figures["isa.throughput.ffma_peak_ratio"].note
    assert "measured limit" in note and "64 of 64 read 2 value(s) in one bank" in note, note
    assert run.value("isa.native.instructions_measured") == 3


def test_scheduler_mapping_against_a_fake_device():
    run = run_bench("isa/scheduler_mapping", {}, _IsaDevice(sm_count=2))
    assert run.status == "ok", run.message
    assert run.value("isa.scheduler.subcores_per_sm") == 4
    assert run.value("isa.scheduler.mapping") == "warp % 4"
    assert run.value("isa.scheduler.issue_per_clk_subcore") == pytest.approx(1.0)
    assert run.value("isa.scheduler.single_warp_ffma_per_clk") == pytest.approx(1.0)


# ---- other GPUs: each instruction it has, labelled native or emulated from the SASS of its timed loop ------
def _loop(*lines: str) -> str:
    """A function's SASS whose timed loop is `lines`, each repeated BODY // 2 times (two per chain step)."""
    body = [f"/*{0x100 + 16 * i:04x}*/ {t}" for i, t in enumerate([x for x in lines for _ in range(32)])]
    end = 0x100 + 16 * len(body)
    return "\n".join(
        ["/*0000*/ CS2R R2, SR_CLOCKLO", *body, f"/*{end:04x}*/ @P0 BRA 0x100", f"/*{end + 16:04x}*/ EXIT"]
    )


VOLTA_SASS = {
    "vimnmx": _loop(
        "ISETP.LT.AND P1, PT, R4, R5, PT",
        "SEL R5, R4, R5, !P1",
        "ISETP.LT.AND P1, PT, R6, R5, PT",
        "SEL R5, R6, R5, P1",
    ),
    "ffma": _loop("FFMA R4, R4, R5, R6", "FFMA R4, R4, R7, R8"),
    "viaddmnmx": _loop("IMAD.IADD R4, R4, 0x1, R5", "ISETP.LT.AND P1, PT, R4, R6, PT", "SEL R4, R4, R6, !P1"),
}


@pytest.mark.parametrize(
    "cc,sass,want",
    [
        ((7, 0), VOLTA_SASS, {"vimnmx": "emulated on sm_70: no IMNMX in the timed loop", "ffma": "native on sm_70: "}),
        ((7, 0), None, {"vimnmx": "emulated on sm_70 by its declared SASS", "ffma": "native on sm_70 by its declared"}),
        (
            (12, 0),
            {"viaddmnmx": _loop("IADD R4, R4, R5", "VIMNMX.S32 R4, R4, R6, !PT")},
            {"viaddmnmx": "emulated on sm_120a: no VIADDMNMX"},
        ),
        ((10, 0), {"viaddmnmx": _loop("VIADDMNMX R4, R4, R5, R6, !PT", "NOP")}, {"viaddmnmx": "native on sm_100a: "}),
    ],
)
def test_native_instructions_on_other_gpus(monkeypatch, cc, sass, want):
    """Every GPU times the instructions it has (redux needs sm_80, tanh.approx sm_75: skipped by name), each
    figure's note saying native or emulated from the SASS of its timed loop (or, with no disassembler, from the
    SASS declared for the family); the bars are named after this GPU."""
    keys = ",".join(["ffma", "vimnmx", "viaddmnmx", "redux", "mufu_tanh"])
    monkeypatch.setattr(
        native,
        "sass_of",
        lambda ctx, spec, fn: None if sass is None else sass.get(next(iter(spec.defines))[3:].lower(), ""),
    )
    dev = _IsaDevice(sm_count=2, cc_major=cc[0], cc_minor=cc[1])
    run = run_bench("isa/native_instructions", {"ops": keys}, dev)
    assert run.status == "ok", run.message
    ran = {k for k in ("ffma", "vimnmx", "viaddmnmx", "redux", "mufu_tanh") if f"isa.latency.{k}_cycles" in run.figures}
    assert ran == {"ffma", "vimnmx", "viaddmnmx"} | ({"redux"} if cc >= (8, 0) else set()) | (
        {"mufu_tanh"} if cc >= (7, 5) else set()
    )
    for key, label in want.items():
        assert run.figures[f"isa.latency.{key}_cycles"].note.startswith(label), run.figures[
            f"isa.latency.{key}_cycles"
        ].note
        thr = native_ops.op(key).throughput_name
        assert run.figures[f"isa.throughput.{thr}_per_clk_sm"].note.startswith(label)
    assert {s.name for s in run.series if s.figure.startswith("latency_table")} >= {f"sm_{cc[0]}{cc[1]} (this GPU)"}
    # FP32's per-SM peak is tabled for every family with a whitepaper figure; B200's SM is not published
    ratio = run.figures.get("isa.throughput.ffma_bank_limited_peak_ratio")
    if cc == (10, 0):
        assert ratio is None
        assert "no ratio to peak" in run.figures["isa.throughput.ffma_bank_limited_per_clk_sm"].method
    else:
        assert ratio is not None


def test_hopper_keeps_its_notes(monkeypatch):
    """On sm_90 the notes read as they always have (its required SASS pins what they describe); no label."""
    monkeypatch.setattr(native, "sass_of", lambda *a: pytest.fail("Hopper reads no label"))
    monkeypatch.setattr(native, "_loop_sass", lambda *a: None)  # the peak ratio's reason reads the loop, not a label
    run = run_bench("isa/native_instructions", {"ops": "hadd2,ffma"}, _IsaDevice(sm_count=2))
    assert run.status == "ok", run.message
    assert run.figures["isa.latency.hadd2_cycles"].note.startswith(native_ops.op("hadd2").note)
    assert "native on" not in run.figures["isa.latency.ffma_cycles"].note


@pytest.mark.parametrize("arch", [*CI_ARCHES])
def test_native_plan_per_target(arch):
    """native_instructions and scheduler_mapping run on every target; an instruction is skipped only where
    its PTX does not exist (max/min.f16x2, bf16x2, cvt f16x2 and redux before sm_80, tanh.approx before sm_75)."""
    from gpudissect.bench.plan import plan
    from gpudissect.bench.registry import select

    t = Target.parse(arch)
    entries = {e.bench: e for e in plan(select(["isa"]), t)}
    assert all(e.status == "run" for e in entries.values()), {b: e.reason for b, e in entries.items()}
    skipped = {
        v["variant"].removeprefix("isa_native.cu[").rstrip("]") for v in entries["native_instructions"].skipped_variants
    }
    want = {"hmnmx2", "hfma2_bf16", "f2fp", "redux"} if t.cc < (8, 0) else set()
    assert skipped == want | ({"mufu_tanh"} if t.cc < (7, 5) else set())
    assert entries["fragment_maps"].variants == [s.variant for s in fragments.SPECS if s.needs.why_not(t) is None]


@pytest.mark.parametrize("family", ["volta", "turing", "ampere", "ada", "blackwell", "blackwell-consumer"])
def test_emulated_rows_declare_what_runs_instead(family):
    """Where an instruction is emulated its required SASS is the emulation's, not the instruction: a build
    holding the instruction itself would fail its check instead of being labelled emulated by a table."""
    for o in native_ops.ops():
        req = native.SPECS[o.key].required_for(
            Target.parse(
                {
                    "volta": "sm_70",
                    "turing": "sm_75",
                    "ampere": "sm_80",
                    "ada": "sm_89",
                    "blackwell": "sm_100a",
                    "blackwell-consumer": "sm_120a",
                }[family]
            )
        )
        pats = req["isa_ilp1"]
        if family in native_arch.EMULATED.get(o.key, {}):
            assert native_arch.native_pattern(o, family) not in pats, (o.key, family)
        else:
            assert pats == [native_arch.native_pattern(o, family)], (o.key, family)
            assert req[f"isa_ilp{o.ilps[-1]}"] == [*pats, *native.REUSED.get(o.key, ())], (o.key, family)


EMULATED_ON = {  # what each arch's real SASS shows: the rows that are not their instruction there
    "sm_70": {"vimnmx", "vote", "viaddmnmx", "vimnmx3"},
    "sm_75": {"vote", "viaddmnmx", "vimnmx3"},
    "sm_89": {"viaddmnmx", "vimnmx3"},
    "sm_90a": set(),
    "sm_100a": set(),
    "sm_120a": {"viaddmnmx", "vimnmx3"},
}


@needs_cuobjdump
@pytest.mark.sass
@pytest.mark.parametrize("arch", list(EMULATED_ON))
def test_labels_from_the_real_sass(arch):
    """The label of each row read from the SASS NVRTC builds for the arch (sm_70: NVRTC 12 and a CUDA 12
    cuobjdump): emulated exactly where the timed loop lacks the instruction."""
    from gpudissect.device.compiler import compile_spec, unsupported_why
    from gpudissect.sass import legacy
    from gpudissect.sass.disasm import disassemble_cached

    if unsupported_why(arch) or (arch == "sm_70" and legacy.cuobjdump() is None):
        pytest.skip(f"no NVRTC or cuobjdump for {arch} here")
    t = Target.parse(arch)
    for key in ("vimnmx", "vote", "viaddmnmx", "vimnmx3", "ffma", "hadd2"):
        o = native_ops.op(key)
        text = disassemble_cached(compile_spec(native.SPECS[key], arch))["isa_ilp1"]
        label = native_arch.sass_label(text, o, t.family, arch)
        kind = "emulated" if key in EMULATED_ON[arch] else "native"
        assert label.startswith(f"{kind} on {arch}: "), (key, label)
        assert f"per {native_ops.BODY} steps" in label


# ---- the peak forms: operands the register banks can deliver at the unit's rate ------------------------------
PEAK_FORMS = {"ffma_reuse": 1, "hfma2_reuse": 1, "dfma_ureg": 2}  # row -> clocks between warp instructions (sm_90)


@needs_cuobjdump
@pytest.mark.sass
@pytest.mark.parametrize("arch", list(CI_ARCHES))
def test_peak_forms_read_what_the_banks_deliver(arch):
    """On every arch: the DFMA peak form reads b from a uniform register, so no DFMA of its timed loop (any ILP)
    reads more than two values from one bank (its 2 issue clocks at 1 value per bank per clock); the 8-pair
    DFMA has DFMAs reading three. The FFMA/HFMA2 forms carry .reuse on b and c; at ILP 8 on sm_90 the bank model
    predicts >= 0.95 of the peak for them, <= 0.90 for the 8-pair forms (the reason of their bank_limited figure)."""
    from gpudissect.device.compiler import compile_spec, unsupported_why
    from gpudissect.sass import legacy
    from gpudissect.sass.disasm import disassemble_cached

    if unsupported_why(arch) or (arch == "sm_70" and legacy.cuobjdump() is None):
        pytest.skip(f"no NVRTC or cuobjdump for {arch} here")
    funcs = {k: disassemble_cached(compile_spec(native.SPECS[k], arch)) for k in (*PEAK_FORMS, "dfma", "ffma", "hfma2")}
    for ilp in native_ops.op("dfma_ureg").ilps:
        r = native_peaks.loop_reads(funcs["dfma_ureg"][f"isa_ilp{ilp}"], native_ops.op("dfma_ureg").pattern)
        assert r is not None and r.count == native_ops.REUSE_BODY and max(r.fullest) <= 2, (arch, ilp, r)
        assert re.search(native.REUSED["dfma_ureg"][0], funcs["dfma_ureg"][f"isa_ilp{ilp}"]), arch
    old = native_peaks.loop_reads(funcs["dfma"]["isa_ilp8"], native_ops.op("dfma").pattern)
    assert old is not None and max(old.fullest) == 3, (arch, old)
    for k in ("ffma_reuse", "hfma2_reuse"):
        assert re.search(native.REUSED[k][0], funcs[k]["isa_ilp8"]), (arch, k)
    if arch == "sm_90a":
        for k, interval in PEAK_FORMS.items():
            r = native_peaks.loop_reads(funcs[k]["isa_ilp8"], native_ops.op(k).pattern)
            assert r is not None and r.model_ratio(interval) >= 0.95, (k, r.histogram())
            base = k.split("_")[0]
            b = native_peaks.loop_reads(funcs[base]["isa_ilp8"], native_ops.op(base).pattern)
            assert b is not None and b.model_ratio(interval) <= 0.90, (base, b.histogram())


def _interleaved(*lines: str, times: int = 32) -> str:
    """A loop that repeats the sequence `lines` `times` times, then branches back."""
    body = [f"/*{0x100 + 16 * i:04x}*/ {t}" for i, t in enumerate(list(lines) * times)]
    end = 0x100 + 16 * len(body)
    return "\n".join([*body, f"/*{end:04x}*/ @P0 BRA 0x100", f"/*{end + 16:04x}*/ EXIT"])


def test_loop_reads_counts_the_banks_after_the_reuse_cache():
    text = _interleaved("DFMA R8, R2.reuse, R8, R4.reuse", "DFMA R10, R2, R10, R4")
    r = native_peaks.loop_reads(text, r"DFMA ")
    # the first of each pair reads b, x and c (3 values per bank), the second x only (its b and c cached)
    assert r.count == 64 and r.histogram() == {1: 32, 3: 32} and r.loop == 65
    assert r.model_ratio(2) == pytest.approx(64 * 2 / (32 * 2 + 32 * 3 + 1))
    # a uniform register is not in the register file's banks; the loop's counter update clears the cache
    text = _interleaved("DFMA R8, R8, UR4, R2.reuse", "VIADD R0, R0, 0x1", "DFMA R10, R10, UR4, R2")
    r = native_peaks.loop_reads(text, r"DFMA ")
    assert r.histogram() == {2: 64} and max(r.sources) == 2
    assert native_peaks.issue_interval(64) == 2 and native_peaks.issue_interval(128) == 1
    assert "predicts" in native_peaks.reads_note(r, "DFMA", 2)
