"""Control-field discovery, decoding and the consistency check (CPU only)."""

from __future__ import annotations

import dataclasses

import pytest

from gpudissect.sass.disasm import find_tool

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(find_tool("nvdisasm") is None, reason="nvdisasm not installed"),
]  # compiles and disassembles: the slow tier

from gpudissect.device.compiler import compile_cubin  # noqa: E402
from gpudissect.sass.control import (  # noqa: E402
    JIA_WIDTHS,
    NO_BARRIER,
    PROBE_SOURCE,
    barrier_pairs,
    check_consistency,
    default_layout,
    latency_key,
    read,
    written,
)
from gpudissect.sass.corpus import cubin_functions  # noqa: E402
from gpudissect.sass.text import parse  # noqa: E402


@pytest.fixture(scope="module")
def probe():
    return cubin_functions("probe", compile_cubin(PROBE_SOURCE, "isa_probe.cu", "sm_90a"))


def test_layout_is_jias_21_bits_below_two_unused_top_bits():
    lay = default_layout()
    assert lay.span == (128 - 2 - 21, 128 - 3)  # Jia §2.1: 2 zero MSBs, then one 21-bit section
    assert [lay.fields[n][1] for n, _ in JIA_WIDTHS] == [w for _, w in JIA_WIDTHS]
    assert {126, 127} <= set(lay.unused)


def test_decode_set_round_trip():
    lay = default_layout()
    w = 0
    for name, v in (("stall", 11), ("yield", 1), ("wbar", 3), ("rbar", 5), ("wait", 0b100101), ("reuse", 0b0110)):
        w = lay.set(w, name, v)
    c = lay.decode(w)
    assert (c.stall, c.yield_, c.wbar, c.rbar, c.wait, c.reuse) == (11, 1, 3, 5, 0b100101, 0b0110)
    with pytest.raises(ValueError):
        lay.set(w, "stall", 16)
    assert c.short() == "W:0-2--5 R:5 B:3 Y:1 S:11 U:-rr-"


def test_loads_set_write_barriers_and_alu_ops_do_not(probe):
    lay = default_layout()
    fn = probe[0]
    kinds = {}
    for t, w in zip(fn.texts, fn.words):
        if t:
            kinds.setdefault(parse(t).opcode, set()).add(lay.decode(w).wbar)
    assert NO_BARRIER not in kinds["LDG"] and kinds["FFMA"] == {NO_BARRIER}


def test_consistency_holds_on_compiler_code_and_catches_a_removed_wait(probe):
    lay = default_layout()
    res = check_consistency(probe, lay)
    assert res.barrier_pairs > 0 and res.barrier_ok == res.barrier_pairs
    fn = probe[0]
    i, j, ok, _ = next(p for p in barrier_pairs(fn, lay) if p[2] and "write" in p[3])
    words = list(fn.words)
    for k in range(i + 1, j + 1):  # clear every wait between producer and consumer
        words[k] = lay.set(words[k], "wait", 0)
    broken = dataclasses.replace(fn, words=tuple(words))
    assert not next(p for p in barrier_pairs(broken, lay) if p[0] == i)[2]


def test_register_sets_and_latency_keys():
    assert written(parse("LDG.E.64 R4, desc[UR4][R2.64]")) == {"R4", "R5"}
    assert read(parse("LDG.E.64 R4, desc[UR4][R2.64]")) == {"UR4", "R2", "R3"}
    assert written(parse("STG.E desc[UR4][R2.64], R7")) == set()
    assert read(parse("STG.E desc[UR4][R2.64], R7")) >= {"R2", "R3", "R7"}
    assert latency_key("IMAD.WIDE.U32")[0] == "isa.latency.imad_wide_u32_cycles"
    assert latency_key("IMAD.WIDE.U32")[-1] == "isa.latency.imad_cycles"


def test_control_listing_shows_fields_beside_instructions():
    from gpudissect.cli_isa import control_listing

    text = control_listing("isa_regbank")
    line = next(ln for ln in text.splitlines() if "FFMA" in ln)
    assert " S:" in line and " W:" in line and " Y:" in line
