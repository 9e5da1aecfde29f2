"""Several runs side by side, the papers' way (one column per GPU, as Luo et al. put H800, A100 and RTX 4090 in
the columns of their Table III): the memory hierarchy of each run, then every figure key that at least two runs
have, with each run's value over the first run's. `gpudissect report RUN RUN ...` renders it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpudissect.models import Figure, RunInfo
from gpudissect.report import hierarchy as hier
from gpudissect.report.compare import norm_unit
from gpudissect.report.document import Block, Bullets, Document, Heading, Para, Table
from gpudissect.report.frontpage import SUITE_ORDER
from gpudissect.report.tables import NONE_CELL, fmt_value

_FAILED = "FAILED"


@dataclass(frozen=True)
class RunFigures:
    run: RunInfo
    figures: Sequence[Figure]

    @property
    def column(self) -> str:
        """The column's name: the GPU without the vendor, and which run."""
        name = self.run.gpu_name.removeprefix("NVIDIA ").strip() or "GPU"
        label = getattr(self.run, "label", None)
        return f"{name} ({label})" if label else f"{name} (run {self.run.id})"


def _latest(figures: Sequence[Figure]) -> dict[str, Figure]:
    last: dict[str, Figure] = {}
    for f in figures:
        last[f.key] = f  # the latest figure of a key wins, as everywhere in the report
    return last


def _number(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def build_comparison(runs: Sequence[RunFigures]) -> Document:
    cols = _unique_columns(runs)
    doc = Document("gpudissect comparison: " + ", ".join(cols))
    b = doc.blocks
    b.append(Heading(1, doc.title))
    b.append(Bullets([(c, _run_line(r.run)) for c, r in zip(cols, runs)]))
    b.append(
        Para(
            f"One column per run; rows are the figure keys that at least two of the runs have. Ratios are each run's "
            f"value over the first column's ({cols[0]}), given where both are numbers in the same unit. Figures of "
            "one run only are left out; `gpudissect report RUN` shows each run whole."
        )
    )
    b += _hierarchy(runs, cols)
    b += _figures(runs, cols)
    return doc


def _unique_columns(runs: Sequence[RunFigures]) -> list[str]:
    cols: list[str] = []
    for r in runs:
        c = r.column
        if c in cols:
            c = f"{c} #{r.run.id}"
        cols.append(c)
    return cols


def _run_line(run: RunInfo) -> str:
    clock = f", SM clock up to {run.sm_clock_max_mhz:g} MHz" if run.sm_clock_max_mhz else ""
    return (
        f"— {run.gpu_name} ({run.arch}, {run.sm_count} SMs{clock}), run {run.id}, {run.mode} mode, "
        f"started {run.started or NONE_CELL}"
    )


def _hierarchy(runs: Sequence[RunFigures], cols: list[str]) -> list[Block]:
    """The memory hierarchy of every run: one row per level and quantity, one column per run."""
    per_run = [hier.levels(r.run, r.figures) for r in runs]
    if sum(1 for lv in per_run if any(x.measured for x in lv)) < 2:
        return []
    rows = []
    quantities = (("size", 1), ("latency, cycles", 2), ("latency, ns", 3), ("bandwidth per SM", 4), ("per GPU", 5))
    for i, name in enumerate(lv.name for lv in per_run[0]):
        for what, idx in quantities:
            cells = [hier.level_cells(lvs[i])[idx] for lvs in per_run]
            if any(c != hier.NOT_MEASURED for c in cells):
                rows.append([name, what, *cells])
    return [
        Heading(2, "Memory hierarchy"),
        Table(["Level", "Quantity", *cols], rows, "ll" + "r" * len(cols)),
        Para("Sizes marked (driver) are device properties; * marks a bandwidth derived from the other.", "muted"),
    ]


def _figures(runs: Sequence[RunFigures], cols: list[str]) -> list[Block]:
    latest = [_latest(r.figures) for r in runs]
    keys = sorted({k for m in latest for k in m})
    shared = [k for k in keys if sum(1 for m in latest if k in m) >= 2]
    b: list[Block] = [Heading(2, "Figures in at least two runs")]
    if not shared:
        return [*b, Para("No figure key is in two of these runs: nothing to put side by side.", "muted")]
    one_only = len(keys) - len(shared)
    b.append(Para(f"{len(shared)} figure keys in at least two runs; {one_only} in one run only (not shown)."))
    suite_of = {k: next(m[k].suite for m in latest if k in m) for k in shared}
    rank = {s: i for i, s in enumerate(SUITE_ORDER)}
    suites = sorted(set(suite_of.values()), key=lambda s: (rank.get(s, len(rank)), s))
    ratio_cols = [f"{c}: ratio" for c in cols[1:]]
    for suite in suites:
        rows = [_row(k, latest) for k in shared if suite_of[k] == suite]
        table = Table(["Key", "Unit", *cols, *ratio_cols], rows, "ll" + "r" * (len(cols) + len(ratio_cols)))
        b += [Heading(3, f"Suite: {suite} ({len(rows)} figures)"), table]
    return b


def _row(key: str, latest: list[dict[str, Figure]]) -> list[str]:
    figs = [m.get(key) for m in latest]
    unit = next(f.unit for f in figs if f is not None)
    cells = []
    for f in figs:
        if f is None:
            cells.append(NONE_CELL)
        elif f.check != "ok":
            cells.append(_FAILED)
        else:
            shown = fmt_value(f.value, f.unit)
            cells.append(shown if norm_unit(f.unit) == norm_unit(unit) else f"{shown} {f.unit}")
    base = figs[0]
    ratios = []
    for f in figs[1:]:
        ok = base is not None and f is not None and base.check == "ok" and f.check == "ok"
        a, x = (_number(base.value), _number(f.value)) if ok else (None, None)  # type: ignore[union-attr]
        same = ok and norm_unit(base.unit) == norm_unit(f.unit)  # type: ignore[union-attr]
        ratios.append(f"{x / a:.2f}" if same and a and x is not None else NONE_CELL)
    return [key, unit, *cells, *ratios]


def write_comparison(fmt: str, runs: Sequence[RunFigures], out_dir: str | Path) -> Path:
    """Write out_dir/comparison.md or comparison.html (no plots: the side-by-side tables only)."""
    from gpudissect.report.html import to_html
    from gpudissect.report.markdown import to_markdown

    doc = build_comparison(runs)
    path = Path(out_dir) / ("comparison.html" if fmt == "html" else "comparison.md")
    path.write_text((to_html if fmt == "html" else to_markdown)(doc), encoding="utf-8")
    return path
