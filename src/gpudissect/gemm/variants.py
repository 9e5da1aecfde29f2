"""The rungs of our GEMM ladder (kernels/gemm.cu): tile shapes, launch geometry, required SASS, and the
argument rules of the public API. Torch-free, so CPU tests cover all of it."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.gemm_model import TileConfig, stream_k_dp
from ..capability import Needs, Target
from ..device.compiler import KernelSpec

FILE = "gemm.cu"
DTYPES = ("bf16", "fp16", "e4m3")  # e4m3: fp8 in, bf16 out, per-tensor scales (rungs 6+ only)
FP8_FROM = 6  # the first rung with an e4m3 build


@dataclass(frozen=True)
class Rung:
    number: int
    name: str
    what: str  # what the rung adds, for the report and README
    bm: int
    bn: int
    bk: int
    stages: int
    consumers: int  # consumer warpgroups (0: the mma.sync rung)
    group_m: int  # tile rows per group in the tile order (0: row-major)
    persistent: bool
    cluster: int = 1  # CTAs along M sharing one B tile through TMA multicast
    cluster_n: int = 1  # CTAs along N sharing one A tile through TMA multicast (rungs 6+)
    tma_store: bool = False  # epilogue staged in shared memory (stmatrix) and written by TMA (rungs 6+)
    stream_k: bool = False  # > 1 wave, the last <= half full: the last 1-1.5 waves split along K over all clusters
    stream_k_full: bool = False  # and a fuller last wave split on its own (analysis/gemm_model.stream_k_dp)
    # suspend-time hint of the mbarrier waits (0: none): a waiting thread sleeps (NANOSLEEP.SYNCS, woken by the
    # barrier) instead of spinning through try_wait's retry loop; ahead at 4096 and level at 8192 in a device
    # check (results/h100-sxm5-80gb/profiles/gemm-wait-hint/); CUTLASS's barrier waits pass the same 10 ms
    wait_hint_ns: int = 10_000_000
    stagger: int = 0  # k-blocks the second consumer warpgroup starts after the first (rungs 6+; 0: together)
    # rungs 6+: a shared slot per 64 x 64 box of C (the whole tile staged, one barrier pair and one wait per
    # tile) instead of two alternating slots (a barrier pair per box, a wait on the store two boxes back)
    epi_whole: bool = False
    no_zero: bool = False  # rungs 6+: a tile's first wgmma overwrites the accumulators instead of zeroing them
    keep_desc: bool = False  # rungs 6+ (experiment): descriptor bases kept in registers, not rebuilt every k-block

    def units(self, m: int, n: int) -> int:
        """Work units of an m x n C: CLUSTER tiles sharing an operand tile (one tile without a cluster)."""
        return -(-m // (self.bm * self.cluster)) * -(-n // (self.bn * self.cluster_n))

    def dp_units(self, m: int, n: int, k: int, clusters: int, dtype: str = "bf16") -> int:
        """Units the kernel runs data-parallel on `clusters` resident clusters; the rest is split along K
        (kernel argument dp_units)."""
        units = self.units(m, n)
        if not self.stream_k:
            return units
        return stream_k_dp(units, clusters, -(-k // self.bk_for(dtype)), self.stream_k_full)

    def workspace_bytes(self, ctas: int) -> tuple[int, int]:
        """(fp32 partial sums, u32 flags) in bytes for a stream-K grid of `ctas` CTAs: two slots per CTA
        (the head/tail split has two tail parts per split unit, at most one unit per cluster), a slot
        one BM x BN tile of partial sums and one flag per consumer warpgroup."""
        return (2 * ctas * self.bm * self.bn * 4, 2 * ctas * self.consumers * 4) if self.stream_k else (0, 0)

    @property
    def cluster_size(self) -> int:
        return self.cluster * self.cluster_n

    @property
    def needs(self) -> Needs:
        """What a GPU must have to run this rung. Rung 1: mma.sync m16n8k16 fed by cp.async (and ldmatrix,
        which every GPU with those has), compute capability 8.0 on. The TMA rungs: wgmma, which exists on
        sm_90a only (a GPU that has it has the TMA, clusters and setmaxnreg they use too), so a skip names
        the one thing that decides it."""
        if self.number == 1:
            return Needs(features=("mma_m16n8k16", "cp_async"))
        return Needs(features=("wgmma",))

    @property
    def dtypes(self) -> tuple[str, ...]:
        return DTYPES if self.number >= FP8_FROM else ("bf16", "fp16")

    def bk_for(self, dtype: str) -> int:
        """K per k-block: one 128-byte row of each operand (64 of 16-bit, 128 of fp8) on the TMA rungs."""
        return 128 if dtype == "e4m3" and self.number >= 2 else self.bk

    @property
    def threads(self) -> int:
        if self.number == 1:
            return 128
        return 128 * (self.consumers + (1 if self.number >= 3 else 0))

    @property
    def smem_bytes(self) -> int:
        if self.number == 1:
            return self.stages * (self.bm + self.bn) * self.bk * 2
        smem = self.stages * (self.bm + self.bn) * self.bk * 2 + 1024  # + alignment slack to 1024 B
        if self.tma_store:  # 64 x 64 16-bit C boxes per consumer warpgroup: two, or one per box of its C
            slots = (self.bm // self.consumers // 64) * (self.bn // 64) if self.epi_whole else 2
            smem += self.consumers * slots * 64 * 64 * 2
        return smem

    @property
    def function(self) -> str:
        return "gemm_r1" if self.number == 1 else "gemm_ws" if self.number >= 6 else "gemm_tma"

    def defines(self, dtype: str) -> dict[str, object]:
        if dtype not in self.dtypes:
            raise ValueError(f"rung {self.number} has no {dtype} build; it has {', '.join(self.dtypes)}")
        d: dict[str, object] = {"GM_RUNG": self.number, "GM_F16": int(dtype == "fp16")}
        if self.number >= 2:
            d |= {
                "GM_BM": self.bm,
                "GM_BN": self.bn,
                "GM_STAGES": self.stages,
                "GM_CONSUMERS": self.consumers,
                "GM_GROUP": self.group_m,
            }
        if self.number >= 6:
            d |= {"GM_CLM": self.cluster, "GM_CLN": self.cluster_n, "GM_FP8": int(dtype == "e4m3")}
        if self.stream_k:
            d["GM_SK"] = 1
        if self.wait_hint_ns and self.number >= 2:  # rung 1 has no mbarrier
            d["GM_WAIT_HINT"] = self.wait_hint_ns
        if self.stagger:
            d["GM_STAGGER"] = self.stagger
        if self.epi_whole:
            d["GM_EPI_WHOLE"] = 1
        if self.no_zero:
            d["GM_NOZERO"] = 1
        if self.keep_desc:
            d["GM_KEEP_DESC"] = 1
        return d

    def spec(self, dtype: str) -> KernelSpec:
        return KernelSpec(
            FILE,
            {self.function: required_sass(self, dtype)},
            self.defines(dtype),
            label=f"{FILE}[rung{self.number}.{dtype}]",
            needs=self.needs,
        )

    def tile_config(self, dtype: str = "bf16") -> TileConfig:
        """The model's view of this rung (16-bit C written by 4-byte register stores, two per 32-byte
        sector, on rungs 1-5; whole sectors by TMA on rungs 6+)."""
        if self.number == 1:
            return TileConfig(
                self.bm, self.bn, self.bk, self.stages, path="mma_sync", warp_m=64, warp_n=64, c_sector_writes=2.0
            )
        return TileConfig(
            self.bm,
            self.bn,
            self.bk_for(dtype),
            self.stages,
            group_m=self.group_m,
            cluster_m=self.cluster,
            cluster_n=self.cluster_n,
            epilogue_overlapped=self.persistent,
            in_bytes=1 if dtype == "e4m3" else 2,
            c_sector_writes=1.0 if self.tma_store else 2.0,
            stream_k=self.stream_k,
            stream_k_full=self.stream_k_full,
        )

    def grid(self, m: int, n: int, resident: int) -> tuple[int, int, int]:
        """Launch grid; `resident`: CTAs (clusters, for a clustered rung) that fit on the GPU at once."""
        if self.number == 1:
            return (n // self.bn, m // self.bm, 1)
        units = self.units(m, n)
        if not self.persistent:
            return (units, 1, 1)
        if self.stream_k:  # every resident cluster takes a share of the split k-blocks
            return (resident * self.cluster_size, 1, 1)
        return (min(units, resident) * self.cluster_size, 1, 1)


RUNGS: dict[int, Rung] = {
    r.number: r
    for r in (
        Rung(
            1,
            "mma_sync",
            "mma.sync m16n8k16 + ldmatrix + 4-stage cp.async, XOR swizzle (the Ampere/Yan design)",
            128,
            128,
            32,
            4,
            0,
            0,
            False,
        ),
        Rung(
            2,
            "tma_wgmma",
            "TMA loads + wgmma from shared memory, 128-byte swizzle, 4-stage mbarrier pipeline",
            128,
            128,
            64,
            4,
            1,
            0,
            False,
        ),
        Rung(
            3,
            "warp_specialised",
            "producer warpgroup (setmaxnreg.dec) + 2 consumer warpgroups, 128x256 tiles",
            128,
            256,
            64,
            4,
            2,
            0,
            False,
        ),
        Rung(
            4,
            "persistent",
            "rung 3, one CTA per SM walking tiles in grouped order (8 tile rows per group)",
            128,
            256,
            64,
            4,
            2,
            8,
            True,
        ),
        Rung(
            5,
            "cluster_multicast",
            "rung 4 in 2-CTA clusters along M: the B tile multicast by TMA to both CTAs",
            128,
            256,
            64,
            4,
            2,
            8,
            True,
            cluster=2,
        ),
        Rung(
            6,
            "tma_store",
            "rung 5 with C staged in shared memory by stmatrix and written by TMA stores that drain "
            "under the next tile's k-loop; descriptors and stage counters advanced, not recomputed; a tile's first "
            "wgmma overwrites the accumulators instead of adding to zeroed ones",
            128,
            256,
            64,
            4,
            2,
            8,
            True,
            cluster=2,
            tma_store=True,
            no_zero=True,
        ),
        Rung(
            7,
            "cublas_shape",
            "rung 6 on cuBLAS's shape: 256x128 tiles in 2-CTA clusters along N, the A tile multicast to both CTAs",
            256,
            128,
            64,
            4,
            2,
            8,
            True,
            cluster_n=2,
            tma_store=True,
            no_zero=True,
        ),
        Rung(
            8,
            "stream_k",
            "rung 6 with stream-K when there is more than one wave and the last is at most half full: the k-blocks of "
            "the last 1-1.5 waves spread evenly over all clusters, split tiles summed in fp32 through a global "
            "workspace (release/acquire flags)",
            128,
            256,
            64,
            4,
            2,
            8,
            True,
            cluster=2,
            tma_store=True,
            stream_k=True,
            no_zero=True,
        ),
        Rung(
            9,
            "narrow_tile",
            "rung 8 on 128x128 tiles with 6 stages: twice the tiles for the sizes where 128x256 "
            "tiles leave a wave partly idle",
            128,
            128,
            64,
            6,
            2,
            8,
            True,
            cluster=2,
            tma_store=True,
            stream_k=True,
            no_zero=True,
        ),
        Rung(
            10,
            "stream_k_full",
            "rung 8 that also splits a last wave more than half full: each of its units' first "
            "k-blocks (the head) on its own cluster, in step, the rest (the tails) spread over the idle clusters, "
            "where the split's measured cost model says it beats leaving the wave whole",
            128,
            256,
            64,
            4,
            2,
            8,
            True,
            cluster=2,
            tma_store=True,
            stream_k=True,
            stream_k_full=True,
            no_zero=True,
        ),
    )
}
BEST_FP8 = 10  # the rung matmul uses for fp8 e4m3 (the same split rule as bf16)
BEST = 10  # the public rung: stream-K where a split pays, else data-parallel (then run as rung 6: DATA_PARALLEL)
# tried and not adopted: Rung.stagger (consumer warpgroups k-blocks apart), 2 x 2 clusters (cluster = cluster_n = 2:
# 4-CTA clusters leave SMs unused), Rung.epi_whole (a whole tile of C staged at once, on 3 stages), Rung.keep_desc
# (descriptor bases kept in registers): results/h100-sxm5-80gb/profiles/gemm-stagger, gemm-cluster4, gemm-epilogue,
# gemm-keepdesc
NOT_BUILT = {11: "192-row or 168-row tiles for the partial waves cuBLAS covers better, a deeper epilogue overlap"}

# The public default (matmul, `gpudissect gemm`, vs_cublas without --set): a per-shape choice between rung
# 10's 128x256 tile pairs and rung 9's 128x128 tiles. Rung 9 where rung 10's pairs fill at most 3 waves and
# their last wave is at most 60 % full (less than one wave counts as a last wave): there twice the units fill
# the waves better than stream-K mends them. Measured (full vs_cublas runs gemm-full-rung9 against
# gemm-full-v10h): rung 9 ahead by 8-28 % at 1024-1536, 2304, 2560, 3072, 3328 and the Llama QKV
# projections at 1024 tokens, behind wherever the pairs' last wave was 74 % full or more (1792, 2048, 2816,
# 3584, 4096 and up: 0.53-0.98). fp8 keeps BEST_FP8 (rung 9 not measured there).
#
# And rung 6 where rung 10's rule splits nothing: the same kernel without the stream-K code, whose unused
# branches and state still slow rung 10 there (ahead in every quartile of a rotation at 4096^3 and 4096 x 4096 x
# 8192, fewer cycles under ncu: device check dispatch, results/h100-sxm5-80gb/profiles/gemm-dispatch/; the gemm
# runs after it measure the choice). 16-bit types only (fp8 not measured).
AUTO = 0
SMALL_TILE, SMALL_TILE_MAX_WAVES, SMALL_TILE_MAX_FILL = 9, 3, 0.6
DATA_PARALLEL = 6


def pick_rung(m: int, n: int, k: int, dtype: str, clusters: int) -> int:
    """The rung the public default runs for an m x n x k GEMM on `clusters` resident clusters of BEST."""
    if dtype == "e4m3":
        return BEST_FP8
    units = RUNGS[BEST].units(m, n)
    rem = units % clusters
    if units <= SMALL_TILE_MAX_WAVES * clusters and 0 < rem <= SMALL_TILE_MAX_FILL * clusters:
        return SMALL_TILE
    if RUNGS[BEST].dp_units(m, n, k, clusters, dtype) >= units:
        return DATA_PARALLEL
    return BEST


# Small M against a long K (a decode batch through a down projection): rung 10's tiles are mostly empty rows,
# the GEMM is bound by reading B, and a few clusters would stream all of it; spreading every unit's k-blocks
# over all clusters (dp = 0) reads B with every SM. Measured (dev/gemm_small_m.py,
# results/h100-sxm5-80gb/profiles/gemm-small-m/): ahead at 16 and 128 tokens on both Llama-3 down projections
# (K = 3.5 N; 0.50 -> 0.64, 0.66 -> 0.74, 0.63 -> 0.80, 0.76 -> 0.82 of cuBLAS), level or behind where K = N
# or at 512 tokens (a full tile of rows). 16-bit types only (fp8 not measured).
SPLIT_ALL_MIN_K_OVER_N, SPLIT_ALL_MAX_FILL = 2, 0.5


def split_all(m: int, n: int, k: int, dtype: str, clusters: int) -> bool:
    """Whether the public default runs rung 10 with every unit split along K over all clusters (dp = 0)."""
    if dtype == "e4m3":
        return False
    best = RUNGS[BEST]
    return m <= best.bm and k >= SPLIT_ALL_MIN_K_OVER_N * n and best.units(m, n) <= SPLIT_ALL_MAX_FILL * clusters


def public_rung(target: Target, dtype: str) -> int:
    """The rung the public default runs on `target` when none is named: AUTO (the per-shape choice of
    pick_rung) or BEST_FP8 where the TMA rungs run; elsewhere rung 1, the one rung built without them.
    ValueError saying why where no rung of `dtype` runs on `target`."""
    best = BEST_FP8 if dtype == "e4m3" else BEST
    if RUNGS[best].needs.why_not(target) is None:
        return BEST_FP8 if dtype == "e4m3" else AUTO
    r1 = RUNGS[1]
    if dtype in r1.dtypes and r1.needs.why_not(target) is None:
        return 1
    if dtype not in r1.dtypes:
        built = ", ".join(str(r) for r in RUNGS if dtype in RUNGS[r].dtypes)
        raise ValueError(
            f"no {dtype} GEMM of ours runs on this GPU: {dtype} is built on rungs {built} only, and rung {best} "
            f"{RUNGS[best].needs.why_not(target)}"
        )
    raise ValueError(f"no GEMM of ours runs on this GPU: rung 1 (mma.sync) {r1.needs.why_not(target)}")


def check_rung_runs(rung: int, target: Target) -> None:
    """ValueError naming what `target` lacks when it cannot run the built rung `rung`."""
    why = RUNGS[rung].needs.why_not(target)
    if why:
        raise ValueError(f"rung {rung} ({RUNGS[rung].name}) cannot run on this GPU: it {why}")


def _wgmma_sass(bn: int, dtype: str) -> str:
    """The m64n{bn} wgmma from shared-memory descriptors as ptxas writes it for `dtype` (QGMMA ...E4M3.E4M3
    for fp8; the fp16 form has no type suffix after .F32)."""
    if dtype == "e4m3":
        return rf"QGMMA\.64x{bn}x32\.F32\.E4M3\.E4M3 R\d+, gdesc\[UR\d+\], R\d+"
    suffix = r"\.BF16" if dtype == "bf16" else ""
    return rf"HGMMA\.64x{bn}x16\.F32{suffix} R\d+, gdesc\[UR\d+\], R\d+"


def required_sass(rung: Rung, dtype: str) -> list[str]:
    if rung.number >= 6:
        return required_sass_ws(rung, dtype)
    if rung.number == 1:
        mma = r"HMMA\.16816\.F32\.BF16" if dtype == "bf16" else r"HMMA\.16816\.F32 "
        return [
            mma,
            r"LDSM\.16\.M88\.4",
            r"LDGSTS\.E\.BYPASS\.128",
            r"LDGDEPBAR",
            r"DEPBAR\.LE SB0",
            r"\A(?![\s\S]*\bLDL\b)",
        ]
    req = [
        _wgmma_sass(rung.bn, "bf16" if dtype == "bf16" else "fp16"),  # rungs 2-5: 16-bit builds only
        r"UTMALDG\.2D",
        r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT",
        WAIT_SLEEP_SASS,
        r"SYNCS\.ARRIVE\.TRANS64",
        r"WARPGROUP\.ARRIVE",
        r"\A(?![\s\S]*\bLDL\b)",
    ]
    if rung.number >= 3:
        req += [r"USETMAXREG\.DEALLOC\.CTAPOOL 0x28", r"USETMAXREG\.TRY_ALLOC\.CTAPOOL"]
    if rung.number == 3:
        req += [r"SYNCS\.ARRIVE\.TRANS64\.A1T0", r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1"]
    if rung.cluster > 1:  # multicast TMA, remote mbarrier arrives, cluster barriers
        req += [r"UTMALDG\.2D\.MULTICAST", r"SYNCS\.ARRIVE\.TRANS64\.RED\.A1T0", r"UCGABAR_ARV", r"UCGABAR_WAIT"]
    return req


def required_sass_ws(rung: Rung, dtype: str) -> list[str]:
    """Rungs 6+: the wgmma of the dtype from descriptors (QGMMA ...E4M3.E4M3 for fp8), TMA loads with
    the multicast of the shared operand, the stmatrix epilogue (STSM), its TMA store (UTMASTG) and the
    bulk-group waits (DEPBAR on SB0), the per-warpgroup named barrier (bar.sync id, 128 threads), the
    proxy fence between the generic writes and the TMA read, and no local memory."""
    mma = _wgmma_sass(rung.bn, dtype)
    # a 1-D cluster multicasts one operand and loads the other plainly; a 2 x 2 cluster multicasts both
    plain = [r"\A(?![\s\S]*UTMALDG\.2D )"] if rung.cluster > 1 and rung.cluster_n > 1 else [r"UTMALDG\.2D "]
    # the two-slot epilogue waits for the store two boxes back (SB0 <= 1); a whole-tile staging only for all
    stores = [r"\A(?![\s\S]*DEPBAR\.LE SB0, 0x1)"] if rung.epi_whole else [r"DEPBAR\.LE SB0, 0x1"]
    if rung.no_zero:  # the tile's first wgmma takes scale-d from a predicate: D = A B, old values ignored
        stores.append(mma + r", !?UP\d")
    return [
        mma,
        r"UTMALDG\.2D\.MULTICAST",
        *plain,
        r"UTMASTG\.2D",
        r"UTMACMDFLUSH",
        r"STSM\.16\.M88\.4",
        *stores,
        r"DEPBAR\.LE SB0, 0x0",
        r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x80",
        r"FENCE\.VIEW\.ASYNC\.S",
        r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT",
        WAIT_SLEEP_SASS,
        r"SYNCS\.ARRIVE\.TRANS64\.RED\.A1T0",
        r"USETMAXREG\.DEALLOC\.CTAPOOL 0x28",
        r"USETMAXREG\.TRY_ALLOC\.CTAPOOL",
        r"UCGABAR_ARV",
        r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1",
        r"\A(?![\s\S]*\b(?:LDL|STL)\b)",
    ] + (SK_SASS if rung.stream_k else [])


# the hinted mbarrier wait: a failed try_wait sleeps until the barrier wakes it, then checks again
WAIT_SLEEP_SASS = r"@!P\d NANOSLEEP\.SYNCS 0x989680[^\n]*\n[^\n]*@!P\d SYNCS\.PHASECHK\.TRANS64 P\d"

# stream-K fix-up: the partial sums stored and loaded past L1 (.cg: STG/LDG ... .STRONG.GPU), the flag
# published with a gpu-scope release (a MEMBAR before the strong store) and polled with acquire loads
SK_SASS = [
    r"STG\.E\.STRONG\.GPU desc\[UR\d+\]\[R\d+\.64\+0x200\]",
    r"LDG\.E\.STRONG\.GPU R\d+, desc\[UR\d+\]\[R\d+\.64\+0x200\]",
    r"MEMBAR\.ALL\.GPU[^\n]*\n[^\n]*ERRBAR[^\n]*\n[^\n]*CGAERRBAR[^\n]*\n[^\n]*STG\.E\.STRONG\.GPU",
    r"LDG\.E\.STRONG\.GPU[^\n]*\n[^\n]*CCTL\.IVALL",
]


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def check_dims(m: int, n: int, k: int, rung: int = AUTO, dtype: str = "bf16") -> None:
    """The shape rules of the kernels, with a message that says which one is broken (AUTO: those of the
    rungs it picks from, which share them)."""
    if rung == AUTO:
        rung = BEST_FP8 if dtype == "e4m3" else BEST
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; supported: {', '.join(DTYPES)}")
    if dtype == "e4m3":
        if rung not in RUNGS or rung < FP8_FROM:
            raise ValueError(
                f"fp8 e4m3 is built on rungs {', '.join(str(r) for r in RUNGS if r >= FP8_FROM)}, not rung {rung}"
            )
        if isinstance(k, int) and k % 16:
            raise ValueError(
                f"K = {k} is not a multiple of 16: fp8 rows must be 16-byte multiples (TMA strides); pad K"
            )
    for name, v in (("M", m), ("N", n), ("K", k)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    # M is free: TMA loads zero-fill past the last row of A and stores clip at C's (rungs 2+ check the row
    # on register stores). K and N set row lengths: TMA needs 16-byte row strides, the epilogue stores pairs.
    if k % 8:
        raise ValueError(f"K = {k} is not a multiple of 8: the rows of A and B must be 16-byte multiples (TMA); pad K")
    if n % 8:
        raise ValueError(f"N = {n} is not a multiple of 8: the rows of C must be 16-byte multiples (TMA); pad N")
    if rung == 1:
        r = RUNGS[1]
        for name, v, t in (("M", m, r.bm), ("N", n, r.bn), ("K", k, r.bk)):
            if v % t:
                raise ValueError(f"rung 1 (mma.sync) needs {name} a multiple of its tile {t}, got {v}")
    if rung not in RUNGS:
        raise ValueError(f"rung {rung} is not built; built rungs: {', '.join(map(str, RUNGS))}")


def describe_schedule(rung: Rung, m: int, n: int, k: int, clusters: int, dtype: str = "bf16") -> str:
    """One line on how `rung` spreads an m x n x k GEMM over `clusters` resident clusters (persistent
    rungs): units, waves, and what its stream-K rule splits."""
    if not rung.persistent:
        return "one CTA per tile (not persistent)"
    bm, bn = rung.bm * rung.cluster, rung.bn * rung.cluster_n
    units = rung.units(m, n)
    kb = -(-k // rung.bk_for(dtype))
    what = (
        f"{units} unit{'s' if units != 1 else ''} of {bm}x{bn} on {clusters} clusters "
        f"({units / clusters:.2f} waves), {kb} k-block{'s' if kb != 1 else ''} each"
    )
    dp = rung.dp_units(m, n, k, clusters, dtype)
    r = units - dp
    if r == 0:
        return what + ": all data-parallel"
    lead = f"{dp // clusters} wave{'s' if dp // clusters != 1 else ''} data-parallel, then "
    if 0 < r < clusters and 2 * r >= clusters:
        h = -(-r * kb // clusters)
        return (
            what + f": {lead}the last {r} units split: heads of {h} k-blocks on {r} clusters, "
            f"tails of {kb - h} on the {clusters - r} idle ones"
        )
    return what + f": {lead}the k-blocks of the last {r} units spread evenly over the {clusters} clusters (stream-K)"


Segment = tuple[int, int, int, int, tuple[int, ...]]  # (unit, k0, k1, slot written or -1, slots added)


def stream_k_schedule(units: int, clusters: int, kb: int, dp: int) -> list[list[Segment]]:
    """What each cluster of a stream-K rung does, in order, as kernels/gemm.cu decides it for `dp`
    data-parallel units (the same integer arithmetic: next_work and the fix-up): per cluster a list of
    (unit, k0, k1, slot, waits). A segment with k0 > 0 writes its fp32 partial sums to workspace slot
    `slot` (cluster-level index; -1: none); a segment with k0 == 0 and k1 < kb adds the slots in `waits`
    before storing C. Continuous split: slot = the writing cluster; head/tail split (a last wave more
    than half full): slot = 2 x (unit - dp) + tail part. For CPU tests."""
    dp = min(dp, units)
    r = units - dp
    ht = 0 < r < clusters and 2 * r >= clusters
    out: list[list[Segment]] = []
    if ht:
        h = -(-r * kb // clusters)
        tl, f = kb - h, clusters - r
        tt = r * tl
        holder = lambda i: ((i + 1) * f + tt - 1) // tt - 1
    else:
        ski = r * kb
        q = min(clusters, ski)
    for c in range(clusters):
        work: list[Segment] = [(u, 0, kb, -1, ()) for u in range(c, dp, clusters)]
        if ht:
            if c < r:
                u = dp + c
                waits: tuple[int, ...] = ()
                if tl > 0:
                    s0 = c * tl
                    waits = (2 * c,) + ((2 * c + 1,) if holder(s0 + tl - 1) != holder(s0) else ())
                work.append((u, 0, h, -1, waits))
            else:
                g, gend = (c - r) * tt // f, (c - r + 1) * tt // f
                while g < gend:
                    v = g // tl
                    k0 = h + g - v * tl
                    k1 = min(kb, k0 + gend - g)
                    g += k1 - k0
                    work.append((dp + v, k0, k1, 2 * v + (k0 != h), ()))
        elif c < q:
            g, gend = dp * kb + c * ski // q, dp * kb + (c + 1) * ski // q
            while g < gend:
                u = g // kb
                k0 = g - u * kb
                k1 = min(kb, k0 + gend - g)
                g += k1 - k0
                waits = ()
                if k0 == 0 and k1 < kb:
                    last_i = u * kb + kb - 1 - dp * kb
                    last = ((last_i + 1) * q + ski - 1) // ski - 1
                    waits = tuple(range(c + 1, last + 1))
                work.append((u, k0, k1, c if k0 > 0 else -1, waits))
        out.append(work)
    return out
