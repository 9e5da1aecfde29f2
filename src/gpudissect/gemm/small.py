"""The small-M path of our GEMM (issue 30 §2): a few tokens against a large weight, kernels/gemm_small.cu.

At 16 tokens our smallest ladder tile (128 rows of M) makes the tensor cores do 8x the useful work and the
kernel compute-bound, where the GEMM should be bound by reading the weight from DRAM. This path swaps the
operands (D = W X^T: the weight's rows on wgmma's M side, the tokens padded to MP = 16, 32, 64 or 128 on
its N side), streams the weight through a deep TMA pipeline, and splits K so that about two CTAs per SM
run (a per-tile counter lets the last CTA of a tile sum the fp32 partials in a fixed order).

It is numbered apart from the ladder (`SMALL`: `matmul(a, b, rung=SMALL)` forces it); the public default takes it
where `default_variant` names a variant (up to SMALL_M_MAX tokens; change it, then `gemm.clear_cache()`).
Torch- and driver-free (the launch: gemm.small_launch), so CPU tests cover the geometry, the dispatch rule and
the SASS rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..capability import Needs, Target
from ..device.compiler import KernelSpec
from .rung_sass import PDL_WAIT_SASS

FILE = "gemm_small.cu"
FUNCTION = "gemm_small"
SMALL = 20  # the path's number where a rung is named (matmul's rung=, Plan.rung); not a rung of the ladder
# The public default's rule (default_variant), from a sweep of every variant against the ladder and cuBLAS on the
# H100 (dev/gemm_small_sweep.py, results/h100-sxm5-80gb/profiles/gemm-small-sweep/): the Llama-3 8B/70B projections
# at 16-512 tokens. What it showed: the fastest variant is the one whose tiles fill the SMs once with one CTA each
# (a deep pipeline per SM streams the weight; more token tiles re-read it from L2, splits pay a fix-up), with the
# smallest token tile that does; where no token tile does (the wide gate/up projections), two CTAs per SM with
# all tokens in one tile, up to 128 tokens; above that the ladder. The weight's tensor map is promoted to 256-byte
# L2 lines (faster than the same variant without promotion in 94 of the sweep's 120 pairs).
# fp8 e4m3 takes the same rule: against the ladder's pick for e4m3 (dev/gemm_tile_sweep.py --fp8-small,
# results/h100-sxm5-80gb/profiles/gemm-fp8-small/) the small path was ahead on every Llama-3 projection at 16-128
# tokens (8B down at 16: 24 us against 47; 70B QKV at 64: 34 against 54) and where the rule takes it at 256.
# A weight of at least STREAM_L2_FACTOR times the L2 (bf16 Llama-3-8B down: 117 MB on a 50 MB L2) is streamed by
# at most STREAM_TOKEN_TILES token tiles where a one-CTA-per-SM grid of that many exists (K split to fill the SMs).
# Empirical: every token tile re-reads its weight tile, but ncu counts the weight read from DRAM once with four
# token tiles as with two, cold and hot (gemm-small-heat/small_dram.csv): the re-reads hit the L2, and what costs
# four tiles on this weight is not known.
# results/h100-sxm5-80gb/profiles/gemm-small-heat/: bf16 8B down at 64/128/256 tokens, 2 token tiles against the 4
# the rule took, 3 / 2.5 / 7 % faster cold and 10 / 15 / 13 % after a power-limited burst; e4m3 (59 MB, 1.1x the
# L2) read 4-8 % slower cold that way and level to 6 % faster hot, so it keeps the rule; the factor is bracketed
# by those two points only.
STREAM_L2_FACTOR = 2.0
STREAM_TOKEN_TILES = 2
SMALL_M_MAX = 512  # the default never takes this path above (measured up to here)
WIDE_M_MAX = 128  # two CTAs per SM, all tokens in one tile, where no one-CTA-per-SM grid fits: up to here
MAX_TOKEN_TILES = 8  # more token tiles re-read each weight tile from L2 too often (slower in every swept case)
SMALL_PROMOTION = "L2_256B"
DTYPES = ("bf16", "fp16", "e4m3")  # e4m3: C = scale_a scale_b X W^T in bf16
MPS = (16, 32, 64, 128)  # token tiles (wgmma N)
THREADS = 160  # one consumer warpgroup and one producer warp
BK = 64  # K per k-block: one 128-byte row of 16-bit elements (of e4m3: bk())
MIN_KB_PER_SPLIT = 4  # a split shorter than this pays more in fill and fix-up than it streams
SMEM_PER_SM = 233472  # sm_90: 228 KiB of shared memory per SM ...
SMEM_RESERVED = 1024  # ... of which each CTA's system use takes 1 KiB
SMEM_PER_BLOCK = 232448  # the opt-in maximum of one block (227 KiB)
STATIC_SMEM = 2048  # the kernel's static barriers and flag (~1.1 KiB), rounded up
WAIT_HINT_NS = 10_000_000  # the mbarrier suspend-time hint of the ladder's rungs (gemm.variants.Rung)


@dataclass(frozen=True)
class SmallVariant:
    """One compiled form of gemm_small.cu: MP tokens per tile, BW weight rows per CTA (64 or 128), sized for
    `ctas_per_sm` resident CTAs per SM (the pipeline gets the stages that leaves room for)."""

    mp: int
    bw: int = 128
    ctas_per_sm: int = 2
    evict_first: bool = False  # the weight's loads with an L2 evict-first policy (an experiment: not measured)
    max_stages: int = 16

    def __post_init__(self) -> None:
        if self.mp not in MPS or self.bw not in (64, 128):
            raise ValueError(f"small-M variant needs MP in {MPS} and BW 64 or 128, got MP {self.mp}, BW {self.bw}")

    @property
    def name(self) -> str:
        return (
            f"small{self.mp}"
            + ("" if self.bw == 128 else f"x{self.bw}")
            + ("" if self.ctas_per_sm == 2 else f"c{self.ctas_per_sm}")
            + ("ef" if self.evict_first else "")
        )

    @property
    def stage_bytes(self) -> int:
        return (self.bw + self.mp) * BK * 2  # the weight box and the token box, 128 bytes a row

    @property
    def stages(self) -> int:
        per_cta = min(SMEM_PER_SM // self.ctas_per_sm - SMEM_RESERVED, SMEM_PER_BLOCK)
        return max(2, min(self.max_stages, (per_cta - STATIC_SMEM - 1024) // self.stage_bytes))

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.stage_bytes + 1024  # + slack to align the ring to 1024 bytes (the swizzle)

    @property
    def needs(self) -> Needs:
        """wgmma (sm_90a only); a GPU that has it has the TMA and mbarriers the kernel uses too."""
        return Needs(features=("wgmma",))

    def defines(self, dtype: str) -> dict[str, object]:
        if dtype not in DTYPES:
            raise ValueError(f"the small-M path has no {dtype} build; it has {', '.join(DTYPES)}")
        d: dict[str, object] = {
            "SM_MP": self.mp,
            "SM_BW": self.bw,
            "SM_STAGES": self.stages,
            "SM_F16": int(dtype == "fp16"),
            "SM_FP8": int(dtype == "e4m3"),
            "SM_CTAS": self.ctas_per_sm,
            "SM_WAIT_HINT": WAIT_HINT_NS,
        }
        if self.evict_first:
            d["SM_EVICT_FIRST"] = 1
        return d

    def spec(self, dtype: str) -> KernelSpec:
        return KernelSpec(
            FILE,
            {FUNCTION: required_sass(self, dtype)},
            self.defines(dtype),
            label=f"{FILE}[rung{SMALL}.{self.name}.{dtype}]",  # rung20: the number rung= takes for it
            needs=self.needs,
        )

    def schedule(self, m: int, n: int, k: int, sms: int, dtype: str = "bf16") -> tuple[tuple[int, int, int], int]:
        """(grid (token tiles, splits, weight tiles), k-blocks per split) of an m x n x k GEMM of `dtype` on `sms`
        SMs: K split so that the grid fills about ctas_per_sm CTAs per SM (splits > 1 only while tiles x splits
        stays within that, which bounds the workspace), each split at least MIN_KB_PER_SPLIT k-blocks (of bk(dtype)
        elements) and none empty."""
        tm, tn, kb = -(-m // self.mp), -(-n // self.bw), -(-k // bk(dtype))
        tiles, slots = tm * tn, sms * self.ctas_per_sm
        splits = max(1, min(slots // tiles, kb // MIN_KB_PER_SPLIT))
        kb_per = -(-kb // splits)
        return (tm, -(-kb // kb_per), tn), kb_per

    def workspace_bytes(self, sms: int) -> tuple[int, int]:
        """(fp32 partial tiles, u32 tile counters) in bytes for the largest split grid on `sms` SMs: a split
        grid has at most ctas_per_sm x sms CTAs (and fewer tiles)."""
        slots = sms * self.ctas_per_sm
        return slots * self.bw * self.mp * 4, slots * 4


def bk(dtype: str) -> int:
    """Elements of K in one k-block of `dtype`: a 128-byte row."""
    return 128 if dtype == "e4m3" else BK


VARIANTS: dict[int, SmallVariant] = {mp: SmallVariant(mp) for mp in MPS}  # two CTAs per SM
ONE_PER_SM: dict[int, SmallVariant] = {mp: SmallVariant(mp, ctas_per_sm=1) for mp in MPS}  # a deeper pipeline
DEFAULTS = (*VARIANTS.values(), *ONE_PER_SM.values())  # every variant the public default may run


def pick_mp(m: int) -> int:
    """The token tile for M tokens: the smallest that holds them all, else 128 (several token tiles)."""
    return next((mp for mp in MPS if m <= mp), MPS[-1])


def default_variant(m: int, n: int, dtype: str, sms: int, k: int = 0, l2_bytes: int = 0) -> SmallVariant | None:
    """The variant the public default runs for an m x n x k GEMM of `dtype` on `sms` SMs with an L2 of `l2_bytes`,
    or None where the ladder runs it: the smallest token tile (at most MAX_TOKEN_TILES of them; STREAM_TOKEN_TILES
    where the weight is at least STREAM_L2_FACTOR times the L2 and such a tile exists) whose tiles number at most one
    per SM, one CTA per SM; else, up to WIDE_M_MAX tokens, all tokens in one tile, two CTAs per SM. k or l2_bytes
    0: the weight's size unknown, the first rule alone. SMALL_M_MAX and WIDE_M_MAX are read per plan."""
    if dtype not in DTYPES or m > SMALL_M_MAX:
        return None
    streamed = l2_bytes > 0 and n * k * (1 if dtype == "e4m3" else 2) >= STREAM_L2_FACTOR * l2_bytes
    for most in (STREAM_TOKEN_TILES, MAX_TOKEN_TILES) if streamed else (MAX_TOKEN_TILES,):
        v = _one_per_sm(m, n, sms, most)
        if v is not None:
            return v
    return VARIANTS[pick_mp(m)] if m <= WIDE_M_MAX else None


