"""Register banks, the reuse cache and stall counts, measured by patching the compiler's FFMAs in the
cubin (Jia et al. §3.5 Fig. 3.8, §2.1): every FFMA of the timed block gets the same three source
registers, chosen by register number mod 8, with or without .reuse, and the stall field of a
dependent chain is lowered below the latency.

Two kernels (kernels/isa_regbank.cu): regbank_ffma times a block of independent FFMAs (the bank and
reuse experiments, one batch of patched variants), stall_chain a dependent FFMA chain. Where the block
and the pool of source registers sit, and the bank model, are in analysis/regbank.py.

Every family from Volta on has the same FFMA and control-field encoding; the patches are planned and checked
on nvdisasm's text of raw words, so an architecture this nvdisasm cannot read (sm_70 with CUDA 13) is a skip.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...analysis.regbank import (
    MODULI,
    Triple,
    bank_count,
    class_medians,
    max_share,
    plan_variants,
    reuse_model,
)
from ...device.cuda import CudaError
from ...models import Point
from ...sass.text import parse, register_number
from ..context import BenchContext
from ..registry import Param, benchmark, in_range
from .corpus import raw_words_why
from .regbank_rig import (
    NACC,
    NBODY,
    NPOOL,
    SPEC,
    Kernel,
    Rig,
    Row,
    Variant,
    pool_of,
    prepare,
    stall_variants,
    variants_of,
)


@benchmark(
    name="isa_regbank",
    title="Register banks, reuse cache and stall counts by binary patching (FFMA)",
    axes={
        "sources": "3 FFMA source registers by residue mod 8 (all 512 combinations the pool allows)",
        "reuse": "off / on for all three slots",
        "stall": "1 .. 6 cycles on a dependent FFMA chain",
    },
    kernels=[SPEC],
    params={
        "iters": Param(64, "timed loop iterations (128 FFMAs each)", int, in_range(4, 4096)),
        "reps": Param(3, "launches per variant (median)", int, in_range(1, 20)),
        "residues": Param(
            8,
            "source registers chosen by number mod this (2, 4 or 8)",
            int,
            lambda v, f: None if v in (2, 4, 8) else "2, 4 or 8",
        ),
    },
    timeout_s=200,
    paper="002 §3.5 Fig. 3.8 (register banks), §2.1 (reuse flags, stall cycles)",
    prepare=prepare,
)
def isa_regbank(ctx: BenchContext) -> None:
    why = raw_words_why(ctx.device.arch, "the FFMA patching (planned and checked on nvdisasm's text)")
    if why:
        ctx.skip(why)
    rig = Rig.start(ctx, ctx.device.arch, ctx.params)
    k = rig.kernel("regbank_ffma")
    pool = pool_of(k)
    body_srcs = {register_number(o) for i in k.body for o in parse(k.texts[i]).operands[1:3]}  # type: ignore[arg-type]
    ctx.check(
        len(pool) == NPOOL and body_srcs <= set(pool),
        f"{k.name}: pool registers not found from the stores ({sorted(pool)}) "
        f"or the FFMAs read others ({sorted(body_srcs)})",
    )
    values = np.arange(1, NPOOL + 1, dtype=np.float32)  # distinct small integers: products exact
    rig.d_in = ctx.upload(np.concatenate([values, np.full(NACC, 0.5, np.float32), np.zeros(1, np.float32)]))
    rig.d_out, rig.d_t = ctx.alloc(4 * (32 * NACC + NPOOL)), ctx.alloc(16)

    # the compiler's own code as the reference (its sources, its reuse flags, its stalls)
    ref_cyc, _, _, ref_ns = rig.time_block(rig.base, None)
    ctx.sm_clock(
        ref_cyc * rig.iters * NBODY / ref_ns * 1e3 if ref_ns > 0 else float("nan"),
        "clock64 cycles over %globaltimer ns around the unpatched FFMA loop, one warp",
    )
    nres = int(ctx.params["residues"])
    todo, (ra, rb) = plan_variants(sorted(pool), nres)

    def expect(t: Triple) -> float:  # every accumulator after the loop: Ra * Rb + RX of the pool's values
        return float(values[pool[t[0]]] * values[pool[t[1]]] + values[pool[t[2]]])

    rows = _measure_variants(ctx, rig, k, todo, expect)

    _rx_sweep(ctx, rig, [r for r in rows if r.group == "sweep"], ra, rb)
    plain = [r for r in rows if r.group == "grid"]
    banks, med = _banks(ctx, rig, plain, nres)
    m = banks or 2
    _reuse_saves(ctx, plain, [r for r in rows if r.group == "reuse"], m)
    ctx.figure(
        "isa.regbank.ffma_cycles_compiler_code",
        ref_cyc,
        "cycles",
        "measured",
        "time per FFMA of the unpatched compiler code (its registers, reuse flags and stalls), one warp",
    )
    if banks is not None and len(med) >= 2:
        worst, best = max(med), min(med)
        per_value = (med[worst] - med[best]) / (worst - best)
        ctx.figure(
            "isa.regbank.reads_per_bank_per_clk",
            1.0 / per_value,
            "values/clk",
            "derived",
            f"32-bit source values one bank delivers per clock: (sources in the fullest bank {worst} - {best}) / "
            f"(time per FFMA {med[worst]:.3f} - {med[best]:.3f} cycles), bank = reg mod {banks}",
        )
        _reuse_masks(ctx, [r for r in rows if r.group == "mask"], banks, per_value, rig.reps)
    _stall_counts(ctx, rig)


# ---- register banks and the reuse cache: one batch of patched regbank_ffma variants --------------
def _measure_variants(
    ctx: BenchContext, rig: Rig, k: Kernel, todo: list[Variant], expect: Callable[[Triple], float]
) -> list[Row]:
    """Patch every FFMA of the timed block for each variant, check the patched text, run each one."""
    variants = variants_of(rig, k, todo)
    # the patched text of every variant, one nvdisasm batch: each must read exactly as intended
    bad = [
        f"{tri}/{reuse}: '{g}' != '{want[i]}'"
        for (_, tri, reuse), (_, want), got in zip(todo, variants, rig.patched_texts(k, variants))
        for i, g in zip(sorted(want), got)
        if g != want[i]
    ]
    ctx.check(not bad, f"patched cubins do not disassemble as intended: {bad[:3]}")
    rows: list[Row] = []
    refused: list[str] = []
    for n, ((group, tri, reuse), (cb, _)) in enumerate(zip(todo, variants)):
        ctx.progress(n, len(variants), f"FFMA sources R{tri[0]}, R{tri[1]}, R{tri[2]} reuse={reuse}")
        value = expect(tri)
        try:
            cyc, spread, ok, _ = rig.time_block(cb, value)
        except CudaError as e:
            refused.append(f"R{tri} reuse={reuse}: {e}")
            break  # a fault leaves the context unusable
        ctx.check(
            ok, f"FFMA R, R{tri[0]}, R{tri[1]}, R{tri[2]}: output is not {value} (the patched registers were not read)"
        )
        rows.append(Row(group, tri, reuse, cyc, spread))
    ctx.check(not refused, f"the driver or GPU refused a patched cubin: {refused[:1]}")
    return rows


def _rx_sweep(ctx: BenchContext, rig: Rig, swept: list[Row], ra: int, rb: int) -> None:
    ctx.series(
        f"FFMA R, R{ra}, R{rb}, RX",
        "RX",
        "register number",
        "time per FFMA",
        "cycles",
        [r.point(r.regs[2], rig.reps) for r in swept],
        plot="bar",
        figure="regbank_rx_sweep",
    )


def _banks(ctx: BenchContext, rig: Rig, plain: list[Row], nres: int) -> tuple[int | None, dict[int, float]]:
    """The bank function from the variants without reuse: the class series, the bank count and the
    conflict penalty. Returns the bank count (None when no modulus explains the cost) and the median
    time per FFMA by sources in the fullest bank."""
    costs = [r.cycles for r in plain]
    regs = [r.regs for r in plain]
    noise = max(3 * float(np.median([r.spread for r in plain])), 0.02)
    banks, r2 = bank_count(costs, regs, noise, tuple(m for m in MODULI if m <= nres))
    m = banks or 2
    med = class_medians(costs, regs, m)
    extra = lambda r: {"regs": "R{} R{} R{}".format(*r.regs), "mod8": " ".join(str(x % 8) for x in r.regs)}
    for c, label in (
        (1, "no two sources in one bank"),
        (2, "two sources in one bank"),
        (3, "three sources in one bank"),
    ):
        pts = [r.point(i, rig.reps, extra(r)) for i, r in enumerate(plain) if max_share(r.regs, m) == c]
        if pts:
            ctx.series(
                f"{label} (bank = reg mod {m})",
                "variant",
                "",
                "time per FFMA",
                "cycles",
                pts,
                plot="line",
                figure="regbank_classes",
            )
    method = (
        f"one warp, {NBODY} FFMAs per loop x {rig.iters}, every FFMA patched to the same 3 distinct source "
        f"registers from a pool of {NPOOL} (one triple per residue combination mod {nres}: {len(plain)}), "
        f"stall 1, yield set, no reuse; clock64 around the loop / FFMAs, median of {rig.reps}; output checked; "
        f"bank function: smallest m in 2/4/8 whose 'sources in one bank' classes explain >= 90% of the "
        f"variance (R^2 by modulus: " + ", ".join(f"mod {k}: {v:.2f}" for k, v in r2.items()) + ")"
    )
    spread_all = max(costs) - min(costs)
    if banks is None and spread_all <= noise:
        ctx.figure(
            "isa.regbank.banks",
            "no conflict seen",
            "",
            "measured",
            method
            + f"; cost range {spread_all:.3f} cycles within the noise ({noise:.3f}: 3x the median launch spread)",
        )
        ctx.figure("isa.regbank.conflict_penalty_cycles", 0.0, "cycles", "measured", method)
    elif banks is None:
        ctx.figure(
            "isa.regbank.banks",
            "not explained by reg mod 2/4/8",
            "",
            "measured",
            method + f"; cost range {spread_all:.3f} cycles",
        )
        ctx.figure(
            "isa.regbank.conflict_penalty_cycles",
            spread_all,
            "cycles",
            "measured",
            "largest minus smallest time per FFMA over the triples; " + method,
        )
    else:
        ctx.figure("isa.regbank.banks", banks, "banks", "measured", method)
        worst, best = max(med), min(med)  # with 2 banks, 3 sources always put 2 in one bank
        ctx.figure(
            "isa.regbank.conflict_penalty_cycles",
            med[worst] - med[best],
            "cycles",
            "derived",
            f"median time per FFMA with {worst} sources in one bank minus {best} (bank = reg mod {banks}); "
            + ", ".join(f"{c} in one bank: {v:.3f}" for c, v in med.items())
            + "; "
            + method,
        )
    return banks, med


def _reuse_saves(ctx: BenchContext, plain: list[Row], with_reuse_rows: list[Row], m: int) -> None:
    """What the reuse flags on all three slots save where all three sources sit in one bank (mod m)."""
    with_reuse = {r.regs: r.cycles for r in with_reuse_rows}
    saves = [next(p.cycles for p in plain if p.regs == t) - c for t, c in with_reuse.items() if max_share(t, m) == 3]
    ctx.series(
        "reuse on all three slots",
        "variant",
        "",
        "time per FFMA",
        "cycles",
        [Point(i, c, extra={"regs": "R{} R{} R{}".format(*t)}) for i, (t, c) in enumerate(with_reuse.items())],
        plot="line",
        figure="regbank_reuse",
    )
    ctx.figure(
        "isa.regbank.reuse_saves_cycles",
        float(np.median(saves)) if saves else float("nan"),
        "cycles",
        "measured",
        f"median over {len(saves)} triples with all three sources in one bank (mod {m}) of the time "
        "per FFMA without reuse minus with reuse flags set on all three slots (identical FFMAs, so every "
        "one after the first may take its sources from the reuse cache)",
    )


def _reuse_masks(ctx: BenchContext, rows: list[Row], banks: int, per_value: float, reps: int) -> None:
    """Every reuse mask on a few bank patterns, against the model 'time = values the fullest bank
    delivers x time per value, at least one issue slot'."""
    if not rows:
        return
    agree, pts = 0, {}
    for r in rows:
        model = reuse_model(r.regs, r.reuse, banks, per_value)
        ok = abs(r.cycles - model) <= 0.15 * model
        agree += ok
        label = "banks " + "".join(str(x % banks) for x in r.regs)
        pts.setdefault(label, []).append(
            r.point(r.reuse, reps, {"regs": "R{} R{} R{}".format(*r.regs), "model": model, "agrees": ok})
        )
    for label, p in pts.items():
        ctx.series(
            label,
            "reuse mask (bit k = source slot k)",
            "",
            "time per FFMA",
            "cycles",
            p,
            plot="line",
            figure="regbank_reuse_masks",
        )
    ctx.figure(
        "isa.regbank.reuse_model_agreement",
        agree / len(rows),
        "fraction",
        "measured",
        f"{agree}/{len(rows)} (bank pattern, reuse mask) runs within 15% of max(1, values the fullest bank "
        f"delivers x {per_value:.3f} cycles); reuse-flagged slots read from the reuse cache",
    )


