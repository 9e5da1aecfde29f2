"""The model with the sm_90 presets reproduces recorded H100 outputs whose K spans several blocks.

tests/data/numerics_multiblock_vectors_h100.npz holds, per case, A/B (input bit patterns, (n, K)), C and the
hardware's D, recorded by tc_model_agreement (disagreements first, then a random sample):
- "mma.m16n8k32.<acc>.<fp8>.<fp8>": one fp8 mma.sync of K = 32, two blocks (emulated on sm_90);
- "chain4:<instruction>": four instructions in sequence, each taking the previous D as C (K = 4 k).
A chain is modelled as presets.json says between instructions (its `_chain` note: D rounded into the
accumulator format, which model.dot does for K longer than the instruction's k).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpudissect.numerics import presets
from gpudissect.numerics.model import dot
from helpers import DATA

VECTORS = DATA / "numerics_multiblock_vectors_h100.npz"
_DATA = np.load(VECTORS)
CASES = sorted({k.rsplit(".", 1)[0] for k in _DATA.files})


def _instruction(case: str) -> tuple[str, int]:
    name, _, instr = case.rpartition(":")
    return instr, int(name[len("chain") :]) if name else 1


def test_vectors_cover_every_multi_block_case() -> None:
    chains = [c for c in CASES if c.startswith("chain")]
    single = [c for c in CASES if not c.startswith("chain")]
    assert len(chains) == 12 and len(single) == 4
    raw = json.loads(presets.PRESETS_PATH.read_text())["sm_90"]
    for case in CASES:
        instr, n = _instruction(case)
        assert presets.is_verified("sm_90", instr)
        if n > 1:  # the probes' finding between chained instructions is what the model assumes
            assert raw[instr]["_chain"].startswith("separate"), raw[instr]["_chain"]
        else:
            assert presets.model("sm_90", instr).block_size < presets.model("sm_90", instr).k


@pytest.mark.parametrize("case", CASES)
def test_preset_reproduces_hardware(case: str) -> None:
    instr, n = _instruction(case)
    params = presets.model("sm_90", instr)
    a, b, c, d = (_DATA[f"{case}.{x}"] for x in "abcd")
    assert a.shape[1] == params.k * n
    got = dot(params, a, b, c)
    bad = np.nonzero(got.astype(np.int64) != d.astype(np.int64))[0]
    detail = ", ".join(f"row {i}: hw 0x{int(d[i]):x} model 0x{int(got[i]):x}" for i in bad[:5])
    assert bad.size == 0, f"{case}: {bad.size}/{d.size} rows disagree ({detail})"
