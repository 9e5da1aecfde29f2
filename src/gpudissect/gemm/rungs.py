"""The rungs of our GEMM ladder (kernels/gemm.cu): the Rung record (tile shape, launch geometry, kernel
spec) and the RUNGS table, with the dtypes built. gemm.variants, the public face, re-exports them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..analysis.gemm_model import TileConfig, stream_k_dp
from ..capability import Needs
from ..device.compiler import KernelSpec
from .rung_sass import required_sass

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
    def epi_cols(self) -> int:
        """Columns of C per epilogue box (rungs 6+): 64, or 32 where the tile is not a multiple of 64 wide."""
        return 64 if self.bn % 64 == 0 else 32

    @property
    def epi_swizzle(self) -> str:
        """The swizzle of C's boxes in shared memory and its tensor map: 128-byte rows swizzled, 64-byte rows not."""
        return "128B" if self.epi_cols == 64 else "NONE"

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


_RUNG6 = Rung(
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
)
_RUNG8 = replace(
    _RUNG6,
    number=8,
    name="stream_k",
    what="rung 6 with stream-K when there is more than one wave and the last is at most half full: the k-blocks of "
    "the last 1-1.5 waves spread evenly over all clusters, split tiles summed in fp32 through a global "
    "workspace (release/acquire flags)",
    stream_k=True,
)
_RUNG10 = replace(
    _RUNG8,
    number=10,
    name="stream_k_full",
    what="rung 8 that also splits a last wave more than half full: each of its units' first "
    "k-blocks (the head) on its own cluster, in step, the rest (the tails) spread over the idle clusters, "
    "where the split's measured cost model says it beats leaving the wave whole",
    stream_k_full=True,
)


def _wide(number: int, name: str, what: str, bn: int, stages: int = 4) -> Rung:
    """Rung 10 on a tile of `bn` columns (rungs 11-13): everything else as rung 10."""
    return replace(_RUNG10, number=number, name=name, what=what, bn=bn, stages=stages)


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
        _RUNG6,
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
        _RUNG8,
        replace(
            _RUNG8,
            number=9,
            name="narrow_tile",
            what="rung 8 on 128x128 tiles with 6 stages: twice the tiles for the sizes where 128x256 "
            "tiles leave a wave partly idle",
            bn=128,
            stages=6,
        ),
        _RUNG10,
        _wide(
            11,
            "wide192",
            "rung 10 on 128x192 tiles: three quarters of the tile pairs, for the sizes where 128x256 pairs leave "
            "a wave partly idle and 128x128 ones overshoot it",
            192,
        ),
        _wide(
            12,
            "wide160",
            "rung 10 on 128x160 tiles with 5 stages, C leaving in 64x32 boxes: the pairs that fill the waves of "
            "Llama-3-70B's QKV projection at 512 and 1024 tokens (N = 10240: 64 columns of tiles)",
            160,
            stages=5,
        ),
        _wide(
            13,
            "wide224",
            "rung 10 on 128x224 tiles, C leaving in 64x32 boxes: the pairs that fill the waves of Llama-3-8B's "
            "gate/up projection at 512 tokens (N = 28672: 128 columns of tiles)",
            224,
        ),
    )
}