def _one_per_sm(m: int, n: int, sms: int, most: int) -> SmallVariant | None:
    """The one-CTA-per-SM variant with the smallest token tile, at most `most` token tiles, whose tiles fit the SMs."""
    for mp in MPS:
        if mp > pick_mp(m):
            break
        v = ONE_PER_SM[mp]
        tm = -(-m // mp)
        if tm <= most and tm * -(-n // v.bw) <= sms:
            return v
    return None


def variant_for(
    m: int, n: int, dtype: str, sms: int, forced: bool, k: int = 0, l2_bytes: int = 0
) -> SmallVariant | None:
    """The variant `matmul` (and `gpudissect gemm`) runs: the default's (default_variant), or, `forced` (rung SMALL
    named) where the default would take the ladder, the token tile for M with two CTAs per SM."""
    v = default_variant(m, n, dtype, sms, k, l2_bytes)
    return VARIANTS[pick_mp(m)] if v is None and forced else v


def check_small(dtype: str, target: Target | None = None) -> None:
    """ValueError where the small-M path cannot run: its dtypes, and wgmma on `target`."""
    if dtype not in DTYPES:
        raise ValueError(f"the small-M path (rung {SMALL}) is built for {', '.join(DTYPES)}, not {dtype}")
    why = VARIANTS[16].needs.why_not(target) if target is not None else None
    if why:
        raise ValueError(f"the small-M path (rung {SMALL}) cannot run on this GPU: it {why}")


def _wgmma(mp: int, dtype: str) -> str:
    if dtype == "e4m3":
        return rf"QGMMA\.64x{mp}x32\.F32\.E4M3\.E4M3 R\d+, gdesc\[UR\d+\], R\d+"
    suffix = r"\.BF16" if dtype == "bf16" else ""  # the fp16 form has no type suffix after .F32
    return rf"HGMMA\.64x{mp}x16\.F32{suffix} R\d+, gdesc\[UR\d+\], R\d+"


def required_sass(v: SmallVariant, dtype: str) -> list[str]:
    """The m64 x MP wgmma from descriptors (the first of a CTA with scale-d from a predicate), TMA loads,
    the hinted mbarrier waits and the producer's expect-tx arrive, the consumer warpgroup's named barrier,
    the split-K fix-up (partials stored and loaded at L2, .cg: STG/LDG .STRONG.GPU; the counter bumped by an
    acq_rel atomic: release fence, ATOMG, L1 invalidate), the C pairs exchanged by a shuffle, no local memory."""
    mma = _wgmma(v.mp, dtype)
    req = [
        mma,
        mma + r", !?UP\d",
        r"UTMALDG\.2D",
        r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT",
        r"@!P\d NANOSLEEP\.SYNCS 0x989680[^\n]*\n[^\n]*@!P\d SYNCS\.PHASECHK\.TRANS64 P\d",
        r"SYNCS\.ARRIVE\.TRANS64",
        r"WARPGROUP\.ARRIVE",
        r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1",
        r"BAR\.SYNC\.DEFER_BLOCKING 0x1, 0x80",
        r"STG\.E\.STRONG\.GPU",
        r"LDG\.E\.STRONG\.GPU",
        r"MEMBAR\.ALL\.GPU[\s\S]{0,200}ATOMG\.E\.ADD\.STRONG\.GPU[^\n]*\n[^\n]*CCTL\.IVALL",
        r"SHFL\.BFLY PT, R\d+, R\d+, 0x4, 0x1f",
        r"\A(?![\s\S]*\b(?:LDL|STL)\b)",
        *PDL_WAIT_SASS,  # launched as a programmatic dependent launch: it waits for the grid before it
        r"\A(?![\s\S]*\bPREEXIT\b)",  # and lets the next grid in only at its exit (SM_PDL_TRIGGER 2)
    ]
    if v.evict_first:
        req.append(r"UTMALDG\.2D \[UR\d+\], \[UR\d+\], desc\[UR\d+\]")
    return req
