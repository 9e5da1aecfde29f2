"""Every rung of kernels/gemm.cu, bf16 and fp16 (and fp8 e4m3 on rungs 6+), compiles for sm_90a with
the SASS its technique implies (CPU only): HMMA/LDSM/LDGSTS for rung 1; HGMMA from descriptors, UTMALDG
and SYNCS barriers for 2+; USETMAXREG for the warp-specialised rungs; STSM + UTMASTG epilogue and QGMMA
for fp8 on 6+; no local-memory spills anywhere (and none in the resource usage of rungs 6+)."""

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from gpudissect.device.compiler import compile_kernel_file
from gpudissect.gemm.variants import RUNGS, required_sass
from gpudissect.sass.disasm import find_tool
from gpudissect.sasscheck import check_spec

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed"),
]  # compiles and disassembles: the slow tier

CASES = [(r, dt) for r in RUNGS for dt in RUNGS[r].dtypes]
NEW = [(r, dt) for r, dt in CASES if r >= 6]
MAX_SMEM_PER_BLOCK = 232448  # sm_90 opt-in maximum (227 KiB)


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
    for r in (2, 3, 4, 5, 6, 7):
        text, _ = sass[(r, dtype)]
        assert not re.search(r"\bHMMA\b", text) and "LDGSTS" not in text and "QGMMA" not in text


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
    loop = text[text.find("DEPBAR.LE gsb0, 0x1") : text.find("DEPBAR.LE gsb0, 0x0")]
    assert "SYNCS.ARRIVE.TRANS64.RED" in loop and "MEMBAR.ALL.GPU" not in loop


def test_rung1_mma_and_ldmatrix_counts(sass):
    """Per 32-wide k-block a 64x64 warp tile takes 2 x (4 x 8) m16n8k16 and 2 x (4 + 4) ldmatrix.x4."""
    text = sass[(1, "bf16")][0]
    assert len(re.findall(r"HMMA\.16816", text)) == 64
    assert len(re.findall(r"LDSM\.16\.M88\.4", text)) == 16


def test_only_the_new_rungs_store_by_tma(sass):
    """Rungs 2-5 write C with 4-byte register stores; rungs 6+ through shared memory: per tile and
    consumer warpgroup 4 boxes of 64 x 64 (2 on rung 9's 128x128 tile), each 4 stmatrix.x4 per warp and
    one TMA store."""
    for r in (2, 3, 4, 5):
        text = sass[(r, "bf16")][0]
        assert "UTMASTG" not in text and "STSM" not in text and re.search(r"\bSTG\.E\b", text)
    for r, dt in NEW:
        text = sass[(r, dt)][0]
        rung = RUNGS[r]
        # m64 slices x boxes of 64 columns (32 on rung 12's 160-column tile) per warpgroup, a stmatrix.x4 per 16 columns
        boxes = rung.bm // rung.consumers // 64 * (rung.bn // rung.epi_cols)
        stsm = boxes * rung.epi_cols // 16
        assert len(re.findall(r"UTMASTG\.2D", text)) == boxes and len(re.findall(r"STSM\.16\.M88\.4", text)) == stsm
        if RUNGS[r].stream_k:  # its only global stores: fp32 partial sums and flags, all at gpu scope
            assert re.search(r"\bSTG\.E\.STRONG\.GPU\b", text)
            text = re.sub(r"\bSTG\.E\.STRONG\.GPU\b", "", text)
        assert not re.search(r"\bSTG\b", text), f"rung {r} {dt}: C must leave by TMA only"


