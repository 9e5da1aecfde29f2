"""Encoding discovery by bit flipping (CPU only, nvdisasm from the pip wheel)."""

from __future__ import annotations

import pytest

from gpudissect.sass.disasm import NOP_WORD, disassemble_raw, find_tool

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(find_tool("nvdisasm") is None, reason="nvdisasm not installed"),
]  # compiles and disassembles: the slow tier

from gpudissect.device.compiler import compile_cubin  # noqa: E402
from gpudissect.sass.control import PROBE_SOURCE  # noqa: E402
from gpudissect.sass.corpus import cubin_functions  # noqa: E402
from gpudissect.sass.encoding import (  # noqa: E402
    classify,
    discover_many,
    fields_table,
    relative_text,
    representative_words,
)
from gpudissect.sass.text import parse, split_operands  # noqa: E402

# Jia et al. §2 (Volta): "FFMA R140, R11, R4, R142;  /* 0x000000040b8c7223 */ /* 0x000fc4000000008e */"
JIA_FFMA = (0x000FC4000000008E << 64) | 0x000000040B8C7223


@pytest.fixture(scope="module")
def encs():
    fns = cubin_functions("probe", compile_cubin(PROBE_SOURCE, "isa_probe.cu", "sm_90a"))
    words = representative_words(fns)
    return discover_many({k: words[k] for k in ("FFMA", "IMAD", "LDG", "BRA")})


def test_raw_disassembly_marks_illegal_words_and_keeps_the_rest():
    texts = disassemble_raw([NOP_WORD, JIA_FFMA ^ (1 << 7), JIA_FFMA])
    assert texts[0] == "NOP"
    assert texts[1] is None  # nvdisasm rejects it; the words around it still come back
    assert texts[2] == "FFMA R140, R11, R4, R142"


def test_ffma_register_fields_are_binary_register_numbers(encs):
    e = encs["FFMA"]
    ops = {i: e.bits_of(f"op{i}") for i in range(4)}
    for i, bits in ops.items():
        assert len(bits) == 8 and bits == list(range(bits[0], bits[0] + 8)), (i, bits)
        assert e.register_checked[f"op{i}"]
    # the discovered fields decode the paper's Volta word to the registers the paper prints
    got = [(JIA_FFMA >> ops[i][0]) & 0xFF for i in range(4)]
    assert got == [140, 11, 4, 142]


def test_predicate_and_opcode_sit_in_the_low_bits(encs):
    for name in ("FFMA", "IMAD", "LDG"):
        e = encs[name]
        pred = e.bits_of("predicate")
        assert len(pred) == 4, name  # Jia: negation flag + 3-bit predicate index
        assert all(b < min(pred) for b in e.opcode_bits if b < 16), name
        assert 10 <= len([b for b in e.opcode_bits if b < 12]) <= 13, name  # Jia: opcodes of 10..13 bits


def test_branch_targets_compare_relative_to_the_word(encs):
    assert relative_text("BRA 0x230", 2) == "BRA .+0x210"
    assert relative_text("BRA 0x230", 2, absolute=True) == "BRA 0x210"
    e = encs["BRA"]
    # the control bits no longer look like part of the target
    assert not any(lab.startswith("op") for lab in e.labels[105:126])


def test_classify_and_parse():
    a = parse("@!P0 FFMA R1, R2.reuse, -R3, c[0x0][0x10]")
    assert a.guard == "@!P0" and a.opcode == "FFMA" and a.operands[1] == "R2.reuse"
    assert classify(parse("FFMA R1, R2, R3, R4"), parse("FFMA R1, R2.reuse, R3, R4")) == ("reuse1", "reuse")
    assert classify(parse("FFMA R1, R2, R3, R4"), parse("FFMA R1, R2, -R3, R4")) == ("op2.mod", "operand-modifier")
    assert classify(parse("FFMA R1, R2, R3, R4"), None) == ("illegal", "illegal")
    assert split_operands("R1, desc[UR4][R2.64+0x4], {R4, R5}") == ["R1", "desc[UR4][R2.64+0x4]", "{R4, R5}"]


def test_fields_table_names_every_bit_once(encs):
    rows = fields_table(encs["IMAD"])
    assert sum(int(r["width"]) for r in rows) == 128
