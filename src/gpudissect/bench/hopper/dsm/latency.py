"""`dsm_latency`: local, cluster-window and remote shared-memory chases, the L2-hit chase and SM-to-SM
round trips through global memory and DSM.
"""

from __future__ import annotations

import numpy as np

from ....device.cuda import Arg, CudaError
from ...context import BenchContext
from ...registry import Needs, Param, benchmark, in_range
from ...shared import PCHASE, Chaser, chain_cycle, walk
from .common import (
    CHASE_SLOTS,
    DSM,
    MAX_CS,
    _chain_elements,
    _cluster_failure,
    _ints,
    _latency_sizes,
    _launch,
    beyond_cluster_limit,
    chase_slots,
    skip_cluster_sizes,
    slot_elem_bytes,
)


# ---------------------------------------------------------------------------------------
# 1. Latency
# ---------------------------------------------------------------------------------------
@benchmark(
    name="dsm_latency",
    title="Distributed shared memory latency: local, cluster window, remote SMs",
    axes={
        "access": "ld.shared, own rank via cluster window (generic and ld.shared::cluster.u32), remote rank 1..n-1",
        "cluster_size": "1 (local only), 2, 4, 8, 16 (non-portable)",
        "reference": "L2 hit (.cg chase), SM-to-SM round trip through global memory and through DSM",
    },
    kernels=[DSM, PCHASE["cg"]],
    params={
        "cluster_sizes": Param((2, 4, 8, 16), "comma-separated cluster sizes for remote chases", _ints, _latency_sizes),
        "elements": Param(1024, "chain elements (8 bytes each in shared memory)", int, _chain_elements),
        "steps": Param(
            None,
            "timed loads per chase (default 8192 quick, 32768 full)",
            int,
            in_range(64, 1 << 22, "64 .. 4M"),
        ),
    },
    timeout_s=300,
    needs=Needs((9, 0), features=("dsm",)),  # distributed shared memory: clusters with it
    paper="000 §7.1, Table III",
)
def dsm_latency(ctx: BenchContext) -> None:
    dev, p = ctx.device, ctx.params
    n, reps = p["elements"], 3 if ctx.quick else 5
    steps = p["steps"] or (8192 if ctx.quick else 32768)
    sizes = sorted(set(p["cluster_sizes"]))
    rng = np.random.default_rng(11)
    nxt = chain_cycle(n, rng)
    want = walk(nxt, n + steps)  # warm pass of n loads, then the timed ones, from element 0
    fn = ctx.kernel(DSM, "dsm_chase")
    # per chase slot (cycles, end, first), then clock64 cycles and %globaltimer ns around all the chases
    words = CHASE_SLOTS * 3 + 2
    dchain, res, place = ctx.upload(nxt), ctx.alloc(words * 8), ctx.alloc(MAX_CS * 2 * 4)
    clock_cycles: list[int] = []
    clock_ns: list[int] = []
    local: dict[int, list[float]] = {0: [], 1: [], 2: []}
    remote: dict[int, dict[int, list[float]]] = {}
    sms: dict[int, list[list[int]]] = {}
    failed: dict[int, str] = {}
    beyond: dict[int, str] = {}  # sizes this GPU cannot launch at all: skipped, not failed
    for i, cs in enumerate([1] + sizes):
        for _ in range(reps):
            dev.memset32(res, 0xFFFFFFFF)
            try:
                _launch(
                    fn,
                    cs,
                    1,
                    [Arg.ptr(dchain), Arg.u32(n), Arg.u32(n), Arg.u32(steps), Arg.ptr(res), Arg.ptr(place)],
                    n * 8,
                    cs,
                )
                dev.sync("dsm_chase")
            except CudaError as e:
                why = beyond_cluster_limit(fn, cs, 1, n * 8)
                if why:
                    beyond[cs] = why
                else:
                    failed[cs] = _cluster_failure(fn, cs, 1, n * 8, e)
                break
            raw = dev.download(res, np.uint64, words)
            r = raw[: CHASE_SLOTS * 3].reshape(-1, 3).astype(object)
            cyc, ns = int(raw[-2]), int(raw[-1])
            ctx.check(0 < ns < 10**10 and 0 < cyc < 1 << 40, f"cluster of {cs}: clock window {cyc} cycles over {ns} ns")
            clock_cycles.append(cyc)
            clock_ns.append(ns)
            pl = dev.download(place, np.uint32, 2 * cs).reshape(cs, 2)
            ctx.check(
                np.array_equal(pl[:, 1], np.arange(cs)),
                f"cluster of {cs}: %cluster_ctarank per block {pl[:, 1].tolist()}",
            )
            sms.setdefault(cs, []).append(pl[:, 0].tolist())
            for s in chase_slots(cs):
                cycles, end, first = (int(v) for v in r[s])
                eb = slot_elem_bytes(s)
                off = end - first
                ctx.check(
                    off % eb == 0 and off // eb == want,
                    f"cluster of {cs}, slot {s}: chase ended {off} bytes from element 0, expected element {want} "
                    f"({want * eb} bytes)",
                )
                if s <= 2:
                    local[s].append(cycles / steps)
                else:
                    remote.setdefault(cs, {}).setdefault(s - 2, []).append(cycles / steps)
        ctx.progress(i + 1, len(sizes) + 3, f"cluster size {cs}")
    if clock_ns:
        per = [c / t * 1e3 for c, t in zip(clock_cycles, clock_ns)]
        ctx.sm_clock(
            sum(clock_cycles) / sum(clock_ns) * 1e3,
            f"clock64 cycles over %globaltimer ns around the chases of every dsm_chase launch, summed over "
            f"{len(per)} launches",
            (min(per), max(per)),
        )

    _index_chase(ctx, nxt, n, steps, reps, want, local[0])
    l2 = _l2_hit(ctx, steps, reps)
    ctx.progress(len(sizes) + 2, len(sizes) + 3, "round trips")
    trips = {kind: _pingpong(ctx, kind, reps) for kind in ("global", "dsm")}
    skip_cluster_sizes(ctx, beyond)
    sizes = [cs for cs in sizes if cs not in beyond]
    _latency_report(ctx, local, remote, sms, failed, sizes, l2, trips, steps, reps)


