"""The cache suite, instruction-cache privacy (Jia Fig. 3.5): which warps a thrashing warp slows down.
Part of `icache` (icache.py runs it once the staircase gave the L0 and L1 capacities).

The observer's and the thrasher's code are in two modules (two builds), so no observer code sits next
to thrash code. Three experiments, each one trial at a time: fresh (sequential, a new load of the
observer per trial: observer launch running its code once, thrasher launch, observer launch whose
first pass is the value), reused (sequential, one observer module for every trial, two warm passes
before each thrash) and concurrent (both kernels at once on two streams, the observer waiting between
its warm pass and its timed pass in its own small loop). Controls per observer: no thrasher, and
thrashers whose code fits the level together with the observed code. analysis/icache_privacy.py
judges the trials.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...analysis import icache_privacy as priv
from ...device.cuda import Function
from ..context import BenchContext
from ..registry import KernelSpec
from .icache_probe import CLUSTERS, Builder, Runner, icache_spec
from .sources import INSTR_BYTES

METHODS = ("fresh", "reused", "concurrent")  # the experiments, in the order they run
REPS = 3  # trials per observer and thrash size
RESOLUTION = 2.0  # cycles of clock-read granularity, spread over the observed FFMAs


def ffmas(nbytes: float) -> int:
    """FFMA count of a sequence of about nbytes: a multiple of 8 (the 8 chains), at least 8."""
    return max(8, int(nbytes) // INSTR_BYTES // 8 * 8)


@dataclass(frozen=True)
class Level:
    """What is observed at one level: n FFMAs inside it, against thrash sizes (FFMAs) that fit beside
    them (controls) and that go beyond it."""

    name: str
    n: int
    fit: list[int]
    over: list[int]

    @property
    def sizes(self) -> list[int]:
        return [0] + self.fit + self.over  # 0: no thrasher


def levels(l0: int, l1: int) -> list[Level]:
    """The L0 and L1 plans from the capacities (bytes)."""
    return [
        Level(
            "l0",
            ffmas(l0 / 2),
            [ffmas(f * l0) for f in (0.125, 0.25)],
            [ffmas(f * l0) for f in (1.5, 2.5) if f * l0 < l1],
        ),
        Level(
            "l1",
            ffmas(min(2 * l0, l1 / 2)),
            [ffmas(f * l1) for f in (0.125, 0.25)],
            [ffmas(f * l1) for f in (1.5, 2.5)],
        ),
    ]


def build_pairs(plan: list[Level]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The builds of a plan: observers (n, 8) and thrashers (8, t), 8 FFMAs of thrash being the concurrent
    method's no-thrash control."""
    obs = sorted({(lv.n, 8) for lv in plan})
    return obs, sorted({(8, t) for lv in plan for t in [8] + lv.fit + lv.over})


def thrash_ahead(l0: int, l1: int) -> list[tuple[int, int]]:
    """The L1 plan's thrasher builds, the largest first: they need only the L1 capacity (l0 may be the coarse
    one), so they can be queued before the fine scans, which give the rest of the plan."""
    return sorted(build_pairs(levels(l0, l1)[1:])[1], reverse=True)


def prefetch(b: Builder, l0: int, l1: int) -> None:
    """Queue every build of the plan (the largest first) while the L1 fine scan runs: `privacy` waits for them."""
    obs, thr = build_pairs(levels(l0, l1))
    b.prefetch(sorted((icache_spec(*p) for p in obs + thr), key=lambda s: -len(s.source)))


