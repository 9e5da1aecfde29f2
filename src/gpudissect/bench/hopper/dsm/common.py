"""Shared by the DSM benchmarks: constants, the kernel spec of hopper_dsm.cu (the SASS it must hold), the
host-side rules (validation, targets, expected values, placement; CPU-tested), parameter checks and
the cluster launch helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....analysis.sm_groups import merge_groups
from ....device.cuda import Arg
from ....device.launch import max_active_clusters, max_cluster_size
from ....errors import GpuDissectError
from ...context import BenchContext
from ...registry import Facts, KernelSpec, comma_ints, comma_names, one_of

FILE = "hopper_dsm.cu"
MAX_CS = 16  # largest cluster the hardware schedules (non-portable above 8)
MAX_PORTABLE_CS = 8
CHASE_SLOTS = 2 + MAX_CS  # as in hopper_dsm.cu
BW_WORDS = 4096  # u32 words of shared memory each block serves in dsm_throughput (16 KiB, as the paper)
PATTERNS = {"ring": 0, "pair": 1, "broadcast": 2, "self": 3}
POLICIES = {"default": 0, "spread": 1, "load_balancing": 2}  # CUclusterSchedulingPolicy values
POLICY_ATTR = "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE"
ILPS = (1, 2, 4)
BLOCKS = (128, 256, 512, 1024)

_BAR = [r"UCGABAR_ARV", r"UCGABAR_WAIT"]
_MAPA = r"PRMT R\d+, R\d+, 0x654, R\d+"  # mapa: the target rank into byte 3 of the window address
_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
_READ = [
    r"LD\.E R\d+, desc\[UR\d+\]\[R\d+\.64\]",
    _MAPA,
    r"S2R R\d+, SR_SWINHI",
    r"SR_VIRTUALSMID",
    r"SR_CgaCtaId",
    r"REDG\.E\.ADD\.64",
    *_BAR,
]
DSM = KernelSpec(
    FILE,
    {
        # LDS chase, self-dependent generic LD.E.64 chase, the literal ld.shared::cluster.u32 (LD.E without a
        # descriptor, upper half from SR_SWINHI), the remote chain writes (generic ST.E.64)
        "dsm_chase": [
            r"LDS R(\d+), \[R\1\]",
            r"LD\.E\.64 R(\d+), desc\[UR\d+\]\[R\1\.64\]",
            r"LD\.E R\d+, \[R\d+\]",
            r"S2R R\d+, SR_SWINHI",
            _MAPA,
            r"ST\.E\.64 desc",
            r"SR_VIRTUALSMID",
            r"SR_CgaCtaId",
            _CLOCK,
            *_BAR,
        ],
        # index chase: LDS whose address is computed from the previous load (LEA/IMAD/shift + add)
        "dsm_ichase": [
            r"LDS R\d+, \[R\d+\]",
            r"(LEA R\d+, R\d+, U?R\d+, 0x2|IMAD R\d+, R\d+, 0x4, U?R\d+)",
            _CLOCK,
            *_BAR,
        ],
        "pingpong_global": [r"STG\.E\.STRONG\.GPU", r"LDG\.E\.STRONG\.GPU", _CLOCK, *_BAR],
        "pingpong_dsm": [r"ST\.E\.STRONG\.GPU \[R\d+\]", r"LDS R\d+", _MAPA, _CLOCK, *_BAR],
        "dsm_read_ilp1": _READ,
        "dsm_read_ilp2": _READ,
        "dsm_read_ilp4": _READ,
        "dsm_hist": [
            r"ATOM\.E\.ADD\.STRONG\.GPU PT, RZ, \[R\d+\]",
            _MAPA,
            r"S2R R\d+, SR_SWINHI",
            r"REDG\.E\.ADD\.STRONG\.GPU",
            *_BAR,
        ],
        "smem_hist": [r"ATOMS\.", r"REDG\.E\.ADD\.STRONG\.GPU"],
    },
    label="hopper_dsm.cu",
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
        raise GpuDissectError(
            f"cluster size {cs} exceeds the portable maximum of {MAX_PORTABLE_CS}: it needs "
            "the non-portable cluster size attribute (non_portable_cluster=True)"
        )
    return needs_non_portable(cs)


def pattern_targets(pattern: str, cs: int) -> np.ndarray:
    """Rank whose shared memory each rank reads (hopper_dsm.cu target_rank)."""
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
    (cluster c, rank r) holds (c * 7 + r * 13 + i) & 255 in word i (hopper_dsm.cu dsm_read)."""
    validate_cluster(cs, nblocks)
    counts = word_read_counts(loads_per_thread, block)
    # the values depend on (cluster * 7 + target * 13) & 255 only: one sum per residue
    per_base = np.array([int(counts @ ((b + np.arange(BW_WORDS)) & 255)) for b in range(256)], np.int64)
    b = np.arange(nblocks)
    target = pattern_targets(pattern, cs)[b % cs]
    return per_base[((b // cs) * 7 + target * 13) & 255].astype(np.uint64)


def bins_per_block(nbins: int, cs: int) -> int:
    return nbins // cs


def hist_config_error(
    cs: int, block: int, nbins: int, smem_per_block: int | None, max_threads: int = 1024
) -> str | None:
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
        return (
            f"{nbins} bins over {cs} block(s) need {need} bytes of shared memory per block, above the "
            f"{smem_per_block} available; at most {fit * cs} bins fit at this cluster size"
        )
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
        return (
            f"{self.sms_used} SMs used; {self.distinct_median:g} distinct SMs per cluster of {self.cs} "
            f"(min {self.distinct_min}, max {self.distinct_max}); {100 * self.colocated:.0f}% of clusters share an SM; "
            f"{len(self.groups)} SM group(s) linked by clusters, sizes {sizes}"
        )


def _merge_groups(groupings: list[list[list[int]]]) -> list[list[int]]:
    """Union of overlapping groups over several groupings: the connected sets, largest first, each sorted."""
    return merge_groups([g for groups in groupings for g in groups])


def placement_summary(smid: np.ndarray, rank: np.ndarray, cs: int) -> Placement:
    """Distinct SMs per cluster, co-located blocks, and the groups of SMs that clusters link
    (a cluster never spans two GPCs, so with enough clusters the groups are the GPCs)."""
    smid, rank = np.asarray(smid, np.int64), np.asarray(rank, np.int64)
    validate_cluster(cs, len(smid))
    per = smid.reshape(-1, cs)
    distinct = np.array([len(set(row.tolist())) for row in per])
    return Placement(
        cs,
        len(set(smid.tolist())),
        int(distinct.min()),
        float(np.median(distinct)),
        int(distinct.max()),
        float(np.mean(distinct < cs)),
        _merge_groups([per.tolist()]),
        bool(np.array_equal(rank, np.arange(len(rank)) % cs)),
    )


# ---------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------
def _nonempty(items: tuple[Any, ...]) -> tuple[Any, ...]:
    if not items:
        raise ValueError("empty list")
    return items


def _ints(text: str) -> tuple[int, ...]:
    return _nonempty(comma_ints(text))


def _names(text: str) -> tuple[str, ...]:
    return _nonempty(comma_names(text))


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


_patterns = one_of(PATTERNS, "pattern(s)")
_policies = one_of(POLICIES, "scheduling policy(ies)")


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
        if needs_non_portable(cs) or what == "potential":
            fn.set_attribute("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
        if smem > 48 * 1024:
            fn.allow_dynamic_smem(smem)
        if what == "active":
            return max_active_clusters(fn.handle, (cs, 1, 1), (block, 1, 1), smem)
        return max_cluster_size(fn.handle, (cs, 1, 1), (block, 1, 1), smem)
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


def beyond_cluster_limit(fn: Any, cs: int, block: int, smem: int) -> str | None:
    """After a cluster launch failed: why `cs` is beyond this GPU (the driver's largest cluster for this kernel
    and shape is smaller: integrated parts such as sm_101 and sm_121 stop at the portable 8), or None where the
    driver does not say so and the failure is the benchmark's. The benchmarks record such a size as skipped."""
    limit = _cluster_query(fn, cs, block, smem, "potential")
    if not limit or limit >= cs:
        return None
    return (
        f"this GPU's largest cluster for {block}-thread blocks with {smem} bytes of shared memory is {limit} "
        "(cuOccupancyMaxPotentialClusterSize, non-portable sizes allowed)"
    )


def skip_cluster_sizes(ctx: BenchContext, beyond: dict[int, str]) -> None:
    """Record each cluster size beyond this GPU once, with the first reason found."""
    for cs, why in sorted(beyond.items()):
        ctx.skip_variant(f"cluster size {cs}", why)
