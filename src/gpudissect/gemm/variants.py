"""The rungs of our GEMM ladder (kernels/gemm.cu): tile shapes, launch geometry, required SASS, and the
argument rules of the public API. Torch-free, so CPU tests cover all of it.

The Rung record and the RUNGS table are in rungs.py, the required SASS in rung_sass.py; this module holds
the public default's per-shape choice and the argument rules, and re-exports the rest."""

from __future__ import annotations

from ..capability import Target
from .rung_sass import SK_SASS as SK_SASS
from .rung_sass import WAIT_SLEEP_SASS as WAIT_SLEEP_SASS
from .rung_sass import required_sass as required_sass
from .rung_sass import required_sass_ws as required_sass_ws
from .rungs import DTYPES as DTYPES
from .rungs import FILE as FILE
from .rungs import FP8_FROM as FP8_FROM
from .rungs import RUNGS as RUNGS
from .rungs import Rung as Rung

BEST_FP8 = 10  # fp8 e4m3's rung where one is needed by name (gating, fallbacks); matmul picks per shape as for bf16
BEST = 10  # the public rung: stream-K where a split pays, else data-parallel (then run as rung 6: DATA_PARALLEL)
# tried and not adopted: Rung.stagger (consumer warpgroups k-blocks apart), 2 x 2 clusters (cluster = cluster_n = 2:
# 4-CTA clusters leave SMs unused), Rung.epi_whole (a whole tile of C staged at once, on 3 stages), Rung.keep_desc
# (descriptor bases kept in registers), GM_L2_PREFETCH (a grid's first k-blocks prefetched into L2 before its PDL
# wait), GM_PDL_TRIGGER 1/2 (the next grid let in later): results/h100-sxm5-80gb/profiles/gemm-stagger, gemm-cluster4,
# gemm-epilogue, gemm-keepdesc, gemm-pdl-trigger, results/h200/profiles/gemm-l2-prefetch
NOT_BUILT = {14: "a deeper epilogue overlap (a tile's stores under the next tile's first k-blocks on one-tile grids)"}

# The public default (matmul, `gpudissect gemm`, vs_cublas without --set): a per-shape choice between rung
# 10's 128x256 tile pairs and rung 9's 128x128 tiles. Rung 9 where rung 10's pairs fill at most 4 waves and
# their last wave is at most 60 % full (less than one wave counts as a last wave): there twice the units fill
# the waves better than stream-K mends them. Measured (full vs_cublas runs gemm-full-rung9 against
# gemm-full-v10h): rung 9 ahead by 8-28 % at 1024-1536, 2304, 2560, 3072, 3328 and the Llama QKV
# projections at 1024 tokens, behind wherever the pairs' last wave was 74 % full or more (1792, 2048, 2816,
# 3584, 4096 and up: 0.53-0.98). The cap was 3 waves until the two shapes between 3 and 4 waves with a last wave
# under 60 % were measured (`gpudissect gemm`, two rounds of 15 pairs, bf16 and fp16,
# results/h100-sxm5-80gb/profiles/gemm-small-tile-waves/): 3840^3 (3.4 waves) rung 9 0.903-0.906 of cuBLAS against
# rung 10's 0.891-0.894, and 512 x 28672 x 4096 (Llama-3-8B gate/up at 512 tokens) 0.927-0.939 against
# 0.855-0.863.
#
# And rung 6 where rung 10's rule splits nothing: the same kernel without the stream-K code, whose unused
# branches and state still slow rung 10 there (ahead in every quartile of a rotation at 4096^3 and 4096 x 4096 x
# 8192, fewer cycles under ncu: device check dispatch, results/h100-sxm5-80gb/profiles/gemm-dispatch/; the gemm
# runs after it measure the choice). 16-bit types only (fp8 not measured).
AUTO = 0
SMALL_TILE, SMALL_TILE_MAX_WAVES, SMALL_TILE_MAX_FILL = 9, 4, 0.6
DATA_PARALLEL = 6
# Rung 11's 256 x 192 tile pairs where they fill the waves (at least WIDE_MIN_FILL of the cluster slots their waves
# hold) and the pick above does not (its tiles fill under WIDE_BASE_MAX_FILL): at equal fill rung 10's wider pairs
# do more per k-block (3584^3, every slot filled by all three widths: rungs 6/10 1.02, 11 and 9 0.94 of cuBLAS).
# Measured (dev/gemm_tile_sweep.py, results/h100-sxm5-80gb/profiles/gemm-tile-192/): Llama-3-8B QKV at 512 tokens
# 0.94-0.96 against rung 6's 0.82, 3072^3 1.00 against rung 9's 0.93, e4m3 3072^3 1.03 against rung 10's 0.85;
# elsewhere the fill rule keeps the pick, and the sweep agrees (rung 11 behind at 2048, 2560, 4096 and on the
# projections whose 192-column pairs leave a wave partly idle).
# Then rung 12's 256 x 160 pairs by the same rule: Llama-3-70B QKV at 512 tokens 0.99 against rung 9's 0.88 (128
# pairs on 66 clusters), at 256 tokens 0.96-0.97 against rung 6's 0.75 (profiles/gemm-tile-192/tile_targets.txt).
# Where the fill pick is rung 10, its stream-K mends a partial last wave, cheaply when that wave is small: the wide
# tiles only where rung 10's last wave holds at least WIDE_SK_MIN_LAST of the clusters (4352^3, 38 %: rung 11 1.01-1.02
# against 0.94; 5120^3, 6 %: rung 10 1.01 against rung 12's 0.97-0.98; 5888^3, 2 %: level; e4m3 3072^3, 18 %: rung
# 11 ahead as above).
WIDE_TILE, NARROW_WIDE_TILE, WIDE_MIN_FILL, WIDE_BASE_MAX_FILL, WIDE_SK_MIN_LAST = 11, 12, 0.95, 0.9, 0.15
# And rung 13's 256 x 224 pairs, the widest tried first; over rung 9 whenever one fills, rung 9's fill aside: its
# 128-column tiles do less per k-block (3584^3 above). Measured (profiles/gemm-tile-192/tile_targets224.txt): 3328^3
# rung 13 0.97-0.99 against rung 9's 0.93, 8B gate/up at 256 tokens 1.03-1.08 against rung 6's 0.99, at 512 0.94-0.96
# against rung 9's 0.94, 70B gate/up at 256 0.93-0.95 against 0.92-0.93; where rung 9 fills too, level or ahead (8B
# QKV at 1024 tokens rung 11 1.02 against 1.01, 70B QKV at 1024 rung 12 1.01-1.02 against 1.00).
WIDEST_TILE = 13
WIDE_TILES = (WIDEST_TILE, WIDE_TILE, NARROW_WIDE_TILE)  # 224, 192, 160 columns: the first that fills is taken