@dataclass(frozen=True)
class Placement:
    """Where the thrasher runs and where its observers do, relative to it."""

    sms: list[int]  # SM of each block of a one-block-per-SM launch
    groups: list[list[int]]  # SMs linked by thread-block clusters (GPCs or parts of them)
    t_sm: int  # the thrasher's SM
    gpc: list[int]  # the group of t_sm
    pair_sm: int | None  # its TPC partner (SMs 2k, 2k+1: an assumption)
    same_gpc: int | None  # another SM of its group
    far_sm: int | None  # an SM of another group
    clusters: bool = True  # whether the GPU has thread-block clusters (what links SMs into groups)

    def observers(self, level: str) -> list[tuple[int, int]]:
        """(SM, warp) of each observer: warps 0-4 of the thrasher's SM (0-1 for L1), then the farther SMs."""
        near = [(self.t_sm, w) for w in range(5)]
        farther = [(s, 0) for s in (self.pair_sm, self.same_gpc, self.far_sm) if s is not None]
        return (near if level == "l0" else near[:2]) + farther

    def rank(self, o_sm: int, o_wid: int, t_wid: int) -> int:
        """How close an observer warp is to the thrasher warp (priv.DOMAINS), from both %warpids."""
        same = o_sm == self.t_sm
        return priv.rank_of(
            same,
            same and o_wid % 4 == t_wid % 4,
            same and o_wid == t_wid,
            self.pair_sm is not None and o_sm == self.pair_sm,
            o_sm in self.gpc,
        )

    @property
    def note(self) -> str:
        if not self.clusters:  # nothing links this GPU's SMs into GPCs
            return (
                f"thrasher on SM {self.t_sm}; its TPC pair SM {self.pair_sm} (SMs 2k, 2k+1 assumed to form a TPC); "
                "no GPC grouping (this GPU has no thread-block clusters to link SMs by), so no same-GPC or "
                "other-GPC observer"
            )
        return (
            f"thrasher on SM {self.t_sm}; its TPC pair SM {self.pair_sm} (SMs 2k, 2k+1 assumed to form a TPC); GPC of "
            f"SM {self.t_sm} as linked by thread-block clusters of 8 and 16 (a cluster never leaves its GPC): "
            f"{len(self.gpc)} SMs; {len(self.groups)} such groups over {sum(map(len, self.groups))} of {len(self.sms)} "
            f"SMs; same-GPC observer SM {self.same_gpc}; observer in another group SM {self.far_sm} (another GPC "
            "unless two groups are parts of one)"
        )


def place(r: Runner, spec: KernelSpec) -> Placement:
    """The thrasher on an SM of the largest cluster group whose TPC partner is in it too."""
    sms = r.smids(spec)
    groups = r.gpc_groups(spec)
    big = groups[0] if groups else [sms[0]]
    t_sm = next((s for s in big if (s ^ 1) in big), big[0])
    gpc = next((g for g in groups if t_sm in g), [t_sm])
    pair_sm = t_sm ^ 1 if (t_sm ^ 1) in sms else None
    same_gpc = next((s for s in gpc if s not in (t_sm, pair_sm)), None)
    others = [s for g in groups if t_sm not in g for s in g]  # SMs in another cluster group
    far_sm = max(others, key=lambda s: abs(s - t_sm)) if others else None
    return Placement(sms, groups, t_sm, gpc, pair_sm, same_gpc, far_sm, CLUSTERS.why_not(r.ctx.target) is None)


@dataclass(frozen=True)
class Builds:
    obs: dict[tuple[int, int], KernelSpec]  # (n, 8): the observed sequences
    thr: dict[tuple[int, int], KernelSpec]  # (8, t): the thrash sequences


# ---- the experiments: one trial each ---------------------------------------------------------------
# A trial: (observer cycles per FFMA of its timed pass, observer %warpid, thrasher %warpid or None
# when no thrasher ran); None when the kernels of the concurrent method did not overlap.
Trial = tuple[float, int, int | None]
Experiment = Callable[[Runner, Builds, Level, int, int, int, int], Trial | None]


def _sequential(
    r: Runner, fn: Function, b: Builds, lv: Level, o_sm: int, o_warp: int, t: int, t_sm: int, warm: int
) -> Trial:
    """Observer launch of `warm` passes (warms its code), thrasher launch (none for t == 0), observer
    launch whose first pass is the value."""
    r.observe(fn, lv.n, o_sm, o_warp, warm)
    t_wid = r.thrash(b.thr[(8, t)], t, t_sm) if t else None
    (v, _), _, o_wid = r.observe(fn, lv.n, o_sm, o_warp, 2)
    return v, o_wid, t_wid


