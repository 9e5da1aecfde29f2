"""Register banks, the reuse cache and stall counts, measured by patching the compiler's FFMAs in the
cubin (Jia et al. §3.5 Fig. 3.8, §2.1): every FFMA of the timed block gets the same three source
registers, chosen by register number mod 8, with or without .reuse, and the stall field of a
dependent chain is lowered below the latency."""

from __future__ import annotations

import re
from itertools import product
from typing import Any

import numpy as np

from ...device.compiler import compile_kernel_file
from ...device.cuda import Arg, CudaError
from ...models import Point
from ...sass.control import default_layout
from ...sass.cubin import Cubin
from ...sass.disasm import disassemble_raw
from ...sass.patch import Patch, Patcher
from ...sass.text import parse, register_number
from ..context import BenchContext
from ..registry import KernelSpec, Param, benchmark

NPOOL, NACC, NBODY = 24, 8, 128
SPEC = KernelSpec(
    "isa_regbank.cu",
    {
        "regbank_ffma": [
            r"FFMA R\d+, R\d+, R\d+, R\d+",
            r"SR_CLOCKLO",
            r"STG\.E desc\[UR\d+\]\[R\d+\.64\+0x5c\], R\d+",
        ],
        "stall_chain": [r"FFMA (R\d+), R\d+, \1, R\d+", r"SR_CLOCKLO"],
    },
    {"NPOOL": NPOOL, "NBODY": NBODY},
)
MODULI = (2, 4, 8)


# ---- pure helpers (CPU-tested) ---------------------------------------------------------------------
def timed_block(texts: list[str | None]) -> list[int]:
    """Indices of the FFMAs between the two clock reads of a kernel (the timed loop body)."""
    clocks = [i for i, t in enumerate(texts) if t and "SR_CLOCKLO" in t]
    if len(clocks) < 2:
        return []
    return [i for i in range(clocks[0] + 1, clocks[1]) if texts[i] and parse(texts[i]).opcode == "FFMA"]


def pool_registers(texts: list[str | None], after: int) -> dict[int, int]:
    """Register number -> pool index, from the stores of the pool at the end of regbank_ffma:
    out[blockDim * NACC + i] = p[i], the group of NPOOL stores off one base register at 4*i."""
    groups: dict[str, dict[int, int]] = {}
    for t in texts[after:]:
        if not t or not t.startswith("STG.E "):
            continue
        m = re.match(r"STG\.E desc\[UR\d+\]\[(R\d+)\.64(?:\+0x([0-9a-f]+))?\], (R\d+)$", t)
        if m:
            off = int(m.group(2) or "0", 16)
            groups.setdefault(m.group(1), {})[int(m.group(3)[1:])] = off // 4
    for g in groups.values():
        if sorted(g.values()) == list(range(NPOOL)):
            return g
    return {}


def choose_triple(residues: tuple[int, int, int], pool: list[int], m: int = 8) -> tuple[int, int, int] | None:
    """Three distinct pool registers with the given residues mod m (the lowest numbers that fit)."""
    used: list[int] = []
    for r in residues:
        pick = next((x for x in sorted(pool) if x % m == r and x not in used), None)
        if pick is None:
            return None
        used.append(pick)
    return used[0], used[1], used[2]


def max_share(regs: tuple[int, ...], m: int) -> int:
    """How many of the source registers fall into the fullest bank when the bank is reg mod m."""
    counts: dict[int, int] = {}
    for r in regs:
        counts[r % m] = counts.get(r % m, 0) + 1
    return max(counts.values())


def explained(costs: list[float], regs: list[tuple[int, int, int]], m: int) -> float:
    """Share of the variance of the cost that the classes 'max sources in one bank mod m' explain."""
    y = np.asarray(costs, dtype=float)
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        return 0.0
    cls = np.asarray([max_share(r, m) for r in regs])
    within = sum(float(((y[cls == c] - y[cls == c].mean()) ** 2).sum()) for c in set(cls.tolist()))
    return 1.0 - within / total


def bank_count(
    costs: list[float], regs: list[tuple[int, int, int]], noise: float, moduli: tuple[int, ...] = MODULI
) -> tuple[int | None, dict[int, float]]:
    """The smallest modulus m (2, 4, 8) whose bank classes explain the cost (>= 90 % of the variance,
    and no larger modulus explains 5 points more); None when the costs do not vary beyond `noise`."""
    r2 = {m: explained(costs, regs, m) for m in moduli}
    if max(costs) - min(costs) <= noise:
        return None, r2
    for m in moduli:
        if r2[m] >= 0.9 and all(r2[m] >= r2[k] - 0.05 for k in moduli if k > m):
            return m, r2
    return None, r2


