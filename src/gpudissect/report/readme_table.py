"""The README's headline table, generated from a committed summary (results/*.json) and the
reference records only, so no number in the README is ever typed by hand."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence

from gpudissect.report.compare import CLOCK_NOTE, PublishedLike, norm_unit, resolve_refs, unit_class
from gpudissect.report.tables import NONE_CELL, fmt_value, md_table


def headline_table(
    summary: Mapping[str, float | str],
    refs: Iterable[PublishedLike] | None,
    keys: Sequence[str],
    ref_gpu: str = "H800",
    units: Mapping[str, str] | None = None,
) -> str:
    """Markdown table: key | ours | unit | <ref_gpu> (paper, table) | ratio (cycle units only).

    The summary holds no units, so a key's unit comes from `units` when given (e.g. from the
    run's figures), else from its published record. A key missing from the summary (not
    measured, or its check failed) shows as such, never as a number.
    """
    refs_t = resolve_refs(refs)
    by_key: dict[str, list[PublishedLike]] = {}
    for r in refs_t:
        by_key.setdefault(r.key, []).append(r)
    rows = []
    for key in keys:
        mine = [r for r in by_key.get(key, []) if r.gpu == ref_gpu]
        if units and key in units:
            unit = units[key]
        elif mine or by_key.get(key):
            unit = (mine or by_key[key])[0].unit
        else:
            unit = ""
        ours = summary.get(key)
        ours_num = (
            float(ours)
            if isinstance(ours, numbers.Real) and not isinstance(ours, bool) and math.isfinite(float(ours))
            else None
        )
        ref_cells, ratios = [], []
        for r in mine:
            src = ", ".join(s for s in (r.paper, r.table) if s)
            shown = fmt_value(r.value, r.unit)
            if norm_unit(r.unit) != norm_unit(unit):
                shown += f" {r.unit}"
            ref_cells.append(f"{shown} ({src})" if src else shown)
            cls = unit_class(unit)
            if cls == "cycles" and ours_num is not None and norm_unit(r.unit) == norm_unit(unit) and r.value:
                ratios.append(f"{ours_num / r.value:.2f}")
            elif cls == "clock":
                ratios.append(f"n/a ({CLOCK_NOTE})")
        rows.append(
            [
                key,
                "not measured / check failed" if ours is None else fmt_value(ours, unit),
                unit,
                "; ".join(ref_cells) or NONE_CELL,
                "; ".join(dict.fromkeys(ratios)) or NONE_CELL,  # dedupe repeated "n/a" notes
            ]
        )
    return md_table(["Key", "Ours", "Unit", f"{ref_gpu} (paper, table)", "Ratio ours/published"], rows, "lrllr")