def _index_chase(
    ctx: BenchContext, nxt: np.ndarray, n: int, steps: int, reps: int, want: int, pointer: list[float]
) -> None:
    """The local chase in the papers' index form (j = s[j]) in a cluster of 2, beside the pointer form."""
    dev = ctx.device
    fn = ctx.kernel(DSM, "dsm_ichase")
    dchain, res = ctx.upload(nxt), ctx.alloc(2 * 8)
    vals = []
    for _ in range(reps):
        dev.memset32(res, 0xFFFFFFFF)
        _launch(fn, 2, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u32(n), Arg.u32(steps), Arg.ptr(res)], n * 8, 2)
        dev.sync("dsm_ichase")
        cycles, end = (int(v) for v in dev.download(res, np.uint64, 2))
        ctx.check(end == want, f"index chase ended at element {end}, expected {want}")
        vals.append(cycles / steps)
    ptr = f" (pointer form, slot 0: {float(np.median(pointer)):.1f} cycles)" if pointer else ""
    ctx.median_figure(
        "dsm.latency.local_direct_index_chase_cycles",
        vals,
        "cycles",
        "measured",
        f"ld.shared.u32 index chase j = s[j] (shift + add before every load, the papers' form) over the same "
        f"chain in a cluster of 2, {steps} timed loads after a warm pass, median of {reps} launches{ptr}",
    )