def fresh(r: Runner, b: Builds, lv: Level, o_sm: int, o_warp: int, t: int, t_sm: int) -> Trial:
    """Sequential, a new load of the observer per trial: its code run once before the thrash."""
    fn = r.fresh(b.obs[(lv.n, 8)], "icache_observe")
    return _sequential(r, fn, b, lv, o_sm, o_warp, t, t_sm, 1)


def reused(r: Runner, b: Builds, lv: Level, o_sm: int, o_warp: int, t: int, t_sm: int) -> Trial:
    """Sequential, one observer module for every trial, warmed by two passes each time."""
    fn = r.fn(b.obs[(lv.n, 8)], "icache_observe")
    return _sequential(r, fn, b, lv, o_sm, o_warp, t, t_sm, 2)


def concurrent(r: Runner, b: Builds, lv: Level, o_sm: int, o_warp: int, t: int, t_sm: int) -> Trial | None:
    """Both kernels at once on two streams, a new observer load per trial; its second pass is the value.
    The no-thrash control runs the smallest thrasher (8 FFMAs): the handshake needs one."""
    tt = max(t, 8)
    got = r.concurrent(r.fresh(b.obs[(lv.n, 8)], "icache_observe"), lv.n, o_sm, o_warp, b.thr[(8, tt)], tt, t_sm)
    if got is None:
        return None
    (_, v, _), _, o_wid, t_wid = got
    return v, o_wid, t_wid


EXPERIMENTS: dict[str, Experiment] = {"fresh": fresh, "reused": reused, "concurrent": concurrent}


# ---- running one experiment over every observer and thrash size ----------------------------------
def _run(ctx: BenchContext, r: Runner, b: Builds, lv: Level, pl: Placement, method: str) -> priv.Verdict:
    """Every observer against every thrash size, REPS trials each (a series per observer), judged."""
    trials: list[tuple[int, int, float, int | None]] = []  # (observer SM, thrash FFMAs, cycles/FFMA, rank)
    for o_sm, o_warp in pl.observers(lv.name):
        vals: dict[int, list[float]] = {}
        for t in lv.sizes:
            for _ in range(REPS):
                got = EXPERIMENTS[method](r, b, lv, o_sm, o_warp, t, pl.t_sm)
                if got is None:
                    why = f"the observer and thrasher kernels did not overlap (SMs {o_sm}, {pl.t_sm})"
                    return priv.Verdict({}, {}, 0.0, f"inconclusive: {why}", False)
                v, o_wid, t_wid = got
                vals.setdefault(t, []).append(v)
                trials.append((o_sm, t, v, pl.rank(o_sm, o_wid, t_wid) if t_wid is not None else None))
        ctx.series(
            f"{lv.name}_{method}_sm{o_sm}_w{o_warp}",
            "thrash size",
            "bytes",
            "observer inverse throughput",
            "cycles/instr",
            [ctx.point(t * INSTR_BYTES, vals[t]) for t in lv.sizes],
            plot="line",
            figure=f"icache_privacy_{lv.name}_{method}",
            observed_bytes=lv.n * INSTR_BYTES,
            thrasher_sm=pl.t_sm,
            observer_sm=o_sm,
            observer_warp=o_warp,
        )
    return _judge(trials, lv)


