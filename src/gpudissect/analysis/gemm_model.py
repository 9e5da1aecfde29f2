"""CPI/roofline model of a tiled tensor-core GEMM on one GPU (Yan et al. §VI-A, Eqs. 3-5, moved to Hopper).

Yan et al. count, per CTA and k-block, the cycles the tensor cores need (Eq. 3) and the cycles each
memory level needs to deliver the tile's operands (Eqs. 4-5), and call the largest the bound. This
module does the same from measured per-clock figures of the GPU:

- tensor cores: BM*BN*BK multiply-adds at the measured dense rate per SM and clock (wgmma, or
  mma.sync for the pre-Hopper rung, whose measured rate on Hopper is far lower);
- shared memory: the bytes the matrix instructions read (wgmma reads A and B of every m64 slice
  from shared memory; mma.sync reads them through ldmatrix per warp tile, Yan's Eq. 5) plus the bytes
  the copies write, at the measured shared-memory bytes per clock per SM;
- L2: (BM + BN) * BK operand bytes per k-block from L2, divided by the cluster's multicast sharing,
  plus the tile's C writes spread over its k-blocks (counted in 32-byte sector writes: in the
  wgmma fragment layout the 4 lanes of a quad store 16 contiguous bytes of a row per instruction, so
  a 32-byte sector of C arrives as two halves from two store instructions; a TMA store writes whole
  sectors), at the SM's share of the measured L2 bytes per clock;
- DRAM: the bytes each wave of concurrent CTAs must fetch (the A rows and B columns its tiles span,
  for row-major or grouped tile order) at the measured DRAM bandwidth;
- latency: a pipeline of S stages keeps S-1 k-blocks in flight, so one k-block takes at least the
  L2 latency / (S - 1) (Little's law); a single stage pays the latency plus the math.

Time = waves x (k-blocks x the largest per-k-block cost + a non-overlapped epilogue) (stream-K: the
waves as a fraction, plus one fp32 partial tile through L2), with wave
quantisation; the resource with the largest cost is the one that binds. Everything is plain Python,
with no GPU: the inputs are figures a run stored (`Machine.from_summary`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

RESOURCES = ("tensor", "shared", "l2", "dram", "latency")


@dataclass(frozen=True)
class Machine:
    """Measured per-clock figures of one GPU (per SM unless named otherwise)."""

    sm_count: int
    clock_mhz: float  # SM clock the GEMM runs at (converts cycles to seconds)
    wgmma_fma_per_clk_sm: float  # dense 16-bit wgmma multiply-adds per clock per SM
    mma_sync_fma_per_clk_sm: float  # the same for mma.sync m16n8k16 (pre-Hopper path)
    smem_bytes_per_clk_sm: float
    l2_bytes_per_clk: float  # whole chip
    dram_gbps: float
    l2_latency_cycles: float
    l2_bytes: int
    wgmma_fp8_fma_per_clk_sm: float = 0.0  # dense e4m3 wgmma (f32 accumulate); 0: not measured
    sources: dict[str, str] = field(default_factory=dict, compare=False)  # field -> summary key used

    @property
    def dram_bytes_per_clk(self) -> float:
        return self.dram_gbps * 1e9 / (self.clock_mhz * 1e6)

    @classmethod
    def from_summary(cls, figures: Mapping[str, object], sm_count: int, clock_mhz: float | None = None) -> Machine:
        """Pick the inputs out of a summary (key -> value). Raises KeyError naming what is missing."""
        wanted = {
            "wgmma_fma_per_clk_sm": (
                "tc.wgmma.bf16_f32.m64n256k16.ss_rand_fma_per_clk_sm",
                "tc.wgmma.f16_f32.m64n256k16.ss_rand_fma_per_clk_sm",
            ),
            "mma_sync_fma_per_clk_sm": (
                "tc.mma.bf16_f32.m16n8k16.peak_fma_per_clk_sm",
                "tc.mma.f16_f32.m16n8k16.peak_fma_per_clk_sm",
            ),
            "smem_bytes_per_clk_sm": ("mem.bw.shared_bytes_per_clk_sm",),
            "l2_bytes_per_clk": ("mem.bw.l2_bytes_per_clk",),
            "dram_gbps": ("mem.bw.dram_gbps",),
            "l2_latency_cycles": ("mem.latency.l2_hit_cycles",),
            "l2_bytes": ("mem.size.l2_bytes",),
            "clock_mhz": ("tc.wgmma.bf16_f32.m64n256k16.rand_sm_clock_mhz", "tc.cublas.bf16.sm_clock_mhz"),
        }
        vals: dict[str, float] = {}
        sources: dict[str, str] = {}
        for name, keys in wanted.items():
            for k in keys:
                v = figures.get(k)
                if isinstance(v, (int, float)) and math.isfinite(v) and v > 0:
                    vals[name], sources[name] = float(v), k
                    break
            else:
                if name == "clock_mhz" and clock_mhz is not None:
                    continue
                raise KeyError(f"no usable figure for {name} (looked for {', '.join(keys)})")
        if clock_mhz is not None:
            vals["clock_mhz"], sources["clock_mhz"] = float(clock_mhz), "measured in this run"
        fp8_key = "tc.wgmma.e4m3_f32.m64n256k32.ss_rand_fma_per_clk_sm"  # optional: only fp8 tiles need it
        fp8 = figures.get(fp8_key)
        if isinstance(fp8, (int, float)) and math.isfinite(fp8) and fp8 > 0:
            vals["wgmma_fp8_fma_per_clk_sm"], sources["wgmma_fp8_fma_per_clk_sm"] = float(fp8), fp8_key
        return cls(
            sm_count=sm_count,
            clock_mhz=vals["clock_mhz"],
            wgmma_fma_per_clk_sm=vals["wgmma_fma_per_clk_sm"],
            mma_sync_fma_per_clk_sm=vals["mma_sync_fma_per_clk_sm"],
            smem_bytes_per_clk_sm=vals["smem_bytes_per_clk_sm"],
            l2_bytes_per_clk=vals["l2_bytes_per_clk"],
            dram_gbps=vals["dram_gbps"],
            l2_latency_cycles=vals["l2_latency_cycles"],
            l2_bytes=int(vals["l2_bytes"]),
            wgmma_fp8_fma_per_clk_sm=vals.get("wgmma_fp8_fma_per_clk_sm", 0.0),
            sources=sources,
        )


@dataclass(frozen=True)
class TileConfig:
    """What a kernel variant decides: CTA tile, pipeline, cluster, instruction path, tile order."""

    bm: int
    bn: int
    bk: int
    stages: int
    path: str = "wgmma"  # "wgmma" | "mma_sync"
    cluster_m: int = 1  # CTAs along M sharing (multicasting) one B tile
    cluster_n: int = 1  # CTAs along N sharing one A tile
    ctas_per_sm: int = 1
    warp_m: int = 64  # mma_sync only: warp tile (Yan's w_m x w_n)
    warp_n: int = 64
    group_m: int = 0  # tile rows per group in the tile order (0: row-major order)
    epilogue_overlapped: bool = False  # persistent kernels store one tile while loading the next
    in_bytes: int = 2
    out_bytes: int = 2
    c_sector_writes: float = 1.0  # L2 writes per 32-byte sector of C (2: two 16-byte halves from register stores)
    stream_k: bool = False  # a partial last wave spread over all SMs along K (fp32 partials through L2)
    stream_k_full: bool = False  # stream-K also on a last wave more than half full (rung 10's rule)

    def __post_init__(self) -> None:
        if min(self.bm, self.bn, self.bk, self.stages, self.cluster_m, self.cluster_n, self.ctas_per_sm) < 1:
            raise ValueError(f"tile parameters must be positive: {self}")
        if self.c_sector_writes < 1:
            raise ValueError(f"every sector of C is written at least once, got c_sector_writes={self.c_sector_writes}")
        if self.path not in ("wgmma", "mma_sync"):
            raise ValueError(f"path must be wgmma or mma_sync, not {self.path!r}")
        if self.path == "wgmma" and self.bm % 64:
            raise ValueError(f"a wgmma tile needs BM a multiple of 64 (m64 instructions), got {self.bm}")


@dataclass(frozen=True)
class Prediction:
    cycles_per_kblock: dict[str, float]  # resource -> cycles one k-block of one CTA costs on its SM
    bound: str  # the resource with the largest cost
    waves: int
    wave_efficiency: float  # tiles / (waves x concurrent CTAs)
    seconds: float
    tflops: float

    def share(self, resource: str) -> float:
        """Cost of `resource` relative to the binding one (1.0 for the bound)."""
        return self.cycles_per_kblock[resource] / self.cycles_per_kblock[self.bound]


# What one split run costs beyond its k-blocks, in k-block times (a drained pipeline, 128 KiB of fp32
# partial sums per CTA written through L2, a gpu-scope release; or the fix-up reading them back): the value
# that separates, in rung 10's device checks (gemm_device_check.py lastwave, raw output under
# results/h100-sxm5-80gb/profiles/gemm-lastwave/, no stored run), the shapes where a head/tail split of the
# last wave won from those where it lost.
SK_RUN_KBLOCKS = 6.0


def head_tail_time(units: int, clusters: int, kb: int) -> float:
    """k-block times the head/tail split of a last wave of `units` < clusters units takes: the heads
    (H = ceil(units kb / clusters) k-blocks, then the fix-up) and the idle clusters' tail runs (equal
    shares of units x (kb - H) tail k-blocks, each run costing SK_RUN_KBLOCKS more), whichever is later."""
    h = -(-units * kb // clusters)
    tl, f = kb - h, clusters - units
    if tl <= 0:
        return float(kb)
    tt = units * tl
    worst = 0.0
    for j in range(f):
        g0, g1 = j * tt // f, (j + 1) * tt // f
        runs = (g1 - 1) // tl - g0 // tl + 1 if g1 > g0 else 0
        worst = max(worst, g1 - g0 + runs * SK_RUN_KBLOCKS)
    return max(h + SK_RUN_KBLOCKS, worst)


def stream_k_dp(units: int, clusters: int, kb: int, full_last_wave: bool = False) -> int:
    """Units a stream-K kernel runs data-parallel (the rest is split along K over all clusters):
    - more than one wave and a last wave at most half full: all but the last 1-1.5 waves (rung 8), so
      every cluster gets at least one unit's worth of k-blocks and a split tile has at most 2-3 parts;
    - with `full_last_wave` (rung 10), a fuller last wave alone, split into heads and tails, when
      head_tail_time says that beats leaving it whole (kb k-block times);
    - otherwise all (one wave or less: splitting every tile lost up to half the speed at 1024-2048)."""
    if min(units, clusters, kb) < 1:
        raise ValueError(f"units, clusters and k-blocks must be positive, got {units}, {clusters}, {kb}")
    full, rem = divmod(units, clusters)
    if full == 0 or rem == 0:
        return units
    if 2 * rem <= clusters:
        return (full - 1) * clusters
    if full_last_wave and head_tail_time(rem, clusters, kb) < kb:
        return full * clusters
    return units


def wave_footprint(tiles_m: int, tiles_n: int, concurrent: int, group_m: int) -> tuple[float, float]:
    """Tile rows and tile columns that `concurrent` consecutive tiles span, for row-major order
    (group_m = 0) or grouped order (group_m tile rows walked column by column)."""
    c = min(concurrent, tiles_m * tiles_n)
    if group_m <= 0:
        rows = math.ceil(c / tiles_n)
        return float(rows), float(min(c, tiles_n))
    g = min(group_m, tiles_m)
    return float(min(c, g)), float(min(tiles_n, math.ceil(c / g)))


def predict(machine: Machine, cfg: TileConfig, m: int, n: int, k: int) -> Prediction:
    if min(m, n, k) < 1:
        raise ValueError(f"GEMM dimensions must be positive, got {m} x {n} x {k}")
    e = cfg.in_bytes
    ctas = cfg.ctas_per_sm  # CTAs sharing one SM's tensor cores and shared memory
    fma = cfg.bm * cfg.bn * cfg.bk
    rate = machine.wgmma_fma_per_clk_sm if cfg.path == "wgmma" else machine.mma_sync_fma_per_clk_sm
    if cfg.in_bytes == 1:  # fp8 operands: the e4m3 wgmma rate, measured, never assumed
        if cfg.path != "wgmma" or machine.wgmma_fp8_fma_per_clk_sm <= 0:
            raise ValueError("an fp8 tile needs the measured e4m3 wgmma rate (tc.wgmma.e4m3_f32...fma_per_clk_sm)")
        rate = machine.wgmma_fp8_fma_per_clk_sm
    tensor = ctas * fma / rate
    fill = (cfg.bm + cfg.bn) * cfg.bk * e  # bytes the copies write into shared memory
    if cfg.path == "wgmma":
        # every m64 wgmma reads its 64 rows of A and the whole BN x BK of B
        reads = (cfg.bm // 64) * (64 + cfg.bn) * cfg.bk * e
    else:
        # Yan Eq. 5: each warp reads its warp tile's A rows and B columns per k-block
        warps = (cfg.bm // cfg.warp_m) * (cfg.bn // cfg.warp_n)
        reads = warps * (cfg.warp_m + cfg.warp_n) * cfg.bk * e
    shared = ctas * (reads + fill) / machine.smem_bytes_per_clk_sm
    l2_share = machine.l2_bytes_per_clk / machine.sm_count
    kblocks = math.ceil(k / cfg.bk)
    c_bytes = cfg.bm * cfg.bn * cfg.out_bytes * cfg.c_sector_writes  # L2 write traffic of one C tile
    l2_bytes = cfg.bm * cfg.bk * e / cfg.cluster_n + cfg.bn * cfg.bk * e / cfg.cluster_m + c_bytes / kblocks
    l2 = ctas * l2_bytes / l2_share

    tiles_m, tiles_n = math.ceil(m / cfg.bm), math.ceil(n / cfg.bn)
    tiles = tiles_m * tiles_n
    concurrent = machine.sm_count * ctas
    waves = math.ceil(tiles / concurrent)
    rows, cols = wave_footprint(tiles_m, tiles_n, concurrent, cfg.group_m)
    # one wave streams the A rows and B columns its tiles span, once, from DRAM (L2 keeps them for
    # the other CTAs of the wave): per k-block of the wave, spread over the SMs
    wave_bytes = (rows * cfg.bm + cols * cfg.bn) * cfg.bk * e
    dram = wave_bytes / machine.dram_bytes_per_clk
    # S stages keep S-1 k-blocks in flight while one is consumed (Little's law); one stage
    # serialises the load and the math
    latency = machine.l2_latency_cycles / (cfg.stages - 1) if cfg.stages > 1 else machine.l2_latency_cycles + tensor

    costs = {"tensor": tensor, "shared": shared, "l2": l2, "dram": dram, "latency": latency}
    bound = max(costs, key=costs.__getitem__)
    epilogue = 0.0
    if not cfg.epilogue_overlapped:  # C tile leaves through L2 before the CTA's successor starts
        epilogue = ctas * c_bytes / l2_share
    cycles = waves * (kblocks * costs[bound] + epilogue)
    efficiency = tiles / (waves * concurrent)
    if cfg.stream_k and stream_k_dp(tiles, concurrent, kblocks, cfg.stream_k_full) < tiles:  # the kernel's split
        # every SM gets the same share of k-blocks, plus one fp32 partial tile written by one SM and
        # read back by another (the fix-up of a split tile)
        fixup = 2 * ctas * cfg.bm * cfg.bn * 4 / l2_share
        cycles = tiles / concurrent * (kblocks * costs[bound] + epilogue) + fixup
        efficiency = 1.0
    seconds = cycles / (machine.clock_mhz * 1e6)
    return Prediction(costs, bound, waves, efficiency, seconds, 2.0 * m * n * k / seconds / 1e12)


def yan_table_vi(
    cpi_hmma: float,
    cpi_ldg128: float,
    cpi_sts128: float,
    cpi_lds32: float,
    bm: int,
    bn: int,
    bk: int,
    wm: int,
    wn: int,
    wk: int,
) -> tuple[float, float]:
    """Yan et al.'s Eqs. 3-5 as printed (Turing, HMMA.1688): (tensor-core cycles, memory-I/O cycles)
    per CTA and k-block. Kept to check this module against the paper's Table VI."""
    hmma = 2 * bm * bn * bk / (2 * 16 * 8 * 8 * 4) * cpi_hmma
    ldg_sts = (bm + bn) * bk * 2 / (32 * 16) * (cpi_ldg128 + cpi_sts128)
    lds = (bm * bn) / (wm * wn) * (wm / 8 + wn / 8) * (bk / wk) * cpi_lds32
    return hmma, ldg_sts + lds


def abs_errors(pairs: list[tuple[float, float]]) -> list[float]:
    """|predicted - measured| / measured for (predicted, measured) TFLOPS pairs with measured > 0."""
    return [abs(p - q) / q for p, q in pairs if q > 0]


def with_clock(machine: Machine, mhz: float) -> Machine:
    return replace(machine, clock_mhz=mhz, sources={**machine.sources, "clock_mhz": "measured in this run"})