def _l2_hit(ctx: BenchContext, steps: int, reps: int) -> tuple[list[float], int] | None:
    """.cg chase over a footprint far inside the L2 (1 MiB or L2/4): the mean latency of an L2 hit in
    each launch, averaged over the near and far partitions the lines fall in; and the footprint."""
    fp, stride = min(1 << 20, ctx.props["l2_bytes"] // 4), 128
    ch = Chaser(ctx, "cg", fp + stride, seed=5)
    m = ch.build_random(fp, stride)
    return [ch.run(m, steps)[0] for _ in range(reps)], fp  # a full warm pass first: every line in L2


def _pingpong(ctx: BenchContext, kind: str, reps: int) -> tuple[list[float], list[int], str | None]:
    """Round-trip cycles of `rounds` messages between ranks 0 and 1 of a cluster of 2."""
    dev = ctx.device
    fn = ctx.kernel(DSM, f"pingpong_{kind}")
    rounds = 2000 if ctx.quick else 10000
    flag, res = ctx.alloc(128), ctx.alloc(8 * 8)
    out, where, err = [], [], None
    for _ in range(reps):
        dev.memset32(flag, 0)
        dev.memset32(res, 0)
        _launch(fn, 2, 32, [Arg.ptr(flag), Arg.u32(rounds), Arg.u32(1 << 22), Arg.ptr(res)], 0, 2)
        dev.sync(f"pingpong_{kind}")
        cycles, last, timeouts, sm0, sm1 = (int(v) for v in dev.download(res, np.uint64, 5))
        if timeouts or last != 2 * rounds:
            err = (
                f"{kind} ping-pong: {timeouts} wait(s) timed out, last message {last} instead of {2 * rounds}"
                " (a message was lost or never became visible)"
            )
            break
        out.append(cycles / rounds)
        where = [sm0, sm1]
    return out, where, err


def _latency_report(
    ctx: BenchContext,
    local: dict[int, list[float]],
    remote: dict[int, dict[int, list[float]]],
    sms: dict[int, list[list[int]]],
    failed: dict[int, str],
    sizes: list[int],
    l2: tuple[list[float], int] | None,
    trips: dict[str, tuple[list[float], list[int], str | None]],
    steps: int,
    reps: int,
) -> None:
    base = f"{steps} dependent loads by one thread after a full warm pass, median of {reps} launches per cluster size"
    names = {
        0: ("local_direct", "ld.shared.u32 chase on shared::cta addresses (LDS)"),
        1: (
            "local_via_cluster",
            "own shared memory through the cluster window: mapa of the own rank, generic "
            "64-bit ld (LD.E.64, what ld.shared::cluster becomes)",
        ),
        2: (
            "local_via_cluster_u32",
            "literal mapa.shared::cluster + ld.shared::cluster.u32; ptxas pairs each address "
            "with SR_SWINHI through a register move inside the dependency chain",
        ),
    }
    for s, (key, how) in names.items():
        if local[s]:
            ctx.median_figure(f"dsm.latency.{key}_cycles", local[s], "cycles", "measured", f"{how}; {base}")
    pts = [ctx.point(s, local[s], access=names[s][0]) for s in (0, 1, 2) if local[s]]
    ctx.series("local", "access", "", "latency", "cycles", pts, plot="bar", figure="dsm_latency")

    if local[0] and local[1]:
        ctx.figure(
            "dsm.latency.cluster_interface_overhead_cycles",
            float(np.median(local[1]) - np.median(local[0])),
            "cycles",
            "derived",
            "local via the cluster window minus ld.shared on the same memory",
        )
    remote_cs2 = None
    for cs in sizes:
        if cs in failed:
            ctx.soft_check(False, failed[cs])
            for suffix in ("", "_max", "_min"):
                ctx.figure(
                    f"dsm.latency.remote_cs{cs}{suffix}_cycles",
                    0.0,
                    "cycles",
                    "measured",
                    "remote chase",
                    check="failed",
                    note=failed[cs],
                )
            continue
        runs = sms[cs]
        per_t = {t: float(np.median(v)) for t, v in sorted(remote[cs].items())}
        # a target the scheduler put on the reader's own SM is no SM-to-SM access: left out, said so
        same = sorted({t for t in per_t for run in runs if run[t] == run[0]})
        use = {t: v for t, v in per_t.items() if t not in same} or per_t
        vals = list(use.values())
        where = "; ".join(f"run {k}: SMs {run}" for k, run in enumerate(runs))
        note = f"ranks 0..{cs - 1} ran on {where}"
        if same:
            note += f"; target rank(s) {same} shared rank 0's SM in some run" + (
                "" if use is not per_t else " (all kept)"
            )
        how = f"rank 0 chases in rank t's shared memory (mapa + generic LD.E.64), t = 1..{cs - 1}; {base}"
        ctx.median_figure(
            f"dsm.latency.remote_cs{cs}_cycles",
            vals,
            "cycles",
            "measured",
            f"median over target ranks; {how}",
            note=note,
        )
        ctx.figure(
            f"dsm.latency.remote_cs{cs}_max_cycles",
            max(vals),
            "cycles",
            "measured",
            f"slowest target rank; {how}",
            note=note,
        )
        ctx.figure(
            f"dsm.latency.remote_cs{cs}_min_cycles",
            min(vals),
            "cycles",
            "measured",
            f"fastest target rank; {how}",
            note=note,
        )
        if cs == 2:
            remote_cs2 = vals[0]
        ctx.series(
            f"cs{cs}",
            "target rank",
            "",
            "latency",
            "cycles",
            [
                ctx.point(t, remote[cs][t], target_sm=[run[t] for run in runs], reader_sm=[run[0] for run in runs])
                for t in per_t
            ],
            plot="line",
            figure="dsm_remote_latency",
            cluster_size=cs,
            sms=runs,
        )

    if l2 is not None:
        l2_vals, fp = l2
        med = float(np.median(l2_vals))
        ctx.median_figure(
            "dsm.latency.l2_hit_cycles",
            l2_vals,
            "cycles",
            "measured",
            f"ld.global.cg chase over {fp >> 10} KiB (inside L2) after a full warm pass, {steps} loads, "
            f"median of {reps} launches",
        )
        if remote_cs2 is not None:
            ctx.figure(
                "dsm.latency.remote_cs2_vs_l2_reduction_pct",
                round(100 * (1 - remote_cs2 / med), 2),
                "%",
                "derived",
                "1 - remote (cluster of 2) / L2 hit latency",
            )
    for kind, (vals, where, err) in trips.items():
        if err:
            ctx.soft_check(False, err)
        ok = "ok" if not err and vals else "failed"
        how = (
            "st.relaxed.gpu / ld.relaxed.gpu on one global flag (through L2)"
            if kind == "global"
            else "st.shared::cluster into the peer's mailbox, spin on one's own (ld.shared)"
        )
        rt = float(np.median(vals)) if vals else 0.0
        spread = (min(vals), max(vals)) if vals else None
        note = f"SMs {where}" if where else (err or "")
        ctx.figure(
            f"dsm.latency.{kind}_roundtrip_cycles",
            rt,
            "cycles",
            "measured",
            f"ping-pong between ranks 0 and 1 of a cluster of 2, {how}; cycles per round trip on rank 0, "
            f"median of {len(vals)} launches",
            spread,
            check=ok,
            note=note,
        )
        ctx.figure(
            f"dsm.latency.{kind}_sm_to_sm_cycles",
            rt / 2,
            "cycles",
            "derived",
            "half a round trip: one SM's store until another SM's load sees it",
            check=ok,
            note=note,
        )
    g = trips["global"]
    if remote_cs2 is not None and g[0] and not g[2]:
        ctx.figure(
            "dsm.latency.global_over_dsm_ratio",
            round(float(np.median(g[0])) / 2 / remote_cs2, 3),
            "x",
            "derived",
            "SM-to-SM through global memory (half a ping-pong round trip) over a remote DSM load (cluster of 2)",
        )
