"""What to draw on figures besides the series: our detected plateau levels on the latency curves they came
from, and the published values of the run's GPU family where a plot shows the same quantity."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..models import Figure, Series
from .compare import PublishedLike, norm_unit, published_rows
from .figures import Mark, group_id
from .tables import fmt_number

# figure key -> (benchmark, figure group) it was derived from
_ON = {
    "mem.latency.l1_hit_cycles": ("pchase_latency", "latency_vs_footprint", "L1 hit"),
    "mem.latency.l2_hit_cycles": ("pchase_latency", "latency_vs_footprint", "L2 hit"),
    "mem.latency.dram_cycles": ("pchase_latency", "latency_vs_footprint", "DRAM"),
}


def annotations_for(series: list[Series], figures: list[Figure]) -> dict[str, list[tuple[str, float]]]:
    gids = {(s.bench, s.figure or s.name): group_id(s) for s in series}
    out: dict[str, list[tuple[str, float]]] = {}
    for f in figures:
        where = _ON.get(f.key)
        if where and f.check == "ok" and isinstance(f.value, float) and (where[0], where[1]) in gids:
            out.setdefault(gids[(where[0], where[1])], []).append((f"{where[2]} {f.value:.0f}", f.value))
    return out


def _same(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=1e-9)


def _points(series: Iterable[Series]) -> dict[tuple[str, str], list[tuple[str, Mark]]]:
    """(suite, bench) -> every plotted point as (group id, a Mark template at that point with y = our value)."""
    out: dict[tuple[str, str], list[tuple[str, Mark]]] = {}
    for s in series:
        plot = (s.plot or "line").lower()
        if plot in ("hist", "heatmap"):
            continue
        here = out.setdefault((s.suite, s.bench), [])
        for p in s.points:
            y = float(p.y)
            if not math.isfinite(y):
                continue
            if plot == "bar":
                cat = str(p.extra.get("label", fmt_number(p.x)))  # as figures._draw_bar names a bar
                here.append((group_id(s), Mark("", y, category=cat, series=s.name)))
            else:
                here.append((group_id(s), Mark("", y, x=float(p.x), series=s.name)))
    return out


def published_marks(
    series: Sequence[Series], figures: Sequence[Figure], refs: Iterable[PublishedLike], gpus: list[str]
) -> dict[str, list[Mark]]:
    """group id -> the published values (of `gpus`: the run's family) to draw on that plot.

    A figure that is one plotted point (its value is the y of exactly one point of its benchmark's plots) gets
    its published values drawn on that point; the plateau figures of _ON get theirs as horizontal lines on the
    curve they were read from. A unit that differs from ours is never drawn."""
    if not gpus:
        return {}
    rows = published_rows(figures, refs, gpus)
    pts = _points(series)
    gids = {(s.bench, s.figure or s.name): group_id(s) for s in series}
    out: dict[str, list[Mark]] = {}
    for r in rows:
        if isinstance(r.value, str) or r.value is None:
            continue
        cells = [(g, c) for g, cs in r.published.items() for c in cs if norm_unit(c.unit) == norm_unit(r.unit)]
        if not cells:
            continue
        level = _ON.get(r.key)
        if level and (level[0], level[1]) in gids:
            gid = gids[(level[0], level[1])]
            for g, c in cells:
                out.setdefault(gid, []).append(Mark(f"{g} {level[2]}, {c.paper}", c.value))
            continue
        hits = [(gid, m) for gid, m in pts.get((r.suite, r.bench), []) if _same(m.y, float(r.value))]
        if len(hits) != 1:
            continue  # no point, or several with this value: which one is meant is not known
        gid, at = hits[0]
        for g, c in cells:
            out.setdefault(gid, []).append(Mark(f"{g}, {c.paper}", c.value, at.x, at.category, at.series))
    return {gid: list(dict.fromkeys(ms)) for gid, ms in out.items()}
