"""Plain data records shared by the store, the runner and the report.

No CUDA and no SQL here: these are what a run produces and what a report reads.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

FigureKind = Literal["measured", "derived", "assumed"]
BenchStatus = Literal["ok", "failed", "crashed", "hung", "skipped", "interrupted"]


@dataclass
class RunInfo:
    """One invocation of `gpudissect run` on one GPU."""

    id: int
    gpu_name: str
    gpu_uuid: str
    sm_count: int
    l2_bytes: int
    sm_clock_max_mhz: float
    mem_clock_max_mhz: float
    mem_bus_bits: int
    driver: str
    cuda: str
    nvrtc: str
    tool_version: str
    arch: str  # e.g. "sm_90a"
    mode: str  # "quick" | "full"
    started: str  # ISO-8601 UTC
    ended: str | None
    status: str  # "running" | "ok" | "partial" | "interrupted"
    selection: dict[str, Any] = field(default_factory=dict)  # suites/benches asked for
    extra: dict[str, Any] = field(default_factory=dict)  # other device properties
    label: str = ""  # the user's name for the run (`run --label`, `import --label`); kept through export/import
    source: str = ""  # where the run came from: "gpudissect run on HOST", "imported from FILE (...)"


@dataclass
class Telemetry:
    """NVML samples taken beside one benchmark, summarised."""

    samples: int
    sm_clock_mhz_median: float | None
    sm_clock_mhz_min: float | None
    sm_clock_mhz_max: float | None
    mem_clock_mhz_median: float | None
    power_w_median: float | None
    power_w_max: float | None
    temp_c_max: float | None
    throttle_reasons: list[str] = field(default_factory=list)  # union of active reasons


@dataclass
class BenchResult:
    """Status of one benchmark inside a run."""

    run_id: int
    suite: str
    bench: str
    status: BenchStatus
    message: str
    started: str
    ended: str | None
    seconds: float | None
    telemetry: Telemetry | None = None


@dataclass
class Point:
    """One point of a raw series: the median of `reps` repetitions with its spread."""

    x: float
    y: float
    y_min: float | None = None
    y_max: float | None = None
    reps: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, x: float, samples: Sequence[float], extra: dict[str, Any] | None = None) -> Point:
        """The point of repeated samples: their median, min, max and count."""
        vals = [float(v) for v in samples]
        if not vals:
            raise ValueError(f"no samples for the point at x={x}")
        return cls(x, float(statistics.median(vals)), min(vals), max(vals), len(vals), extra or {})


@dataclass
class Series:
    """A raw measured curve, e.g. latency (cycles) against footprint (bytes) for `.ca` loads."""

    suite: str
    bench: str
    name: str  # e.g. "ca", "cg", "u32"
    x_label: str
    x_unit: str
    y_label: str
    y_unit: str
    points: list[Point]
    plot: str = "line"  # "line" | "logx" | "loglog" | "hist" | "bar"
    figure: str = ""  # series with the same figure name are drawn together
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Figure:
    """A headline number, measured directly or derived from a series."""

    suite: str
    bench: str
    key: str  # stable summary key, e.g. "mem.latency.l1_hit_cycles"
    value: float | str
    unit: str
    kind: FigureKind
    method: str  # one line: how it was obtained
    spread: tuple[float, float] | None = None  # (min, max) over repetitions
    check: Literal["ok", "failed"] = "ok"
    note: str = ""
