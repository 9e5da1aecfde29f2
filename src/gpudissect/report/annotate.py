"""Lines to draw on figures: detected plateau levels on the latency curves they came from."""

from __future__ import annotations

from ..models import Figure, Series
from .figures import group_id

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
