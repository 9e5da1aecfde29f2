"""Every benchmark kernel compiles for sm_90a and contains the instructions it must (CPU only)."""

import pytest

from gpudissect.bench.registry import load_all
from gpudissect.sass.disasm import find_tool
from gpudissect.sasscheck import check_spec
from helpers import missing_sass

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed"),
]  # compiles and disassembles: the slow tier

SPECS = {spec.name: spec for b in load_all().values() for spec in b.kernels}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_required_sass(name):
    funcs, checks = check_spec(SPECS[name], "sm_90a")
    assert checks, f"{name} declares no required SASS"
    missing = missing_sass(checks)
    assert not missing, f"{name}: missing {missing}"


def test_cache_ops_emit_distinct_loads():
    """The .cg chain really bypasses L1 (STRONG.GPU) and .ca does not."""
    ca, _ = check_spec(SPECS["memory_pchase.cu[ca]"])
    cg, _ = check_spec(SPECS["memory_pchase.cu[cg]"])
    assert "STRONG.SM" in ca["pchase"] and "STRONG.GPU" not in ca["pchase"]
    assert "STRONG.GPU" in cg["pchase"] and "STRONG.SM" not in cg["pchase"]


def test_fine_chase_orders_clock_after_use():
    """Per-access timing is only right if the second clock read follows a use of the loaded value."""
    funcs, _ = check_spec(SPECS["memory_pchase.cu[cg]"])
    lines = funcs["fine_pchase"].splitlines()
    idx = [i for i, line in enumerate(lines) if "LDG.E.64.STRONG.GPU" in line]
    timed = [i for i in idx if any("SR_CLOCKLO" in line for line in lines[i + 1 : i + 4])]
    assert timed, "no timed load found"
    for i in timed:
        reg = lines[i].split()[2].rstrip(",")
        window = lines[i + 1 : i + 4]
        use = next(k for k, line in enumerate(window) if reg in line)
        clock = next(k for k, line in enumerate(window) if "SR_CLOCKLO" in line)
        assert use < clock


def test_missing_pattern_is_reported():
    from gpudissect.bench.registry import KernelSpec

    spec = KernelSpec("memory_bank.cu", {"bank_u32": [r"HGMMA"]})
    _, checks = check_spec(spec)
    assert checks and not checks[0].found
