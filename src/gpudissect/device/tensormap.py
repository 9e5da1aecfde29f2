"""Tiled TMA tensor maps, encoded by the driver (cuTensorMapEncodeTiled), for the Hopper TMA benchmarks
(bench/hopper/tma/plans.py) and our GEMM (gemm/launch.py). What differs between them (element type, rank,
swizzle, L2 promotion) is a parameter; both use no interleave, unit element strides and zero out-of-bounds
fill. tiled_arguments() builds the call's arguments as plain values (CPU-tested); encode_tiled() makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GpuDissectError
from .driver import check_result, driver

# CUtensorMapDataType names (without the CU_TENSOR_MAP_DATA_TYPE_ prefix) and their element sizes
ELEMENT_BYTES = {
    "UINT8": 1,
    "UINT16": 2,
    "UINT32": 4,
    "INT32": 4,
    "UINT64": 8,
    "INT64": 8,
    "FLOAT16": 2,
    "FLOAT32": 4,
    "FLOAT64": 8,
    "BFLOAT16": 2,
}
SWIZZLES = ("NONE", "32B", "64B", "128B")  # CU_TENSOR_MAP_SWIZZLE_*
L2_PROMOTIONS = ("NONE", "L2_64B", "L2_128B", "L2_256B")  # CU_TENSOR_MAP_L2_PROMOTION_*
TENSOR_MAP_BYTES = 128


@dataclass(frozen=True)
class TiledArguments:
    """cuTensorMapEncodeTiled's arguments in order, enums by their member names."""

    data_type: str
    rank: int
    address: int
    dims: tuple[int, ...]  # elements, innermost first
    strides: tuple[int, ...]  # bytes, of dims 1..rank-1 (a rank-1 map: one entry, see tiled_arguments)
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: str
    swizzle: str
    l2_promotion: str
    oob_fill: str


def tiled_arguments(
    data_type: str,
    address: int,
    dims: Sequence[int],
    strides: Sequence[int],
    box: Sequence[int],
    swizzle: str = "NONE",
    l2_promotion: str = "NONE",
) -> TiledArguments:
    """The arguments of a tiled map of a `data_type` tensor (an ELEMENT_BYTES key) at `address` with
    `dims`, byte `strides` of dims 1..rank-1, and boxes of `box` elements. The limits of the map itself
    are the caller's to check (bench/hopper/tma/plans.py validate_tensor_map)."""
    if data_type not in ELEMENT_BYTES:
        raise ValueError(f"tensor map data type {data_type!r}; valid: {', '.join(ELEMENT_BYTES)}")
    if swizzle not in SWIZZLES:
        raise ValueError(f"tensor map swizzle {swizzle!r}; valid: {', '.join(SWIZZLES)}")
    if l2_promotion not in L2_PROMOTIONS:
        raise ValueError(f"tensor map L2 promotion {l2_promotion!r}; valid: {', '.join(L2_PROMOTIONS)}")
    dims, strides, box = tuple(int(d) for d in dims), tuple(int(s) for s in strides), tuple(int(b) for b in box)
    rank = len(dims)
    if len(box) != rank or len(strides) != rank - 1:
        raise ValueError(f"tensor map of rank {rank} needs {rank} box sizes and {rank - 1} strides: {box}, {strides}")
    if rank == 1:
        # A rank-1 map has no strides, but an empty list reaches the driver as a NULL array, which it
        # rejects (CUDA_ERROR_INVALID_VALUE on driver 580); it reads none of a one-entry list.
        strides = (-(-dims[0] * ELEMENT_BYTES[data_type] // 16) * 16,)
    return TiledArguments(
        data_type, rank, int(address), dims, strides, box, (1,) * rank, "NONE", swizzle, l2_promotion, "NONE"
    )


def encode_tiled(a: TiledArguments, what: str | None = None) -> bytes:
    """The 128-byte CUtensorMap of `a` (tiled_arguments(...)), encoded by the driver; CudaError naming
    `what` (default: the type and dims) where the driver refuses it."""
    drv = driver()
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    tmap = check_result(
        drv.cuTensorMapEncodeTiled(
            getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{a.data_type}"),
            a.rank,
            a.address,
            [u64(d) for d in a.dims],
            [u64(s) for s in a.strides],
            [u32(b) for b in a.box],
            [u32(e) for e in a.element_strides],
            getattr(drv.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{a.interleave}"),
            getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{a.swizzle}"),
            getattr(drv.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{a.l2_promotion}"),
            getattr(drv.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{a.oob_fill}"),
        ),
        f"cuTensorMapEncodeTiled {what or f'{a.data_type} {a.dims}'}",
    )
    return tensor_map_bytes(tmap)


def tensor_map_bytes(tmap: Any) -> bytes:
    """The 128 bytes of a cuda.bindings CUtensorMap (its `opaque` array of 16 x 64-bit words)."""
    words = [int(w) for w in tmap.opaque]
    if len(words) * 8 != TENSOR_MAP_BYTES:
        raise GpuDissectError(f"CUtensorMap has {len(words)} words, expected 16")
    return np.array(words, dtype="<u8").tobytes()
