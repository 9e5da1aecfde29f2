"""The small-M path (gemm.small, kernels/gemm_small.cu) on the CPU: every variant compiles for sm_90a with the
SASS its design implies (HGMMA m64 x MP from descriptors, TMA loads, the hinted mbarrier waits, the split-K
fix-up's L2 stores/loads and acq_rel counter, the shuffled C pairs, no spills, the shared memory and
registers that let two CTAs share an SM), other GPUs skip it by name, and the schedule and dispatch rules."""

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from gpudissect.capability import Target
from gpudissect.device.compiler import compile_kernel_file
from gpudissect.gemm import SMALL, plan_layout
from gpudissect.gemm.small import (
    DEFAULTS,
    DTYPES,
    MIN_KB_PER_SPLIT,
    ONE_PER_SM,
    SMEM_PER_BLOCK,
    SMEM_PER_SM,
    VARIANTS,
    SmallVariant,
    check_small,
    default_variant,
    pick_mp,
)
from gpudissect.sass.disasm import find_tool
from gpudissect.sasscheck import check_spec

HAS_CUOBJDUMP = find_tool("cuobjdump") is not None
sass_only = [
    pytest.mark.sass,
    pytest.mark.skipif(not HAS_CUOBJDUMP, reason="cuobjdump not installed"),
]  # compiles and disassembles: the slow tier
CASES = [(v.name, dt) for v in DEFAULTS for dt in DTYPES]  # every variant the public default may run
BY_NAME = {v.name: v for v in DEFAULTS}


@pytest.fixture(scope="module")
def sass():
    out = {}
    for name, dt in CASES:
        funcs, checks = check_spec(BY_NAME[name].spec(dt))
        out[(name, dt)] = (funcs["gemm_small"], checks)
    return out


@pytest.mark.sass
@pytest.mark.skipif(not HAS_CUOBJDUMP, reason="cuobjdump not installed")
@pytest.mark.parametrize("name,dtype", CASES)
def test_required_sass(sass, name, dtype):
    _, checks = sass[(name, dtype)]
    missing = [c.pattern for c in checks if not c.found]
    assert checks and not missing, f"{name} {dtype}: missing {missing}"


@pytest.mark.sass
@pytest.mark.skipif(not HAS_CUOBJDUMP, reason="cuobjdump not installed")
@pytest.mark.parametrize("name,dtype", CASES)
def test_one_wgmma_shape_two_slices_per_k16(sass, name, dtype):
    """Per 128-byte k-block: 4 steps of 32 bytes of K (k16 of a 16-bit type, k32 of e4m3) x 2 m64 slices of the
    128-row weight tile, all m64 x MP (the tokens on wgmma's N side), no other MMA; two TMA loads per stage (weight,
    tokens)."""
    text = sass[(name, dtype)][0]
    mp = BY_NAME[name].mp
    op = {
        "bf16": f"HGMMA.64x{mp}x16.F32.BF16",
        "fp16": f"HGMMA.64x{mp}x16.F32 ",
        "e4m3": f"QGMMA.64x{mp}x32.F32.E4M3.E4M3",
    }[dtype]
    assert text.count(op) == 8 and len(re.findall(r"[HQ]GMMA\.", text)) == 8
    assert not re.search(r"\bHMMA\b", text) and len(re.findall(r"UTMALDG\.2D", text)) == 2


