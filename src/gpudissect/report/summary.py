"""Flat headline summary (key -> value) of a run, as committed under results/*.json."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable
from pathlib import Path

from gpudissect.models import Figure


def _last_by_key(figures: Iterable[Figure]) -> dict[str, Figure]:
    # A re-run bench appends figures later in the list; the latest measurement decides,
    # even when it failed (an older number must not survive a newer failed check).
    last: dict[str, Figure] = {}
    for f in figures:
        last[f.key] = f
    return last


def _usable(value: float | str) -> float | int | str | None:
    """Plain JSON-safe value, or None where there is no real number (NaN/inf, non-number)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        return x if math.isfinite(x) else None
    return None


def summary_from_figures(figures: Iterable[Figure]) -> dict[str, float | str]:
    """Headline figures whose check passed, sorted by key; failed checks never give a number."""
    out: dict[str, float | str] = {}
    for key, f in _last_by_key(figures).items():
        if f.check != "ok":
            continue
        v = _usable(f.value)
        if v is not None:
            out[key] = v
    return dict(sorted(out.items()))


def failed_keys(figures: Iterable[Figure]) -> list[str]:
    """Keys that have no number: the latest figure failed its check or held NaN/inf."""
    return sorted(key for key, f in _last_by_key(figures).items() if f.check != "ok" or _usable(f.value) is None)


def write_summary(path: str | Path, summary: dict[str, float | str]) -> Path:
    """Pretty, stable JSON (sorted keys, trailing newline) so committed diffs stay small."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: a NaN sneaking in is a bug, and it is not valid JSON anyway.
    p.write_text(json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return p


def read_summary(path: str | Path) -> dict[str, float | str]:
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: summary must be a JSON object, got {type(data).__name__}")
    return data