def _judge(trials: list[tuple[int, int, float, int | None]], lv: Level) -> priv.Verdict:
    """One observer per (SM, rank relative to the thrasher in that trial: warp slots change from launch
    to launch); its controls: every unthrashed or fitting-thrash trial on that SM."""
    observers = []
    for o_sm, rk in sorted({(o, k) for o, t, _, k in trials if t in lv.over and k is not None}):
        controls = tuple(v for o, t, v, _ in trials if o == o_sm and t in [0] + lv.fit)
        thrashed = tuple(v for o, t, v, k in trials if o == o_sm and k == rk and t in lv.over)
        observers.append(priv.Observer(f"SM {o_sm} {priv.DOMAINS[rk]}", rk, controls, thrashed))
    return priv.judge(observers, priv.rise_threshold(observers, k=6.0, floor=RESOLUTION / lv.n))


# ---- the figures -----------------------------------------------------------------------------------
def private_to(fresh: priv.Verdict, con: priv.Verdict) -> str:
    """The level's privacy from the sequential (fresh) and the concurrent verdicts."""
    if fresh.conclusive and con.conclusive and fresh.domain == con.domain:
        return f"{fresh.domain} (both methods agree)"
    if fresh.conclusive and con.conclusive:
        return f"inconclusive: the sequential method says {fresh.domain}, the concurrent one {con.domain}"
    if fresh.conclusive or con.conclusive:
        one, other = ("sequential", "concurrent") if fresh.conclusive else ("concurrent", "sequential")
        return f"{(fresh if fresh.conclusive else con).domain} (the {one} method; the {other} one is inconclusive)"
    return "inconclusive (neither method)"


def _method(lv: Level, pl: Placement) -> str:
    name = lv.name.upper()
    return (
        f"observed sequence {lv.n * INSTR_BYTES} B (within {name}); thrash sizes {[t * INSTR_BYTES for t in lv.fit]} B "
        f"(controls, fit beside it) and {[t * INSTR_BYTES for t in lv.over]} B (beyond {name}), 3 repetitions each, "
        "plus no thrasher; observer and thrasher code in separate modules; sequential: a new load of the observer "
        "module per trial, an observer launch running it once, the thrasher launch, an observer launch timing its "
        "first pass; concurrent: a new observer load per trial, both kernels at once on two streams, the observer "
        "running its code once, waiting for the thrasher, timing the next pass; an observer slowed when the median "
        "after the large thrashes exceeds the median of its SM's controls by more than 6 pooled robust sigmas of the "
        "controls and by more than half the rise of the observer nearest the thrasher (eviction costs a level step; "
        "smaller significant rises are named as interference); each trial's relation from the %warpid of "
        f"both warps (sub-core = %warpid % 4, Jia's mapping); {pl.note}"
    )


def privacy(ctx: BenchContext, b: Builder, r: Runner, l0: int, l1: int) -> None:
    """Jia Fig. 3.5 at L0 and L1 (capacities in bytes): every experiment per level, then per level its
    privacy (the fresh and concurrent experiments together) and what evicts re-run code (reused)."""
    plan = levels(l0, l1)
    obs, thr = build_pairs(plan)
    builds = Builds(b.many(obs), b.many(thr))
    pl = place(r, next(iter(builds.obs.values())))
    verdicts = {lv.name: {m: _run(ctx, r, builds, lv, pl, m) for m in METHODS} for lv in plan}
    for lv in plan:
        v = verdicts[lv.name]
        notes = []
        for m, vd in v.items():
            rises = ", ".join(f"{k}: {vd.rise[k]:+.3f}{' slowed' if vd.slowed[k] else ''}" for k in vd.rise)
            notes.append(f"{m}: {vd.text} [threshold {vd.threshold:.3f} cycles/instr; rises {rises}]")
        ctx.figure(
            f"cache.icache.{lv.name}_private_to",
            private_to(v["fresh"], v["concurrent"]),
            "",
            "derived",
            _method(lv, pl),
            note="; ".join(notes),
        )
        ctx.figure(
            f"cache.icache.{lv.name}_reused_code_evicted_by",
            v["reused"].text,
            "",
            "derived",
            "as the sequential method, but one module load for every trial and two passes of the observer before each "
            "thrash (code the observer has re-run many times): which observers a larger thrasher still slows down",
        )
