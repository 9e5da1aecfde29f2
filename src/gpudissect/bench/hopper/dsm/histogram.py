"""`dsm_histogram`: a histogram with the bins spread over a cluster's shared memories."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ....device.cuda import Arg, CudaError
from ....models import Point
from ...context import BenchContext
from ...registry import Needs, Param, benchmark
from .common import (
    BLOCKS,
    DSM,
    _bins,
    _blocks,
    _cluster_failure,
    _elements,
    _ints,
    _launch,
    _pow2_sizes,
    beyond_cluster_limit,
    bins_per_block,
    blocks_per_sm,
    fold_histogram,
    hist_config_error,
    resident_clusters,
    skip_cluster_sizes,
)


# ---------------------------------------------------------------------------------------
# 3. Histogram
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Beyond:
    """A cluster size beyond this GPU, and why (common.beyond_cluster_limit)."""

    why: str


def hist_plan(
    quick: bool, sizes: tuple[int, ...] | None, blocks: tuple[int, ...] | None, bins: tuple[int, ...] | None
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    css = sizes or (1, 2, 4, 8, 16)
    bls = blocks or ((128, 512) if quick else BLOCKS)
    nbs = bins or ((1024, 2048, 8192, 65536) if quick else tuple(1 << k for k in range(10, 17)))
    return tuple(sorted(css)), tuple(sorted(bls)), tuple(sorted(nbs))


@benchmark(
    name="dsm_histogram",
    title="Histogram with the bins spread over a cluster's shared memories",
    axes={
        "cluster_size": "1, 2, 4, 8, 16",
        "block": "128, 512 (full: 128 .. 1024)",
        "bins": "1024, 2048, 8192, 65536 (full: 1024 .. 65536)",
    },
    kernels=[DSM],
    params={
        "elements": Param(None, "input elements (default 2^25 quick, 2^27 full)", int, _elements),
        "cluster_sizes": Param(None, "comma-separated cluster sizes (default 1,2,4,8,16)", _ints, _pow2_sizes(1)),
        "block_sizes": Param(
            None, "comma-separated block sizes (default 128,512 quick; 128..1024 full)", _ints, _blocks
        ),
        "bins": Param(
            None,
            "comma-separated bin counts per cluster (default 1024,2048,8192,65536 quick; 1024..65536 full)",
            _ints,
            _bins,
        ),
    },
    timeout_s=300,
    needs=Needs((9, 0), features=("dsm",)),  # distributed shared memory: clusters with it
    paper="000 §7.3, Fig. 12",
)
def dsm_histogram(ctx: BenchContext) -> None:
    p = ctx.params
    css, bls, nbs = hist_plan(ctx.quick, p["cluster_sizes"], p["block_sizes"], p["bins"])
    n = p["elements"] or (1 << 25 if ctx.quick else 1 << 27)
    reps = 3 if ctx.quick else 5
    smem_cap = int(ctx.props["smem_per_block_optin"])
    rng = np.random.default_rng(12)
    data = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    top = max(nbs)
    ref_top = np.bincount(data & np.uint32(top - 1), minlength=top).astype(np.int64)
    ddata, hist = ctx.upload(data), ctx.alloc(top * 4)
    rates: dict[tuple[int, int, int], list[float]] = {}  # (cs, block, bins) -> elements/s
    local: dict[tuple[int, int], list[float]] = {}
    skipped: list[str] = []
    fails: list[str] = []
    beyond: dict[int, str] = {}  # cluster sizes this GPU cannot launch: skipped, not failed
    total = len(nbs) * (len(css) + 1) * len(bls)
    step = 0
    for nb in nbs:
        ref = fold_histogram(ref_top, nb)
        for block in bls:
            for cs in css:
                step += 1
                err = hist_config_error(cs, block, nb, smem_cap, int(ctx.props.get("max_threads_per_block") or 1024))
                if err:
                    skipped.append(f"cs{cs} b{block} {nb} bins: {err}")
                    continue
                r = _hist_run(ctx, "dsm_hist", cs, block, nb, n, ddata, hist, ref, reps)
                if isinstance(r, Beyond):
                    beyond.setdefault(cs, r.why)
                    skipped.append(f"cs{cs} b{block} {nb} bins: {r.why}")
                elif isinstance(r, str):
                    fails.append(f"cs{cs} b{block} {nb} bins: {r}")
                else:
                    rates[(cs, block, nb)] = r
                ctx.progress(step, total, f"cs{cs} b{block} {nb} bins")
            step += 1
            if nb * 4 <= smem_cap:  # the no-cluster reference: every bin in one block, ATOMS
                r = _hist_run(ctx, "smem_hist", 1, block, nb, n, ddata, hist, ref, reps)
                if isinstance(r, str):
                    fails.append(f"local b{block} {nb} bins: {r}")
                else:
                    local[(block, nb)] = r
    for f in fails:
        ctx.soft_check(False, f)
    skip_cluster_sizes(ctx, beyond)
    _hist_report(ctx, rates, local, skipped, fails, n, reps)


def _hist_run(
    ctx: BenchContext,
    kernel: str,
    cs: int,
    block: int,
    nb: int,
    n: int,
    ddata: Any,
    hist: Any,
    ref: np.ndarray,
    reps: int,
) -> list[float] | str | Beyond:
    """Elements per second of each timed launch, or why the run failed (its check or its launch), or why its
    cluster size is beyond this GPU."""
    dev = ctx.device
    fn = ctx.kernel(DSM, kernel)
    if kernel == "dsm_hist":
        bpb = bins_per_block(nb, cs)
        smem = bpb * 4
        grid = resident_clusters(ctx, fn, cs, block, smem) * cs
        args = [Arg.ptr(ddata), Arg.u32(n), Arg.u32(nb - 1), Arg.u32(int(math.log2(bpb))), Arg.ptr(hist)]

        def launch() -> None:
            _launch(fn, grid, block, args, smem, cs)
    else:
        smem = nb * 4
        grid = blocks_per_sm(ctx, fn, block, smem) * ctx.props["sm_count"]
        args = [Arg.ptr(ddata), Arg.u32(n), Arg.u32(nb - 1), Arg.u32(nb), Arg.ptr(hist)]

        def launch() -> None:
            fn(grid, block, args, smem=smem)

    dev.memset32(hist, 0, nb)
    try:
        launch()  # warm-up, counted in the check
        times = dev.time_ms(launch, reps)
    except CudaError as e:
        if kernel != "dsm_hist":
            return str(e)
        why = beyond_cluster_limit(fn, cs, block, smem)
        return Beyond(why) if why else _cluster_failure(fn, cs, block, smem, e)
    got = dev.download(hist, np.uint32, nb).astype(np.int64)
    want = ref * (reps + 1)
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)
        return (
            f"{len(bad)} of {nb} bins differ from numpy's histogram x {reps + 1} launches "
            f"(bin {bad[0]}: got {got[bad[0]]}, want {want[bad[0]]})"
        )
    return [n / (ms * 1e-3) for ms in times]


K = TypeVar("K")


def _fastest(runs: Iterable[tuple[K, list[float]]]) -> tuple[K, list[float]]:
    """The (configuration, rates) whose median rate is highest."""
    return max(runs, key=lambda kv: float(np.median(kv[1])))


def _hist_report(
    ctx: BenchContext,
    rates: dict[tuple[int, int, int], list[float]],
    local: dict[tuple[int, int], list[float]],
    skipped: list[str],
    fails: list[str],
    n: int,
    reps: int,
) -> None:
    method = (
        f"{n} random u32 elements, bin = value & (bins - 1), grid = the clusters that fit at once (grid-stride); "
        f"time includes clearing the bins and each block adding its bins to the global histogram (atomics), as "
        f"in the CUDA sample; event-timed, median of {reps} launches; every histogram equal to numpy's"
    )

    def curve(name: str, pts: list[Point], block: int, cs: int) -> None:  # cs 0: no cluster
        ctx.series(
            name,
            "bins",
            "",
            "throughput",
            "elements/s",
            pts,
            plot="logx",
            figure="dsm_histogram",
            block=block,
            cluster_size=cs,
        )

    for block, cs in sorted({(b, c) for c, b, _ in rates}):
        pts = [ctx.point(nb, v) for (c, b, nb), v in sorted(rates.items()) if c == cs and b == block]
        curve(f"block {block} CS={cs}", pts, block, cs)
    for block in sorted({b for b, _ in local}):
        pts = [ctx.point(nb, v) for (b, nb), v in sorted(local.items()) if b == block]
        curve(f"block {block} no cluster (ATOMS)", pts, block, 0)
    note = (f"{len(skipped)} configuration(s) skipped: " + "; ".join(skipped)) if skipped else ""
    if fails or not rates:
        ctx.figure(
            "dsm.histogram.best_elems_per_s",
            0.0,
            "elements/s",
            "measured",
            method,
            check="failed",
            note="; ".join(fails) or "no configuration ran",
        )
    else:
        (cs, block, nb), v = _fastest(rates.items())
        ctx.median_figure(
            "dsm.histogram.best_elems_per_s",
            v,
            "elements/s",
            "measured",
            method,
            note=f"cluster size {cs}, block {block}, {nb} bins. {note}".strip(),
        )
        for c in sorted({c for c, _, _ in rates}):
            (_, b, nbin), w = _fastest((k, x) for k, x in rates.items() if k[0] == c)
            ctx.median_figure(
                f"dsm.histogram.cs{c}_best_elems_per_s",
                w,
                "elements/s",
                "measured",
                method,
                note=f"block {b}, {nbin} bins",
            )
    if local:
        (block, nb), v = _fastest(local.items())
        ctx.median_figure(
            "dsm.histogram.local_atoms_best_elems_per_s",
            v,
            "elements/s",
            "measured",
            f"the same histogram without clusters (plain shared atomics, ATOMS); {method}",
            note=f"block {block}, {nb} bins",
        )
