"""Shared by the TMA and asynchronous-copy benchmarks: the kernel specs (the SASS each kernel must hold),
the memory suite's streaming read, and the derivations on measured numbers (CPU-testable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ....analysis.stats import median_spread
from ...memory.bandwidth import BW
from ...registry import KernelSpec

_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
_MBAR = [r"SYNCS\.EXCH\.64", r"SYNCS\.ARRIVE\.TRANS64", r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT"]
# Which SASS each kernel must hold (compiled for sm_90a): the bulk copy engine's UBLKCP, the tensor
# copies' UTMALDG.<rank>D, the mbarrier init / expect-tx arrive / try-wait as SYNCS.*.
TMA = KernelSpec(
    "hopper_tma.cu",
    {
        "tma_chase": [r"UBLKCP\.S\.G", *_MBAR, r"LDS\.64", _CLOCK],
        "bulk_read": [r"UBLKCP\.S\.G", *_MBAR, r"LDS\.128"],
        "tensor1d_read": [r"UTMALDG\.1D", *_MBAR, r"LDS\.128"],
        "tensor2d_read": [r"UTMALDG\.2D", *_MBAR, r"LDS\.128"],
        "tensor3d_read": [r"UTMALDG\.3D", *_MBAR, r"LDS\.128"],
    },
)
BLOCK_SIZES = (8, 16, 32)
CP_BYTES = (4, 8, 16)
_LDGSTS = {4: r"LDGSTS\.E \[", 8: r"LDGSTS\.E\.64 \[", 16: r"LDGSTS\.E\.128 \["}
ASYNC = KernelSpec(
    "hopper_async_copy.cu",
    {
        **{f"mm_sync_{bs}": [r"LDG\.E ", r"STS ", r"LDS", r"FFMA", r"BAR\.SYNC"] for bs in BLOCK_SIZES},
        **{
            f"mm_async{cp}_{bs}": [_LDGSTS[cp], r"LDGDEPBAR", r"DEPBAR\.LE SB0, 0x1", r"FFMA", r"BAR\.SYNC"]
            for cp in CP_BYTES
            for bs in BLOCK_SIZES
        },
    },
)
STREAM = BW["fp32v4"]  # the memory suite's streaming read (memory_bandwidth.cu dram_read, float4)


# ---------------------------------------------------------------------------------------
# Derivations on measured numbers (CPU-testable)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rate:
    kind: str  # bulk | 1d | 2d | 3d | shape
    label: str  # size or box
    chunk_bytes: int
    mult: int  # CTAs per SM
    gbps: float  # median over repetitions
    lo: float
    hi: float
    ok: bool = True

    @classmethod
    def of(cls, kind: str, label: str, chunk_bytes: int, mult: int, gbps: Sequence[float], ok: bool) -> Rate:
        """The rate of repeated measurements: their median with its min..max spread."""
        return cls(kind, label, chunk_bytes, mult, *median_spread(gbps), ok)


def peak(rates: Sequence[Rate], kind: str | tuple[str, ...], chunk_bytes: int | None = None) -> Rate | None:
    """The best (median) rate among the checked rates of a kind, or of several kinds (optionally one
    copy size)."""
    kinds = (kind,) if isinstance(kind, str) else kind
    cand = [r for r in rates if r.kind in kinds and r.ok and (chunk_bytes is None or r.chunk_bytes == chunk_bytes)]
    return max(cand, key=lambda r: r.gbps) if cand else None


def latency_offset(tma: Sequence[float], ordinary: Sequence[float]) -> tuple[float, float, float]:
    """Median, min and max over footprints of TMA latency minus ordinary latency."""
    d = np.asarray(tma, float) - np.asarray(ordinary, float)
    if d.size == 0:
        raise ValueError("no footprints")
    return float(np.median(d)), float(d.min()), float(d.max())


def speedups(sync: dict[int, float], asyn: dict[int, float]) -> dict[int, float]:
    """AsyncPipe / SyncShare at each blocks-per-SM point both have."""
    return {k: asyn[k] / sync[k] for k in sorted(sync) if k in asyn and sync[k] > 0}


def best_speedup(sp: dict[int, float]) -> tuple[float, int]:
    """The best-case speedup and the blocks per SM where it occurs."""
    if not sp:
        raise ValueError("no common points")
    k = max(sp, key=lambda x: sp[x])
    return sp[k], k


def mean_gain_pct(sp: dict[int, float]) -> float:
    """Mean over blocks-per-SM points of (speedup - 1), in percent (like 003's 'Perf' column)."""
    return 100.0 * float(np.mean([v - 1.0 for v in sp.values()]))
