"""bench/shared.py across GPU families (CPU only): family_has and by_family, the SASS the pointer-chase builds
declare per family, and that the suites declaring SASS per family leave Hopper's `required` as it was."""

from __future__ import annotations

import pytest

from gpudissect.bench.registry import load_all
from gpudissect.bench.shared import FAMILIES, PCHASE, by_family, family_has
from gpudissect.capability import CI_ARCHES, Needs, Target


def test_families_run_from_volta_to_blackwell():
    assert FAMILIES[0] == "volta" and FAMILIES[-1] == "blackwell-consumer"
    assert {Target.parse(a).family for a in CI_ARCHES} == set(FAMILIES)


def test_family_has_refuses_a_need_that_splits_a_family():
    assert family_has(Needs(features=("tma",)), "blackwell-consumer")
    assert not family_has(Needs(min_cc=(8, 0)), "turing")
    with pytest.raises(ValueError, match="ampere"):
        family_has(Needs(min_cc=(8, 6)), "ampere")


def test_by_family_keeps_only_what_differs_from_hopper():
    got = by_family(lambda fam: {"f": ["A" if fam in ("volta", "turing") else "B"]})
    assert got == {"volta": {"f": ["A"]}, "turing": {"f": ["A"]}}


@pytest.mark.parametrize("suite", ["memory", "cache", "atomics", "link"])
def test_hopper_keeps_its_required_sass(suite):
    """`required` is the Hopper truth: by_family never declares other patterns for the hopper family."""
    specs = [s for b in load_all().values() if b.suite == suite for s in b.kernels]
    assert specs
    for spec in specs:
        assert "hopper" not in spec.required_by_family, spec.name
        assert spec.required_for(Target(9, 0)) is spec.required


def test_pchase_sass_follows_each_familys_mnemonics():
    ca, default = PCHASE["ca"], PCHASE["default"]
    assert ca.required_for(Target(7, 5))["pchase"][0] == r"LDG\.E\.64\.STRONG\.CTA"  # .ca scope before sm_80
    assert ca.required_for(Target(8, 0))["pchase"][0] == r"LDG\.E\.64\.STRONG\.SM"
    assert default.required_for(Target(7, 0))["pchase"][0] == r"LDG\.E\.64\.SYS\s"
    assert ca.required_for(Target(10, 0)) is ca.required  # Blackwell reads like Hopper
    hop = {a: ca.required_for(Target.parse(a))["smem_ichase"][1] for a in ("sm_70", "sm_75", "sm_86", "sm_120a")}
    assert hop["sm_70"].startswith(r"(IMAD\.SHL\.U32")  # Volta: a shift before each LDS.U
    assert hop["sm_75"] == r"LDS\.U R\d+, \[R\d+\.X4\]" and hop["sm_86"] == r"LDS R\d+, \[R\d+\.X4\]"
    assert hop["sm_120a"].startswith("(LEA")
