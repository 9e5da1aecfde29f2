"""device/tensormap.py on the CPU: the arguments of cuTensorMapEncodeTiled as plain values (the TMA
benchmarks' maps and our GEMM's), the names it accepts, and the 128 bytes of an encoded map."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from gpudissect.device.tensormap import ELEMENT_BYTES, TiledArguments, tensor_map_bytes, tiled_arguments


def test_a_tma_benchmark_map_is_plain_tiled():
    a = tiled_arguments("FLOAT32", 0x1000, (8192, 96), (8192 * 4,), (64, 32))
    assert a == TiledArguments(
        "FLOAT32", 2, 0x1000, (8192, 96), (32768,), (64, 32), (1, 1), "NONE", "NONE", "NONE", "NONE"
    )


def test_a_gemm_map_swizzles_and_may_promote():
    # bf16 A of 512 x 1024 (rows x cols), boxes of 64 columns (128 bytes) x 128 rows
    a = tiled_arguments("BFLOAT16", 0x2000, (1024, 512), (2048,), (64, 128), swizzle="128B", l2_promotion="L2_256B")
    assert (a.rank, a.dims, a.strides, a.box, a.element_strides) == (2, (1024, 512), (2048,), (64, 128), (1, 1))
    assert (a.swizzle, a.l2_promotion, a.interleave, a.oob_fill) == ("128B", "L2_256B", "NONE", "NONE")


@pytest.mark.parametrize("n, dtype, stride", [(1 << 20, "INT64", 8 << 20), (10, "INT64", 80), (6, "FLOAT32", 32)])
def test_a_rank_1_map_passes_one_stride_the_driver_ignores(n, dtype, stride):
    """The driver rejects the NULL array an empty stride list becomes: one entry, the tensor's bytes
    rounded up to 16."""
    a = tiled_arguments(dtype, 0, (n,), (), (2,))
    assert a.strides == (stride,) and stride % 16 == 0 and stride >= n * ELEMENT_BYTES[dtype]


@pytest.mark.parametrize(
    "kwargs, msg",
    [
        ({"data_type": "FLOAT8"}, r"data type 'FLOAT8'; valid: UINT8, .*BFLOAT16"),
        ({"swizzle": "256B"}, r"swizzle '256B'; valid: NONE, 32B, 64B, 128B"),
        ({"l2_promotion": "L2_512B"}, r"L2 promotion 'L2_512B'; valid: NONE, L2_64B, L2_128B, L2_256B"),
        ({"strides": ()}, r"rank 2 needs 2 box sizes and 1 strides"),
        ({"box": (16,)}, r"rank 2 needs 2 box sizes"),
    ],
)
def test_bad_arguments_never_reach_the_driver(kwargs, msg):
    args = {"data_type": "FLOAT32", "address": 0, "dims": (64, 64), "strides": (256,), "box": (16, 16)} | kwargs
    with pytest.raises(ValueError, match=msg):
        tiled_arguments(**args)


def test_tensor_map_bytes_are_the_opaque_words_in_memory_order():
    from cuda.bindings import driver as drv

    tmap = drv.CUtensorMap()
    words = [(i * 0x0101010101010101 + 7) & ((1 << 64) - 1) for i in range(16)]
    tmap.opaque = words
    raw = tensor_map_bytes(tmap)
    assert len(raw) == 128
    assert raw == ctypes.string_at(tmap.getPtr(), 128)  # what the driver wrote is what we pass
    assert np.frombuffer(raw, "<u8").tolist() == words
