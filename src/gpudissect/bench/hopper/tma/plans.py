"""Tensor maps (parameters, validity, encoding through device/tensormap.py) and copy plans: what each
throughput configuration moves, and what the CTAs must find.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ....device.tensormap import encode_tiled, tiled_arguments
from ....errors import GpuDissectError

# ---------------------------------------------------------------------------------------
# Tensor maps: parameters, validity, encoding
# ---------------------------------------------------------------------------------------
# element size and the data type's name in device/tensormap.py (the driver's CUtensorMapDataType)
DTYPES = {"float32": (4, "FLOAT32"), "int64": (8, "INT64")}
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
        raise GpuDissectError(
            f"tensor map: the inner box dimension is {inner} bytes ({tm.box[0]} x {tm.elsize} B), "
            "must be a multiple of 16 bytes"
        )
    for i, s in enumerate(tm.strides):
        if s % 16 or s >= 1 << 40:
            raise GpuDissectError(
                f"tensor map: global stride {i + 1} is {s} bytes, must be a multiple of 16 below 2^40"
            )
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
    return encode_tiled(tiled_arguments(DTYPES[tm.dtype][1], address, tm.dims, tm.strides, tm.box), what=str(tm))


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
    "bulk_16k": ("bulk",),
    "bulk": ("bulk",),
    "tensor1d": ("1d",),
    "tensor2d": ("2d", "2dp"),
    "tensor2d_strided": ("2d",),
    "tensor2d_packed": ("2dp",),
    "tensor3d": ("3d",),
    "shape16k": ("shape",),
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
    """Element coordinates of chunk c's first element, as the kernel computes them (hopper_tma.cu issue())."""
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
