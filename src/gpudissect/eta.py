"""The whole run's remaining time for the progress display: each benchmark's seconds from the latest earlier
run of the same GPU and mode that timed it, in this store first, else in the committed runs of a source
checkout (results/<gpu>/runs.json and the exports it lists). Benchmarks never timed before count as the
median of those that were; CPU-only ones run beside the GPU ones and add nothing."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[2] / "results"  # present in a source checkout only
MAX_EXPORTS = 6  # committed exports read at most (newest first) until every benchmark has a time
TIMED = ("ok", "skipped")  # a failed or hung benchmark's seconds say little about the next run


def _take(out: dict[str, float], rows: Iterable[tuple[str, str, str, Any]]) -> None:
    """(suite, bench, status, seconds) rows into `out`, keeping what an earlier (newer) source gave."""
    for suite, bench, status, secs in rows:
        if status in TIMED and isinstance(secs, (int, float)):
            out.setdefault(f"{suite}/{bench}", float(secs))


def stored_seconds(store: Any, gpu_name: str, mode: str, exclude_run: int | None = None) -> dict[str, float]:
    """key -> seconds from this store's runs of `gpu_name` in `mode`, the newest run first."""
    out: dict[str, float] = {}
    for info in reversed(store.runs()):
        if info.id != exclude_run and info.gpu_name == gpu_name and info.mode == mode:
            _take(out, ((b.suite, b.bench, b.status, b.seconds) for b in store.benches(info.id)))
    return out


def committed_seconds(gpu_name: str, mode: str, keys: set[str], results: Path = RESULTS) -> dict[str, float]:
    """key -> seconds from the committed runs of `gpu_name` in `mode`, the newest first, until `keys` are
    covered (or MAX_EXPORTS are read)."""
    from .exportio import read_export

    runs: list[tuple[str, Path]] = []
    for listing in results.glob("*/runs.json"):
        try:
            entries = json.loads(listing.read_text())
        except (OSError, ValueError):
            continue
        for e in entries if isinstance(entries, list) else []:
            if isinstance(e, dict) and e.get("gpu") == gpu_name and e.get("mode") == mode:
                runs.append(
                    (str(e.get("started", "")), listing.parent / "runs" / str(e.get("label")) / "export.json.gz")
                )
    out: dict[str, float] = {}
    for _, path in sorted(runs, reverse=True)[:MAX_EXPORTS]:
        if keys <= set(out):
            break
        try:
            data = read_export(path)
        except Exception:  # noqa: BLE001 - a missing or unreadable export only leaves the estimate without it
            continue
        _take(
            out, ((b.get("suite"), b.get("bench"), b.get("status"), b.get("seconds")) for b in data.get("benches", []))
        )
    return out


class Eta:
    """Remaining seconds of the benchmarks run one after another (`keys`, in run order), from `expected`."""

    def __init__(self, keys: list[str], expected: dict[str, float], clock: Callable[[], float] = time.monotonic):
        self.todo = list(keys)
        self.expected = {k: v for k, v in expected.items() if k in set(keys)}
        self.clock = clock
        self.since = clock()  # when the benchmark now running started

    def done(self, key: str) -> None:
        if key in self.todo:
            self.todo.remove(key)
            self.since = self.clock()

    def remaining(self) -> float | None:
        """Seconds left (None: no benchmark of the run was timed before)."""
        if not self.todo:
            return 0.0
        if not self.expected:
            return None
        per = statistics.median(self.expected.values())
        left = [self.expected.get(k, per) for k in self.todo]
        return sum(left) - min(self.clock() - self.since, left[0])

    def text(self) -> str:
        r = self.remaining()
        if r is None:
            return "ETA unknown (no earlier run of this GPU and mode)"
        m, s = divmod(int(round(r)), 60)
        return f"ETA {m}m{s:02d}s"


def for_run(store: Any, gpu_name: str, mode: str, run_id: int, keys: list[str]) -> Eta:
    """The estimate for a run of `keys` (the benchmarks the run times one after another)."""
    expected = stored_seconds(store, gpu_name, mode, run_id)
    missing = set(keys) - set(expected)
    if missing and RESULTS.is_dir():
        for k, v in committed_seconds(gpu_name, mode, missing).items():
            expected.setdefault(k, v)
    return Eta(keys, expected)