# ---- stall counts below the latency: stall_chain with its stall fields patched -------------------
def _stall_counts(ctx: BenchContext, rig: Rig) -> None:
    dev, reps = ctx.device, rig.reps
    k = rig.kernel("stall_chain")
    compiler_stall = int(np.median([rig.layout.decode(k.words[i]).stall for i in k.body[1:]]))
    # acc = acc * 1 + 1: the exact count of FFMAs when every read is fresh
    dev.upload(np.array([1.0, 1.0, 0.0], np.float32), rig.d_in)
    expect = float(rig.iters * NBODY)
    pts, right = [], {}
    rejected = []
    for s, cb, want in stall_variants(rig, k):
        (got,) = rig.patched_texts(k, [(cb, want)])
        if any(g is None for g in got):
            rejected.append(s)  # nvdisasm calls the word illegal: not launched
            continue
        ctx.check(got == [want[i] for i in sorted(want)], f"stall {s}: patched chain does not disassemble as intended")
        try:
            f = dev.load(cb).function(k.name)
            cyc, vals = [], []
            for _ in range(reps):
                rig.launch(f)
                dev.sync(k.name)
                cyc.append(dev.download(rig.d_t, np.int64, 1)[0] / (rig.iters * NBODY))
                vals.append(float(dev.download(rig.d_out, np.float32, 1)[0]))
        except CudaError as e:
            ctx.figure("isa.control.stall_below_latency", f"refused at stall {s}: {e}", "", "measured", "see note")
            return
        right[s] = all(v == expect for v in vals)
        pts.append(
            Point(
                s,
                float(np.median(cyc)),
                min(cyc),
                max(cyc),
                reps,
                {"result": vals[0], "expected": expect, "right": right[s]},
            )
        )
    ctx.series(
        "dependent FFMA chain",
        "stall field",
        "cycles",
        "time per FFMA",
        "cycles",
        sorted(pts, key=lambda p: p.x),
        plot="line",
        figure="stall_chain",
    )
    ok_stalls = [s for s, r in right.items() if r]
    low = sorted(s for s, r in right.items() if not r)
    fast = {int(p.x): p.y for p in pts}
    if not low:
        finding = (
            f"interlock: the result stays right at every stall count 1..6 (compiler uses {compiler_stall}); "
            f"time per FFMA at stall 1..{compiler_stall}: "
            + ", ".join(f"{fast[s]:.2f}" for s in range(1, compiler_stall + 1) if s in fast)
        )
    else:
        finding = (
            f"no interlock: with stall {', '.join(map(str, low))} the chain reads stale values (result "
            f"{next(p.extra['result'] for p in pts if p.x == low[0]):g} instead of {expect:g}); right from stall "
            f"{min(ok_stalls) if ok_stalls else 'none'} (compiler uses {compiler_stall})"
        )
    ctx.figure(
        "isa.control.stall_below_latency",
        finding,
        "",
        "measured",
        f"FFMA R, R, Racc, R chain ({NBODY}/loop x {rig.iters}, a=1, b=1, so the exact result counts the FFMAs), "
        "stall field of every FFMA patched to 1..6 (0 not tried), one warp; output compared to the exact count"
        + (f"; stall {rejected} not run: nvdisasm calls those words illegal" if rejected else ""),
    )
    if ok_stalls and low:
        ctx.figure(
            "isa.control.ffma_min_right_stall_cycles",
            min(s for s in ok_stalls if s > max(low)),
            "cycles",
            "measured",
            "smallest patched stall count of a dependent FFMA chain that still gives the exact result",
        )