def wave_fill(units: int, clusters: int) -> float:
    """The share of the cluster slots of ceil(units / clusters) waves that `units` work units fill."""
    return units / (-(-units // clusters) * clusters)


def pick_rung(m: int, n: int, k: int, dtype: str, clusters: int) -> int:
    """The rung the public default runs for an m x n x k GEMM on `clusters` resident clusters of BEST."""
    base = _fill_pick(m, n, k, dtype, clusters)
    if clusters < 1:
        return base
    units = RUNGS[base].units(m, n)
    last = units % clusters  # units in rung 10's last, stream-K-split wave (0: whole waves)
    if base == BEST and units > clusters and last < WIDE_SK_MIN_LAST * clusters:
        return base
    if base == SMALL_TILE or wave_fill(units, clusters) < WIDE_BASE_MAX_FILL:
        for r in WIDE_TILES:
            if wave_fill(RUNGS[r].units(m, n), clusters) >= WIDE_MIN_FILL:
                return r
    return base


# fp8 e4m3 takes the same per-shape choice (it ran rung 10 everywhere until measured so): on 35 e4m3 shapes (squares
# 1024-5120, every Llama-3 projection at 512-2048 tokens) the choice read level with rung 10 or ahead, 0.98-1.00 at
# worst, and far ahead where it moves: 3072^3 1.02 against 0.85, 8B QKV at 512 and 1024 tokens 1.01-1.04 against
# 0.79-0.83, 8B down at 512 0.98 against 0.55, 70B QKV at 512 1.02 against 0.80 (dev/gemm_tile_sweep.py --fp8,
# results/h100-sxm5-80gb/profiles/gemm-fp8-pick/).
def _fill_pick(m: int, n: int, k: int, dtype: str, clusters: int) -> int:
    """pick_rung among the 256- and 128-column tiles: rung 9, 6 or 10 (rung 10 where no cluster count is known)."""
    if clusters < 1:
        return BEST
    units = RUNGS[BEST].units(m, n)
    rem = units % clusters
    if units <= SMALL_TILE_MAX_WAVES * clusters and 0 < rem <= SMALL_TILE_MAX_FILL * clusters:
        return SMALL_TILE
    if RUNGS[BEST].dp_units(m, n, k, clusters, dtype) >= units:
        return DATA_PARALLEL
    return BEST


# Small M against a long K (a decode batch through a down projection): rung 10's tiles are mostly empty rows,
# the GEMM is bound by reading B, and a few clusters would stream all of it; spreading every unit's k-blocks
# over all clusters (dp = 0) reads B with every SM. Measured (dev/gemm_small_m.py,
# results/h100-sxm5-80gb/profiles/gemm-small-m/): ahead at 16 and 128 tokens on both Llama-3 down projections
# (K = 3.5 N; 0.50 -> 0.64, 0.66 -> 0.74, 0.63 -> 0.80, 0.76 -> 0.82 of cuBLAS), level or behind where K = N
# or at 512 tokens (a full tile of rows). fp8 e4m3 alike (dev/gemm_tile_sweep.py --fp8-small,
# results/h100-sxm5-80gb/profiles/gemm-fp8-pick/tile_fp8_small.txt): on both down projections at 16 and 128 tokens
# 47-48 us against 59-66 (8B) and 112-118 against 128-142 (70B) for the per-shape pick; behind it on every other
# projection there (K < 2 N).
SPLIT_ALL_MIN_K_OVER_N, SPLIT_ALL_MAX_FILL = 2, 0.5


def split_all(m: int, n: int, k: int, dtype: str, clusters: int) -> bool:
    """Whether the public default runs rung 10 with every unit split along K over all clusters (dp = 0)."""
    best = RUNGS[BEST]
    return m <= best.bm and k >= SPLIT_ALL_MIN_K_OVER_N * n and best.units(m, n) <= SPLIT_ALL_MAX_FILL * clusters


def public_rung(target: Target, dtype: str) -> int:
    """The rung the public default runs on `target` when none is named: AUTO (the per-shape choice of
    pick_rung) where the TMA rungs run; elsewhere rung 1, the one rung built without them.
    ValueError saying why where no rung of `dtype` runs on `target`."""
    best = BEST_FP8 if dtype == "e4m3" else BEST
    if RUNGS[best].needs.why_not(target) is None:
        return AUTO
    r1 = RUNGS[1]
    if dtype in r1.dtypes and r1.needs.why_not(target) is None:
        return 1
    if dtype not in r1.dtypes:
        built = ", ".join(str(r) for r in RUNGS if dtype in RUNGS[r].dtypes)
        raise ValueError(
            f"no {dtype} GEMM of ours runs on this GPU: {dtype} is built on rungs {built} only, and rung {best} "
            f"{RUNGS[best].needs.why_not(target)}"
        )
    raise ValueError(f"no GEMM of ours runs on this GPU: rung 1 (mma.sync) {r1.needs.why_not(target)}")


def check_rung_runs(rung: int, target: Target) -> None:
    """ValueError naming what `target` lacks when it cannot run the built rung `rung`."""
    why = RUNGS[rung].needs.why_not(target)
    if why:
        raise ValueError(f"rung {rung} ({RUNGS[rung].name}) cannot run on this GPU: it {why}")


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def check_dims(m: int, n: int, k: int, rung: int = AUTO, dtype: str = "bf16") -> None:
    """The shape rules of the kernels, with a message that says which one is broken (AUTO: those of the
    rungs it picks from, which share them)."""
    if rung == AUTO:
        rung = BEST_FP8 if dtype == "e4m3" else BEST
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; supported: {', '.join(DTYPES)}")
    if dtype == "e4m3":
        if rung not in RUNGS or rung < FP8_FROM:
            raise ValueError(
                f"fp8 e4m3 is built on rungs {', '.join(str(r) for r in RUNGS if r >= FP8_FROM)}, not rung {rung}"
            )
        if isinstance(k, int) and k % 16:
            raise ValueError(
                f"K = {k} is not a multiple of 16: fp8 rows must be 16-byte multiples (TMA strides); pad K"
            )
    for name, v in (("M", m), ("N", n), ("K", k)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    # M is free: TMA loads zero-fill past the last row of A and stores clip at C's (rungs 2+ check the row
    # on register stores). K and N set row lengths: TMA needs 16-byte row strides, the epilogue stores pairs.
    if k % 8:
        raise ValueError(f"K = {k} is not a multiple of 8: the rows of A and B must be 16-byte multiples (TMA); pad K")
    if n % 8:
        raise ValueError(f"N = {n} is not a multiple of 8: the rows of C must be 16-byte multiples (TMA); pad N")
    if rung == 1:
        r = RUNGS[1]
        for name, v, t in (("M", m, r.bm), ("N", n, r.bn), ("K", k, r.bk)):
            if v % t:
                raise ValueError(f"rung 1 (mma.sync) needs {name} a multiple of its tile {t}, got {v}")
    if rung not in RUNGS:
        raise ValueError(f"rung {rung} is not built; built rungs: {', '.join(map(str, RUNGS))}")


def describe_schedule(rung: Rung, m: int, n: int, k: int, clusters: int, dtype: str = "bf16") -> str:
    """One line on how `rung` spreads an m x n x k GEMM over `clusters` resident clusters (persistent
    rungs): units, waves, and what its stream-K rule splits."""
    if not rung.persistent:
        return "one CTA per tile (not persistent)"
    bm, bn = rung.bm * rung.cluster, rung.bn * rung.cluster_n
    units = rung.units(m, n)
    kb = -(-k // rung.bk_for(dtype))
    what = (
        f"{units} unit{'s' if units != 1 else ''} of {bm}x{bn} on {clusters} clusters "
        f"({units / clusters:.2f} waves), {kb} k-block{'s' if kb != 1 else ''} each"
    )
    dp = rung.dp_units(m, n, k, clusters, dtype)
    r = units - dp
    if r == 0:
        return what + ": all data-parallel"
    lead = f"{dp // clusters} wave{'s' if dp // clusters != 1 else ''} data-parallel, then "
    if 0 < r < clusters and 2 * r >= clusters:
        h = -(-r * kb // clusters)
        return (
            what + f": {lead}the last {r} units split: heads of {h} k-blocks on {r} clusters, "
            f"tails of {kb - h} on the {clusters - r} idle ones"
        )
    return what + f": {lead}the k-blocks of the last {r} units spread evenly over the {clusters} clusters (stream-K)"


Segment = tuple[int, int, int, int, tuple[int, ...]]  # (unit, k0, k1, slot written or -1, slots added)


def stream_k_schedule(units: int, clusters: int, kb: int, dp: int) -> list[list[Segment]]:
    """What each cluster of a stream-K rung does, in order, as kernels/gemm.cu decides it for `dp`
    data-parallel units (the same integer arithmetic: next_work and the fix-up): per cluster a list of
    (unit, k0, k1, slot, waits). A segment with k0 > 0 writes its fp32 partial sums to workspace slot
    `slot` (cluster-level index; -1: none); a segment with k0 == 0 and k1 < kb adds the slots in `waits`
    before storing C. Continuous split: slot = the writing cluster; head/tail split (a last wave more
    than half full): slot = 2 x (unit - dp) + tail part. For CPU tests."""
    dp = min(dp, units)
    r = units - dp
    ht = 0 < r < clusters and 2 * r >= clusters
    out: list[list[Segment]] = []
    if ht:
        h = -(-r * kb // clusters)
        tl, f = kb - h, clusters - r
        tt = r * tl
        holder = lambda i: ((i + 1) * f + tt - 1) // tt - 1
    else:
        ski = r * kb
        q = min(clusters, ski)
    for c in range(clusters):
        work: list[Segment] = [(u, 0, kb, -1, ()) for u in range(c, dp, clusters)]
        if ht:
            if c < r:
                u = dp + c
                waits: tuple[int, ...] = ()
                if tl > 0:
                    s0 = c * tl
                    waits = (2 * c,) + ((2 * c + 1,) if holder(s0 + tl - 1) != holder(s0) else ())
                work.append((u, 0, h, -1, waits))
            else:
                g, gend = (c - r) * tt // f, (c - r + 1) * tt // f
                while g < gend:
                    v = g // tl
                    k0 = h + g - v * tl
                    k1 = min(kb, k0 + gend - g)
                    g += k1 - k0
                    work.append((dp + v, k0, k1, 2 * v + (k0 != h), ()))
        elif c < q:
            g, gend = dp * kb + c * ski // q, dp * kb + (c + 1) * ski // q
            while g < gend:
                u = g // kb
                k0 = g - u * kb
                k1 = min(kb, k0 + gend - g)
                g += k1 - k0
                waits = ()
                if k0 == 0 and k1 < kb:
                    last_i = u * kb + kb - 1 - dp * kb
                    last = ((last_i + 1) * q + ski - 1) // ski - 1
                    waits = tuple(range(c + 1, last + 1))
                work.append((u, k0, k1, c if k0 > 0 else -1, waits))
        out.append(work)
    return out
