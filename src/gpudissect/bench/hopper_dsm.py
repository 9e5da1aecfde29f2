"""Distributed shared memory on Hopper (Luo et al. 000 §7, Table III row DSM, Figs. 9-12).

Three benchmarks over thread-block clusters (kernels in kernels/dsm.cu):

* dsm_latency: one thread chases a random single-cycle chain in its own shared memory (ld.shared),
  in its own shared memory through the cluster window (mapa of its own rank), and in the shared
  memory of every other rank of clusters of 2..16 blocks, with every block's %smid recorded; in the
  same run an L2-hit chase (.cg, small footprint) and SM-to-SM round trips through global memory and
  through DSM (ping-pong between two blocks of a cluster).
* dsm_throughput: every block reads a target block's 16 KiB through the cluster window (ring, pair,
  broadcast; "self" for the interface's cost without the network) for each scheduling policy x
  cluster size x block size x ILP, all SMs busy, event-timed; every block's sum of values read is
  checked, and where the blocks ran (%smid, %cluster_ctarank) is summarised.
* dsm_histogram: the bins of a cluster spread over its blocks' shared memories, every element
  counted by an atomic on its owner's shared memory through mapa; checked bin by bin against numpy.

Where ptxas lowers DSM access (pinned by the KernelSpec and the tests): mapa is a PRMT that writes the
rank into byte 3 of the shared-window address (no MAPA opcode), ld.shared::cluster a generic LD.E whose
upper half is SR_SWINHI, atom.shared::cluster a generic ATOM.E.ADD, barrier.cluster.arrive/wait
UCGABAR_ARV / UCGABAR_WAIT (arrive.release adds MEMBAR.ALL.GPU, wait.acquire CCTL.IVALL), %smid
SR_VIRTUALSMID and %cluster_ctarank SR_CgaCtaId.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..device.cuda import Arg, CudaError
from ..errors import GpuDissectError
from ..models import Point
from .chase import PCHASE, Chaser
from .context import BenchContext
from .registry import Facts, KernelSpec, Param, benchmark

SUITE = "hopper"
FILE = "dsm.cu"
MAX_CS = 16  # largest cluster the hardware schedules (non-portable above 8)
MAX_PORTABLE_CS = 8
CHASE_SLOTS = 2 + MAX_CS  # as in dsm.cu
BW_WORDS = 4096  # u32 words of shared memory each block serves in dsm_throughput (16 KiB, as the paper)
PATTERNS = {"ring": 0, "pair": 1, "broadcast": 2, "self": 3}
POLICIES = {"default": 0, "spread": 1, "load_balancing": 2}  # CUclusterSchedulingPolicy values
POLICY_ATTR = "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE"
ILPS = (1, 2, 4)
BLOCKS = (128, 256, 512, 1024)

_BAR = [r"UCGABAR_ARV", r"UCGABAR_WAIT"]
_MAPA = r"PRMT R\d+, R\d+, 0x654, R\d+"  # mapa: the target rank into byte 3 of the window address
_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
_READ = [r"LD\.E R\d+, desc\[UR\d+\]\[R\d+\.64\]", _MAPA, r"S2R R\d+, SR_SWINHI", r"SR_VIRTUALSMID", r"SR_CgaCtaId",
         r"REDG\.E\.ADD\.64", *_BAR]
DSM = KernelSpec(
    FILE,
    {
        # LDS chase, self-dependent generic LD.E.64 chase, the literal ld.shared::cluster.u32 (LD.E without a
        # descriptor, upper half from SR_SWINHI), the remote chain writes (generic ST.E.64)
        "dsm_chase": [r"LDS R(\d+), \[R\1\]", r"LD\.E\.64 R(\d+), desc\[UR\d+\]\[R\1\.64\]", r"LD\.E R\d+, \[R\d+\]",
                      r"S2R R\d+, SR_SWINHI", _MAPA, r"ST\.E\.64 desc", r"SR_VIRTUALSMID", r"SR_CgaCtaId", _CLOCK, *_BAR],
        # index chase: LDS whose address is computed from the previous load (LEA/IMAD/shift + add)
        "dsm_ichase": [r"LDS R\d+, \[R\d+\]", r"(LEA R\d+, R\d+, U?R\d+, 0x2|IMAD R\d+, R\d+, 0x4, U?R\d+)", _CLOCK, *_BAR],
        "pingpong_global": [r"STG\.E\.STRONG\.GPU", r"LDG\.E\.STRONG\.GPU", _CLOCK, *_BAR],
        "pingpong_dsm": [r"ST\.E\.STRONG\.GPU \[R\d+\]", r"LDS R\d+", _MAPA, _CLOCK, *_BAR],
        "dsm_read_ilp1": _READ, "dsm_read_ilp2": _READ, "dsm_read_ilp4": _READ,
        "dsm_hist": [r"ATOM\.E\.ADD\.STRONG\.GPU PT, RZ, \[R\d+\]", _MAPA, r"S2R R\d+, SR_SWINHI",
                     r"REDG\.E\.ADD\.STRONG\.GPU", *_BAR],
        "smem_hist": [r"ATOMS\.", r"REDG\.E\.ADD\.STRONG\.GPU"],
    },
    label="dsm.cu",
)


# ---------------------------------------------------------------------------------------
# Host-side rules: validation, targets, expected values, placement (CPU-tested)
# ---------------------------------------------------------------------------------------
def needs_non_portable(cs: int) -> bool:
    return cs > MAX_PORTABLE_CS


def validate_cluster(cs: int, grid_blocks: int | None = None, non_portable: bool | None = None) -> bool:
    """Checks a 1-D cluster launch; returns whether it needs the non-portable cluster size attribute."""
    if not 1 <= cs <= MAX_CS:
        raise GpuDissectError(f"cluster size {cs}: must be 1 .. {MAX_CS} (Hopper's largest cluster)")
    if grid_blocks is not None and (grid_blocks <= 0 or grid_blocks % cs):
        raise GpuDissectError(f"grid of {grid_blocks} blocks is not a multiple of the cluster size {cs}")
    if non_portable is False and needs_non_portable(cs):
        raise GpuDissectError(f"cluster size {cs} exceeds the portable maximum of {MAX_PORTABLE_CS}: it needs "
                              "the non-portable cluster size attribute (non_portable_cluster=True)")
    return needs_non_portable(cs)


def pattern_targets(pattern: str, cs: int) -> np.ndarray:
    """Rank whose shared memory each rank reads (dsm.cu target_rank)."""
    if pattern not in PATTERNS:
        raise GpuDissectError(f"unknown access pattern {pattern!r}; valid: {', '.join(PATTERNS)}")
    validate_cluster(cs)
    r = np.arange(cs)
    if pattern == "ring":
        return (r + 1) % cs
    if pattern == "pair":
        if cs % 2:
            raise GpuDissectError(f"the pair pattern (rank r reads rank r ^ 1) needs an even cluster size, not {cs}")
        return r ^ 1
    if pattern == "broadcast":
        return np.zeros(cs, np.int64)
    return r


def word_read_counts(loads_per_thread: int, block: int, words: int = BW_WORDS) -> np.ndarray:
    """How often a block reads each word: thread t's j-th load reads (j * block + t) % words, so the
    loads of a block cover 0 .. loads_per_thread * block - 1 once, folded onto the words."""
    q, rem = divmod(loads_per_thread * block, words)
    return q + (np.arange(words) < rem).astype(np.int64)


def expected_block_sums(pattern: str, cs: int, nblocks: int, loads_per_thread: int, block: int) -> np.ndarray:
    """Sum of the values each block reads from its target (clusters are consecutive blocks); block
    (cluster c, rank r) holds (c * 7 + r * 13 + i) & 255 in word i (dsm.cu dsm_read)."""
    validate_cluster(cs, nblocks)
    counts = word_read_counts(loads_per_thread, block)
    # the values depend on (cluster * 7 + target * 13) & 255 only: one sum per residue
    per_base = np.array([int(counts @ ((b + np.arange(BW_WORDS)) & 255)) for b in range(256)], np.int64)
    b = np.arange(nblocks)
    target = pattern_targets(pattern, cs)[b % cs]
    return per_base[((b // cs) * 7 + target * 13) & 255].astype(np.uint64)


def bins_per_block(nbins: int, cs: int) -> int:
    return nbins // cs


def hist_config_error(cs: int, block: int, nbins: int, smem_per_block: int | None,
                      max_threads: int = 1024) -> str | None:
    """Why a (cluster size, block size, bins) histogram cannot run, or None."""
    if cs < 1 or cs > MAX_CS or cs & (cs - 1):
        return f"cluster size {cs} must be a power of two from 1 to {MAX_CS} (the bins are split evenly)"
    if nbins < 1 or nbins & (nbins - 1):
        return f"{nbins} bins: must be a power of two (a bin is value & (bins - 1))"
    if nbins < cs:
        return f"{nbins} bins cannot be split over {cs} blocks"
    if block % 32 or not 32 <= block <= max_threads:
        return f"block size {block} must be a multiple of 32 from 32 to {max_threads}"
    need = bins_per_block(nbins, cs) * 4
    if smem_per_block is not None and need > smem_per_block:
        fit = _largest_pow2(smem_per_block // 4)
        return (f"{nbins} bins over {cs} block(s) need {need} bytes of shared memory per block, above the "
                f"{smem_per_block} available; at most {fit * cs} bins fit at this cluster size")
    return None


def _largest_pow2(v: int) -> int:
    return 1 << (int(v).bit_length() - 1) if v > 0 else 0


def owner_of(values: np.ndarray, nbins: int, cs: int) -> tuple[np.ndarray, np.ndarray]:
    """(owner rank, offset in the owner's bins) of each value, as dsm_hist routes it."""
    bpb = bins_per_block(nbins, cs)
    b = np.asarray(values, np.uint64) & np.uint64(nbins - 1)
    return (b // np.uint64(bpb)).astype(np.int64), (b % np.uint64(bpb)).astype(np.int64)


def fold_histogram(hist: np.ndarray, nbins: int) -> np.ndarray:
    """The histogram of value & (nbins - 1) from that of value & (len(hist) - 1), both powers of two."""
    if len(hist) % nbins:
        raise ValueError("nbins must divide the histogram length")
    return hist.reshape(-1, nbins).sum(axis=0)


def chain_cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    """next[i] for a single random cycle through all n elements."""
    perm = rng.permutation(n)
    nxt = np.empty(n, np.uint32)
    nxt[perm] = np.roll(perm, -1)
    return nxt


def walk(nxt: np.ndarray, steps: int, start: int = 0) -> int:
    i = start
    for _ in range(steps % len(nxt)):  # the chain is one cycle of len(nxt) elements
        i = int(nxt[i])
    return i


def slot_elem_bytes(slot: int) -> int:
    """Slot 0 (LDS) and 2 (ld.shared::cluster.u32) chase u32 addresses, the others u64 generic ones."""
    return 4 if slot in (0, 2) else 8


def chase_slots(cs: int) -> list[int]:
    return [0, 1, 2] + [2 + t for t in range(1, cs)]


@dataclass
class Placement:
    """Where the blocks of a cluster launch ran."""

    cs: int
    sms_used: int
    distinct_min: int  # distinct SMs per cluster
    distinct_median: float
    distinct_max: int
    colocated: float  # share of clusters with at least two blocks on one SM
    groups: list[list[int]] = field(default_factory=list)  # SMs linked by sharing a cluster (GPC-like)
    rank_ok: bool = True  # %cluster_ctarank == block index % cluster size everywhere

    def text(self) -> str:
        sizes = sorted((len(g) for g in self.groups), reverse=True)
        return (f"{self.sms_used} SMs used; {self.distinct_median:g} distinct SMs per cluster of {self.cs} "
                f"(min {self.distinct_min}, max {self.distinct_max}); {100 * self.colocated:.0f}% of clusters share an SM; "
                f"{len(self.groups)} SM group(s) linked by clusters, sizes {sizes}")


def _merge_groups(groupings: list[list[list[int]]]) -> list[list[int]]:
    """Union of overlapping groups (union-find): the connected sets, largest first, each sorted."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for groups in groupings:
        for g in groups:
            for s in g[1:]:
                parent[find(s)] = find(g[0])
            find(g[0])
    out: dict[int, list[int]] = {}
    for s in sorted(parent):
        out.setdefault(find(s), []).append(s)
    return sorted(out.values(), key=lambda g: (-len(g), g[0]))


def placement_summary(smid: np.ndarray, rank: np.ndarray, cs: int) -> Placement:
    """Distinct SMs per cluster, co-located blocks, and the groups of SMs that clusters link
    (a cluster never spans two GPCs, so with enough clusters the groups are the GPCs)."""
    smid, rank = np.asarray(smid, np.int64), np.asarray(rank, np.int64)
    validate_cluster(cs, len(smid))
    per = smid.reshape(-1, cs)
    distinct = np.array([len(set(row.tolist())) for row in per])
    return Placement(cs, len(set(smid.tolist())), int(distinct.min()), float(np.median(distinct)), int(distinct.max()),
                     float(np.mean(distinct < cs)), _merge_groups([per.tolist()]),
                     bool(np.array_equal(rank, np.arange(len(rank)) % cs)))


# ---------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------
def _ints(text: str) -> tuple[int, ...]:
    out = tuple(int(x) for x in text.split(",") if x.strip())
    if not out:
        raise ValueError("empty list")
    return out


def _names(text: str) -> tuple[str, ...]:
    out = tuple(x.strip() for x in text.split(",") if x.strip())
    if not out:
        raise ValueError("empty list")
    return out


def _pow2_sizes(lo: int) -> Callable[[tuple[int, ...], Facts], str | None]:
    def check(v: tuple[int, ...], facts: Facts) -> str | None:
        bad = [c for c in v if c < lo or c > MAX_CS or c & (c - 1)]
        return f"cluster sizes {bad}: each must be a power of two from {lo} to {MAX_CS}" if bad else None
    return check


def _latency_sizes(v: tuple[int, ...], facts: Facts) -> str | None:
    bad = [c for c in v if not 2 <= c <= MAX_CS]
    return f"cluster sizes {bad}: each must be 2 .. {MAX_CS} (rank 0 reads ranks 1 .. size - 1)" if bad else None


def _blocks(v: tuple[int, ...], facts: Facts) -> str | None:
    top = int(facts.get("max_threads_per_block") or 1024)
    bad = [b for b in v if b % 32 or not 32 <= b <= top]
    return f"block sizes {bad}: each must be a multiple of 32 from 32 to {top}" if bad else None


def _ilps(v: tuple[int, ...], facts: Facts) -> str | None:
    bad = [i for i in v if i not in ILPS]
    return f"ILP {bad}: compiled variants are {', '.join(map(str, ILPS))}" if bad else None


def _patterns(v: tuple[str, ...], facts: Facts) -> str | None:
    bad = [p for p in v if p not in PATTERNS]
    return f"unknown pattern(s) {', '.join(bad)}; valid: {', '.join(PATTERNS)}" if bad else None


def _policies(v: tuple[str, ...], facts: Facts) -> str | None:
    bad = [p for p in v if p not in POLICIES]
    return f"unknown scheduling policy(ies) {', '.join(bad)}; valid: {', '.join(POLICIES)}" if bad else None


def _bins(v: tuple[int, ...], facts: Facts) -> str | None:
    bad = [b for b in v if b < 2 or b & (b - 1) or b > 1 << 20]
    return f"bins {bad}: each must be a power of two from 2 to 2^20" if bad else None


def _elements(v: int, facts: Facts) -> str | None:
    if not 1 << 10 <= v <= 1 << 28:
        return "must be 1024 .. 2^28 (counts of 6 launches must fit the u32 bins)"
    free = facts.get("free_mem")
    if free and 4 * v > 0.5 * free:
        return f"{4 * v} bytes of input exceed half the free device memory"
    return None


def _chain_elements(v: int, facts: Facts) -> str | None:
    top = int(facts.get("smem_per_block_optin") or 48 * 1024) // 8
    return None if 2 <= v <= top else f"must be 2 .. {top} (8 bytes each in one block's shared memory)"


# ---------------------------------------------------------------------------------------
# Launch helpers
# ---------------------------------------------------------------------------------------
def _launch(fn: Any, grid: int, block: int, args: list[Arg], smem: int, cs: int, policy: str | None = None) -> None:
    nonp = validate_cluster(cs, grid)
    attrs = {POLICY_ATTR: POLICIES[policy]} if policy is not None else None
    fn(grid, block, args, smem=smem, cluster=(cs, 1, 1), non_portable_cluster=nonp, attributes=attrs)


def _cluster_query(fn: Any, cs: int, block: int, smem: int, what: str) -> int | None:
    """cuOccupancyMaxActiveClusters ("active") or cuOccupancyMaxPotentialClusterSize ("potential")
    for this launch shape; None where the driver cannot say (or there is no driver)."""
    try:
        from cuda.bindings import driver as drv

        if needs_non_portable(cs) or what == "potential":
            fn.set_attribute("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
        if smem > 48 * 1024:
            fn.allow_dynamic_smem(smem)
        cfg = drv.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = cs, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block, 1, 1
        cfg.sharedMemBytes = smem
        cfg.hStream = 0
        attrs = []
        if what == "active":
            at = drv.CUlaunchAttribute()
            at.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            at.value.clusterDim.x, at.value.clusterDim.y, at.value.clusterDim.z = cs, 1, 1
            attrs.append(at)
        cfg.attrs = attrs
        cfg.numAttrs = len(attrs)
        query = drv.cuOccupancyMaxActiveClusters if what == "active" else drv.cuOccupancyMaxPotentialClusterSize
        err, value = query(fn.handle, cfg)
        return int(value) if err == drv.CUresult.CUDA_SUCCESS else None
    except Exception:  # noqa: BLE001 - a missing query only costs the better grid size / message
        return None


def resident_clusters(ctx: BenchContext, fn: Any, cs: int, block: int, smem: int) -> int:
    """Clusters of this shape that fit the GPU at once: the driver's answer, else blocks per SM x SMs / cs."""
    n = _cluster_query(fn, cs, block, smem, "active")
    if n:
        return n
    return max(blocks_per_sm(ctx, fn, block, smem) * ctx.props["sm_count"] // cs, 1)


def blocks_per_sm(ctx: BenchContext, fn: Any, block: int, smem: int) -> int:
    if smem > 48 * 1024:  # the occupancy calculator honours the function's dynamic shared memory limit
        fn.allow_dynamic_smem(smem)
    return max(ctx.device.occupancy(fn, block, smem), 1)


def _cluster_failure(fn: Any, cs: int, block: int, smem: int, err: Exception) -> str:
    limit = _cluster_query(fn, cs, block, smem, "potential")
    said = f"; the driver's largest cluster for this kernel is {limit}" if limit else ""
    extra = " (sizes above 8 need the non-portable attribute, which was set)" if needs_non_portable(cs) else ""
    return f"cluster size {cs} could not be launched{extra}{said}: {err}"


def _stats(vals: list[float]) -> tuple[float, tuple[float, float]]:
    return float(np.median(vals)), (float(min(vals)), float(max(vals)))


# ---------------------------------------------------------------------------------------
# 1. Latency
# ---------------------------------------------------------------------------------------
@benchmark(
    suite=SUITE, name="dsm_latency", title="Distributed shared memory latency: local, cluster window, remote SMs",
    axes={"access": "ld.shared, own rank via cluster window (generic and ld.shared::cluster.u32), remote rank 1..n-1",
          "cluster_size": "1 (local only), 2, 4, 8, 16 (non-portable)",
          "reference": "L2 hit (.cg chase), SM-to-SM round trip through global memory and through DSM"},
    kernels=[DSM, PCHASE["cg"]],
    params={
        "cluster_sizes": Param((2, 4, 8, 16), "comma-separated cluster sizes for remote chases", _ints, _latency_sizes),
        "elements": Param(1024, "chain elements (8 bytes each in shared memory)", int, _chain_elements),
        "steps": Param(None, "timed loads per chase (default 8192 quick, 32768 full)", int,
                       lambda v, f: None if 64 <= v <= 1 << 22 else "64 .. 4M"),
    },
    timeout_s=300, min_cc=(9, 0), paper="000 §7.1, Table III",
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
    dchain, res, place = dev.upload(nxt), dev.alloc(CHASE_SLOTS * 3 * 8), dev.alloc(MAX_CS * 2 * 4)
    local: dict[int, list[float]] = {0: [], 1: [], 2: []}
    remote: dict[int, dict[int, list[float]]] = {}
    sms: dict[int, list[list[int]]] = {}
    failed: dict[int, str] = {}
    try:
        for i, cs in enumerate([1] + sizes):
            for _ in range(reps):
                dev.memset32(res, 0xFFFFFFFF)
                try:
                    _launch(fn, cs, 1, [Arg.ptr(dchain), Arg.u32(n), Arg.u32(n), Arg.u32(steps), Arg.ptr(res), Arg.ptr(place)],
                            n * 8, cs)
                    dev.sync("dsm_chase")
                except CudaError as e:
                    failed[cs] = _cluster_failure(fn, cs, 1, n * 8, e)
                    break
                r = dev.download(res, np.uint64, CHASE_SLOTS * 3).reshape(-1, 3).astype(object)
                pl = dev.download(place, np.uint32, 2 * cs).reshape(cs, 2)
                ctx.check(np.array_equal(pl[:, 1], np.arange(cs)), f"cluster of {cs}: %cluster_ctarank per block {pl[:, 1].tolist()}")
                sms.setdefault(cs, []).append(pl[:, 0].tolist())
                for s in chase_slots(cs):
                    cycles, end, first = (int(v) for v in r[s])
                    eb = slot_elem_bytes(s)
                    off = end - first
                    ctx.check(off % eb == 0 and off // eb == want,
                              f"cluster of {cs}, slot {s}: chase ended {off} bytes from element 0, expected element {want} ({want * eb} bytes)")
                    if s <= 2:
                        local[s].append(cycles / steps)
                    else:
                        remote.setdefault(cs, {}).setdefault(s - 2, []).append(cycles / steps)
            ctx.progress(i + 1, len(sizes) + 3, f"cluster size {cs}")
    finally:
        dev.free(dchain), dev.free(res), dev.free(place)

    _index_chase(ctx, nxt, n, steps, reps, want, local[0])
    l2 = _l2_hit(ctx, steps, reps)
    ctx.progress(len(sizes) + 2, len(sizes) + 3, "round trips")
    trips = {kind: _pingpong(ctx, kind, reps) for kind in ("global", "dsm")}
    _latency_report(ctx, local, remote, sms, failed, sizes, l2, trips, steps, reps)


def _index_chase(ctx: BenchContext, nxt: np.ndarray, n: int, steps: int, reps: int, want: int,
                 pointer: list[float]) -> None:
    """The local chase in the papers' index form (j = s[j]) in a cluster of 2, beside the pointer form."""
    dev = ctx.device
    fn = ctx.kernel(DSM, "dsm_ichase")
    dchain, res = dev.upload(nxt), dev.alloc(2 * 8)
    vals = []
    try:
        for _ in range(reps):
            dev.memset32(res, 0xFFFFFFFF)
            _launch(fn, 2, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u32(n), Arg.u32(steps), Arg.ptr(res)], n * 8, 2)
            dev.sync("dsm_ichase")
            cycles, end = (int(v) for v in dev.download(res, np.uint64, 2))
            ctx.check(end == want, f"index chase ended at element {end}, expected {want}")
            vals.append(cycles / steps)
    finally:
        dev.free(dchain), dev.free(res)
    med, spread = _stats(vals)
    ptr = f" (pointer form, slot 0: {float(np.median(pointer)):.1f} cycles)" if pointer else ""
    ctx.figure("dsm.latency.local_direct_index_chase_cycles", med, "cycles", "measured",
               f"ld.shared.u32 index chase j = s[j] (shift + add before every load, the papers' form) over the same "
               f"chain in a cluster of 2, {steps} timed loads after a warm pass, median of {reps} launches{ptr}", spread)


def _l2_hit(ctx: BenchContext, steps: int, reps: int) -> tuple[float, tuple[float, float], int] | None:
    """.cg chase over a footprint far inside the L2 (1 MiB or L2/4): mean latency of an L2 hit,
    averaged over the near and far partitions the lines fall in."""
    fp, stride = min(1 << 20, ctx.props["l2_bytes"] // 4), 128
    ch = Chaser(ctx, "cg", fp + stride, seed=5)
    try:
        m = ch.build_random(fp, stride)
        vals = [ch.run(m, steps)[0] for _ in range(reps)]  # a full warm pass first: every line in L2
    finally:
        ch.close()
    med, spread = _stats(vals)
    return med, spread, fp


def _pingpong(ctx: BenchContext, kind: str, reps: int) -> tuple[list[float], list[int], str | None]:
    """Round-trip cycles of `rounds` messages between ranks 0 and 1 of a cluster of 2."""
    dev = ctx.device
    fn = ctx.kernel(DSM, f"pingpong_{kind}")
    rounds = 2000 if ctx.quick else 10000
    flag, res = dev.alloc(128), dev.alloc(8 * 8)
    out, where, err = [], [], None
    try:
        for _ in range(reps):
            dev.memset32(flag, 0)
            dev.memset32(res, 0)
            _launch(fn, 2, 32, [Arg.ptr(flag), Arg.u32(rounds), Arg.u32(1 << 22), Arg.ptr(res)], 0, 2)
            dev.sync(f"pingpong_{kind}")
            cycles, last, timeouts, sm0, sm1 = (int(v) for v in dev.download(res, np.uint64, 5))
            if timeouts or last != 2 * rounds:
                err = (f"{kind} ping-pong: {timeouts} wait(s) timed out, last message {last} instead of {2 * rounds}"
                       " (a message was lost or never became visible)")
                break
            out.append(cycles / rounds)
            where = [sm0, sm1]
    finally:
        dev.free(flag), dev.free(res)
    return out, where, err


def _latency_report(ctx: BenchContext, local: dict[int, list[float]], remote: dict[int, dict[int, list[float]]],
                    sms: dict[int, list[list[int]]], failed: dict[int, str], sizes: list[int],
                    l2: tuple[float, tuple[float, float], int] | None, trips: dict[str, tuple[list[float], list[int], str | None]],
                    steps: int, reps: int) -> None:
    base = f"{steps} dependent loads by one thread after a full warm pass, median of {reps} launches per cluster size"
    names = {0: ("local_direct", "ld.shared.u32 chase on shared::cta addresses (LDS)"),
             1: ("local_via_cluster", "own shared memory through the cluster window: mapa of the own rank, generic "
                 "64-bit ld (LD.E.64, what ld.shared::cluster becomes)"),
             2: ("local_via_cluster_u32", "literal mapa.shared::cluster + ld.shared::cluster.u32; ptxas pairs each address "
                 "with SR_SWINHI through a register move inside the dependency chain")}
    for s, (key, how) in names.items():
        if local[s]:
            med, spread = _stats(local[s])
            ctx.figure(f"dsm.latency.{key}_cycles", med, "cycles", "measured", f"{how}; {base}", spread)
    pts = [Point(s, float(np.median(local[s])), min(local[s]), max(local[s]), len(local[s]), {"access": names[s][0]})
           for s in (0, 1, 2) if local[s]]
    ctx.series("local", "access", "", "latency", "cycles", pts, plot="bar", figure="dsm_latency")

    if local[0] and local[1]:
        ctx.figure("dsm.latency.cluster_interface_overhead_cycles", float(np.median(local[1]) - np.median(local[0])),
                   "cycles", "derived", "local via the cluster window minus ld.shared on the same memory")
    remote_cs2 = None
    for cs in sizes:
        if cs in failed:
            ctx.soft_check(False, failed[cs])
            for suffix in ("", "_max", "_min"):
                ctx.figure(f"dsm.latency.remote_cs{cs}{suffix}_cycles", 0.0, "cycles", "measured", "remote chase",
                           check="failed", note=failed[cs])
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
            note += f"; target rank(s) {same} shared rank 0's SM in some run" + ("" if use is not per_t else " (all kept)")
        how = f"rank 0 chases in rank t's shared memory (mapa + generic LD.E.64), t = 1..{cs - 1}; {base}"
        ctx.figure(f"dsm.latency.remote_cs{cs}_cycles", float(np.median(vals)), "cycles", "measured",
                   f"median over target ranks; {how}", (min(vals), max(vals)), note=note)
        ctx.figure(f"dsm.latency.remote_cs{cs}_max_cycles", max(vals), "cycles", "measured", f"slowest target rank; {how}",
                   note=note)
        ctx.figure(f"dsm.latency.remote_cs{cs}_min_cycles", min(vals), "cycles", "measured", f"fastest target rank; {how}",
                   note=note)
        if cs == 2:
            remote_cs2 = vals[0]
        ctx.series(f"cs{cs}", "target rank", "", "latency", "cycles",
                   [Point(t, v, min(remote[cs][t]), max(remote[cs][t]), len(remote[cs][t]),
                          {"target_sm": [run[t] for run in runs], "reader_sm": [run[0] for run in runs]})
                    for t, v in per_t.items()], plot="line", figure="dsm_remote_latency", cluster_size=cs, sms=runs)

    if l2 is not None:
        med, spread, fp = l2
        ctx.figure("dsm.latency.l2_hit_cycles", med, "cycles", "measured",
                   f"ld.global.cg chase over {fp >> 10} KiB (inside L2) after a full warm pass, {steps} loads, "
                   f"median of {reps} launches", spread)
        if remote_cs2 is not None:
            ctx.figure("dsm.latency.remote_cs2_vs_l2_reduction_pct", round(100 * (1 - remote_cs2 / med), 2), "%", "derived",
                       "1 - remote (cluster of 2) / L2 hit latency")
    for kind, (vals, where, err) in trips.items():
        if err:
            ctx.soft_check(False, err)
        ok = "ok" if not err and vals else "failed"
        how = ("st.relaxed.gpu / ld.relaxed.gpu on one global flag (through L2)" if kind == "global"
               else "st.shared::cluster into the peer's mailbox, spin on one's own (ld.shared)")
        rt = float(np.median(vals)) if vals else 0.0
        spread = (min(vals), max(vals)) if vals else None
        note = f"SMs {where}" if where else (err or "")
        ctx.figure(f"dsm.latency.{kind}_roundtrip_cycles", rt, "cycles", "measured",
                   f"ping-pong between ranks 0 and 1 of a cluster of 2, {how}; cycles per round trip on rank 0, "
                   f"median of {len(vals)} launches", spread, check=ok, note=note)
        ctx.figure(f"dsm.latency.{kind}_sm_to_sm_cycles", rt / 2, "cycles", "derived",
                   "half a round trip: one SM's store until another SM's load sees it", check=ok, note=note)
    g = trips["global"]
    if remote_cs2 is not None and g[0] and not g[2]:
        ctx.figure("dsm.latency.global_over_dsm_ratio", round(float(np.median(g[0])) / 2 / remote_cs2, 3), "x", "derived",
                   "SM-to-SM through global memory (half a ping-pong round trip) over a remote DSM load (cluster of 2)")


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


def bw_plan(quick: bool, patterns: tuple[str, ...] | None = None, policies: tuple[str, ...] | None = None,
            sizes: tuple[int, ...] | None = None, blocks: tuple[int, ...] | None = None,
            ilps: tuple[int, ...] | None = None) -> list[BwConfig]:
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
        out += [BwConfig(pat, pol, cs, b, i) for pat in pats if pat != "self" for pol in pols for cs in css
                for b in bls for i in ils]
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


@benchmark(
    suite=SUITE, name="dsm_throughput", title="SM-to-SM throughput: access patterns x scheduling policies x sizes",
    axes={"pattern": "ring, pair, broadcast (+ self: own rank through the cluster window)",
          "policy": "default, spread, load_balancing (CLUSTER_SCHEDULING_POLICY_PREFERENCE)",
          "cluster_size": "2, 4, 8, 16", "block": "128 .. 1024", "ilp": "1, 2, 4"},
    kernels=[DSM],
    params={
        "patterns": Param(None, "comma-separated patterns (default ring,pair,broadcast + self)", _names, _patterns),
        "policies": Param(None, f"comma-separated policies (default {','.join(POLICIES)})", _names, _policies),
        "cluster_sizes": Param(None, "comma-separated cluster sizes (default 2,4,8,16)", _ints, _pow2_sizes(2)),
        "block_sizes": Param(None, "comma-separated block sizes (default 128,256,512,1024)", _ints, _blocks),
        "ilps": Param(None, "comma-separated ILP values (default 1,2,4)", _ints, _ilps),
        "gbytes": Param(None, "GB read per launch (default 2 quick, 4 full)", float,
                        lambda v, f: None if 0.001 <= v <= 64 else "0.001 .. 64"),
    },
    timeout_s=300, min_cc=(9, 0), paper="000 §7.2, Figs. 9-11",
)
def dsm_throughput(ctx: BenchContext) -> None:
    p = ctx.params
    plan = bw_plan(ctx.quick, p["patterns"], p["policies"], p["cluster_sizes"], p["block_sizes"], p["ilps"])
    target = (p["gbytes"] or (2.0 if ctx.quick else 4.0)) * 1e9
    reps = 3 if ctx.quick else 5
    results = []
    for i, cfg in enumerate(plan):
        results.append(_bw_run(ctx, cfg, target, reps))
        ctx.progress(i + 1, len(plan), f"{cfg.pattern} {cfg.policy} cs{cfg.cs} b{cfg.block} ilp{cfg.ilp}")
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
    sums, place = dev.alloc(nblocks * 8), dev.alloc(nblocks * 8)
    nbytes = nblocks * cfg.block * j * 4
    args = [Arg.u32(PATTERNS[cfg.pattern]), Arg.u32(iters), Arg.ptr(sums), Arg.ptr(place)]
    tbps, ok, err, pl = [], True, "", None
    try:
        for r in range(reps + 1):  # the first launch warms up and is not timed
            dev.memset32(sums, 0)
            try:
                ms = dev.time_ms(lambda: _launch(fn, nblocks, cfg.block, args, smem, cfg.cs, cfg.policy))[0]
            except CudaError as e:
                err = _cluster_failure(fn, cfg.cs, cfg.block, smem, e)
                ok = ctx.soft_check(False, f"{cfg}: {err}")
                break
            got = dev.download(sums, np.uint64, nblocks)
            if not np.array_equal(got, want):
                bad = np.flatnonzero(got != want)
                err = (f"{len(bad)} of {nblocks} block sums differ from the data their target holds "
                       f"(block {bad[0]}: got {int(got[bad[0]])}, want {int(want[bad[0]])})")
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
    finally:
        dev.free(sums), dev.free(place)
    return BwResult(cfg, tbps, ok and bool(tbps), pl, nblocks, j, err)


def _bw_report(ctx: BenchContext, results: list[BwResult], reps: int) -> None:
    method = (f"event-timed launches of 4 waves of clusters, every block reading 4-byte words of its target's 16 KiB "
              f"through the cluster window (generic LD.E on the mapa pointer); bytes read by all blocks (a broadcast's "
              f"rank 0 reading itself included) / time; median of {reps} launches")
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
        note = (f"best of {len(good)} runs: policy {best.cfg.policy}, block {best.cfg.block}, ILP {best.cfg.ilp}, "
                f"{best.blocks} blocks; placement: {best.placement.text() if best.placement else '?'}")
        ctx.figure(key, med, "TB/s", "measured", method, (min(best.tbps), max(best.tbps)), note=note)
        if pat == "self":
            ctx.figure("dsm.bw.self_via_cluster_gbps_per_sm", med * 1e3 / ctx.props["sm_count"], "GB/s", "derived",
                       "self pattern (each block reads its own shared memory through the cluster window) / SM count")

    # Fig. 10: pattern x policy over cluster size (peak over block x ILP where several ran)
    for pat in sorted({r.cfg.pattern for r in results} - {"self"}):
        for pol in POLICIES:
            pts = []
            for cs in sorted({r.cfg.cs for r in results}):
                rs = [r for r in results if r.cfg.pattern == pat and r.cfg.policy == pol and r.cfg.cs == cs and r.ok]
                if rs:
                    b = max(rs, key=lambda r: float(np.median(r.tbps)))
                    pts.append(Point(cs, float(np.median(b.tbps)), min(b.tbps), max(b.tbps), len(b.tbps),
                                     {"block": b.cfg.block, "ilp": b.cfg.ilp}))
            if pts:
                ctx.series(f"{pat}/{pol}", "cluster size", "", "throughput", "TB/s", pts, plot="line",
                           figure="dsm_bw_patterns", pattern=pat, policy=pol)
    # Fig. 11: ring, default policy: block size x ILP per cluster size
    for cs in sorted({r.cfg.cs for r in results}):
        for ilp in ILPS:
            rs = sorted((r for r in results if r.cfg.pattern == "ring" and r.cfg.policy == "default" and r.cfg.cs == cs
                         and r.cfg.ilp == ilp and r.ok), key=lambda r: r.cfg.block)
            if len(rs) > 1:
                ctx.series(f"ring cs{cs} ILP{ilp}", "block size", "threads", "throughput", "TB/s",
                           [Point(r.cfg.block, float(np.median(r.tbps)), min(r.tbps), max(r.tbps), len(r.tbps))
                            for r in rs], plot="line", figure="dsm_bw_ring_block_ilp", cluster_size=cs, ilp=ilp)
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
                pts.append(Point(cs, float(np.median([q.distinct_median for q in pls])),
                                 float(min(q.distinct_min for q in pls)), float(max(q.distinct_max for q in pls)), len(pls),
                                 {"colocated_share": float(np.mean([q.colocated for q in pls])),
                                  "sms_used": max(q.sms_used for q in pls)}))
        if pts:
            ctx.series(pol, "cluster size", "", "distinct SMs per cluster", "SMs", pts, plot="line",
                       figure="dsm_placement", policy=pol)
        shares = [r.placement.colocated for r in placed if r.cfg.policy == pol]
        if shares:
            ctx.figure(f"dsm.placement.{pol}_colocated_share", round(float(np.mean(shares)), 4), "fraction", "measured",
                       "share of clusters with two or more blocks on one SM (%smid of every block), mean over runs")
    # SMs that ever shared a cluster, over all runs: a cluster stays inside one GPC, so these are GPCs
    smid_groups = _merge_groups([r.placement.groups for r in placed])
    sizes = sorted((len(g) for g in smid_groups), reverse=True)
    ctx.figure("dsm.placement.sm_groups", len(smid_groups), "groups", "derived",
               "connected components of SMs linked by hosting blocks of one cluster, over every throughput run "
               "(a cluster never leaves its GPC: an estimate of the GPCs in use)", note=f"group sizes {sizes}")


# ---------------------------------------------------------------------------------------
# 3. Histogram
# ---------------------------------------------------------------------------------------
def hist_plan(quick: bool, sizes: tuple[int, ...] | None, blocks: tuple[int, ...] | None,
              bins: tuple[int, ...] | None) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    css = sizes or (1, 2, 4, 8, 16)
    bls = blocks or ((128, 512) if quick else BLOCKS)
    nbs = bins or ((1024, 2048, 8192, 65536) if quick else tuple(1 << k for k in range(10, 17)))
    return tuple(sorted(css)), tuple(sorted(bls)), tuple(sorted(nbs))


@benchmark(
    suite=SUITE, name="dsm_histogram", title="Histogram with the bins spread over a cluster's shared memories",
    axes={"cluster_size": "1, 2, 4, 8, 16", "block": "128, 512 (full: 128 .. 1024)",
          "bins": "1024, 2048, 8192, 65536 (full: 1024 .. 65536)"},
    kernels=[DSM],
    params={
        "elements": Param(None, "input elements (default 2^25 quick, 2^27 full)", int, _elements),
        "cluster_sizes": Param(None, "comma-separated cluster sizes (default 1,2,4,8,16)", _ints, _pow2_sizes(1)),
        "block_sizes": Param(None, "comma-separated block sizes (default 128,512 quick; 128..1024 full)", _ints, _blocks),
        "bins": Param(None, "comma-separated bin counts per cluster (default 1024,2048,8192,65536 quick; "
                      "1024..65536 full)", _ints, _bins),
    },
    timeout_s=300, min_cc=(9, 0), paper="000 §7.3, Fig. 12",
)
def dsm_histogram(ctx: BenchContext) -> None:
    dev, p = ctx.device, ctx.params
    css, bls, nbs = hist_plan(ctx.quick, p["cluster_sizes"], p["block_sizes"], p["bins"])
    n = p["elements"] or (1 << 25 if ctx.quick else 1 << 27)
    reps = 3 if ctx.quick else 5
    smem_cap = int(ctx.props["smem_per_block_optin"])
    rng = np.random.default_rng(12)
    data = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    top = max(nbs)
    ref_top = np.bincount(data & np.uint32(top - 1), minlength=top).astype(np.int64)
    ddata, hist = dev.upload(data), dev.alloc(top * 4)
    rates: dict[tuple[int, int, int], list[float]] = {}  # (cs, block, bins) -> elements/s
    local: dict[tuple[int, int], list[float]] = {}
    skipped: list[str] = []
    fails: list[str] = []
    total = len(nbs) * (len(css) + 1) * len(bls)
    step = 0
    try:
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
                    if isinstance(r, str):
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
    finally:
        dev.free(ddata), dev.free(hist)
    for f in fails:
        ctx.soft_check(False, f)
    _hist_report(ctx, rates, local, skipped, fails, n, reps)


def _hist_run(ctx: BenchContext, kernel: str, cs: int, block: int, nb: int, n: int, ddata: Any, hist: Any,
              ref: np.ndarray, reps: int) -> list[float] | str:
    """Elements per second of each timed launch, or why the run failed (its check or its launch)."""
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
        return _cluster_failure(fn, cs, block, smem, e) if kernel == "dsm_hist" else str(e)
    got = dev.download(hist, np.uint32, nb).astype(np.int64)
    want = ref * (reps + 1)
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)
        return (f"{len(bad)} of {nb} bins differ from numpy's histogram x {reps + 1} launches "
                f"(bin {bad[0]}: got {got[bad[0]]}, want {want[bad[0]]})")
    return [n / (ms * 1e-3) for ms in times]


def _hist_report(ctx: BenchContext, rates: dict[tuple[int, int, int], list[float]], local: dict[tuple[int, int], list[float]],
                 skipped: list[str], fails: list[str], n: int, reps: int) -> None:
    method = (f"{n} random u32 elements, bin = value & (bins - 1), grid = the clusters that fit at once (grid-stride); "
              f"time includes clearing the bins and each block adding its bins to the global histogram (atomics), as "
              f"in the CUDA sample; event-timed, median of {reps} launches; every histogram equal to numpy's")
    for (block, cs) in sorted({(b, c) for c, b, _ in rates}):
        pts = [Point(nb, float(np.median(v)), min(v), max(v), len(v)) for (c, b, nb), v in sorted(rates.items())
               if c == cs and b == block]
        ctx.series(f"block {block} CS={cs}", "bins", "", "throughput", "elements/s", pts, plot="logx",
                   figure="dsm_histogram", block=block, cluster_size=cs)
    for block in sorted({b for b, _ in local}):
        pts = [Point(nb, float(np.median(v)), min(v), max(v), len(v)) for (b, nb), v in sorted(local.items()) if b == block]
        ctx.series(f"block {block} no cluster (ATOMS)", "bins", "", "throughput", "elements/s", pts, plot="logx",
                   figure="dsm_histogram", block=block, cluster_size=0)
    note = (f"{len(skipped)} configuration(s) skipped: " + "; ".join(skipped)) if skipped else ""
    if fails or not rates:
        ctx.figure("dsm.histogram.best_elems_per_s", 0.0, "elements/s", "measured", method, check="failed",
                   note="; ".join(fails) or "no configuration ran")
    else:
        (cs, block, nb), v = max(rates.items(), key=lambda kv: float(np.median(kv[1])))
        ctx.figure("dsm.histogram.best_elems_per_s", float(np.median(v)), "elements/s", "measured", method,
                   (min(v), max(v)), note=f"cluster size {cs}, block {block}, {nb} bins. {note}".strip())
        for c in sorted({c for c, _, _ in rates}):
            (_, b, nbin), w = max(((k, x) for k, x in rates.items() if k[0] == c), key=lambda kv: float(np.median(kv[1])))
            ctx.figure(f"dsm.histogram.cs{c}_best_elems_per_s", float(np.median(w)), "elements/s", "measured",
                       method, (min(w), max(w)), note=f"block {b}, {nbin} bins")
    if local:
        (block, nb), v = max(local.items(), key=lambda kv: float(np.median(kv[1])))
        ctx.figure("dsm.histogram.local_atoms_best_elems_per_s", float(np.median(v)), "elements/s", "measured",
                   f"the same histogram without clusters (plain shared atomics, ATOMS); {method}", (min(v), max(v)),
                   note=f"block {block}, {nb} bins")
