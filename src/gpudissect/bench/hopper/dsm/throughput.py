"""`dsm_throughput`: SM-to-SM reads through the cluster window, access patterns x scheduling policies x
cluster, block size and ILP, and where the blocks ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....device.cuda import Arg, CudaError
from ....models import Point
from ...context import BenchContext
from ...registry import Needs, Param, benchmark, in_range
from .common import (
    BLOCKS,
    BW_WORDS,
    DSM,
    ILPS,
    PATTERNS,
    POLICIES,
    Placement,
    _blocks,
    _cluster_failure,
    _ilps,
    _ints,
    _launch,
    _merge_groups,
    _names,
    _patterns,
    _policies,
    _pow2_sizes,
    beyond_cluster_limit,
    expected_block_sums,
    pattern_targets,
    placement_summary,
    resident_clusters,
    skip_cluster_sizes,
)


# ---------------------------------------------------------------------------------------
# 2. Throughput
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BwConfig:
    pattern: str
    policy: str
    cs: int
    block: int
    ilp: int


def bw_plan(
    quick: bool,
    patterns: tuple[str, ...] | None = None,
    policies: tuple[str, ...] | None = None,
    sizes: tuple[int, ...] | None = None,
    blocks: tuple[int, ...] | None = None,
    ilps: tuple[int, ...] | None = None,
) -> list[BwConfig]:
    """Configurations to run. Full: the whole product. Quick: every pattern x policy x cluster size at
    one block size and ILP (Fig. 10), the block x ILP sweep for the ring with the default policy
    (Fig. 11) at every size, and the self pattern once. Explicit lists replace the defaults."""
    pats = patterns or ("ring", "pair", "broadcast")
    pols = policies or tuple(POLICIES)
    css = sizes or (2, 4, 8, 16)
    bls = blocks or BLOCKS
    ils = ilps or ILPS
    for pat in pats:
        for cs in css:
            pattern_targets(pat, cs)  # rejects pair with an odd size
    out: list[BwConfig] = []
    if quick and not (blocks or ilps):
        b0, i0 = 512, 2
        out += [BwConfig(pat, pol, cs, b0, i0) for pat in pats if pat != "self" for pol in pols for cs in css]
        sweep_pat = "ring" if "ring" in pats else pats[0]
        sweep_pol = "default" if "default" in pols else pols[0]
        out += [BwConfig(sweep_pat, sweep_pol, cs, b, i) for cs in css for b in bls for i in ils]
    else:
        out += [
            BwConfig(pat, pol, cs, b, i)
            for pat in pats
            if pat != "self"
            for pol in pols
            for cs in css
            for b in bls
            for i in ils
        ]
    if "self" in pats or not patterns:
        out += [BwConfig("self", "default", min(css), 1024 if 1024 in bls else max(bls), max(ils))]
    seen, uniq = set(), []
    for c in out:
        if c not in seen:
            seen.add(c)
            uniq.append(c)
    return uniq


@dataclass
class BwResult:
    cfg: BwConfig
    tbps: list[float]
    ok: bool
    placement: Placement | None
    blocks: int
    loads_per_thread: int
    error: str = ""
    beyond: bool = False  # the cluster size is beyond this GPU (error says why): skipped, not failed


@benchmark(
    name="dsm_throughput",
    title="SM-to-SM throughput: access patterns x scheduling policies x sizes",
    axes={
        "pattern": "ring, pair, broadcast (+ self: own rank through the cluster window)",
        "policy": "default, spread, load_balancing (CLUSTER_SCHEDULING_POLICY_PREFERENCE)",
        "cluster_size": "2, 4, 8, 16",
        "block": "128 .. 1024",
        "ilp": "1, 2, 4",
    },
    kernels=[DSM],
    params={
        "patterns": Param(None, "comma-separated patterns (default ring,pair,broadcast + self)", _names, _patterns),
        "policies": Param(None, f"comma-separated policies (default {','.join(POLICIES)})", _names, _policies),
        "cluster_sizes": Param(None, "comma-separated cluster sizes (default 2,4,8,16)", _ints, _pow2_sizes(2)),
        "block_sizes": Param(None, "comma-separated block sizes (default 128,256,512,1024)", _ints, _blocks),
        "ilps": Param(None, "comma-separated ILP values (default 1,2,4)", _ints, _ilps),
        "gbytes": Param(
            None,
            "GB read per launch (default 2 quick, 4 full)",
            float,
            in_range(0.001, 64),
        ),
    },
    timeout_s=300,
    needs=Needs((9, 0), features=("dsm",)),  # distributed shared memory: clusters with it
    paper="000 §7.2, Figs. 9-11",
)
def dsm_throughput(ctx: BenchContext) -> None:
    p = ctx.params
    plan = bw_plan(ctx.quick, p["patterns"], p["policies"], p["cluster_sizes"], p["block_sizes"], p["ilps"])
    target = (p["gbytes"] or (2.0 if ctx.quick else 4.0)) * 1e9
    reps = 3 if ctx.quick else 5
    results = []
    beyond: dict[int, str] = {}
    for i, cfg in enumerate(plan):
        with ctx.scratch():  # this configuration's sums and placement records
            r = _bw_run(ctx, cfg, target, reps)
        if r.beyond:
            beyond.setdefault(cfg.cs, r.error)
        else:
            results.append(r)
        ctx.progress(i + 1, len(plan), f"{cfg.pattern} {cfg.policy} cs{cfg.cs} b{cfg.block} ilp{cfg.ilp}")
    skip_cluster_sizes(ctx, beyond)
    _bw_report(ctx, results, reps)


def _bw_run(ctx: BenchContext, cfg: BwConfig, target_bytes: float, reps: int) -> BwResult:
    dev = ctx.device
    fn = ctx.kernel(DSM, f"dsm_read_ilp{cfg.ilp}")
    smem = BW_WORDS * 4
    clusters = 4 * resident_clusters(ctx, fn, cfg.cs, cfg.block, smem)  # several waves: every SM stays busy
    nblocks = clusters * cfg.cs
    iters = max(1, round(target_bytes / (nblocks * cfg.block * 4 * cfg.ilp)))
    iters = min(iters, (500_000 // cfg.ilp))  # a thread's u32 sum and a warp's stay below 2^32
    j = iters * cfg.ilp
    want = expected_block_sums(cfg.pattern, cfg.cs, nblocks, j, cfg.block)
    sums, place = ctx.alloc(nblocks * 8), ctx.alloc(nblocks * 8)
    nbytes = nblocks * cfg.block * j * 4
    args = [Arg.u32(PATTERNS[cfg.pattern]), Arg.u32(iters), Arg.ptr(sums), Arg.ptr(place)]
    tbps, ok, err, pl = [], True, "", None
    for r in range(reps + 1):  # the first launch warms up and is not timed
        dev.memset32(sums, 0)
        try:
            ms = dev.time_ms(lambda: _launch(fn, nblocks, cfg.block, args, smem, cfg.cs, cfg.policy))[0]
        except CudaError as e:
            why = beyond_cluster_limit(fn, cfg.cs, cfg.block, smem)
            if why:
                return BwResult(cfg, [], False, None, nblocks, j, why, beyond=True)
            err = _cluster_failure(fn, cfg.cs, cfg.block, smem, e)
            ok = ctx.soft_check(False, f"{cfg}: {err}")
            break
        got = dev.download(sums, np.uint64, nblocks)
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)
            err = (
                f"{len(bad)} of {nblocks} block sums differ from the data their target holds "
                f"(block {bad[0]}: got {int(got[bad[0]])}, want {int(want[bad[0]])})"
            )
            ok = ctx.soft_check(False, f"{cfg}: {err}")
            break
        if r == 0:
            raw = dev.download(place, np.uint32, 2 * nblocks).reshape(nblocks, 2)
            pl = placement_summary(raw[:, 0], raw[:, 1], cfg.cs)
            if not pl.rank_ok:
                err = "%cluster_ctarank differs from block index % cluster size: the expected sums assume it"
                ok = ctx.soft_check(False, f"{cfg}: {err}")
                break
        else:
            tbps.append(nbytes / (ms * 1e-3) / 1e12)
    return BwResult(cfg, tbps, ok and bool(tbps), pl, nblocks, j, err)


def _bw_report(ctx: BenchContext, results: list[BwResult], reps: int) -> None:
    method = (
        f"event-timed launches of 4 waves of clusters, every block reading 4-byte words of its target's 16 KiB "
        f"through the cluster window (generic LD.E on the mapa pointer); bytes read by all blocks (a broadcast's "
        f"rank 0 reading itself included) / time; median of {reps} launches"
    )
    by_group: dict[tuple[str, int], list[BwResult]] = {}
    for r in results:
        by_group.setdefault((r.cfg.pattern, r.cfg.cs), []).append(r)
    for (pat, cs), rs in sorted(by_group.items()):
        good = [r for r in rs if r.ok]
        failed = [r for r in rs if not r.ok]
        key = "dsm.bw.self_via_cluster_tbps" if pat == "self" else f"dsm.bw.{pat}_cs{cs}_peak_tbps"
        if failed or not good:
            why = "; ".join(f"{r.cfg.policy} b{r.cfg.block} ilp{r.cfg.ilp}: {r.error}" for r in failed) or "no run"
            ctx.figure(key, 0.0, "TB/s", "measured", method, check="failed", note=why)
            continue
        best = max(good, key=lambda r: float(np.median(r.tbps)))
        med = float(np.median(best.tbps))
        note = (
            f"best of {len(good)} runs: policy {best.cfg.policy}, block {best.cfg.block}, ILP {best.cfg.ilp}, "
            f"{best.blocks} blocks; placement: {best.placement.text() if best.placement else '?'}"
        )
        ctx.median_figure(key, best.tbps, "TB/s", "measured", method, note=note)
        if pat == "self":
            ctx.figure(
                "dsm.bw.self_via_cluster_gbps_per_sm",
                med * 1e3 / ctx.props["sm_count"],
                "GB/s",
                "derived",
                "self pattern (each block reads its own shared memory through the cluster window) / SM count",
            )

    # Fig. 10: pattern x policy over cluster size (peak over block x ILP where several ran)
    for pat in sorted({r.cfg.pattern for r in results} - {"self"}):
        for pol in POLICIES:
            pts = []
            for cs in sorted({r.cfg.cs for r in results}):
                rs = [r for r in results if r.cfg.pattern == pat and r.cfg.policy == pol and r.cfg.cs == cs and r.ok]
                if rs:
                    b = max(rs, key=lambda r: float(np.median(r.tbps)))
                    pts.append(ctx.point(cs, b.tbps, block=b.cfg.block, ilp=b.cfg.ilp))
            if pts:
                ctx.series(
                    f"{pat}/{pol}",
                    "cluster size",
                    "",
                    "throughput",
                    "TB/s",
                    pts,
                    plot="line",
                    figure="dsm_bw_patterns",
                    pattern=pat,
                    policy=pol,
                )
    # Fig. 11: ring, default policy: block size x ILP per cluster size
    for cs in sorted({r.cfg.cs for r in results}):
        for ilp in ILPS:
            rs = sorted(
                (
                    r
                    for r in results
                    if r.cfg.pattern == "ring"
                    and r.cfg.policy == "default"
                    and r.cfg.cs == cs
                    and r.cfg.ilp == ilp
                    and r.ok
                ),
                key=lambda r: r.cfg.block,
            )
            if len(rs) > 1:
                ctx.series(
                    f"ring cs{cs} ILP{ilp}",
                    "block size",
                    "threads",
                    "throughput",
                    "TB/s",
                    [ctx.point(r.cfg.block, r.tbps) for r in rs],
                    plot="line",
                    figure="dsm_bw_ring_block_ilp",
                    cluster_size=cs,
                    ilp=ilp,
                )
    _placement_report(ctx, results)


def _placement_report(ctx: BenchContext, results: list[BwResult]) -> None:
    placed = [r for r in results if r.placement is not None and r.cfg.pattern != "self"]
    if not placed:
        return
    for pol in POLICIES:
        pts = []
        for cs in sorted({r.cfg.cs for r in placed}):
            pls = [r.placement for r in placed if r.cfg.policy == pol and r.cfg.cs == cs]
            if pls:
                pts.append(
                    Point(
                        cs,
                        float(np.median([q.distinct_median for q in pls])),
                        float(min(q.distinct_min for q in pls)),
                        float(max(q.distinct_max for q in pls)),
                        len(pls),
                        {
                            "colocated_share": float(np.mean([q.colocated for q in pls])),
                            "sms_used": max(q.sms_used for q in pls),
                        },
                    )
                )
        if pts:
            ctx.series(
                pol,
                "cluster size",
                "",
                "distinct SMs per cluster",
                "SMs",
                pts,
                plot="line",
                figure="dsm_placement",
                policy=pol,
            )
        shares = [r.placement.colocated for r in placed if r.cfg.policy == pol]
        if shares:
            ctx.figure(
                f"dsm.placement.{pol}_colocated_share",
                round(float(np.mean(shares)), 4),
                "fraction",
                "measured",
                "share of clusters with two or more blocks on one SM (%smid of every block), mean over runs",
            )
    # SMs that ever shared a cluster, over all runs: a cluster stays inside one GPC, so these are GPCs
    smid_groups = _merge_groups([r.placement.groups for r in placed])
    sizes = sorted((len(g) for g in smid_groups), reverse=True)
    ctx.figure(
        "dsm.placement.sm_groups",
        len(smid_groups),
        "groups",
        "derived",
        "connected components of SMs linked by hosting blocks of one cluster, over every throughput run "
        "(a cluster never leaves its GPC: an estimate of the GPCs in use)",
        note=f"group sizes {sizes}",
    )
