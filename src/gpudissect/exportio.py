"""Turn a JSON export back into the records a report is rendered from."""

from __future__ import annotations

from pathlib import Path

from .models import BenchResult, Figure, Point, RunInfo, Series, Telemetry
from .store import load_export


def from_export(path: Path) -> tuple[RunInfo, list[BenchResult], list[Series], list[Figure]]:
    d = load_export(path)
    run = RunInfo(**d["run"])
    benches = []
    for b in d["benches"]:
        tele = Telemetry(**b["telemetry"]) if b.get("telemetry") else None
        benches.append(BenchResult(**{**b, "telemetry": tele}))
    series = [Series(**{**s, "points": [Point(**p) for p in s["points"]]}) for s in d["series"]]
    figures = [Figure(**{**f, "spread": tuple(f["spread"]) if f.get("spread") else None}) for f in d["figures"]]
    return run, benches, series, figures
