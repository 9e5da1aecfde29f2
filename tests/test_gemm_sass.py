"""Every rung of kernels/gemm.cu, bf16 and fp16, compiles for sm_90a with the SASS its technique
implies (CPU only): HMMA/LDSM/LDGSTS for rung 1; HGMMA from descriptors, UTMALDG and SYNCS barriers
for 2+; USETMAXREG for the warp-specialised rungs; no local-memory spills anywhere."""

import re

import pytest

from gpudissect.device.sass import find_tool
from gpudissect.gemm.variants import RUNGS
from gpudissect.sasscheck import check_spec

pytestmark = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")

CASES = [(r, dt) for r in RUNGS for dt in ("bf16", "fp16")]


@pytest.fixture(scope="module")
def sass():
    out = {}
    for r, dt in CASES:
        funcs, checks = check_spec(RUNGS[r].spec(dt))
        out[(r, dt)] = (funcs[RUNGS[r].function], checks)
    return out


@pytest.mark.parametrize("rung,dtype", CASES)
def test_required_sass(sass, rung, dtype):
    _, checks = sass[(rung, dtype)]
    missing = [c.pattern for c in checks if not c.found]
    assert checks and not missing, f"rung {rung} {dtype}: missing {missing}"


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_paths_do_not_mix(sass, dtype):
    r1, _ = sass[(1, dtype)]
    assert "HGMMA" not in r1 and "UTMALDG" not in r1
    for r in (2, 3, 4, 5):
        text, _ = sass[(r, dtype)]
        assert not re.search(r"\bHMMA\b", text) and "LDGSTS" not in text


def test_wgmma_counts_per_kblock(sass):
    """Rung 2: 4 k16 steps x 2 m64 slices; rungs 3-4: 4 k16 steps of m64n256 per consumer warpgroup."""
    assert len(re.findall(r"HGMMA\.64x128x16", sass[(2, "bf16")][0])) == 8
    for r in (3, 4, 5):
        assert len(re.findall(r"HGMMA\.64x256x16", sass[(r, "bf16")][0])) == 4


def test_only_the_cluster_rung_multicasts(sass):
    assert "MULTICAST" in sass[(5, "bf16")][0] and "UCGABAR" in sass[(5, "bf16")][0]
    for r in (2, 3, 4):
        assert "MULTICAST" not in sass[(r, "bf16")][0]
    # the remote stage release is a plain arrive: no GPU-scope fence in the k-loop
    text = sass[(5, "bf16")][0]
    loop = text[text.find("DEPBAR.LE gsb0, 0x1"):text.find("DEPBAR.LE gsb0, 0x0")]
    assert "SYNCS.ARRIVE.TRANS64.RED" in loop and "MEMBAR.ALL.GPU" not in loop


def test_rung1_mma_and_ldmatrix_counts(sass):
    """Per 32-wide k-block a 64x64 warp tile takes 2 x (4 x 8) m16n8k16 and 2 x (4 + 4) ldmatrix.x4."""
    text = sass[(1, "bf16")][0]
    assert len(re.findall(r"HMMA\.16816", text)) == 64
    assert len(re.findall(r"LDSM\.16\.M88\.4", text)) == 16
