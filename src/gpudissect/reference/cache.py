"""Published instruction- and constant-cache figures, transcribed from the seed papers.

Paper ``"002"``: Jia et al., *Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking*,
Table 3.1 (all GPUs, measured on PCIe cards) and §3.3 text (Volta L0/L1 instruction-cache geometry).
Keys are those of the cache suite (bench/cache/icache.py, bench/cache/const.py). Jia's constant
latencies are "broadcast latency" (all lanes on one address), which is what our one-lane chase
measures. Instruction-cache sizes are kept for V100 only: for Pascal/Maxwell/Kepler Jia names the
levels L1/L1.5/L2, and which of those corresponds to Volta's L0/L1 is not something the paper states.
Jia et al.'s Turing (T4) report is not among the seed texts, so no T4 value is transcribed.
"""

from __future__ import annotations

from .memory import KiB, Published

GPUS = ("V100", "P100", "P4", "M60", "K80")
_T31 = "Table 3.1"
_APPROX = "printed with ~ (approximately)"


def _row(key: str, values: tuple[float | None, ...], unit: str, note: str = "") -> list[Published]:
    return [Published(key, g, float(v), unit, "002", _T31, note) for g, v in zip(GPUS, values) if v is not None]


CACHE: tuple[Published, ...] = (
    *_row("cache.const.l1_hit_cycles", (27, 24, 25, 25, 30), "cycles", _APPROX + "; L1 constant broadcast latency"),
    *_row("cache.const.l1_bytes", (2 * KiB,) * 5, "bytes"),
    *_row("cache.const.l1_line_bytes", (64,) * 5, "bytes"),
    *_row("cache.const.l1_sets", (8,) * 5, "sets"),
    *_row("cache.const.l1_ways", (4,) * 5, "ways"),
    *_row("cache.const.l1_5_hit_cycles", (89, 96, 87, 81, 92), "cycles", _APPROX + "; L1.5 constant broadcast latency"),
    *_row("cache.const.l1_5_bytes", (64 * KiB, 64 * KiB, None, None, None), "bytes", "printed as >= 64 KiB (a lower bound)"),
    *_row("cache.const.l1_5_bytes", (None, None, 32 * KiB, 32 * KiB, 32 * KiB), "bytes"),
    *_row("cache.const.l1_5_line_bytes", (256,) * 5, "bytes"),
    *_row("cache.const.l2_hit_cycles", (245, 236, 225, 221, 220), "cycles", _APPROX + "; L2 constant broadcast latency"),
    Published("cache.icache.l0_bytes", "V100", 12 * KiB, "bytes", "002", _T31, _APPROX),
    Published("cache.icache.l1_bytes", "V100", 128 * KiB, "bytes", "002", _T31),
    Published("cache.icache.l0_ways", "V100", 3, "ways", "002", "§3.3 text"),
    Published("cache.icache.l0_sets", "V100", 16, "sets", "002", "§3.3 text"),
    Published("cache.icache.l0_line_bytes", "V100", 256, "bytes", "002", "§3.3 text"),
    Published("cache.icache.l1_ways", "V100", 8, "ways", "002", "§3.3 text"),
    Published("cache.icache.l1_sets", "V100", 32, "sets", "002", "§3.3 text"),
    Published("cache.icache.l1_line_bytes", "V100", 512, "bytes", "002", "§3.3 text"),
)


def published(key: str, gpu: str | None = None) -> list[Published]:
    return [p for p in CACHE if p.key == key and (gpu is None or p.gpu == gpu)]
