"""The link suite on every GPU from Volta to Blackwell: what `plan` runs per target and, compiled and
disassembled, that link.cu holds its SASS on each (CPU only). Multi-GPU benchmarks run on any target and skip
at run time where one GPU is all there is (test_link.py)."""

from __future__ import annotations

import pytest

from gpudissect.bench.link.rig import LINK
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import load_all
from gpudissect.capability import CI_ARCHES, Target
from gpudissect.sass.disasm import find_tool
from helpers import missing_sass

BENCHES = ["host_device_ce", "host_device_sm", "host_device_latency", "p2p_matrix", "nccl_collectives"]


@pytest.mark.parametrize("arch", CI_ARCHES)
def test_the_link_suite_runs_on_every_gpu(arch):
    p = plan([b for b in load_all().values() if b.suite == "link"], Target.parse(arch))
    assert [(e.bench, e.status, e.reason, e.variants) for e in p] == [(b, "run", "", ["link.cu"]) for b in BENCHES]
    assert not any(e.skipped_variants for e in p)


@pytest.mark.parametrize("arch", [a for a in CI_ARCHES if a != "sm_90a"])  # Hopper: test_required_sass.py
@pytest.mark.sass
@pytest.mark.slow  # every variant on every arch: the nightly tier (tests/bench/test_every_arch.py in CI)
def test_link_build_holds_its_sass_on_every_gpu(arch):
    from gpudissect.device.compiler import unsupported_why
    from gpudissect.sass.disasm import unreadable_why
    from gpudissect.sasscheck import check_spec

    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    if why := unsupported_why(arch) or unreadable_why(arch):
        pytest.skip(why)
    _, checks = check_spec(LINK, arch)
    missing = missing_sass(checks)
    assert checks and not missing, missing
