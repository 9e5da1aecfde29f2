"""analysis/regbank.py, the pure side of isa_regbank: the timed block and the register pool found in
disassembly text, the source triples to patch in, and the bank model on synthetic costs."""

from __future__ import annotations

import pytest

from gpudissect.analysis.regbank import (
    bank_count,
    bank_reads,
    choose_triple,
    class_medians,
    explained,
    max_share,
    plan_variants,
    pool_registers,
    reuse_model,
    timed_block,
)


def test_max_share_and_choose_triple():
    assert max_share((1, 3, 5), 2) == 3 and max_share((1, 3, 5), 4) == 2 and max_share((0, 1, 2), 2) == 2
    pool = [0, 2, 4, 5, 7, 9, 11]
    assert choose_triple((1, 1, 1), pool, 2) == (5, 7, 9)
    assert choose_triple((0, 0, 0), [0, 2], 2) is None  # needs three distinct registers


def test_bank_reads_counts_only_slots_not_cached():
    assert bank_reads((0, 2, 4), 0, 2) == 3 and bank_reads((0, 2, 4), 0b001, 2) == 2
    assert bank_reads((0, 1, 3), 0b100, 2) == 1 and bank_reads((0, 1, 3), 0b111, 2) == 0


def test_reuse_model_is_one_issue_slot_at_least():
    assert reuse_model((0, 2, 4), 0, 2, 1.0) == 3.0
    assert reuse_model((0, 2, 4), 0b111, 2, 1.0) == 1.0  # nothing read from the banks
    assert reuse_model((0, 1, 3), 0, 2, 0.25) == 1.0


def test_bank_count_finds_the_modulus_that_explains_the_cost():
    regs = [(a, b, c) for a in range(8) for b in range(8, 16) for c in range(16, 24)]
    cost = [1.0 + (max_share(r, 4) - 1) * 0.5 for r in regs]  # a 4-bank machine, 0.5 cycles per extra source
    m, r2 = bank_count(cost, regs, noise=0.01)
    assert m == 4 and r2[4] > 0.99 and r2[2] < 0.9
    flat, _ = bank_count([1.0] * len(regs), regs, noise=0.01)
    assert flat is None
    assert explained([1.0, 2.0], [(0, 2, 4), (0, 1, 2)], 2) == pytest.approx(1.0)
    assert class_medians(cost, regs, 4) == {1: 1.0, 2: 1.5, 3: 2.0}


def test_plan_variants_covers_every_group():
    regs = list(range(8, 32))  # 24 pool registers, every residue mod 8 three times
    todo, (ra, rb) = plan_variants(regs, 4)
    groups = {g for g, _, _ in todo}
    assert groups == {"sweep", "grid", "reuse", "mask"}
    assert ra % 8 == rb % 8 == 1 and ra != rb
    assert len([1 for g, _, _ in todo if g == "grid"]) == 4**3  # one triple per residue combination
    assert len([1 for g, _, _ in todo if g == "sweep"]) == len(regs) - 2
    assert {m for g, _, m in todo if g == "mask"} == set(range(8))
    assert all(m == 0b111 for g, _, m in todo if g == "reuse")
    assert all(len(set(t)) == 3 and set(t) <= set(regs) for _, t, _ in todo)


def test_timed_block_and_pool_from_text():
    texts = [
        "MOV R1, c[0x0][0x28]",
        "CS2R R4, SR_CLOCKLO",
        "FFMA R10, R2, R3, R10",
        None,
        "FFMA R11, R2, R3, R11",
        "CS2R R6, SR_CLOCKLO",
        "FFMA R12, R2, R3, R12",
        "STG.E desc[UR4][R8.64], R2",
        "STG.E desc[UR4][R8.64+0x4], R3",
        "STG.E desc[UR4][R9.64+0x4], R5",
    ]
    assert timed_block(texts) == [2, 4]
    assert timed_block(texts[:3]) == []  # one clock read: no timed block
    assert pool_registers(texts, 4, 2) == {2: 0, 3: 1}
    assert pool_registers(texts, 4, 3) == {}


@pytest.mark.parametrize(
    "store",
    [
        "STG.E desc[UR4][R8.64{}], R{}",  # sm_90+
        "STG.E [R8.64{}], R{}",  # sm_80, sm_89
        "STG.E.SYS [R8{}], R{}",  # sm_70, sm_75
    ],
)
def test_pool_from_every_store_form(store):
    texts = ["CS2R R4, SR_CLOCKLO", "FFMA R12, R2, R3, R12", "CS2R R6, SR_CLOCKLO"]
    texts += [store.format(f"+{hex(4 * i)}" if i else "", 20 + i) for i in range(3)]
    texts += ["STG.E.64.SYS [R10], R2"]  # the timing words: another group
    assert pool_registers(texts, 1, 3) == {20: 0, 21: 1, 22: 2}
