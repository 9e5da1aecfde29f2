"""The model with the sm_90 presets reproduces the recorded H100 tensor-core outputs bit for bit.

tests/data/numerics_vectors_h100.npz holds, per instruction, A/B (input bit patterns, (n, k)), C and the
hardware's D (accumulator bit patterns), recorded by the "numerics" bench suite, disagreements first.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpudissect.numerics import presets
from gpudissect.numerics.model import dot
from helpers import DATA

VECTORS = DATA / "numerics_vectors_h100.npz"
_DATA = np.load(VECTORS)
INSTRUCTIONS = sorted({k.rsplit(".", 1)[0] for k in _DATA.files})


def test_vectors_cover_instructions() -> None:
    assert len(INSTRUCTIONS) == 12
    assert set(INSTRUCTIONS) <= set(presets.known_instructions("sm_90"))


@pytest.mark.parametrize("instruction", INSTRUCTIONS)
def test_preset_reproduces_hardware(instruction: str) -> None:
    params = presets.model("sm_90", instruction)
    assert presets.is_verified("sm_90", instruction)
    a, b, c, d = (_DATA[f"{instruction}.{x}"] for x in "abcd")
    got = dot(params, a, b, c)
    bad = np.nonzero(got.astype(np.int64) != d.astype(np.int64))[0]
    detail = ", ".join(f"row {i}: hw 0x{int(d[i]):x} model 0x{int(got[i]):x}" for i in bad[:5])
    assert bad.size == 0, f"{instruction}: {bad.size}/{d.size} rows disagree ({detail})"


class _PresetRunner:
    """'Hardware' = the model with the sm_90 preset: the probes must derive that preset back."""

    def __init__(self, params):
        self.params = params

    def supported(self, ins) -> bool:
        return True

    def dots(self, ins, a, b, c):
        return dot(self.params, a, b, c).astype(np.uint32)


@pytest.mark.parametrize("instruction", INSTRUCTIONS)
def test_probes_derive_the_preset_from_a_model_of_it(instruction: str) -> None:
    import dataclasses

    from gpudissect.bench import numerics as bench
    from gpudissect.bench.numerics.agreement import _tcparams

    ins = next(i for i in bench.INSTRS if i.ptx == instruction)
    want = presets.model("sm_90", instruction)
    found = _tcparams(bench.probe_instruction(_PresetRunner(want), ins).params())
    diff = {
        f.name: (getattr(found, f.name), getattr(want, f.name))
        for f in dataclasses.fields(want)
        if getattr(found, f.name) != getattr(want, f.name)
    }
    assert not diff, f"{instruction}: probes derive {diff} (found, preset)"
