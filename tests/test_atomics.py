"""Atomics: the host's expected final values and the SASS of every kernel (CPU only)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpudissect.bench.atomics import model, spec
from gpudissect.bench.atomics.model import split_lines
from gpudissect.reference.atomics import ATOMICS, published
from gpudissect.sass.disasm import find_tool
from gpudissect.sasscheck import check_spec

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def _kernel_semantics(op: str, steps: int) -> int:
    """The chains as written in atomics.cu, one lane, interpreted step by step."""
    word = 0xFFFFFFFF if op == "min" else 0
    o = 1 if op == "cas" else (0xFFFFFFFF if op == "min" else 0)
    for _ in range(steps):
        old = word
        if op == "cas":
            if word == o ^ 1:
                word = o
        elif op == "exch":
            word = o ^ 1
        elif op == "max":
            word = max(word, (o & 0) | 1)
        elif op == "min":
            word = min(word, (o & 0) | 1)
        else:
            word = word + 1
        o = old
    return word


@pytest.mark.parametrize("op", ["add_u32", "cas", "exch", "max", "min"])
@pytest.mark.parametrize("steps", [0, 1, 2, 3, 7, 1088])
def test_simulate_matches_kernel_semantics(op, steps):
    assert model.simulate(op, 1, steps) == _kernel_semantics(op, steps)


def test_simulate_contended_adds_and_rejects_contended_cas():
    assert model.simulate("add_f32", 32, 100) == 3200
    with pytest.raises(ValueError):
        model.simulate("cas", 2, 10)


def test_no_aggregation_pattern_fails_when_ptxas_aggregates():
    aggregated = "/*0000*/ VOTE.ANY R7, PT, PT\n/*0010*/ ATOMG.E.ADD.STRONG.GPU PT, R6, desc[UR4][R2.64], R9\n"
    plain = (
        "/*0000*/ LOP3.LUT R9, R6, 0x1, R5, 0xec, !PT\n/*0010*/ ATOMG.E.ADD.STRONG.GPU PT, R6, desc[UR4][R2.64], R9\n"
    )
    assert not re.search(spec._NO_AGG, aggregated, re.MULTILINE)
    assert re.search(spec._NO_AGG, plain, re.MULTILINE)


@needs_cuobjdump
def test_every_atomics_kernel_has_its_sass():
    funcs, checks = check_spec(spec.ATOMICS)
    missing = [(c.function, c.pattern) for c in checks if not c.found]
    assert not missing
    # every latency chain's timed loop holds exactly one atomic per iteration (no unrolled copies)
    for op in spec.OPS:
        body = funcs[f"lat_global_{op}"]
        lines = body.splitlines()
        clocks = [i for i, x in enumerate(lines) if "SR_CLOCKLO" in x]
        timed = lines[clocks[0] : clocks[1]]
        assert sum("ATOMG" in x for x in timed) == 1, op


def test_reference_values_transcribed():
    assert published("atom.shared.add_u32.latency_cycles", "V100")[0].value == 6
    assert published("atom.global.add_u32.contended_32_latency_cycles", "K80")[0].value == 488
    assert len(ATOMICS) == 2 * 5 * 6
    assert all(p.paper == "002" and p.table == "Table 4.2" for p in ATOMICS)


def test_split_lines_finds_near_and_far_modes():
    rng = np.random.default_rng(3)
    far = {i for i in range(64) if bin(i & 0b101101).count("1") % 2}
    per = [[(480.0 if i in far else 300.0) + float(e) for e in rng.normal(0, 0.5, 3)] for i in range(64)]
    near_i, far_i, nc, fc, thr = split_lines(per)
    assert near_i not in far and far_i in far
    assert abs(nc - 300) < 2 and abs(fc - 480) < 2 and thr < 20


def test_split_lines_reports_no_split_for_noise_alone():
    rng = np.random.default_rng(4)
    per = [[300.0 + float(e) for e in rng.normal(0, 0.5, 3)] for _ in range(64)]
    near_i, far_i, nc, fc, thr = split_lines(per)
    assert far_i is None and fc is None and abs(nc - 300) < 2
