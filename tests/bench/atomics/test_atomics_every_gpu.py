"""The atomics suite on every GPU from Volta to Blackwell: what `plan` runs per target, the SASS declared per
family (RED before sm_90, REDG from it) and, compiled and disassembled, that every target's build holds it, with
no compiler-side warp aggregation (CPU only)."""

from __future__ import annotations

import re

import pytest

from gpudissect.bench.atomics.spec import ATOMICS
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import load_all
from gpudissect.capability import CI_ARCHES, Target
from helpers import missing_sass, skip_unless_readable


@pytest.mark.parametrize("arch", CI_ARCHES)
def test_the_atomics_suite_runs_on_every_gpu(arch):
    p = {e.bench: e for e in plan([b for b in load_all().values() if b.suite == "atomics"], Target.parse(arch))}
    assert {b: (e.status, e.reason, e.variants) for b, e in p.items()} == {
        "atomic_latency": ("run", "", ["atomics.cu"]),
        "atomic_throughput": ("run", "", ["atomics.cu"]),
    }
    assert not any(e.skipped_variants for e in p.values())


@pytest.mark.parametrize("arch", CI_ARCHES)
def test_a_reduction_prints_as_red_before_sm_90(arch):
    t = Target.parse(arch)
    req = ATOMICS.required_for(t)
    red = "RED" if t.cc < (9, 0) else "REDG"
    assert req["red_contend_u32"][0] == rf"{red}\.E\.ADD\.STRONG\.GPU" and req["red_ld_global"][0].startswith(red)
    # every family: the float add on shared memory is a CAS retry loop (no native ATOMS float add)
    assert req["lat_shared_add_f32"][0] == r"ATOMS\.CAST\.SPIN"


@pytest.mark.parametrize("arch", [a for a in CI_ARCHES if a != "sm_90a"])  # Hopper: test_atomics.py
@pytest.mark.sass
@pytest.mark.slow  # every variant on every arch: the nightly tier (tests/bench/test_every_arch.py in CI)
def test_every_gpus_atomics_build_holds_its_family_sass(arch):
    from gpudissect.sasscheck import check_spec

    skip_unless_readable(arch)
    funcs, checks = check_spec(ATOMICS, arch)
    missing = missing_sass(checks)
    assert checks and not missing, missing
    # nothing aggregates the chains across the warp, Blackwell's probe chain included (the per-lane address
    # atomics.cu gives it there); a never-executed @!PT filler (Volta) is no aggregation
    live = "\n".join(line for line in funcs["probe_lines"].splitlines() if "@!PT " not in line)
    assert not re.search(r"\b(VOTEU?|U?POPC|SHFL)\b", live)