def bank_reads(regs: tuple[int, ...], reuse: int, banks: int) -> int:
    """Source values the fullest bank must deliver when the slots in `reuse` come from the reuse cache
    (every FFMA of the block carries the same flags, so each reads its predecessor's cached slots)."""
    read = tuple(r for j, r in enumerate(regs) if not reuse >> j & 1)
    return max_share(read, banks) if read else 0


def _reuse_masks(ctx: BenchContext, rows: list[dict[str, Any]], banks: int, per_value: float, reps: int) -> None:
    """Every reuse mask on a few bank patterns, against the model 'time = values the fullest bank
    delivers x time per value, at least one issue slot'."""
    if not rows:
        return
    agree, pts = 0, {}
    for r in rows:
        need = bank_reads(r["regs"], r["reuse"], banks)
        model = max(1.0, need * per_value)
        ok = abs(r["cycles"] - model) <= 0.15 * model
        agree += ok
        label = "banks " + "".join(str(x % banks) for x in r["regs"])
        pts.setdefault(label, []).append(
            Point(
                r["reuse"],
                r["cycles"],
                r["cycles"] - r["spread"] / 2,
                r["cycles"] + r["spread"] / 2,
                reps,
                {"regs": "R{} R{} R{}".format(*r["regs"]), "model": model, "agrees": ok},
            )
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


# ---- the benchmark -------------------------------------------------------------------------------
def _patch_all(
    patcher: Patcher,
    cubin: Cubin,
    fn: str,
    words: list[int],
    texts: list[str | None],
    idx: list[int],
    regs: dict[int, int],
    control: dict[str, int],
) -> tuple[bytes, dict[int, str]]:
    new, want = patcher.apply(words, texts, [Patch(i, regs, control) for i in idx])
    return cubin.with_words(fn, new), want


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
        "iters": Param(
            64, "timed loop iterations (128 FFMAs each)", int, lambda v, f: None if 4 <= v <= 4096 else "4 .. 4096"
        ),
        "reps": Param(3, "launches per variant (median)", int, lambda v, f: None if 1 <= v <= 20 else "1 .. 20"),
        "residues": Param(
            8,
            "source registers chosen by number mod this (2, 4 or 8)",
            int,
            lambda v, f: None if v in (2, 4, 8) else "2, 4 or 8",
        ),
    },
    timeout_s=200,
    paper="002 §3.5 Fig. 3.8 (register banks), §2.1 (reuse flags, stall cycles)",
)
def isa_regbank(ctx: BenchContext) -> None:
    dev, iters, reps = ctx.device, int(ctx.params["iters"]), int(ctx.params["reps"])
    layout = default_layout(dev.arch)
    raw_arch = "SM" + dev.arch.removeprefix("sm_")
    patcher = Patcher(layout, raw_arch)
    base = compile_kernel_file(SPEC.file, dev.arch, SPEC.defines)
    cub = Cubin(base)

    # -- register banks ------------------------------------------------------------------------------
    fn = "regbank_ffma"
    words = cub.words(fn)
    texts = disassemble_raw(words, raw_arch)
    body = timed_block(texts)
    pool = pool_registers(texts, body[-1] if body else 0)
    body_srcs = {register_number(o) for i in body for o in parse(texts[i]).operands[1:3]}  # type: ignore[arg-type]
    ctx.check(len(body) == NBODY, f"{fn}: {len(body)} FFMAs in the timed block, expected {NBODY}")
    ctx.check(
        len(pool) == NPOOL and body_srcs <= set(pool),
        f"{fn}: pool registers not found from the stores ({sorted(pool)}) or the FFMAs read others ({sorted(body_srcs)})",
    )
    values = np.arange(1, NPOOL + 1, dtype=np.float32)  # distinct small integers: products exact
    inp = np.concatenate([values, np.full(NACC, 0.5, np.float32), np.zeros(1, np.float32)])
    d_in, d_out, d_t = dev.upload(inp), dev.alloc(4 * (32 * NACC + NPOOL)), dev.alloc(16)

    def run(cubin: bytes, func: str, expect: float | None, nthreads: int = 32) -> tuple[float, float, bool, float]:
        """(cycles per FFMA median, spread, output right, ns) over `reps` launches of one patched cubin."""
        f = dev.load(cubin).function(func)
        f(1, nthreads, [Arg.ptr(d_in), Arg.ptr(d_out), Arg.ptr(d_t), Arg.i32(iters)])  # warm-up: code into the caches
        cyc, ns, ok = [], [], True
        for _ in range(reps):
            f(1, nthreads, [Arg.ptr(d_in), Arg.ptr(d_out), Arg.ptr(d_t), Arg.i32(iters)])
            dev.sync(func)
            t = dev.download(d_t, np.int64, 2)
            cyc.append(t[0] / (iters * NBODY))
            ns.append(float(t[1]))
            if expect is not None:
                out = dev.download(d_out, np.float32, nthreads * NACC if func == fn else nthreads)
                ok &= bool(np.all(out == np.float32(expect)))
        return float(np.median(cyc)), float(max(cyc) - min(cyc)), ok, float(np.median(ns))

    # the compiler's own code as the reference (its sources, its reuse flags, its stalls)
    ref_cyc, _, _, ref_ns = run(base, fn, None)
    ctx.sm_clock(
        ref_cyc * iters * NBODY / ref_ns * 1e3 if ref_ns > 0 else float("nan"),
        "clock64 cycles over %globaltimer ns around the unpatched FFMA loop, one warp",
    )

    regs_list = sorted(pool)
    plan: list[tuple[tuple[int, int, int], tuple[int, int, int]]] = []
    nres = int(ctx.params["residues"])
    for res in product(range(nres), repeat=3):
        tri = choose_triple(res, regs_list, nres)
        if tri is not None:
            plan.append((res, tri))
    control_off = {"stall": 1, "yield": 1, "reuse": 0, "wbar": 7, "rbar": 7, "wait": 0}
    # Jia Fig. 3.8: FFMA R, Ra, Rb, RX with Ra, Rb fixed in one residue class and RX swept over the pool
    ra, rb = (choose_triple((1, 1, 1), regs_list) or choose_triple((0, 0, 0), regs_list) or (0, 0, 0))[:2]
    sweep = [(ra, rb, x) for x in regs_list if x not in (ra, rb)]
    # groups: "sweep" (Fig. 3.8), "grid" (no reuse), "reuse" (all three slots), "mask" (each reuse mask)
    todo: list[tuple[str, tuple[int, int, int], int]] = [("sweep", t, 0) for t in sweep]
    for res, tri in plan:
        todo.append(("grid", tri, 0))
        if max_share(tri, 2) == 3 or max_share(tri, 4) == 3 or res == plan[0][0]:
            todo.append(("reuse", tri, 0b111))  # the all-in-one-bank triples (mod 2 or 4) and one reference
    # which source slots must be read from the banks: every reuse mask on three bank patterns
    for res in ((0, 1, 1), (1, 0, 1), (1, 1, 0), (0, 0, 0), (0, 0, 1)):
        tri = choose_triple(res, regs_list, 2)
        if tri is not None:
            todo += [("mask", tri, mask) for mask in range(8)]
    variants: list[tuple[str, tuple[int, int, int], int, bytes, dict[int, str]]] = []
    for group, tri, reuse in todo:
        ctl = dict(control_off, reuse=reuse)
        cb, want = _patch_all(patcher, cub, fn, words, texts, body, {1: tri[0], 2: tri[1], 3: tri[2]}, ctl)
        variants.append((group, tri, reuse, cb, want))
    # the patched text of every variant, one nvdisasm batch: each must read exactly as intended
    got = disassemble_raw([Cubin(cb).words(fn)[i] for *_, cb, want in variants for i in sorted(want)], raw_arch)
    at, bad = 0, []
    for *_, want in variants:
        for i in sorted(want):
            if got[at] != want[i]:
                bad.append(f"{tri}/{reuse}: '{got[at]}' != '{want[i]}'")
            at += 1
    ctx.check(not bad, f"patched cubins do not disassemble as intended: {bad[:3]}")

    rows: list[dict[str, Any]] = []
    refused: list[str] = []
    for n, (group, tri, reuse, cb, _) in enumerate(variants):
        ctx.progress(n, len(variants), f"FFMA sources R{tri[0]}, R{tri[1]}, R{tri[2]} reuse={reuse}")
        expect = float(values[pool[tri[0]]] * values[pool[tri[1]]] + values[pool[tri[2]]])
        try:
            cyc, spread, ok, _ = run(cb, fn, expect)
        except CudaError as e:
            refused.append(f"R{tri} reuse={reuse}: {e}")
            break  # a fault leaves the context unusable
        ctx.check(
            ok, f"FFMA R, R{tri[0]}, R{tri[1]}, R{tri[2]}: output is not {expect} (the patched registers were not read)"
        )
        rows.append({"group": group, "regs": tri, "reuse": reuse, "cycles": cyc, "spread": spread})
    ctx.check(not refused, f"the driver or GPU refused a patched cubin: {refused[:1]}")

    swept = [r for r in rows if r["group"] == "sweep"]
    ctx.series(
        f"FFMA R, R{ra}, R{rb}, RX",
        "RX",
        "register number",
        "time per FFMA",
        "cycles",
        [
            Point(r["regs"][2], r["cycles"], r["cycles"] - r["spread"] / 2, r["cycles"] + r["spread"] / 2, reps)
            for r in swept
        ],
        plot="bar",
        figure="regbank_rx_sweep",
    )
    plain = [r for r in rows if r["group"] == "grid"]
    costs = [r["cycles"] for r in plain]
    regs = [r["regs"] for r in plain]
    noise = max(3 * float(np.median([r["spread"] for r in plain])), 0.02)
    banks, r2 = bank_count(costs, regs, noise, tuple(m for m in MODULI if m <= nres))
    m = banks or 2
    cls = np.asarray([max_share(r, m) for r in regs])
    med = {int(c): float(np.median(np.asarray(costs)[cls == c])) for c in sorted(set(cls.tolist()))}
    for c, label in (
        (1, "no two sources in one bank"),
        (2, "two sources in one bank"),
        (3, "three sources in one bank"),
    ):
        pts = [
            Point(
                i,
                r["cycles"],
                r["cycles"] - r["spread"] / 2,
                r["cycles"] + r["spread"] / 2,
                reps,
                {"regs": "R{} R{} R{}".format(*r["regs"]), "mod8": " ".join(str(x % 8) for x in r["regs"])},
            )
            for i, r in enumerate(plain)
            if max_share(r["regs"], m) == c
        ]
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
        f"one warp, {NBODY} FFMAs per loop x {iters}, every FFMA patched to the same 3 distinct source "
        f"registers from a pool of {NPOOL} (one triple per residue combination mod {nres}: {len(plain)}), "
        f"stall 1, yield set, no reuse; clock64 around the loop / FFMAs, median of {reps}; output checked; "
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
    with_reuse = {r["regs"]: r["cycles"] for r in rows if r["group"] == "reuse"}
    saves = [
        next(p["cycles"] for p in plain if p["regs"] == t) - c for t, c in with_reuse.items() if max_share(t, m) == 3
    ]
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
        _reuse_masks(ctx, [r for r in rows if r["group"] == "mask"], banks, per_value, reps)

    # -- stall counts below the latency --------------------------------------------------------------
    fn2 = "stall_chain"
    w2 = cub.words(fn2)
    t2 = disassemble_raw(w2, raw_arch)
    body2 = timed_block(t2)
    ctx.check(len(body2) == NBODY, f"{fn2}: {len(body2)} FFMAs in the timed block, expected {NBODY}")
    compiler_stall = int(np.median([layout.decode(w2[i]).stall for i in body2[1:]]))
    inp2 = np.array([1.0, 1.0, 0.0], np.float32)  # acc = acc * 1 + 1: the exact count when every read is fresh
    dev.upload(inp2, d_in)
    expect2 = float(iters * NBODY)
    pts, right = [], {}
    rejected = []
    # stall 0 is left out: what it means is not established, and a hang would cost shared device time
    for s in (6, 5, 4, 3, 2, 1):
        # the chain FFMAs (the first one reads the loaded start value and keeps the compiler's control)
        cb, want = _patch_all(patcher, cub, fn2, w2, t2, body2[1:], {}, {"stall": s})
        got2 = disassemble_raw([Cubin(cb).words(fn2)[i] for i in sorted(want)], raw_arch)
        if any(g is None for g in got2):
            rejected.append(s)  # nvdisasm calls the word illegal: not launched
            continue
        ctx.check(got2 == [want[i] for i in sorted(want)], f"stall {s}: patched chain does not disassemble as intended")
        try:
            f = dev.load(cb).function(fn2)
            cyc, vals = [], []
            for _ in range(reps):
                f(1, 32, [Arg.ptr(d_in), Arg.ptr(d_out), Arg.ptr(d_t), Arg.i32(iters)])
                dev.sync(fn2)
                cyc.append(dev.download(d_t, np.int64, 1)[0] / (iters * NBODY))
                vals.append(float(dev.download(d_out, np.float32, 1)[0]))
        except CudaError as e:
            ctx.figure("isa.control.stall_below_latency", f"refused at stall {s}: {e}", "", "measured", "see note")
            return
        right[s] = all(v == expect2 for v in vals)
        pts.append(
            Point(
                s,
                float(np.median(cyc)),
                min(cyc),
                max(cyc),
                reps,
                {"result": vals[0], "expected": expect2, "right": right[s]},
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
            f"{next(p.extra['result'] for p in pts if p.x == low[0]):g} instead of {expect2:g}); right from stall "
            f"{min(ok_stalls) if ok_stalls else 'none'} (compiler uses {compiler_stall})"
        )
    ctx.figure(
        "isa.control.stall_below_latency",
        finding,
        "",
        "measured",
        f"FFMA R, R, Racc, R chain ({NBODY}/loop x {iters}, a=1, b=1, so the exact result counts the FFMAs), "
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
