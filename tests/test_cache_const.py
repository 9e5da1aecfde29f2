"""Constant-cache probes: chain layout, lane grouping, and the SASS of every path (CPU only)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpudissect.bench import cache_const as cc
from gpudissect.bench import icache_source as src
from gpudissect.device.sass import disassemble, find_tool
from gpudissect.errors import GpuDissectError
from gpudissect.sasscheck import check_spec

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def test_seq_chain_visits_every_element():
    words, n = cc.seq_chain(1024, 64)
    assert n == 16
    j, seen = 0, []
    for _ in range(n):
        seen.append(j)
        j = int(words[j])
    assert j == 0 and sorted(seen) == [i * 16 for i in range(16)]
    assert cc.chain_end(n, 64, 3, 20) == ((3 + 20) % 16) * 16


def test_seq_chain_rejects_bad_layouts():
    with pytest.raises(GpuDissectError):
        cc.seq_chain(1024, 6)
    with pytest.raises(GpuDissectError):
        cc.seq_chain(128 * 1024, 64)


@pytest.mark.parametrize("k", [1, 2, 5, 32])
def test_distinct_starts_give_k_addresses_every_step(k):
    n = 256
    starts = cc.distinct_starts(k, n)
    for step in range(3 * n):
        addrs = {(s + step) % n for s in starts}
        assert len(addrs) == k


@needs_cuobjdump
def test_const_chase_is_an_indexed_ldc_between_clocks():
    funcs, checks = check_spec(cc.CONST)
    assert all(c.found for c in checks)
    body = funcs["const_chase"]
    timed = src.timed_regions(body)
    assert any(any(re.search(cc._LDC_INDEXED, x) for x in r) for r in timed)
    assert "ULDC R" not in body and not re.search(r"ULDC UR\d+, c\[0x3\]", body)  # no uniform-path constant loads


@needs_cuobjdump
def test_const_thrash_keeps_every_ffma():
    for nt in (40, 1000):
        funcs = disassemble(src.build(src.const_source(nt), f"const_thrash_{nt}.cu", "sm_90a"))
        assert src.ffma_total(funcs["const_thrash"]) == nt


def test_words_fit_one_bank():
    assert cc.WORDS * 4 == 64 * 1024
    assert np.uint32(cc.WORDS - 1) == cc.WORDS - 1
