"""The memory hierarchy of one run, level by level (shared memory, L1, L2, DRAM): size, latency in cycles and
ns, bandwidth per SM and per GPU, each from the run's own figures (the key is named beside each value);
a level or a value the run did not measure says so. Drawn as a picture for the front page."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpudissect.models import Figure, RunInfo
from gpudissect.report.tables import fmt_bytes, fmt_number

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Level:
    name: str
    size_bytes: float | None
    size_source: str  # the figure key, or "driver" for a device property the run recorded
    latency_cycles: float | None
    latency_ns: float | None
    bw_sm_bytes_per_clk: float | None  # per SM, bytes per SM clock
    bw_sm_gbps: float | None
    bw_gpu_gbps: float | None
    derived: tuple[str, ...]  # which bandwidths were derived from the others (x SMs, x clock), for the note

    @property
    def measured(self) -> bool:
        return any(v is not None for v in (self.latency_cycles, self.bw_sm_gbps, self.bw_gpu_gbps)) or (
            self.size_bytes is not None and self.size_source != "driver"
        )


# level -> the figure keys it is read from: (size, latency cycles, latency ns, bw per SM bytes/clk,
# bw per GPU GB/s, bw per GPU bytes/clk, the benchmark whose clock converts per-clock rates)
_KEYS: dict[str, tuple[str | None, str, str, str | None, str | None, str | None, str]] = {
    "Shared memory": (
        None,
        "mem.latency.shared_cycles",
        "mem.latency.shared_ns",
        "mem.bw.shared_bytes_per_clk_sm",
        None,
        None,
        "bandwidth",
    ),
    "L1": (
        "mem.size.l1_bytes",
        "mem.latency.l1_hit_cycles",
        "mem.latency.l1_hit_ns",
        "mem.bw.l1_bytes_per_clk_sm",
        None,
        None,
        "bandwidth",
    ),
    "L2": (
        "mem.size.l2_bytes",
        "mem.latency.l2_hit_cycles",
        "mem.latency.l2_hit_ns",
        None,
        "mem.bw.l2_gbps",
        "mem.bw.l2_bytes_per_clk",
        "bandwidth",
    ),
    "DRAM": (None, "mem.latency.dram_cycles", "mem.latency.dram_ns", None, "mem.bw.dram_gbps", None, "bandwidth"),
}


def _numbers(figures: Sequence[Figure]) -> dict[str, float]:
    """key -> value of the latest figure whose check passed and that holds a finite number."""
    out: dict[str, float] = {}
    for f in figures:
        v = f.value
        ok = f.check == "ok" and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        if ok:
            out[f.key] = float(v)
        else:
            out.pop(f.key, None)
    return out


def levels(run: RunInfo, figures: Sequence[Figure]) -> list[Level]:
    nums = _numbers(figures)
    sms = run.sm_count or None
    out = []
    for name, (size_k, lat_c, lat_ns, sm_bpc, gpu_gbps, gpu_bpc, bench) in _KEYS.items():
        clock = nums.get(f"clock.{bench}.sm_mhz") or run.sm_clock_max_mhz or None
        size, size_src = (nums.get(size_k), size_k) if size_k else (None, "")
        if size is None:  # the driver's figure, said so: a device property the run recorded, not measured
            driver = _driver_size(name, run)
            if driver:
                size, size_src = driver, "driver"
        per_sm_bpc = nums.get(sm_bpc) if sm_bpc else None
        per_gpu = nums.get(gpu_gbps) if gpu_gbps else None
        derived: list[str] = []
        if per_gpu is None and gpu_bpc and gpu_bpc in nums and clock:
            per_gpu = nums[gpu_bpc] * clock / 1e3
            derived.append("per GPU")
        per_sm = per_sm_bpc * clock / 1e3 if per_sm_bpc is not None and clock else None
        if per_sm is None and per_gpu is not None and sms:
            per_sm = per_gpu / sms
            derived.append("per SM")
        elif per_gpu is None and per_sm is not None and sms:
            per_gpu = per_sm * sms
            derived.append("per GPU")
        if per_sm_bpc is None and per_sm is not None and clock:
            per_sm_bpc = per_sm * 1e3 / clock
        out.append(
            Level(
                name,
                size,
                size_src,
                nums.get(lat_c),
                nums.get(lat_ns),
                per_sm_bpc,
                per_sm,
                per_gpu,
                tuple(derived),
            )
        )
    return out


def _driver_size(name: str, run: RunInfo) -> float | None:
    extra: Mapping[str, object] = run.extra or {}
    key = {"Shared memory": "smem_per_sm", "L2": "l2_bytes", "DRAM": "total_mem"}.get(name)
    v = extra.get(key) if key else None
    if v is None and name == "L2":
        v = run.l2_bytes
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else None


def _gbps(v: float | None) -> str:
    if v is None:
        return NOT_MEASURED
    return f"{fmt_number(v / 1e3)} TB/s" if v >= 1e4 else f"{fmt_number(v)} GB/s"


def level_cells(lv: Level) -> list[str]:
    """The table row of one level: name, size, latency cycles, latency ns, per SM, per GPU."""
    size = NOT_MEASURED if lv.size_bytes is None else fmt_bytes(lv.size_bytes)
    if lv.size_source == "driver":
        size += " (driver)"
    per_sm = NOT_MEASURED
    if lv.bw_sm_gbps is not None:
        per_sm = _gbps(lv.bw_sm_gbps)
        if lv.bw_sm_bytes_per_clk is not None:
            per_sm = f"{fmt_number(lv.bw_sm_bytes_per_clk)} B/clk ({per_sm})"
    return [
        lv.name,
        size,
        NOT_MEASURED if lv.latency_cycles is None else fmt_number(lv.latency_cycles),
        NOT_MEASURED if lv.latency_ns is None else fmt_number(lv.latency_ns),
        per_sm + (" *" if "per SM" in lv.derived else ""),
        _gbps(lv.bw_gpu_gbps) + (" *" if "per GPU" in lv.derived else ""),
    ]


HEADERS = ["Level", "Size", "Latency (cycles)", "Latency (ns)", "Bandwidth per SM", "Bandwidth per GPU"]


def draw(levels_: Sequence[Level], path: Path, title: str, dpi: int = 110) -> bool:
    """The hierarchy as a ladder: one box per level, fastest on top, its width growing with the log of its
    size; latency and bandwidth written in the box. A level not measured is a grey box that says so."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.patches import FancyBboxPatch

    if not any(lv.measured for lv in levels_):
        return False
    sizes = [math.log2(lv.size_bytes) for lv in levels_ if lv.size_bytes]
    lo, hi = (min(sizes), max(sizes)) if sizes else (0.0, 1.0)
    fig = MplFigure(figsize=(9.0, 0.95 * len(levels_) + 0.7), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_xlim(0, 1)
    ax.set_ylim(len(levels_) - 0.5, -0.7)
    ax.axis("off")
    for i, lv in enumerate(levels_):
        # the pyramid on the left (width grows with log size), the level's numbers on the right
        frac = 0.55 if lv.size_bytes is None or hi == lo else 0.5 + 0.5 * (math.log2(lv.size_bytes) - lo) / (hi - lo)
        width = 0.4 * frac
        face = "#dbe9f6" if lv.measured else "#eeeeee"
        ax.add_patch(
            FancyBboxPatch(
                (0.21 - width / 2, i - 0.38),
                width,
                0.76,
                boxstyle="round,pad=0.005,rounding_size=0.02",
                fc=face,
                ec="#5a7ca5" if lv.measured else "#aaaaaa",
            )
        )
        cells = level_cells(lv)
        color = "#1d1d1f" if lv.measured else "#777777"
        ax.text(0.21, i, f"{lv.name}\n{cells[1]}", ha="center", va="center", fontsize=9, color=color)
        if lv.measured:
            text = f"latency {cells[2]} cycles, {cells[3]} ns\nbandwidth per SM {cells[4]}, per GPU {cells[5]}"
        else:
            text = f"{NOT_MEASURED} in this run"
        ax.text(0.44, i, text, ha="left", va="center", fontsize=9, color=color)
    if any(lv.derived for lv in levels_):
        ax.text(0.44, len(levels_) - 0.45, "* derived: x SMs or / SMs, x the SM clock", fontsize=7, color="#555555")
    ax.set_title(title, fontsize=10)
    fig.savefig(path, dpi=dpi)
    return True