@pytest.mark.sass
@pytest.mark.skipif(not HAS_CUOBJDUMP, reason="cuobjdump not installed")
def test_c_written_in_pairs_and_only_partials_at_l2(sass):
    """C leaves by plain 4-byte stores (two adjacent weight rows of one token after a shuffle); the only other
    global stores are the fp32 partials at L2 (.cg); the counter is the one atomic."""
    for (name, _dt), (text, _) in sass.items():
        mp = BY_NAME[name].mp
        plain = re.findall(r"\bSTG\.E(?:\.\w+)*", text)
        assert set(plain) <= {"STG.E", "STG.E.STRONG.GPU"}, set(plain)
        assert not re.search(r"STG\.E\.(?:U16|64|128)", text)
        assert len(re.findall(r"\bATOMG\b", text)) == 1 and not re.search(r"\bRED\b", text)
        assert len(re.findall(r"SHFL\.BFLY", text)) == 2 * 2 * (mp // 8)  # 2 slices x rows +0/+8 x MP/8


@pytest.mark.sass
@pytest.mark.skipif(not HAS_CUOBJDUMP, reason="cuobjdump not installed")
@pytest.mark.parametrize("dtype", ["bf16", "e4m3"])
@pytest.mark.parametrize("name", list(BY_NAME))
def test_resources_fit_the_ctas_per_sm(name, dtype):
    """No stack or local memory; the registers and shared memory of ctas_per_sm CTAs fit one SM (the 16-bit and the
    e4m3 builds)."""
    v = BY_NAME[name]
    cubin = compile_kernel_file("gemm_small.cu", "sm_90a", v.defines(dtype))
    path = Path(tempfile.mkdtemp()) / "k.cubin"
    path.write_bytes(cubin)
    out = subprocess.run(
        [find_tool("cuobjdump"), "--dump-resource-usage", str(path)], capture_output=True, text=True, check=True
    ).stdout
    use = dict(re.findall(r"(\w+(?:\[\d\])?):(\d+)", next(ln for ln in out.splitlines() if "REG:" in ln)))
    assert use["STACK"] == "0" and use["LOCAL"] == "0"
    assert v.ctas_per_sm * 160 * int(use["REG"]) <= 65536
    static = int(use["SHARED"])
    assert static <= 2048 and v.ctas_per_sm * (v.smem_bytes + static + 1024) <= SMEM_PER_SM


@pytest.mark.sass
@pytest.mark.skipif(not HAS_CUOBJDUMP, reason="cuobjdump not installed")
def test_experiment_builds():
    """The dev script's experiments: the weight loaded evict-first (a cache-policy operand on its TMA load),
    64-row weight tiles (one m64 slice) at four CTAs per SM, one CTA per SM with a deeper ring."""
    for v in (
        SmallVariant(16, evict_first=True),
        SmallVariant(32, bw=64, ctas_per_sm=4),
        SmallVariant(64, ctas_per_sm=1),
    ):
        funcs, checks = check_spec(v.spec("bf16"))
        assert all(c.found for c in checks), [c.pattern for c in checks if not c.found]
        assert funcs["gemm_small"].count(f"HGMMA.64x{v.mp}x16") == 4 * v.bw // 64


def test_only_sm90a_runs_it():
    for arch in ("sm_80", "sm_89", "sm_100a", "sm_120"):
        why = VARIANTS[16].needs.why_not(Target.parse(arch))
        assert why and "wgmma" in why
        with pytest.raises(ValueError, match="cannot run on this GPU"):
            check_small("bf16", Target.parse(arch))
    assert VARIANTS[16].needs.why_not(Target.parse("sm_90a")) is None
    check_small("fp16", Target.parse("sm_90a"))
    check_small("e4m3", Target.parse("sm_90a"))
    with pytest.raises(ValueError, match="built for bf16, fp16, e4m3, not tf32"):
        check_small("tf32")


def test_stages_fill_the_shared_memory_of_two_ctas():
    for mp, stages in ((16, 6), (32, 5), (64, 4), (128, 3)):
        v = VARIANTS[mp]
        assert v.stages == stages and v.stage_bytes % 1024 == 0
        assert 2 * (v.smem_bytes + 2048 + 1024) <= SMEM_PER_SM
    one = SmallVariant(16, ctas_per_sm=1)
    assert one.stages == 12 and one.smem_bytes + 2048 <= SMEM_PER_BLOCK
    with pytest.raises(ValueError, match="MP in"):
        SmallVariant(24)


@pytest.mark.parametrize(
    "m,n,k,grid,kb_per",
    [
        (16, 6144, 4096, (1, 5, 48), 13),  # 48 tiles: 5 splits fill 264 CTA slots
        (16, 4096, 4096, (1, 8, 32), 8),
        (16, 28672, 4096, (1, 1, 224), 64),  # more tiles than one CTA per slot: no split, no workspace
        (16, 4096, 14336, (1, 8, 32), 28),
        (1, 1024, 128, (1, 1, 8), 2),  # two k-blocks: too few to split (MIN_KB_PER_SPLIT)
        (100, 8192, 8192, (1, 4, 64), 32),  # MP 128: one token tile
        (300, 1024, 4096, (3, 11, 8), 6),  # several token tiles
    ],
)
def test_schedule(m, n, k, grid, kb_per):
    v = VARIANTS[pick_mp(m)]
    g, per = v.schedule(m, n, k, 132)
    assert (g, per) == (grid, kb_per)
    kb = -(-k // 64)
    assert (g[1] - 1) * per < kb <= g[1] * per  # every split non-empty, all k-blocks covered
    if g[1] > 1:  # the workspace holds every split tile's partials and counter
        assert g[0] * g[1] * g[2] <= 132 * v.ctas_per_sm
        assert per >= min(MIN_KB_PER_SPLIT, kb)


def test_fp8_k_blocks_hold_128_of_k():
    """An e4m3 k-block is one 128-byte row too: 128 elements of K, so half the k-blocks of a 16-bit GEMM of the same
    K; the same grid where K leaves each split MIN_KB_PER_SPLIT blocks either way."""
    from gpudissect.gemm.small import bk

    assert bk("e4m3") == 128 and bk("bf16") == bk("fp16") == 64
    v = VARIANTS[16]
    assert v.schedule(16, 4096, 14336, 132, "e4m3") == ((1, 8, 32), 14)  # 112 k-blocks in 8 splits
    assert v.schedule(16, 4096, 14336, 132) == ((1, 8, 32), 28)
    assert v.schedule(1, 1024, 256, 132, "e4m3") == ((1, 1, 8), 2)


def test_names():
    assert [v.name for v in VARIANTS.values()] == ["small16", "small32", "small64", "small128"]
    assert [v.name for v in ONE_PER_SM.values()] == ["small16c1", "small32c1", "small64c1", "small128c1"]
    assert SmallVariant(32, bw=64, ctas_per_sm=4, evict_first=True).name == "small32x64c4ef"
    assert VARIANTS[16].spec("fp16").name == "gemm_small.cu[rung20.small16.fp16]"


def test_pick_mp():
    assert [pick_mp(m) for m in (1, 16, 17, 32, 33, 64, 65, 128, 129, 1000)] == [16, 16, 32, 32, 64, 64, 128, 128] + [
        128,
        128,
    ]


# (M, N) -> the variant the default runs on 132 SMs (None: the ladder): the rule against the sweep's winners
# (results/h100-sxm5-80gb/profiles/gemm-small-sweep/, Llama-3 8B N 6144/4096/28672, 70B N 10240/8192/57344)
@pytest.mark.parametrize(
    "m,n,name",
    [
        (16, 4096, "small16c1"),  # 32 weight tiles: one CTA per SM after the split
        (16, 10240, "small16c1"),  # 80 tiles
        (16, 28672, "small16"),  # 224 tiles: more than the SMs, two CTAs per SM
        (1, 57344, "small16"),
        (32, 8192, "small16c1"),  # 2 token tiles x 64 = 128 <= 132
        (64, 6144, "small32c1"),  # MP 16: 4 x 48 = 192 > 132; MP 32: 2 x 48 = 96
        (128, 4096, "small32c1"),  # 4 x 32 = 128
        (128, 8192, "small64c1"),  # MP 32: 256; MP 64: 128
        (128, 10240, "small128c1"),  # MP 64: 160; MP 128: 80
        (128, 28672, "small128"),  # no grid of one CTA per SM: all tokens in one tile
        (256, 8192, "small128c1"),
        (256, 10240, None),  # above WIDE_M_MAX with no one-per-SM grid: the ladder
        (256, 28672, None),
        (512, 4096, "small128c1"),  # 4 x 32 = 128
        (512, 6144, None),  # 4 x 48 = 192
        (513, 1024, None),  # above SMALL_M_MAX
        (129, 128, "small32c1"),  # 5 token tiles of 32 (16 would need 9)
        (1024, 128, None),
    ],
)
def test_default_variant(m, n, name):
    got = default_variant(m, n, "bf16", 132)
    assert (got.name if got else None) == name
    if got is not None:
        assert got in DEFAULTS and -(-m // got.mp) <= 8
        assert got.ctas_per_sm == 2 or -(-m // got.mp) * -(-n // got.bw) <= 132


def test_default_variant_types_and_sms():
    assert default_variant(16, 4096, "fp16", 132) == ONE_PER_SM[16]
    assert default_variant(16, 4096, "e4m3", 132) == ONE_PER_SM[16]  # fp8 by the same rule
    assert default_variant(128, 8192, "bf16", 114) == ONE_PER_SM[128]  # an H100 PCIe: 2 x 64 > 114
    assert default_variant(256, 8192, "bf16", 114) is None


L2_H100 = 50 << 20


@pytest.mark.parametrize(
    "m, name",
    [(16, "small16c1"), (64, "small32c1"), (128, "small64c1"), (256, "small128c1"), (512, "small128c1")],
)
def test_a_weight_past_the_l2_is_streamed_by_two_token_tiles(m, name):
    # bf16 Llama-3-8B down (4096 x 14336: 117 MB, 2.2x the L2): at most 2 token tiles where such a grid exists;
    # at 512 tokens none does (4 tiles of 128), so the first rule's 4 stay
    assert default_variant(m, 4096, "bf16", 132, 14336, L2_H100).name == name
    assert default_variant(m, 4096, "fp16", 132, 14336, L2_H100).name == name


@pytest.mark.parametrize("m, name", [(64, "small16c1"), (128, "small32c1"), (256, "small64c1")])
def test_a_weight_near_the_l2_keeps_the_first_rule(m, name):
    # e4m3 8B down (59 MB, 1.1x the L2), bf16 8B O (34 MB), and an unknown K or L2: 4 token tiles as before
    assert default_variant(m, 4096, "e4m3", 132, 14336, L2_H100).name == name
    assert default_variant(m, 4096, "bf16", 132, 4096, L2_H100).name == name
    assert default_variant(m, 4096, "bf16", 132, 14336, 0).name == name
    assert default_variant(m, 4096, "bf16", 132).name == name


def test_the_factor_is_read_per_plan(monkeypatch):
    from gpudissect.gemm import small

    monkeypatch.setattr(small, "STREAM_L2_FACTOR", 1.0)  # e4m3 8B down (1.1x) now counts as streamed
    assert default_variant(128, 4096, "e4m3", 132, 14336, L2_H100).name == "small64c1"


def test_thresholds_are_read_per_plan(monkeypatch):
    from gpudissect.gemm import small

    monkeypatch.setattr(small, "SMALL_M_MAX", 64)
    assert default_variant(64, 4096, "bf16", 132) is not None and default_variant(65, 4096, "bf16", 132) is None
    monkeypatch.setattr(small, "SMALL_M_MAX", 512)
    monkeypatch.setattr(small, "WIDE_M_MAX", 16)
    assert default_variant(16, 28672, "bf16", 132) == VARIANTS[16]
    assert default_variant(32, 28672, "bf16", 132) is None


def test_layout_rules_for_the_forced_path():
    assert plan_layout((7, 64), (64, 1), (64, 16), (1, 64), "bf16", SMALL) == (7, 16, 64, True)
    assert plan_layout((7, 64), (64, 1), (64, 16), (1, 64), "e4m3", SMALL) == (7, 16, 64, True)
    with pytest.raises(ValueError, match="K = 72 is not a multiple of 16"):
        plan_layout((7, 72), (72, 1), (72, 16), (1, 72), "e4m3", SMALL)
    with pytest.raises(ValueError, match="N = 20 is not a multiple of 8"):
        plan_layout((7, 64), (64, 1), (64, 20), (1, 64), "bf16", SMALL)


@pytest.mark.sass
@pytest.mark.skipif(not HAS_CUOBJDUMP, reason="cuobjdump not installed")
def test_the_dependent_launch_waits_before_any_global_access(sass):
    """Launched with PDL (gemm/launch.py), the kernel may start while the previous grid runs: its griddepcontrol.wait
    (ACQBULK) comes before its first global access (TMA load, load, store, atomic), and the tensor maps are
    prefetched (UTMACCTL.PF) before it; it never triggers the next grid early (no PREEXIT: the next grid comes in
    as its CTAs exit)."""
    for (name, dt), (text, _) in sass.items():
        wait = text.find("ACQBULK")
        first = re.search(r"\b(?:UTMALDG|LDG|STG|ATOMG|RED)\b", text)
        assert 0 < text.find("UTMACCTL.PF") < wait < first.start(), (name, dt)
        assert "PREEXIT" not in text, (name, dt)


def test_dependent_launches_from_rung_6_and_on_the_small_m_path():
    """The ladder from rung 6 on is launched with PDL, and the small-M path; rungs 1-5 are not (their kernels do not
    wait)."""
    from types import SimpleNamespace

    from gpudissect.gemm.launch import Launch
    from gpudissect.gemm.small_launch import SmallLaunch

    assert all(SmallLaunch.pdl(SimpleNamespace(variant=v)) for v in DEFAULTS)  # type: ignore[arg-type]
    assert [Launch.pdl(SimpleNamespace(rung=r)) for r in range(1, 14)] == [False] * 5 + [True] * 8  # type: ignore[arg-type]
