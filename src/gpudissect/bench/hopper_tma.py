"""Hopper suite, part TMA and asynchronous copy: Luo et al. (000) §5 and 003 §III-D.

* tma_latency       - the random-stride chase of the memory suite done with 16-byte TMA bulk loads
                      (expect-tx arrive, copy, try_wait, read the next address from shared memory)
                      beside ordinary ld.global.cg loads over the same chains: curve, knees, offset.
* tma_throughput    - global -> shared with cp.async.bulk (1-16 KB per copy) and 1D/2D/3D tensor maps
                      (the paper's box shapes) at 1..4 x SM-count CTAs (Fig. 3), 2D boxes also from a
                      tensor whose rows are one box wide, box shapes of 16 KB (Fig. 4), and the memory
                      suite's streaming read over the same buffer, timed in alternation with the best
                      copies for the ratios.
* async_copy_matmul - tiled fp32 GEMM, synchronous shared-memory staging vs a two-stage cp.async
                      pipeline, block sizes 8/16/32 x blocks per SM (Tables XIII-XIV of 003).

Every copy is checked: chases end where the chain says, each CTA's sum of what landed in shared
memory equals the host's sum of the tiles it was given, and sampled GEMM entries equal a float64
reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..analysis import plateaus
from ..device.cuda import Arg
from ..errors import GpuDissectError
from ..models import Point
from .chase import PCHASE, Chaser, flush_l2, log_grid
from .context import BenchContext
from .memory import BW, _tune
from .registry import Facts, KernelSpec, Param, benchmark, fits_free_memory, multiple_of, parse_size

SUITE = "hopper"
_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
_MBAR = [r"SYNCS\.EXCH\.64", r"SYNCS\.ARRIVE\.TRANS64", r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT"]
# Which SASS each kernel must hold (compiled for sm_90a): the bulk copy engine's UBLKCP, the tensor
# copies' UTMALDG.<rank>D, the mbarrier init / expect-tx arrive / try-wait as SYNCS.*.
TMA = KernelSpec("tma.cu", {
    "tma_chase": [r"UBLKCP\.S\.G", *_MBAR, r"LDS\.64", _CLOCK],
    "bulk_read": [r"UBLKCP\.S\.G", *_MBAR, r"LDS\.128"],
    "tensor1d_read": [r"UTMALDG\.1D", *_MBAR, r"LDS\.128"],
    "tensor2d_read": [r"UTMALDG\.2D", *_MBAR, r"LDS\.128"],
    "tensor3d_read": [r"UTMALDG\.3D", *_MBAR, r"LDS\.128"],
})
BLOCK_SIZES = (8, 16, 32)
CP_BYTES = (4, 8, 16)
_LDGSTS = {4: r"LDGSTS\.E \[", 8: r"LDGSTS\.E\.64 \[", 16: r"LDGSTS\.E\.128 \["}
ASYNC = KernelSpec("async_copy.cu", {
    **{f"mm_sync_{bs}": [r"LDG\.E ", r"STS ", r"LDS", r"FFMA", r"BAR\.SYNC"] for bs in BLOCK_SIZES},
    **{f"mm_async{cp}_{bs}": [_LDGSTS[cp], r"LDGDEPBAR", r"DEPBAR\.LE SB0, 0x1", r"FFMA", r"BAR\.SYNC"]
       for cp in CP_BYTES for bs in BLOCK_SIZES},
})
STREAM = BW["fp32v4"]  # the memory suite's streaming read (bandwidth.cu dram_read, float4)


# ---------------------------------------------------------------------------------------
# Tensor maps: parameters, validity, encoding
# ---------------------------------------------------------------------------------------
# element size and the driver's CUtensorMapDataType name
DTYPES = {"float32": (4, "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"), "int64": (8, "CU_TENSOR_MAP_DATA_TYPE_INT64")}
MAX_BOX = 256  # elements per box dimension (cuTensorMapEncodeTiled)
MAX_RANK = 5
MAX_TX_BYTES = (1 << 20) - 1  # an mbarrier's pending transaction count


@dataclass(frozen=True)
class TensorMap:
    """A dense, tiled tensor at the start of a buffer: `dims` elements per dimension, innermost
    first, rows packed (stride of dim i = product of the dims below it); `box` is the shared-memory
    box each copy moves."""

    dtype: str
    dims: tuple[int, ...]
    box: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def elsize(self) -> int:
        return DTYPES[self.dtype][0]

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides of dims 1..rank-1 (the driver's globalStrides)."""
        out, s = [], self.elsize
        for d in self.dims[:-1]:
            s *= d
            out.append(s)
        return tuple(out)

    @property
    def box_bytes(self) -> int:
        return math.prod(self.box) * self.elsize

    @property
    def tiles(self) -> tuple[int, ...]:
        return tuple(d // b for d, b in zip(self.dims, self.box))

    @property
    def nbytes(self) -> int:
        return math.prod(self.dims) * self.elsize


def validate_tensor_map(tm: TensorMap, address: int = 0) -> None:
    """The limits of cuTensorMapEncodeTiled (and the kernel's), each with a message that says which."""
    if tm.dtype not in DTYPES:
        raise GpuDissectError(f"tensor map: unknown data type {tm.dtype!r}; valid: {', '.join(DTYPES)}")
    if not 1 <= tm.rank <= MAX_RANK:
        raise GpuDissectError(f"tensor map: rank {tm.rank} outside 1..{MAX_RANK}")
    if len(tm.box) != tm.rank:
        raise GpuDissectError(f"tensor map: box has {len(tm.box)} dimensions, the tensor {tm.rank}")
    for i, d in enumerate(tm.dims):
        if not 1 <= d <= 1 << 32:
            raise GpuDissectError(f"tensor map: global dimension {i} is {d}, must be 1..2^32")
    for i, b in enumerate(tm.box):
        if not 1 <= b <= MAX_BOX:
            raise GpuDissectError(f"tensor map: box dimension {i} is {b}, must be 1..{MAX_BOX} elements")
    inner = tm.box[0] * tm.elsize
    if inner % 16:
        raise GpuDissectError(f"tensor map: the inner box dimension is {inner} bytes ({tm.box[0]} x {tm.elsize} B), "
                              "must be a multiple of 16 bytes")
    for i, s in enumerate(tm.strides):
        if s % 16 or s >= 1 << 40:
            raise GpuDissectError(f"tensor map: global stride {i + 1} is {s} bytes, must be a multiple of 16 below 2^40")
    if address % 16:
        raise GpuDissectError(f"tensor map: global address {address:#x} is not 16-byte aligned")
    if tm.box_bytes > MAX_TX_BYTES:
        raise GpuDissectError(f"tensor map: a box of {tm.box_bytes} bytes exceeds an mbarrier's transaction count")
    for i, (d, b) in enumerate(zip(tm.dims, tm.box)):
        if d % b:  # our kernels tile the tensor exactly: no copy reads out of bounds (no OOB fill)
            raise GpuDissectError(f"tensor map: dimension {i} ({d}) is not a multiple of its box ({b})")


def encode_tensor_map(tm: TensorMap, address: int) -> bytes:
    """The 128-byte CUtensorMap of `tm` at device address `address`, encoded by the driver
    (tiled, no interleave, no swizzle, no L2 promotion, zero OOB fill)."""
    validate_tensor_map(tm, address)
    from cuda.bindings import driver as drv

    from ..device.cuda import _check

    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    # A rank-1 map has no strides, but an empty list reaches the driver as a NULL array, which it
    # rejects (CUDA_ERROR_INVALID_VALUE on driver 580); it reads none of a one-entry list.
    strides = tm.strides or (-(-tm.nbytes // 16) * 16,)
    tmap = _check(drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, DTYPES[tm.dtype][1]), tm.rank, address,
        [u64(d) for d in tm.dims], [u64(s) for s in strides], [u32(b) for b in tm.box], [u32(1)] * tm.rank,
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), f"cuTensorMapEncodeTiled {tm}")
    return tensor_map_bytes(tmap)


def tensor_map_bytes(tmap: Any) -> bytes:
    """The 128 bytes of a cuda.bindings CUtensorMap (its `opaque` array of 16 x 64-bit words)."""
    words = [int(w) for w in tmap.opaque]
    if len(words) != 16:
        raise GpuDissectError(f"CUtensorMap has {len(words)} words, expected 16")
    return np.array(words, dtype="<u8").tobytes()


# ---------------------------------------------------------------------------------------
# Copy plans: what each throughput configuration moves, and what the CTAs must find
# ---------------------------------------------------------------------------------------
KB = 1024
BULK_SIZES = (1 * KB, 2 * KB, 4 * KB, 8 * KB, 12 * KB, 16 * KB)  # 000 §5.2, non-tensor
T1D_BOXES = ((64,), (96,), (128,), (160,), (192,), (256,))  # int64: 0.5 .. 2 KB
T2D_BOXES = ((16, 16), (32, 16), (32, 32), (64, 32), (96, 32), (64, 64))  # float, x first: 1 .. 16 KB
# The same copy sizes from a 2D tensor whose rows are one box wide (1 KB): each box is one contiguous
# run of memory instead of `y` runs of 64..384 bytes, 32 KB apart.
PACKED_ROW = 256
T2D_PACKED_BOXES = ((256, 1), (256, 2), (256, 4), (256, 8), (256, 12), (256, 16))
T3D_BOXES = ((8, 8, 4), (8, 8, 8), (16, 8, 8), (16, 16, 8), (16, 16, 12), (16, 16, 16))
SHAPES_16K = ((16, 16, 16), (64, 64, 1), (256, 16, 1), (16, 256, 1), (4, 4, 256))  # Fig. 4, 3D tensor maps
# Global tensor shapes (elements, innermost first): rows of ~32 KB for 2D; 4 KB rows x 256 rows per
# plane for 3D, so a box of height 256 or depth 256 fits (the paper does not give its tensor shapes).
ROW_2D = 8192
ROW_3D, PLANE_3D = 1024, 256
MULTIPLES = (1, 2, 3, 4)  # CTAs per SM (Fig. 3: 114 .. 456 on the H800)
# Which copy kinds each reported peak is the best of; the 2D figure is the better tensor layout,
# the strided one keeps the paper's kind of 2D box (rows far apart) on its own.
KINDS: dict[str, tuple[str, ...]] = {
    "bulk_16k": ("bulk",), "bulk": ("bulk",), "tensor1d": ("1d",), "tensor2d": ("2d", "2dp"),
    "tensor2d_strided": ("2d",), "tensor2d_packed": ("2dp",), "tensor3d": ("3d",), "shape16k": ("shape",),
}
TARGETS = ("bulk_16k", "tensor2d")  # issue 5: >= 95% of the streaming read, measured in the same run
FIGURES = {"2dp": "tma_throughput_2d_packed"}


@dataclass(frozen=True)
class CopyPlan:
    kind: str  # "bulk" | "1d" | "2d" | "3d"
    chunk_bytes: int  # bytes per copy
    nchunks: int
    tmap: TensorMap | None = None

    @property
    def moved(self) -> int:
        return self.chunk_bytes * self.nchunks

    @property
    def label(self) -> str:
        if self.tmap is None:
            return f"{self.chunk_bytes // KB} KB"
        if self.tmap.rank == 1:
            return f"{self.tmap.box[0]} x {self.tmap.dtype}"
        return "x".join(str(b) for b in self.tmap.box)


def plan_bulk(total_bytes: int, chunk_bytes: int) -> CopyPlan:
    if chunk_bytes <= 0 or chunk_bytes % 16:
        raise GpuDissectError(f"bulk copy of {chunk_bytes} bytes: size must be a positive multiple of 16")
    if chunk_bytes > MAX_TX_BYTES:
        raise GpuDissectError(f"bulk copy of {chunk_bytes} bytes exceeds an mbarrier's transaction count")
    n = total_bytes // chunk_bytes
    if n < 1:
        raise GpuDissectError(f"buffer of {total_bytes} bytes holds no copy of {chunk_bytes} bytes")
    return CopyPlan("bulk", chunk_bytes, n)


def plan_tensor(total_bytes: int, box: Sequence[int], dtype: str = "float32", row: int | None = None) -> CopyPlan:
    """A tensor of the box's rank that the box tiles exactly, filling as much of `total_bytes` as
    such a shape allows; chunk c is tile c in x-fastest order. `row`: a 2D tensor's row length in
    elements (default ROW_2D, rounded to a multiple of the box)."""
    box = tuple(int(b) for b in box)
    if dtype not in DTYPES:
        raise GpuDissectError(f"tensor map: unknown data type {dtype!r}; valid: {', '.join(DTYPES)}")
    es = DTYPES[dtype][0]
    elems = total_bytes // es
    rank = len(box)

    def fit(target: int, b: int) -> int:
        return b * max(1, round(target / b))

    if rank == 1:
        dims: tuple[int, ...] = ((elems // box[0]) * box[0],)
    elif rank == 2:
        x = fit(row or ROW_2D, box[0])
        dims = (x, (elems // x // box[1]) * box[1])
    elif rank == 3:
        x, y = fit(ROW_3D, box[0]), fit(PLANE_3D, box[1])
        dims = (x, y, (elems // (x * y) // box[2]) * box[2])
    else:
        raise GpuDissectError(f"tensor copies of rank {rank} are not planned (1..3)")
    if min(dims) < 1:
        raise GpuDissectError(f"a {total_bytes}-byte buffer is too small for a tensor of box {box}")
    tm = TensorMap(dtype, dims, box)
    validate_tensor_map(tm)
    return CopyPlan(f"{rank}d", tm.box_bytes, math.prod(tm.tiles), tm)


def chunk_origin(plan: CopyPlan, c: int) -> tuple[int, ...]:
    """Element coordinates of chunk c's first element, as the kernel computes them (tma.cu issue())."""
    if plan.tmap is None:
        return (c * plan.chunk_bytes // 4,)
    tm = plan.tmap
    if tm.rank == 1:
        return (c * tm.box[0],)
    ntx = tm.tiles[0]
    if tm.rank == 2:
        return (c % ntx * tm.box[0], c // ntx * tm.box[1])
    r = c // ntx
    return (c % ntx * tm.box[0], r % tm.tiles[1] * tm.box[1], r // tm.tiles[1] * tm.box[2])


def tile_sums(values: np.ndarray, plan: CopyPlan) -> np.ndarray:
    """Sum of the 32-bit words each chunk moves, in chunk order; `values` are the buffer's words."""
    if plan.tmap is None:
        w = plan.chunk_bytes // 4
        return values[: plan.nchunks * w].reshape(plan.nchunks, w).sum(axis=1, dtype=np.int64)
    tm = plan.tmap
    f = tm.elsize // 4  # 32-bit words per element
    v = values[: tm.nbytes // 4]
    if tm.rank == 1:
        return v.reshape(tm.tiles[0], tm.box[0] * f).sum(axis=1, dtype=np.int64)
    if tm.rank == 2:
        nx, ny = tm.tiles
        return v.reshape(ny, tm.box[1], nx, tm.box[0] * f).sum(axis=(1, 3), dtype=np.int64).reshape(-1)
    nx, ny, nz = tm.tiles
    t = v.reshape(nz, tm.box[2], ny, tm.box[1], nx, tm.box[0] * f).sum(axis=(1, 3, 5), dtype=np.int64)
    return t.reshape(-1)


def cta_sums(tsums: np.ndarray, grid: int) -> np.ndarray:
    """What each CTA must find: CTA b gets chunks b, b + grid, b + 2 grid, ..."""
    idx = np.arange(len(tsums)) % grid
    return np.bincount(idx, weights=tsums.astype(np.float64), minlength=grid)


def per_thread_bound(plan: CopyPlan, grid: int, block: int, vmax: int) -> float:
    """Largest value one thread's float sum can reach: it must stay below 2^24 to be exact."""
    chunks = math.ceil(plan.nchunks / grid)
    words = math.ceil(plan.chunk_bytes / 16 / block) * 4
    return chunks * words * vmax


def stage_stride(chunk_bytes: int) -> int:
    """Stage buffers start on 1 KiB boundaries (tensor copies need 128-byte aligned destinations)."""
    return -(-chunk_bytes // 1024) * 1024


def smem_for(chunk_bytes: int, stages: int) -> int:
    return stages * stage_stride(chunk_bytes) + 1024  # + slack to align the ring's start


# ---------------------------------------------------------------------------------------
# Derivations on measured numbers (CPU-testable)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rate:
    kind: str  # bulk | 1d | 2d | 3d | shape
    label: str  # size or box
    chunk_bytes: int
    mult: int  # CTAs per SM
    gbps: float  # median over repetitions
    lo: float
    hi: float
    ok: bool = True


def peak(rates: Sequence[Rate], kind: str | tuple[str, ...], chunk_bytes: int | None = None) -> Rate | None:
    """The best (median) rate among the checked rates of a kind, or of several kinds (optionally one
    copy size)."""
    kinds = (kind,) if isinstance(kind, str) else kind
    cand = [r for r in rates if r.kind in kinds and r.ok and (chunk_bytes is None or r.chunk_bytes == chunk_bytes)]
    return max(cand, key=lambda r: r.gbps) if cand else None


def latency_offset(tma: Sequence[float], ordinary: Sequence[float]) -> tuple[float, float, float]:
    """Median, min and max over footprints of TMA latency minus ordinary latency."""
    d = np.asarray(tma, float) - np.asarray(ordinary, float)
    if d.size == 0:
        raise ValueError("no footprints")
    return float(np.median(d)), float(d.min()), float(d.max())


def speedups(sync: dict[int, float], asyn: dict[int, float]) -> dict[int, float]:
    """AsyncPipe / SyncShare at each blocks-per-SM point both have."""
    return {k: asyn[k] / sync[k] for k in sorted(sync) if k in asyn and sync[k] > 0}


def best_speedup(sp: dict[int, float]) -> tuple[float, int]:
    """The best-case speedup and the blocks per SM where it occurs."""
    if not sp:
        raise ValueError("no common points")
    k = max(sp, key=lambda x: sp[x])
    return sp[k], k


def mean_gain_pct(sp: dict[int, float]) -> float:
    """Mean over blocks-per-SM points of (speedup - 1), in percent (like 003's 'Perf' column)."""
    return 100.0 * float(np.mean([v - 1.0 for v in sp.values()]))


# ---------------------------------------------------------------------------------------
# 1. TMA latency (Fig. 2)
# ---------------------------------------------------------------------------------------
_check_stride = multiple_of(16, "the TMA copy size and alignment")
_check_bytes = fits_free_memory(0.8)


@benchmark(
    suite=SUITE, name="tma_latency", title="TMA load latency vs footprint, beside ld.global.cg (random-stride chase)",
    axes={"load": "TMA 16-byte bulk copy + mbarrier wait; ld.global.cg",
          "footprint": "4 KiB .. 4 x L2, log steps + fine steps at every knee"},
    kernels=[TMA, PCHASE["cg"]], min_cc=(9, 0), timeout_s=300, paper="000 §5.1 Fig. 2",
    params={
        "stride": Param(128, "bytes between chain elements (multiple of 16)", parse_size, _check_stride),
        "max_footprint": Param(None, "largest footprint (default 4 x L2)", parse_size, _check_bytes),
        "steps": Param(4096, "timed steps per launch", int, lambda v, f: None if 64 <= v <= 1 << 20 else "64 .. 1M"),
    },
)
def tma_latency(ctx: BenchContext) -> None:
    l2, dev = ctx.props["l2_bytes"], ctx.device
    stride, steps = ctx.params["stride"], ctx.params["steps"]
    top = ctx.params["max_footprint"] or 4 * l2
    reps = 3 if ctx.quick else 5
    fn = ctx.kernel(TMA, "tma_chase")
    ch = Chaser(ctx, "cg", top + stride, seed=5)
    tma_pts: dict[int, Point] = {}
    cg_pts: dict[int, Point] = {}

    def tma_run(warm: int, first: int) -> float:
        fn(1, 1, [Arg.u64(ch.address(first)), Arg.u64(warm), Arg.u64(steps), Arg.ptr(ch.out)])
        dev.sync("tma_chase")
        end, cycles, _ = (int(v) for v in dev.download(ch.out, np.uint64, 3))
        want = ch.expected_end(warm + steps, first)
        ctx.check(end == want, f"TMA chase ended at {end:#x}, expected {want:#x} (footprint {ch.chain_len * ch.stride})")
        return cycles / steps

    def measure(fp: int) -> None:
        n = ch.build_random(fp, stride)
        if fp <= 1.5 * l2:
            # As the memory suite: every launch first walks the whole chain with its own load kind, then
            # times the next `steps`. (Re-timing a few thousand elements without the full pass would
            # measure a working set that stays in the near L2 partition whatever the footprint.)
            warm, starts = n, [(0, 0)] * reps
        else:  # each launch chases a part of the chain no earlier one touched, after an L2 flush
            flush_l2(ctx, 2 * l2)
            warm, gap = 16, n // (2 * reps)
            if gap < warm + steps:
                raise GpuDissectError(f"chain of {n} elements too short for {2 * reps} disjoint chases of {warm + steps}")
            starts = [(2 * r * gap, (2 * r + 1) * gap) for r in range(reps)]
        cg, tm = [], []
        for a, b in starts:  # interleaved, so drifts hit both alike
            cg.append(ch.run(warm, steps, first=a)[0])
            tm.append(tma_run(warm, b))
        cg_pts[fp] = Point(fp, float(np.median(cg)), min(cg), max(cg), reps)
        tma_pts[fp] = Point(fp, float(np.median(tm)), min(tm), max(tm), reps)

    grid = log_grid(4096, top, 2 if ctx.quick else 4)
    try:
        for j, fp in enumerate(grid):
            measure(fp)
            ctx.progress(j * 70 // len(grid), 100, f"{fp >> 10} KiB")
        for rnd in range(2 if ctx.quick else 3):  # fine steps around every jump of either curve
            xs = sorted(tma_pts)
            new = set(plateaus.refine_points(xs, [tma_pts[x].y for x in xs], per_gap=3 if ctx.quick else 6))
            new |= set(plateaus.refine_points(xs, [cg_pts[x].y for x in xs], per_gap=3 if ctx.quick else 6))
            for fp in sorted(int(f) for f in new if 4096 <= f <= top and int(f) not in tma_pts)[:40]:
                measure(fp)
            ctx.progress(70 + 15 * (rnd + 1), 100, "refining")
    finally:
        ch.close()
    xs = sorted(tma_pts)
    tp, cp = [tma_pts[x] for x in xs], [cg_pts[x] for x in xs]
    ctx.series("tma", "footprint", "bytes", "latency", "cycles", tp, plot="logx", figure="tma_latency_vs_footprint",
               stride=stride, steps=steps, reps=reps, copy_bytes=16)
    ctx.series("ld.global.cg", "footprint", "bytes", "latency", "cycles", cp, plot="logx",
               figure="tma_latency_vs_footprint", stride=stride, steps=steps, reps=reps)
    ctx.series("tma - ld.global.cg", "footprint", "bytes", "latency difference", "cycles",
               [Point(x, t.y - c.y) for x, t, c in zip(xs, tp, cp)], plot="logx", figure="tma_latency_offset")
    _derive_latency(ctx, xs, [p.y for p in tp], [p.y for p in cp])


def _derive_latency(ctx: BenchContext, xs: list[int], tma: list[float], cg: list[float]) -> None:
    med, lo, hi = latency_offset(tma, cg)
    ctx.figure("tma.latency_offset_cycles", round(med, 1), "cycles", "derived",
               "median over all footprints of (TMA 16-byte bulk-copy chase - ld.global.cg chase), same chains, "
               "cycles per dependent step", (lo, hi))
    pl = plateaus.find_plateaus(xs, tma)
    knees = plateaus.find_knees(xs, tma)
    cg_knees = plateaus.find_knees(xs, cg)
    method = "plateaus of the TMA latency-vs-footprint curve (analysis.plateaus)"
    if pl:
        on = [y for x, y in zip(xs, tma) if pl[0].x_first <= x <= pl[0].x_last]
        ctx.figure("tma.latency.l2_hit_cycles", pl[0].level, "cycles", "derived", f"first plateau; {method}",
                   (min(on), max(on)))
        if len(pl) >= 2:
            on = [y for x, y in zip(xs, tma) if pl[-1].x_first <= x <= pl[-1].x_last]
            ctx.figure("tma.latency.dram_cycles", pl[-1].level, "cycles", "derived",
                       f"last plateau (footprint >= {pl[-1].x_first / 2**20:.1f} MiB); {method}", (min(on), max(on)))
        for i, lv in enumerate(pl[1:-1], 2):  # levels between (on Hopper: the far L2 partition)
            on = [y for x, y in zip(xs, tma) if lv.x_first <= x <= lv.x_last]
            ctx.figure(f"tma.latency.plateau{i}_cycles", lv.level, "cycles", "derived",
                       f"plateau {i} of {len(pl)} (footprints {lv.x_first / 2**20:.1f} .. {lv.x_last / 2**20:.1f} MiB); "
                       f"{method}", (min(on), max(on)))
        for name, lv in (("l2", pl[0]), ("dram", pl[-1] if len(pl) >= 2 else None)):
            if lv is None:
                continue
            d = [t - c for x, t, c in zip(xs, tma, cg) if lv.x_first <= x <= lv.x_last]
            ctx.figure(f"tma.latency.offset_{name}_cycles", round(float(np.median(d)), 1), "cycles", "derived",
                       f"median of (TMA - ld.global.cg) over the footprints of the TMA curve's {name} plateau",
                       (min(d), max(d)))
    ctx.figure("tma.latency.knee_count", len(knees), "count", "derived",
               f"upward transitions between plateaus of the TMA curve; {method}",
               note=f"ld.global.cg curve over the same chains: {len(cg_knees)} knee(s)")
    ctx.figure("tma.latency.cg_knee_count", len(cg_knees), "count", "derived",
               "upward transitions between plateaus of the ld.global.cg curve (L1 bypassed)")
    for i, k in enumerate(knees, 1):
        ctx.figure(f"tma.latency.knee{i}_bytes", plateaus.capacity_from_knee(k), "bytes", "derived",
                   f"largest footprint on the lower plateau of TMA knee {i} ({k.low:.0f} -> {k.high:.0f} cycles)",
                   (k.x_last_low, k.x_first_high))


# ---------------------------------------------------------------------------------------
# 2. TMA throughput (Figs. 3-4)
# ---------------------------------------------------------------------------------------
def _check_stages(v: int, facts: Facts) -> str | None:
    return None if 1 <= v <= 4 else "1 .. 4 (tma.cu MAX_STAGES)"


BLOCK = 128  # threads per CTA of the copy kernels: thread 0 issues, all of them sum what landed
MIN_BUFFER = ROW_3D * PLANE_3D * 256 * 4  # the 4x4x256 box needs 256 planes of the 3D tensor


def _check_buffer(v: int, facts: Facts) -> str | None:
    if v < MIN_BUFFER:
        return f"at least {MIN_BUFFER >> 20} MiB (256 planes of the {ROW_3D} x {PLANE_3D}-float 3D tensor)"
    return _check_bytes(v, facts)


@benchmark(
    suite=SUITE, name="tma_throughput", title="TMA global -> shared throughput: bulk, 1D/2D/3D tensor copies, box shapes",
    axes={"copy": "bulk 1-16 KB; tensor 1D (int64, 0.5-2 KB), 2D (float, 1-16 KB; 32 KB rows and 1 KB rows) and "
                  "3D (float, 1-16 KB); 16 KB box shapes",
          "ctas": "1, 2, 3, 4 x SM count", "reference": "memory suite's streaming float4 read of the same buffer"},
    kernels=[TMA, STREAM], min_cc=(9, 0), timeout_s=600, paper="000 §5.2 Figs. 3-4",
    params={
        "buffer_bytes": Param(None, "source buffer (default max(8 x L2, 512 MiB))", parse_size, _check_buffer),
        "total_bytes": Param(None, "bytes moved per measurement (default 4 GiB; quick 1 GiB)", parse_size,
                             lambda v, f: None if v > 0 else "must be positive"),
        "stages": Param(3, "shared-memory stages (copies in flight per CTA)", int, _check_stages),
    },
)
def tma_throughput(ctx: BenchContext) -> None:
    dev, p = ctx.device, ctx.props
    sms, l2 = p["sm_count"], p["l2_bytes"]
    stages = ctx.params["stages"]
    size = ctx.params["buffer_bytes"] or max(8 * l2, 512 << 20)
    size = size // (1 << 20) * (1 << 20)
    total = ctx.params["total_bytes"] or ((1 << 30) if ctx.quick else (4 << 30))
    passes = max(1, round(total / size))
    reps = 3 if ctx.quick else 5
    rng = np.random.default_rng(11)
    values = rng.integers(0, 4, size // 4, dtype=np.uint8)  # integer-valued floats: every sum is exact
    src = dev.upload(values.astype(np.float32))
    sums = dev.alloc(max(4 * sms * BLOCK, sms * 2048) * 8)
    rates: list[Rate] = []
    plans: list[tuple[str, CopyPlan]] = []
    plans += [("bulk", plan_bulk(size, b)) for b in BULK_SIZES]
    plans += [("1d", plan_tensor(size, b, "int64")) for b in T1D_BOXES]
    plans += [("2d", plan_tensor(size, b)) for b in T2D_BOXES]
    plans += [("2dp", plan_tensor(size, b, row=PACKED_ROW)) for b in T2D_PACKED_BOXES]
    plans += [("3d", plan_tensor(size, b)) for b in T3D_BOXES]
    plans += [("shape", plan_tensor(size, b)) for b in SHAPES_16K]
    tsums_cache: dict[CopyPlan, np.ndarray] = {}
    try:
        stream = _stream_read(ctx, src, size, values, sums, passes, reps)
        maps = {plan: encode_tensor_map(plan.tmap, src.ptr) for _, plan in plans if plan.tmap is not None}
        for i, (kind, plan) in enumerate(plans):
            if plan not in tsums_cache:
                tsums_cache[plan] = tile_sums(values, plan)
            for m in MULTIPLES:
                rates.append(_copy_rate(ctx, kind, plan, maps.get(plan), tsums_cache[plan], m * sms, m, stages,
                                        src, sums, passes, reps))
            ctx.progress(i + 1, len(plans), f"{kind} {plan.label}")
        paired = {key: _paired_ratio(ctx, rates, plans, maps, KINDS[key], chunk, stream, src, sums, size, stages)
                  for key, chunk in (("bulk_16k", 16 << 10), ("tensor2d", None), ("tensor2d_strided", None))}
    finally:
        dev.free(src), dev.free(sums)
    _report_throughput(ctx, rates, stream, size, passes, stages, reps, paired)


PAIRS = 9  # alternating (copy, streaming read) timings behind each target ratio
PAIR_BYTES = 4 << 30  # bytes each side moves per timing: long enough that launch gaps and noise average out


def _paired_ratio(ctx: BenchContext, rates: list[Rate], plans: list[tuple[str, CopyPlan]], maps: dict[CopyPlan, bytes],
                  kinds: tuple[str, ...], chunk: int | None, stream: Rate, src: Any, sums: Any, size: int,
                  stages: int) -> tuple[float, float, float] | None:
    """Best configuration of `kinds` against the streaming read, timed in alternation (copy, read, copy,
    ...) so that clock and power drift during the benchmark cannot favour either, and measured afresh
    (the best of many noisy medians is biased upward): median, min, max of the per-pair ratios."""
    best = peak(rates, kinds, chunk)
    if best is None:
        return None
    plan = next(pl for k, pl in plans if k == best.kind and pl.label == best.label)
    grid, sms = best.mult * ctx.props["sm_count"], ctx.props["sm_count"]
    read = ctx.kernel(STREAM, "dram_read")
    block = int(stream.label.rsplit("x", 1)[1])
    passes = max(1, -(-PAIR_BYTES // size))
    times = ctx.device.alternate_ms(
        lambda: [_launch_copy(ctx, plan, maps.get(plan), grid, stages, src, sums) for _ in range(passes)],
        lambda: [read(stream.mult * sms, block, [Arg.ptr(src), Arg.u64(size // 16), Arg.ptr(sums)]) for _ in range(passes)],
        PAIRS)
    ratios = [(plan.moved / t_copy) / (size / t_read) for t_copy, t_read in times]
    return float(np.median(ratios)), min(ratios), max(ratios)


def _launch_copy(ctx: BenchContext, plan: CopyPlan, tmap: bytes | None, grid: int, stages: int, src: Any, sums: Any) -> None:
    tail = [Arg.u64(plan.nchunks), Arg.u32(plan.chunk_bytes), Arg.u32(stages), Arg.u32(stage_stride(plan.chunk_bytes)),
            Arg.ptr(sums)]
    smem = smem_for(plan.chunk_bytes, stages)
    if plan.tmap is None:
        ctx.kernel(TMA, "bulk_read")(grid, BLOCK, [Arg.ptr(src), *tail], smem=smem)
        return
    tm, raw = plan.tmap, Arg.raw(tmap or b"")
    if tm.rank == 1:
        ctx.kernel(TMA, "tensor1d_read")(grid, BLOCK, [raw, Arg.u32(tm.box[0]), *tail], smem=smem)
    elif tm.rank == 2:
        ctx.kernel(TMA, "tensor2d_read")(grid, BLOCK, [raw, Arg.u32(tm.tiles[0]), Arg.u32(tm.box[0]), Arg.u32(tm.box[1]),
                                                       *tail], smem=smem)
    else:
        ctx.kernel(TMA, "tensor3d_read")(grid, BLOCK, [raw, Arg.u32(tm.tiles[0]), Arg.u32(tm.tiles[1]),
                                                       Arg.u32(tm.box[0]), Arg.u32(tm.box[1]), Arg.u32(tm.box[2]),
                                                       *tail], smem=smem)


def _copy_rate(ctx: BenchContext, kind: str, plan: CopyPlan, tmap: bytes | None, tsums: np.ndarray, grid: int,
               mult: int, stages: int, src: Any, sums: Any, passes: int, reps: int) -> Rate:
    dev = ctx.device
    if per_thread_bound(plan, grid, BLOCK, 3) >= 1 << 24:
        raise GpuDissectError(f"{kind} {plan.label}: per-thread sums would exceed 2^24 (float sums no longer exact)")
    want = cta_sums(tsums, grid)
    what = f"{kind} {plan.label}, {grid} CTAs"

    def check() -> bool:
        got = dev.download(sums, np.float32, grid * BLOCK).astype(np.float64).reshape(grid, BLOCK).sum(axis=1)
        bad = np.flatnonzero(got != want)
        return ctx.soft_check(bad.size == 0, f"{what}: {bad.size} CTAs found other data than they were sent"
                              + (f" (CTA {bad[0]}: {got[bad[0]]:.0f} != {want[bad[0]]:.0f})" if bad.size else ""))

    dev.memset32(sums, 0xFFFFFFFF)  # NaN: a CTA that writes nothing cannot pass
    _launch_copy(ctx, plan, tmap, grid, stages, src, sums)
    dev.sync(what)
    ok = check()
    dev.memset32(sums, 0xFFFFFFFF)
    ms = dev.time_ms(lambda: [_launch_copy(ctx, plan, tmap, grid, stages, src, sums) for _ in range(passes)], reps)
    ok = check() and ok
    gb = [passes * plan.moved / t / 1e6 for t in ms]
    return Rate(kind, plan.label, plan.chunk_bytes, mult, float(np.median(gb)), min(gb), max(gb), ok)


def _stream_read(ctx: BenchContext, src: Any, size: int, values: np.ndarray, sums: Any, passes: int,
                 reps: int) -> Rate:
    """The memory suite's streaming read (dram_read, float4, its launch shape tuned as there) over the
    same buffer, timed like the copies: `passes` back-to-back launches per measurement."""
    dev, sms = ctx.device, ctx.props["sm_count"]
    read = ctx.kernel(STREAM, "dram_read")
    n_acc = size // 16

    def launch(grid: int, block: int) -> None:
        read(grid, block, [Arg.ptr(src), Arg.u64(n_acc), Arg.ptr(sums)])

    per_sm, block = _tune(dev, sms, launch, read.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"))
    grid = sms * per_sm
    dev.memset32(sums, 0xFFFFFFFF)
    ms = dev.time_ms(lambda: [launch(grid, block) for _ in range(passes)], reps)
    got = dev.download(sums, np.float32, grid * block).astype(np.float64).sum()
    want = float(values.sum(dtype=np.int64))
    ok = ctx.soft_check(got == want, f"streaming read: sum {got:.0f} != {want:.0f}")
    gb = [passes * size / t / 1e6 for t in ms]
    return Rate("stream", f"{per_sm} blocks/SM x {block}", 16, per_sm, float(np.median(gb)), min(gb), max(gb), ok)


def _report_throughput(ctx: BenchContext, rates: list[Rate], stream: Rate, size: int, passes: int, stages: int,
                       reps: int, paired: dict[str, tuple[float, float, float] | None] | None = None) -> None:
    sms = ctx.props["sm_count"]
    how = (f"{passes} back-to-back launches x {size >> 20} MiB buffer per measurement, CUDA events, median of {reps}; "
           f"{stages} shared-memory stages per CTA, {BLOCK} threads summing what landed")
    names = {"bulk": "non-tensor cp.async.bulk", "1d": "1D tensor (int64)", "2d": "2D tensor (float), 32 KB rows",
             "2dp": f"2D tensor (float), rows one box wide ({PACKED_ROW * 4} B)", "3d": "3D tensor (float)",
             "shape": "3D tensor, 16 KB boxes"}
    for kind in ("bulk", "1d", "2d", "2dp", "3d"):
        for m in MULTIPLES:
            pts = [Point(r.chunk_bytes, r.gbps, r.lo, r.hi, reps, {"label": r.label, "ok": r.ok})
                   for r in rates if r.kind == kind and r.mult == m]
            ctx.series(f"{m}x SMs ({m * sms} CTAs)", "bytes per copy", "bytes", "throughput", "GB/s", pts,
                       plot="line", figure=FIGURES.get(kind, f"tma_throughput_{kind}"), copy=names[kind])
    for m in MULTIPLES:
        pts = [Point(i, r.gbps, r.lo, r.hi, reps, {"label": r.label, "ok": r.ok})
               for i, r in enumerate(r for r in rates if r.kind == "shape" and r.mult == m)]
        ctx.series(f"{m}x SMs ({m * sms} CTAs)", "box shape (x*y*z floats)", "", "throughput", "GB/s", pts,
                   plot="bar", figure="tma_box_shapes_16k")
    ctx.figure("tma.stream_read_gbps", stream.gbps, "GB/s", "measured",
               f"memory suite's streaming float4 read (bandwidth.cu dram_read, {stream.label}) of the same buffer; {how}",
               (stream.lo, stream.hi), "ok" if stream.ok else "failed")
    best = {key: peak(rates, kinds, 16 * KB if key == "bulk_16k" else None) for key, kinds in KINDS.items()}
    for key, r in best.items():
        failed = [x for x in rates if x.kind in KINDS[key] and not x.ok]
        if r is None:
            ctx.figure(f"tma.{key}_peak_gbps", "n/a", "GB/s", "measured", "no configuration passed its check", check="failed")
            continue
        what = " or ".join(names[k] for k in KINDS[key])
        ctx.figure(f"tma.{key}_peak_gbps", r.gbps, "GB/s", "measured",
                   f"best of {what} over copy sizes and 1..4 x SM-count CTAs; {how}", (r.lo, r.hi),
                   "failed" if failed else "ok", note=f"{names[r.kind]}: {r.label} per copy, {r.mult * sms} CTAs")
    for key in ("bulk_16k", "tensor2d", "tensor2d_strided", "tensor2d_packed", "tensor3d", "bulk"):
        r = best[key]
        if r is None:
            continue
        ok = stream.ok and not [x for x in rates if x.kind in KINDS[key] and not x.ok]
        pair = (paired or {}).get(key)
        if pair is not None:  # the target figure: the two timed in alternation, not minutes apart
            ctx.figure(f"tma.{key}_vs_stream", round(pair[0], 4), "ratio", "derived",
                       f"best {key} configuration ({names[r.kind]}, {r.label}, {r.mult * ctx.props['sm_count']} CTAs) "
                       f"and the streaming read timed in alternation, {PAIRS} pairs of {PAIR_BYTES >> 30} GiB each, "
                       "median of the per-pair ratios", (pair[1], pair[2]),
                       check="ok" if ok else "failed", note="target >= 0.95" if key in TARGETS else "")
            ctx.figure(f"tma.{key}_vs_stream_sequential", round(r.gbps / stream.gbps, 4), "ratio", "derived",
                       f"tma.{key}_peak_gbps / tma.stream_read_gbps, measured at different times of the benchmark",
                       check="ok" if ok else "failed")
            continue
        ctx.figure(f"tma.{key}_vs_stream", round(r.gbps / stream.gbps, 4), "ratio", "derived",
                   f"tma.{key}_peak_gbps / tma.stream_read_gbps (same buffer, same run)", check="ok" if ok else "failed",
                   note="target >= 0.95" if key in TARGETS else "")
    for r in rates:  # Fig. 4: each 16 KB box shape's best CTA count
        if r.kind == "shape" and r is peak([x for x in rates if x.label == r.label], "shape"):
            ctx.figure(f"tma.shape16k.{r.label}_peak_gbps", r.gbps, "GB/s", "measured",
                       f"16 KB box {r.label} (x*y*z floats), best of 1..4 x SM-count CTAs; {how}", (r.lo, r.hi),
                       "ok" if r.ok else "failed", note=f"{r.mult * sms} CTAs")


# ---------------------------------------------------------------------------------------
# 3. Asynchronous copy: SyncShare vs AsyncPipe tiled GEMM (003 Tables XIII-XIV)
# ---------------------------------------------------------------------------------------
VARIANTS = {"SyncShare": "mm_sync_{bs}", "AsyncPipe": "mm_async4_{bs}", "AsyncPipe-8B": "mm_async8_{bs}",
            "AsyncPipe-16B": "mm_async16_{bs}"}
SAMPLE = 4096  # C entries checked against the float64 reference per product
PAPER_BPSM = (1, 2, 4, 8, 16, 32)  # the blocks-per-SM columns of 003 Tables XIII-XIV (= the quick grid)


def _check_k(v: int, facts: Facts) -> str | None:
    return None if v >= 32 and v % 32 == 0 else "a positive multiple of 32 (every block size must divide it)"


def gemm_dims(bs: int, blocks_per_sm: int, sms: int, k: int) -> tuple[int, int, int]:
    """(M, N, K): one output tile per block, grid = (sms, blocks_per_sm) tiles of bs x bs, so the grid
    holds blocks_per_sm x sms blocks (003 varies A's height and B's width the same way)."""
    if k % bs:
        raise GpuDissectError(f"K={k} is not a multiple of the block size {bs}")
    return blocks_per_sm * bs, sms * bs, k


def reference_entries(a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 C[rows, cols] and the fp32 error bound of each: 2^-20 x sum |a_ik b_kj| (K-term fp32
    accumulation; integer-valued operands make the fp32 result exact anyway)."""
    pa, pb = a[rows].astype(np.float64), b[:, cols].T.astype(np.float64)
    return (pa * pb).sum(axis=1), 2.0**-20 * np.abs(pa * pb).sum(axis=1)


@benchmark(
    suite=SUITE, name="async_copy_matmul", title="Tiled GEMM: synchronous shared-memory staging vs two-stage cp.async pipeline",
    axes={"variant": "SyncShare; AsyncPipe with 4 (the paper's), 8, 16-byte cp.async", "block": "8x8, 16x16, 32x32",
          "blocks_per_sm": "1, 2, 4, 8, 16, 32 (full: 1..32)"},
    kernels=[ASYNC], min_cc=(8, 0), timeout_s=300, paper="003 §III-D, Tables XIII-XIV",
    params={"k": Param(2048, "inner dimension (A's width, B's height); 003 uses 2048", int, _check_k)},
)
def async_copy_matmul(ctx: BenchContext) -> None:
    dev, sms, k = ctx.device, ctx.props["sm_count"], ctx.params["k"]
    bpsm = list(PAPER_BPSM) if ctx.quick else list(range(1, 33))
    reps = 3 if ctx.quick else 5
    rng = np.random.default_rng(3)
    m_max, n_max = max(bpsm) * max(BLOCK_SIZES), sms * max(BLOCK_SIZES)
    a_h = rng.integers(-3, 4, (m_max, k)).astype(np.float32)
    b_flat = rng.integers(-3, 4, k * n_max).astype(np.float32)
    a_d, b_d, c_d = dev.upload(a_h), dev.upload(b_flat), dev.alloc(m_max * n_max * 4)
    results: dict[tuple[str, int], dict[int, Point]] = {}
    total, done = len(BLOCK_SIZES) * len(bpsm), 0
    try:
        for bs in BLOCK_SIZES:
            for nb in bpsm:
                m, n, _ = gemm_dims(bs, nb, sms, k)
                b_h = b_flat[: k * n].reshape(k, n)
                rows, cols = rng.integers(0, m, SAMPLE), rng.integers(0, n, SAMPLE)
                ref, tol = reference_entries(a_h, b_h, rows, cols)
                flop = 2.0 * m * n * k
                for name, fname in VARIANTS.items():
                    fn = ctx.kernel(ASYNC, fname.format(bs=bs))
                    args = [Arg.ptr(c_d), Arg.ptr(a_d), Arg.ptr(b_d), Arg.i32(k), Arg.i32(n)]

                    def launch(fn: Any = fn, args: list[Arg] = args, nb: int = nb, bs: int = bs) -> None:
                        fn((sms, nb), (bs, bs), args)

                    dev.memset32(c_d, 0x7FC00000)  # NaN: an unwritten entry cannot pass
                    t1 = dev.time_ms(launch, 1)[0]  # also the warm-up
                    c = dev.download(c_d, np.float32, m * n).reshape(m, n)
                    err = np.abs(c[rows, cols].astype(np.float64) - ref)
                    ok = ctx.soft_check(bool(np.isfinite(c).all()) and bool((err <= tol).all()),
                                        f"{name} {bs}x{bs}, {nb} blocks/SM: {int((err > tol).sum())} of {SAMPLE} sampled "
                                        f"entries differ from the float64 reference, {int((~np.isfinite(c)).sum())} not finite")
                    iters = max(1, min(50, math.ceil(2.0 / max(t1, 1e-3))))  # ~2 ms per measurement
                    ms = dev.time_ms(lambda: [launch() for _ in range(iters)], reps)
                    g = [iters * flop / t / 1e6 for t in ms]
                    results.setdefault((name, bs), {})[nb] = Point(nb, float(np.median(g)), min(g), max(g), reps,
                                                                   {"ok": ok, "iters": iters})
                done += 1
                ctx.progress(done, total, f"{bs}x{bs}, {nb} blocks/SM")
    finally:
        dev.free(a_d), dev.free(b_d), dev.free(c_d)
    _report_async(ctx, results, bpsm, sms, k, reps)


def _report_async(ctx: BenchContext, results: dict[tuple[str, int], dict[int, Point]], bpsm: list[int], sms: int,
                  k: int, reps: int) -> None:
    how = (f"C = A x B fp32, K={k}, grid = {sms} x blocks/SM tiles of bs x bs (one element per thread), "
           f"GFLOP/s by CUDA events, median of {reps}")
    for bs in BLOCK_SIZES:
        for name in VARIANTS:
            pts = [results[(name, bs)][nb] for nb in bpsm]
            ctx.series(name, "blocks per SM", "", "throughput", "GFLOP/s", pts, plot="logx",
                       figure=f"async_copy_{bs}x{bs}", block=f"{bs}x{bs}")
        sync = {nb: p.y for nb, p in results[("SyncShare", bs)].items()}
        ok = all(p.extra["ok"] for name in ("SyncShare", "AsyncPipe") for p in results[(name, bs)].values())
        for name in ("AsyncPipe", "AsyncPipe-8B", "AsyncPipe-16B"):
            sp = speedups(sync, {nb: p.y for nb, p in results[(name, bs)].items()})
            ctx.series(f"{name} / SyncShare", "blocks per SM", "", "speedup", "ratio",
                       [Point(nb, v) for nb, v in sp.items()], plot="logx", figure="async_copy_speedup", block=f"{bs}x{bs}")
            if name != "AsyncPipe":
                continue
            best, at = best_speedup(sp)
            ctx.figure(f"async_copy.asyncpipe_speedup_{bs}x{bs}", round(best, 4), "ratio", "derived",
                       f"best case over blocks/SM of AsyncPipe (2-stage cp.async.ca, 4 B per copy) / SyncShare; {how}",
                       (min(sp.values()), max(sp.values())), "ok" if ok else "failed", note=f"at {at} blocks/SM")
            paper_pts = {nb: v for nb, v in sp.items() if nb in PAPER_BPSM}
            ctx.figure(f"async_copy.asyncpipe_mean_gain_{bs}x{bs}_pct", round(mean_gain_pct(paper_pts), 2), "%",
                       "derived", f"mean of (AsyncPipe / SyncShare - 1) at {sorted(paper_pts)} blocks/SM (003's columns), "
                       "like 003's Perf column", check="ok" if ok else "failed")
        for name in VARIANTS:
            pts = list(results[(name, bs)].values())
            top = max(pts, key=lambda p: p.y)
            tag = name.lower().replace("-", "_")
            ctx.figure(f"async_copy.{tag}.{bs}x{bs}.peak_gflops", top.y, "GFLOP/s", "measured",
                       f"best over blocks/SM; {how}", (top.y_min, top.y_max),
                       "ok" if all(p.extra["ok"] for p in pts) else "failed", note=f"at {int(top.x)} blocks/SM")
