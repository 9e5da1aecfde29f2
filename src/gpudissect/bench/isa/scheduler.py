"""The isa suite, the scheduler mapping (Jia et al. 002 §2.2, Table 2.1) on the GPU at hand.

A 16-warp block in which only chosen warps run FFMA chains (ILP 8; sched_ffma in kernels/isa_native.cu,
built with the FFMA row of the native-instruction table); pairs of warps that slow each other down share
a sub-core. The classes give the number of sub-cores and the rule (warp index mod n), and 1..4 warps of
one class against warps of distinct classes give how many instructions one sub-core issues per clock.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ...analysis import issue_rate as ir
from ...device.cuda import Arg, Buffer, Function
from ...models import Point
from ..context import BenchContext
from ..registry import Needs, benchmark
from .native import MAX_WARPS, SPECS, one_block_smem
from .native_ops import BODY, op
from .native_replay import chain_model, make_inputs

SCHED_ILP = 8
SCHED_REC = 4  # per warp: start clock, end clock, %warpid, SM id
REPS = 3  # launches per warp set

Rate = tuple[float, float, float]  # FFMA warp instructions per clock: median, min, max over the launches


def sched_rates(rec: np.ndarray, active: list[int], warps: int, ffma_per_warp: int) -> np.ndarray:
    """Per block: FFMA warp instructions per clock of the active warps together."""
    r = rec.reshape(-1, warps, SCHED_REC).astype(np.int64)[:, active]
    span = np.maximum(r[:, :, 1].max(axis=1) - r[:, :, 0].min(axis=1), 1)
    return len(active) * ffma_per_warp / span


@dataclass
class _Rig:
    """sched_ffma with its inputs and outputs on the device: runs a set of warps of every block, checks
    their chains against the CPU replay, and notes the %warpid each warp index had on SM 0."""

    ctx: BenchContext
    fn: Function
    iters: int
    d_ops: Buffer
    d_init: Buffer
    out: Buffer
    rec: Buffer
    want: np.ndarray  # final words [chain][lane] of every active warp
    errors: list[str] = field(default_factory=list)
    hw_ids: set[tuple[int, int]] = field(default_factory=set)  # (warp index, %warpid)

    @classmethod
    def start(cls, ctx: BenchContext) -> _Rig:
        sms = ctx.props["sm_count"]
        o = op("ffma")
        fn = ctx.kernel(SPECS["ffma"], "sched_ffma")
        iters = 32 if ctx.quick else 96
        inp = make_inputs(o, seed=3)
        want = chain_model(o, inp, iters)[SCHED_ILP]  # sched_ffma runs the chains of isa_ilp8
        d_ops, d_init = ctx.upload(inp.ops), ctx.upload(inp.init)
        out = ctx.alloc(sms * MAX_WARPS * SCHED_ILP * 32 * 8)
        rec = ctx.alloc(sms * MAX_WARPS * SCHED_REC * 8)
        return cls(ctx, fn, iters, d_ops, d_init, out, rec, want)

    @property
    def per_warp(self) -> int:
        """FFMA per warp in the timed pass."""
        return self.iters * BODY

    def rate(self, active: list[int]) -> Rate:
        dev, sms = self.ctx.device, self.ctx.props["sm_count"]
        smem = one_block_smem(self.ctx.props)
        mask = sum(1 << w for w in active)
        vals = []
        for r in range(REPS):
            dev.memset32(self.out, 0xDEADBEEF)
            self.fn(
                sms,
                32 * MAX_WARPS,
                [
                    Arg.ptr(self.d_ops),
                    Arg.ptr(self.d_init),
                    Arg.u32(mask),
                    Arg.u32(self.iters),
                    Arg.ptr(self.out),
                    Arg.ptr(self.rec),
                ],
                smem=smem,
            )
            dev.sync("sched_ffma")
            rr = dev.download(self.rec, np.uint64, sms * MAX_WARPS * SCHED_REC)
            vals.append(float(np.median(sched_rates(rr, active, MAX_WARPS, self.per_warp))))
            if r == 0:
                got = dev.download(self.out, np.uint64, sms * MAX_WARPS * SCHED_ILP * 32).reshape(
                    sms, MAX_WARPS, SCHED_ILP, 32
                )
                if not (got[:, active] == self.want[None, None]).all() and not self.errors:
                    self.errors.append(f"warps {active}: FFMA chains differ from the CPU replay")
                for w in active:
                    self.hw_ids.add((w, int(rr.reshape(sms, MAX_WARPS, SCHED_REC)[0, w, 2])))
        return float(np.median(vals)), min(vals), max(vals)


@benchmark(
    name="scheduler_mapping",
    title="Scheduler: which warps share a sub-core, and how many instructions per clock a sub-core issues",
    axes={
        "pair": "every pair of the 16 warps of a block runs FFMA chains (ILP 8), the others exit",
        "set": "1..4 warps on one sub-core class, and on distinct classes",
    },
    kernels=[SPECS["ffma"]],
    timeout_s=300,
    needs=Needs((7, 0)),
    paper="002 §2.2 Table 2.1",
)
def scheduler_mapping(ctx: BenchContext) -> None:
    rig = _Rig.start(ctx)
    single = {w: rig.rate([w]) for w in range(MAX_WARPS)}
    pairs: dict[tuple[int, int], Rate] = {}
    for a in range(MAX_WARPS):
        for b in range(a + 1, MAX_WARPS):
            pairs[(a, b)] = rig.rate([a, b])
        ctx.progress(a + 1, MAX_WARPS, f"pairs with warp {a}")
    # pairs that run at the low rate share a sub-core
    cut = ir.split_two_levels({k: v[0] for k, v in pairs.items()})
    conflicts = [k for k, v in pairs.items() if cut is not None and v[0] < cut]
    classes = ir.classes_from_conflicts(MAX_WARPS, conflicts)
    # issue rate of one sub-core: 1..4 warps of one class, and of distinct classes
    same = [w for w in range(MAX_WARPS) if classes[w] == classes[0]][:4]
    diff = [next(w for w in range(MAX_WARPS) if classes[w] == c) for c in sorted(set(classes))][:4]
    same_rates = [rig.rate(same[:k]) for k in range(1, len(same) + 1)]
    diff_rates = [rig.rate(diff[:k]) for k in range(1, len(diff) + 1)]
    if rig.errors:
        ctx.soft_check(False, rig.errors[0])
    _series(ctx, single, pairs, same, same_rates, diff, diff_rates)
    check = "failed" if rig.errors else "ok"
    method = (
        f"one block of {MAX_WARPS} warps per SM on every SM; only warps A and B run {SCHED_ILP} independent FFMA "
        f"chains ({rig.per_warp} FFMA each, the other warps exit); their FFMA per clock (clock64 span of the two), "
        "median over SMs, median of 3; pairs split at the widest gap of the sorted rates; classes by union-find"
    )
    lo = [v[0] for k, v in pairs.items() if k in conflicts]
    hi = [v[0] for k, v in pairs.items() if k not in conflicts]
    rule = ir.modulo_rule(classes) if cut is not None else None
    ctx.figure(
        "isa.scheduler.subcores_per_sm",
        len(set(classes)) if cut is not None else "n/a: no two-level structure",
        "",
        "derived",
        method,
        check=check,
        note=(
            f"same-class pairs {np.median(lo):.3f}, other pairs {np.median(hi):.3f} warp instr/clk" if lo and hi else ""
        ),
    )
    ctx.figure(
        "isa.scheduler.mapping",
        f"warp % {rule}" if rule else "no modulo rule fits: " + str(classes),
        "",
        "derived",
        method,
        check=check,
        note=f"classes by warp index 0..{MAX_WARPS - 1}: {classes}; %warpid values each warp index had on "
        f"SM 0 over all launches: {_warpid_sets(rig.hw_ids)}",
    )
    ctx.figure(
        "isa.scheduler.issue_per_clk_subcore",
        round(max(v[0] for v in same_rates), 3),
        "warp instr/clk",
        "measured",
        f"FFMA warp instructions per clock of 1..{len(same)} warps of one class ({same}); "
        f"{SCHED_ILP} independent chains per warp. " + method,
        check=check,
        note="distinct classes: " + ", ".join(f"{k + 1} warps {v[0]:.2f}" for k, v in enumerate(diff_rates)),
    )
    ctx.figure(
        "isa.scheduler.single_warp_ffma_per_clk",
        round(float(np.median([v[0] for v in single.values()])), 3),
        "warp instr/clk",
        "measured",
        "one warp alone, ILP 8, median over the 16 warp indices",
        check=check,
    )


def _series(
    ctx: BenchContext,
    single: dict[int, Rate],
    pairs: dict[tuple[int, int], Rate],
    same: list[int],
    same_rates: list[Rate],
    diff: list[int],
    diff_rates: list[Rate],
) -> None:
    """The pair heatmap (both halves and the diagonal of single warps) and the issue rate of 1..4 warps."""
    pts = [Point(a, v[0], v[1], v[2], 3, {"row": b}) for (a, b), v in pairs.items()]
    pts += [Point(b, v[0], v[1], v[2], 3, {"row": a}) for (a, b), v in pairs.items()]
    pts += [Point(w, v[0], v[1], v[2], 3, {"row": w}) for w, v in single.items()]
    ctx.series(
        "FFMA warp instr/clk of warps A and B",
        "warp A",
        "",
        "throughput",
        "warp instr/clk",
        pts,
        plot="heatmap",
        figure="pairs",
    )
    for name, warps, rates in (
        ("warps of one class", same, same_rates),
        ("warps of distinct classes", diff, diff_rates),
    ):
        ctx.series(
            name,
            "warps",
            "",
            "throughput",
            "warp instr/clk",
            [Point(k + 1, v[0], v[1], v[2], 3, {"warps": warps[: k + 1]}) for k, v in enumerate(rates)],
            figure="issue_rate",
        )


def _warpid_sets(pairs: set[tuple[int, int]]) -> str:
    by: dict[int, set[int]] = defaultdict(set)
    for w, hw in pairs:
        by[w].add(hw)
    return "; ".join(f"{w}: {','.join(map(str, sorted(v)))}" for w, v in sorted(by.items()))