@pytest.mark.parametrize("rung,dtype", NEW)
def test_new_rungs_mma_counts(sass, rung, dtype):
    """4 k-steps of 32 bytes per 128-byte k-block row: m64n256 once (rungs 6, 8) or m64n128 on two m64
    slices (rung 7, 256-row tiles) per consumer warpgroup; k16 for 16-bit, k32 for fp8."""
    text = sass[(rung, dtype)][0]
    bn = RUNGS[rung].bn
    per = 4 * (RUNGS[rung].bm // RUNGS[rung].consumers // 64)
    op = f"QGMMA.64x{bn}x32.F32.E4M3.E4M3" if dtype == "e4m3" else f"HGMMA.64x{bn}x16.F32"
    assert text.count(op) == per
    assert ("HGMMA" in text) == (dtype != "e4m3")


def test_new_rungs_resources():
    """No stack, no local memory (spills), and the shared memory the launch asks for fits one block."""
    for r, dt in NEW:
        rung = RUNGS[r]
        cubin = compile_kernel_file("gemm.cu", "sm_90a", rung.defines(dt))
        path = Path(tempfile.mkdtemp()) / "k.cubin"
        path.write_bytes(cubin)
        out = subprocess.run(
            [find_tool("cuobjdump"), "--dump-resource-usage", str(path)], capture_output=True, text=True, check=True
        ).stdout
        line = next(ln for ln in out.splitlines() if "REG:" in ln)
        use = dict(re.findall(r"(\w+(?:\[\d\])?):(\d+)", line))
        assert use["STACK"] == "0" and use["LOCAL"] == "0", f"rung {r} {dt}: {line.strip()}"
        # setmaxnreg needs the launch-bound allocation: 65536 registers / 384 threads, rounded down to 8
        assert int(use["REG"]) == 168, f"rung {r} {dt}: {line.strip()}"
        static = int(use["SHARED"])
        assert static < 2048 and rung.smem_bytes + static <= MAX_SMEM_PER_BLOCK, (rung.smem_bytes, static)


def test_rung10_is_rung8_with_another_split(sass):
    """Rung 10 differs from rung 8 only in the host's choice of dp_units: the same machine code."""
    strip = lambda t: re.sub(r"gemm\.cu\[rung\d+[^\]]*\]", "", t)
    for dt in RUNGS[10].dtypes:
        assert strip(sass[(10, dt)][0]) == strip(sass[(8, dt)][0])


def test_staggered_consumers_build():
    """GM_STAGGER (an experiment, off in every rung): the second consumer warpgroup waits once on a 256-thread
    named barrier the first arrives on; no spills, and the shipped rung's SASS has no such barrier."""
    from dataclasses import replace

    r = replace(RUNGS[10], number=302, stagger=2)
    funcs, checks = check_spec(r.spec("bf16"))
    text = funcs[r.function]
    assert all(c.found for c in checks) and not re.search(r"\b(LDL|STL)\b", text)
    assert re.search(r"BAR\.ARV 0x3, 0x100", text) and re.search(r"BAR\.SYNC\.DEFER_BLOCKING 0x3, 0x100", text)
    assert "BAR.ARV" not in check_spec(RUNGS[10].spec("bf16"))[0][RUNGS[10].function]


def test_static_cluster_experiment_build():
    """GM_STATIC_CLUSTER (an experiment of dev/gemm_host_cost.py: the cluster shape compiled in, launched without a
    cluster attribute) builds with rung 10's required SASS and no spills."""
    from gpudissect.device.compiler import KernelSpec

    r = RUNGS[10]
    defines = r.defines("bf16") | {"GM_STATIC_CLUSTER": 1}
    funcs, checks = check_spec(KernelSpec(r.spec("bf16").file, {r.function: required_sass(r, "bf16")}, defines))
    assert checks and all(c.found for c in checks)
    assert not re.search(r"\b(LDL|STL)\b", funcs[r.function])


@pytest.mark.parametrize("trigger", [1, 2])
def test_pdl_trigger_experiment_builds(trigger):
    """GM_PDL_TRIGGER (an experiment of dev/gemm_tile_sweep.py --ladder-pdl; the shipped rungs trigger at the start):
    1 puts launch_dependents (PREEXIT) after the producer's loop, 2 leaves it out (the next grid comes in at exit);
    the wait stays before any global access, rung 10's required SASS otherwise holds, no spills."""
    from gpudissect.device.compiler import KernelSpec
    from gpudissect.gemm.rung_sass import PDL_SASS

    r = RUNGS[10]
    defines = r.defines("bf16") | {"GM_PDL_TRIGGER": trigger}
    required = [p for p in required_sass(r, "bf16") if p not in PDL_SASS]
    funcs, checks = check_spec(KernelSpec(r.spec("bf16").file, {r.function: required}, defines))
    text = funcs[r.function]
    assert checks and all(c.found for c in checks), [c for c in checks if not c.found]
    first = re.search(r"\b(?:UTMALDG|UTMASTG|LDG|STG)\b", text)
    assert 0 < text.find("UTMACCTL.PF") < text.find("ACQBULK") < first.start()
    if trigger == 1:  # (placed by the compiler apart from the loop: the text's order is not the control flow's)
        assert text.count("PREEXIT") == 1 and text.find("PREEXIT") > text.find("ACQBULK")
    else:
        assert "PREEXIT" not in text
    assert not re.search(r"\b(LDL|STL)\b", text)


@pytest.mark.parametrize("rung", [6, 11])
def test_l2_prefetch_experiment_build(rung):
    """GM_L2_PREFETCH (an experiment of dev/gemm_tile_sweep.py --l2-prefetch, not adopted): the first k-blocks of the
    CTA's first unit are prefetched into L2 by TMA (UTMAPF) before the PDL wait, which then comes after the schedule;
    the wait still precedes every load and store; the rung's required SASS otherwise holds, no spills (rungs 6 and
    11, which the experiment timed at 2048-4096; rung 10's build spills with it, as the profile says)."""
    from gpudissect.device.compiler import KernelSpec

    r = RUNGS[rung]
    defines = r.defines("bf16") | {"GM_L2_PREFETCH": 4}
    funcs, checks = check_spec(KernelSpec(r.spec("bf16").file, {r.function: required_sass(r, "bf16")}, defines))
    text = funcs[r.function]
    assert checks and all(c.found for c in checks), [c for c in checks if not c.found]
    wait = text.find("ACQBULK")
    first = re.search(r"\b(?:UTMALDG|UTMASTG|LDG|STG)\b", text)
    assert "UTMAPF.L2.2D" in text and 0 < wait < first.start()
    assert "UTMAPF" not in check_spec(r.spec("bf16"))[0][r.function]  # the shipped build has none


def test_two_by_two_cluster_build():
    """A 2 x 2 cluster (an experiment: GM_CLM = GM_CLN = 2, device check mode cluster4) multicasts both operands:
    every TMA load is a multicast, no spills; the shipped rungs' binaries are untouched by its code path."""
    from dataclasses import replace

    r = replace(RUNGS[10], number=400, cluster=2, cluster_n=2)
    for dtype in ("bf16", "e4m3"):
        funcs, checks = check_spec(r.spec(dtype))
        text = funcs[r.function]
        assert all(c.found for c in checks), [c for c in checks if not c.found]
        assert "UTMALDG.2D.MULTICAST" in text and not re.search(r"UTMALDG\.2D ", text)
    one_d = check_spec(RUNGS[10].spec("bf16"))[0][RUNGS[10].function]
    assert re.search(r"UTMALDG\.2D ", one_d) and "UTMALDG.2D.MULTICAST" in one_d  # A plain, B multicast


@pytest.mark.parametrize("dtype", ["bf16", "e4m3"])
def test_epilogue_experiments_build(dtype):
    """The epilogue experiments (device check mode epilogue): a whole-tile staging of C (a slot per box, on 3
    stages) waits only for all stores and has one barrier pair per tile where the two-slot epilogue has one
    per box (not adopted: no shipped rung has it); no_zero (adopted on rungs 6+) feeds the tile's first wgmma a
    scale-d predicate instead of zeroing. No spills."""
    from dataclasses import replace

    base = replace(RUNGS[10], number=500, no_zero=False)  # the public rung as it was: accumulators zeroed
    whole = replace(base, number=502, stages=3, epi_whole=True)
    nozero = RUNGS[10]  # adopted since (every rung 6+)
    texts = {}
    for r in (base, whole, nozero):
        funcs, checks = check_spec(r.spec(dtype))
        texts[r.number] = funcs[r.function]
        assert all(c.found for c in checks), [c.pattern for c in checks if not c.found]
        assert not re.search(r"\b(LDL|STL)\b", texts[r.number])
    bars = {k: len(re.findall(r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x80", t)) for k, t in texts.items()}
    assert bars[502] < bars[500] == bars[10], bars
    assert "DEPBAR.LE SB0, 0x1" not in texts[502] and "DEPBAR.LE SB0, 0x1" in texts[500]
    lines = texts[502].splitlines()
    at = [i for i, ln in enumerate(lines) if "UTMASTG" in ln]
    assert len(at) == 4 and not any("BAR.SYNC" in ln for ln in lines[at[0] : at[-1]])  # the tile's stores back to back
    scaled = r"[HQ]GMMA\.[^\n]*gdesc\[UR\d+\], R\d+, !?UP\d"
    assert re.search(scaled, texts[10]) and not re.search(scaled, texts[500])
    assert whole.smem_bytes == 3 * (128 + 256) * 128 + 1024 + 2 * 4 * 8192 <= MAX_SMEM_PER_BLOCK


def test_descriptor_experiment_and_final_store_wait():
    """GM_KEEP_DESC (device check mode keepdesc, not adopted): the descriptor bases stay in registers, so the
    k-loop no longer reads the CTA's shared window (S2UR SR_CgaCtaId) before every k-block's wgmmas, and the
    16-bit build does not spill. The last TMA stores are waited for reading shared memory only: no cache
    invalidate right after that wait (the full-completion wait had one)."""
    from dataclasses import replace

    base = RUNGS[6]
    keep = replace(base, number=510, keep_desc=True)
    texts = {}
    for r in (base, keep):
        funcs, checks = check_spec(r.spec("bf16"))
        texts[r.number] = funcs[r.function]
        assert all(c.found for c in checks), [c.pattern for c in checks if not c.found]

    def window_reads_before_wgmma(text: str) -> int:
        lines = text.splitlines()
        first = next(i for i, ln in enumerate(lines) if "HGMMA" in ln)
        return sum("SR_CgaCtaId" in ln for ln in lines[max(0, first - 40) : first])

    assert window_reads_before_wgmma(texts[6]) > 0 == window_reads_before_wgmma(texts[510])
    lines = texts[6].splitlines()
    last_wait = max(i for i, ln in enumerate(lines) if "DEPBAR.LE SB0, 0x0" in ln)
    assert not any("CCTL.IVALL" in ln for ln in lines[last_wait : last_wait + 4])


@pytest.mark.parametrize("rung,dtype", NEW)
def test_the_dependent_launch_waits_before_any_global_access(sass, rung, dtype):
    """Rungs 6+ are launched with PDL (gemm/launch.py, PDL_FROM): griddepcontrol.wait (ACQBULK) before the first
    global access (TMA load or store, the fp8 scales' loads, stream-K's partials), the tensor maps prefetched
    (UTMACCTL.PF) before it, and launch_dependents (PREEXIT) after it; rungs 1-5 have neither (not launched so)."""
    text = sass[(rung, dtype)][0]
    wait = text.find("ACQBULK")
    first = re.search(r"\b(?:UTMALDG|UTMASTG|LDG|STG|ATOMG|RED)\b", text)
    assert 0 < text.find("UTMACCTL.PF") < wait < text.find("PREEXIT") < first.start()
    from gpudissect.gemm.launch import PDL_FROM

    assert PDL_FROM == min(r for r, _ in NEW)
    for r in range(1, PDL_FROM):
        assert "ACQBULK" not in sass[(r, "bf16")][0]
