"""Constant-cache probes: chain layout, lane grouping, and the SASS of every path (CPU only)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpudissect.bench.cache import const as cc
from gpudissect.bench.cache import sources as src
from gpudissect.errors import GpuDissectError
from gpudissect.sass.disasm import disassemble, find_tool
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


def test_sm90_ptxas_keeps_no_constant_bank_operand_in_ffma():
    """Why the immediate-operand probe is patched: ptxas for sm_90 loads every fixed-offset constant into a
    uniform register (ULDC) and never leaves c[0x3][imm] in the FFMA, while for sm_80 it does."""
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    offsets = [i * 64 for i in range(64)]
    source = src.const_imm_source(offsets)
    sm90 = disassemble(src.build(source, "const_imm_probe.cu", "sm_90a"))["const_imm"]
    sm80 = disassemble(src.build(source, "const_imm_probe.cu", "sm_80"))["const_imm"]
    assert not re.search(r"FFMA [^\n]*c\[0x3\]", sm90) and len(re.findall(r"ULDC UR\d+, c\[0x3\]", sm90)) == 64
    assert len(re.findall(r"FFMA [^\n]*c\[0x3\]", sm80)) == 64


@needs_cuobjdump
@pytest.mark.parametrize("level", ["l1", "l1_5", "l2"])
def test_immediate_operand_patch_reads_as_asked(level):
    cubin, offsets = cc.imm_build(level, "sm_90a", True)
    sass = disassemble(cubin)["const_imm"]
    assert src.imm_patch_problems(sass, offsets) == []
    assert len(re.findall(r"FFMA R\d+, R\d+, c\[0x3\]", sass)) == len(offsets)
    assert "ULDC" not in "".join(line for line in sass.splitlines() if "c[0x3]" in line)


def test_immediate_operand_checker_rejects_unpatched_and_misordered_code():
    clock = "/*0000*/ CS2R R4, SR_CLOCKLO"
    good = [f"/*{16 * (i + 1):04x}*/ FFMA R0, R0, c[0x3][{hex(64 * i)}], R5" for i in range(4)]
    end = "/*0050*/ CS2R R6, SR_CLOCKLO"
    assert src.imm_patch_problems("\n".join([clock, *good, end]), [0, 64, 128, 192]) == []
    assert src.imm_patch_problems("\n".join([clock, *good, end]), [0, 128, 64, 192])
    ur = "\n".join([clock, "/*0010*/ ULDC UR6, c[0x3][0x0]", "/*0020*/ FFMA R0, R0, UR6, R5", end])
    assert src.imm_patch_problems(ur, [0])
