"""The timing record: one layout in kernels/gpudissect.cuh, one parser in analysis/records.py."""

import re

import numpy as np

from gpudissect.analysis import records
from gpudissect.device.compiler import kernel_source


def test_header_and_parser_agree_on_the_layout():
    cuh = kernel_source("gpudissect.cuh")
    assert int(re.search(r"#define REC_WORDS (\d+)", cuh).group(1)) == records.REC
    body = re.search(r"void record\(u64\* r,[^)]*\) \{(.*?)\n\}", cuh, re.S).group(1)
    assert [int(i) for i in re.findall(r"r\[(\d)\]", body)] == list(range(records.REC))


def test_parse_spans_per_block_of_warps():
    # 2 blocks x 3 warps: (t0, t1, sm, g0, g1)
    raw = np.array(
        [
            [[10, 20, 4, 100, 110], [12, 25, 4, 101, 114], [11, 21, 4, 100, 112]],
            [[50, 90, 7, 200, 240], [55, 80, 7, 205, 230], [51, 99, 7, 201, 249]],
        ],
        np.uint64,
    ).ravel()
    r = records.parse(raw, 3)
    assert r.t0.shape == (2, 3)
    assert list(r.span_cycles) == [15, 49] and list(r.span_ns) == [14, 49]
    assert list(r.sm[:, 0]) == [4, 7]
    assert records.words(6) == raw.size


def test_every_kernel_that_times_warps_uses_the_shared_record():
    for f in ("memory_bandwidth.cu", "isa_native.cu", "tensor_mma.cu", "tensor_ldmatrix.cu"):
        src = kernel_source(f)
        assert "record(rec + REC_WORDS" in src or "record(rec, t0, t1, g0, g1)" in src, f
        assert not re.search(r"rec\[[^\]]*5[^\]]*\] = ", src), f"{f} writes the record by hand"
