"""PNG plots of raw series, one file per figure group.

Uses matplotlib's object API with the Agg canvas directly (no pyplot): no global figure
registry, no interactive backend switched under the caller's feet.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from gpudissect.models import Series
from gpudissect.report.tables import fmt_bytes, fmt_number, is_bytes_unit
from gpudissect.textsafe import visible


def _import_matplotlib() -> None:
    """Import matplotlib without letting MPLBACKEND stop it. matplotlib applies that variable on import and
    refuses a name it does not know; we draw on the Agg canvas and never use a backend, so an unknown
    name is only set aside (a name it knows is applied just as matplotlib would, for pyplot users)."""
    if "matplotlib" in sys.modules:
        return
    backend = os.environ.pop("MPLBACKEND", None)
    try:
        import matplotlib
    finally:
        if backend is not None:
            os.environ["MPLBACKEND"] = backend
    if backend:
        try:
            matplotlib.rcParams["backend"] = backend
        except ValueError:
            pass


_import_matplotlib()
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

log = logging.getLogger(__name__)

Annotations = Mapping[str, Sequence[tuple[str, float]]]

_MAX_TICKS = 12
_MARKER_MAX_POINTS = 40  # beyond this, markers hide the curve
_BAND_MIN_POINTS = 25  # beyond this, a shaded band reads better than error bars


def group_id(s: Series) -> str:
    """Identity of the plot a series belongs to: "suite/bench/figure" (figure defaults to name)."""
    return f"{s.suite}/{s.bench}/{s.figure or s.name}"


def group_series(series: Iterable[Series]) -> dict[str, list[Series]]:
    groups: dict[str, list[Series]] = {}
    for s in series:
        groups.setdefault(group_id(s), []).append(s)
    return groups


_MAX_STEM = 100  # file names stay far below NAME_MAX (255 bytes) whatever the run's names are


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-.") or "x"


def png_name(suite: str, bench: str, figure: str) -> str:
    """suite_bench_figure.png in safe characters; a name too long is cut and told apart by a hash of the
    whole, so a 400-character figure name still gets its own file."""
    stem = f"{safe_name(suite)}_{safe_name(bench)}_{safe_name(figure)}"
    if len(stem) > _MAX_STEM:
        digest = hashlib.sha256(f"{suite}/{bench}/{figure}".encode("utf-8", "surrogatepass")).hexdigest()[:10]
        stem = f"{stem[: _MAX_STEM - 11].rstrip('-.')}-{digest}"
    return f"{stem}.png"


def _label(text: str, unit: str) -> str:
    return f"{text} ({unit})" if unit else text


def _finite_xy(s: Series, need_pos_x: bool, need_pos_y: bool) -> tuple[np.ndarray, ...]:
    """x, y, y_lo, y_hi sorted by x; drops NaN/inf and values a log axis cannot show."""
    rows = []
    for p in s.points:
        x, y = float(p.x), float(p.y)
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        if (need_pos_x and x <= 0) or (need_pos_y and y <= 0):
            continue
        lo = float(p.y_min) if p.y_min is not None and math.isfinite(p.y_min) else y
        hi = float(p.y_max) if p.y_max is not None and math.isfinite(p.y_max) else y
        rows.append((x, y, min(lo, y), max(hi, y)))  # inconsistent spreads: never negative bars
    if not rows:
        return (np.empty(0),) * 4
    arr = np.array(sorted(rows))
    return arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3]


def _has_spread(s: Series) -> bool:
    return any(p.y_min is not None or p.y_max is not None for p in s.points)


def _pow2_byte_axis(ax, xs: np.ndarray) -> None:
    """Powers of two as ticks with KiB/MiB/GiB labels, thinned to a readable count."""
    lo = math.floor(math.log2(xs.min()))
    hi = math.ceil(math.log2(xs.max()))
    step = max(1, math.ceil((hi - lo + 1) / _MAX_TICKS))
    ax.xaxis.set_major_locator(FixedLocator([2.0**k for k in range(lo, hi + 1, step)]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_bytes(v, compact=True)))


def _draw_lines(ax, group: list[Series], plot: str) -> int:
    logx = plot in ("logx", "loglog")
    logy = plot == "loglog"
    all_x: list[np.ndarray] = []
    drawn = 0
    for i, s in enumerate(group):
        x, y, lo, hi = _finite_xy(s, need_pos_x=logx, need_pos_y=logy)
        if x.size == 0:
            continue
        color = f"C{i % 10}"
        ax.plot(x, y, color=color, label=s.name, lw=1.4, marker="o" if x.size <= _MARKER_MAX_POINTS else None, ms=3)
        if _has_spread(s):
            if x.size >= _BAND_MIN_POINTS:
                ax.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)
            else:
                ax.errorbar(x, y, yerr=[y - lo, hi - y], fmt="none", ecolor=color, capsize=2, lw=1)
        all_x.append(x)
        drawn += 1
    if not drawn:
        return 0
    xs = np.concatenate(all_x)
    bytes_x = is_bytes_unit(group[0].x_unit)
    if logx:
        ax.set_xscale("log", base=2 if bytes_x else 10)
        if bytes_x:
            _pow2_byte_axis(ax, xs)
    elif bytes_x:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_bytes(v, compact=True)))
    if logy:
        ax.set_yscale("log")
    return drawn


def _draw_bar(ax, group: list[Series]) -> int:
    # Categories are the union of x values (or point.extra["label"]) in first-seen order.
    cats: list[str] = []
    per: list[dict[str, tuple[float, float, float]]] = []
    for s in group:
        vals: dict[str, tuple[float, float, float]] = {}
        for p in s.points:
            if not math.isfinite(float(p.y)):
                continue
            cat = str(p.extra.get("label", fmt_number(p.x)))
            lo = p.y_min if p.y_min is not None else p.y
            hi = p.y_max if p.y_max is not None else p.y
            vals[cat] = (float(p.y), min(float(lo), p.y), max(float(hi), p.y))
            if cat not in cats:
                cats.append(cat)
        per.append(vals)
    if not cats:
        return 0
    width = 0.8 / len(group)
    idx = np.arange(len(cats))
    for i, (s, vals) in enumerate(zip(group, per)):
        if not vals:
            continue
        pos = [idx[cats.index(c)] + (i - (len(group) - 1) / 2) * width for c in vals]
        ys = np.array([v[0] for v in vals.values()])
        err = None
        if _has_spread(s):
            err = [ys - np.array([v[1] for v in vals.values()]), np.array([v[2] for v in vals.values()]) - ys]
        ax.bar(pos, ys, width=width, color=f"C{i % 10}", label=s.name, yerr=err, capsize=2)
    ax.set_xticks(idx)
    ax.set_xticklabels(cats, rotation=30 if len(cats) > 8 else 0, ha="right" if len(cats) > 8 else "center")
    return sum(1 for v in per if v)


def _draw_hist(ax, group: list[Series]) -> int:
    """Distribution of y values (e.g. per-access latencies); the value goes on the x axis."""
    data = []
    for s in group:
        y = np.array([float(p.y) for p in s.points], dtype=float)
        data.append(y[np.isfinite(y)])
    values = np.concatenate(data) if data else np.empty(0)
    if values.size == 0:
        return 0
    lo, hi = float(values.min()), float(values.max())
    if np.all(values == np.round(values)) and hi - lo < 2000:
        # Integer data (cycle counts): bins centred on integers, else "auto" leaves empty gaps.
        step = max(1, math.ceil((hi - lo + 1) / 200))
        edges = np.arange(lo - 0.5, hi + 0.5 + step, step)
    elif lo == hi:
        edges = np.array([lo - 0.5, hi + 0.5])
    else:
        edges = np.histogram_bin_edges(values, bins="auto")
        if edges.size > 201:  # "auto" can explode on long tails
            edges = np.histogram_bin_edges(values, bins=200)
    drawn = 0
    for i, (s, y) in enumerate(zip(group, data)):
        if y.size:
            ax.hist(
                y,
                bins=edges,
                color=f"C{i % 10}",
                alpha=0.55 if len(group) > 1 else 0.85,
                label=s.name,
                histtype="stepfilled",
            )
            drawn += 1
    return drawn


def _draw_heatmaps(fig: MplFigure, group: list[Series]) -> int:
    """One panel per series: x = Point.x (e.g. #warps), rows = Point.extra["ilp"] (or "row"), colour = y."""
    n = len(group)
    cols = min(n, 3)
    rows_n = math.ceil(n / cols)
    fig.set_size_inches(max(4.2 * cols, 6.5), 3.4 * rows_n)  # room for the title over one panel
    drawn = 0
    for i, s in enumerate(group):
        pts = [p for p in s.points if math.isfinite(float(p.y))]
        if not pts:
            continue
        xs = sorted({p.x for p in pts})
        key = "ilp" if any("ilp" in p.extra for p in pts) else "row"
        ys = sorted({p.extra.get(key, 0) for p in pts})
        grid = np.full((len(ys), len(xs)), np.nan)
        for p in pts:
            grid[ys.index(p.extra.get(key, 0)), xs.index(p.x)] = float(p.y)
        ax = fig.add_subplot(rows_n, cols, i + 1)
        # a "row"-keyed grid is a matrix (source x destination): row 0 on top, as matrices are read
        im = ax.imshow(grid, origin="upper" if key == "row" else "lower", aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(xs)), [fmt_number(x) for x in xs])
        ax.set_yticks(range(len(ys)), [fmt_number(y) for y in ys])
        ax.set_xlabel(_label(s.x_label, s.x_unit))
        ax.set_ylabel(str(s.params.get("rows") or key))
        ax.set_title(f"{s.name} ({s.y_unit})", fontsize=9)
        if grid.size <= 64:
            for (r, c), v in np.ndenumerate(grid):
                if math.isfinite(v):
                    ax.text(c, r, fmt_number(v), ha="center", va="center", fontsize=6, color="w")
        fig.colorbar(im, ax=ax, shrink=0.8)
        drawn += 1
    return drawn


def _plot_group(gid: str, group: list[Series], path: Path, notes: Sequence[tuple[str, float]], dpi: int) -> bool:
    first = group[0]
    plot = (first.plot or "line").lower()
    fig = MplFigure(figsize=(7.5, 4.4), layout="constrained")
    if plot == "heatmap":
        FigureCanvasAgg(fig)
        if not _draw_heatmaps(fig, group):
            return False
        fig.suptitle(f"{first.suite} / {first.bench}: {first.figure or first.name}", fontsize=9)
        fig.savefig(path, dpi=dpi)
        return True
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if plot == "hist":
        drawn = _draw_hist(ax, group)
        ax.set_xlabel(_label(first.y_label, first.y_unit))
        ax.set_ylabel("count")
    elif plot == "bar":
        drawn = _draw_bar(ax, group)
        ax.set_xlabel(_label(first.x_label, first.x_unit))
        ax.set_ylabel(_label(first.y_label, first.y_unit))
    else:  # "line", "logx", "loglog"; unknown hints fall back to a plain line plot
        drawn = _draw_lines(ax, group, plot if plot in ("logx", "loglog") else "line")
        ax.set_xlabel(_label(first.x_label, first.x_unit))
        ax.set_ylabel(_label(first.y_label, first.y_unit))
    if not drawn:
        return False
    n = len(group)
    for j, (label, level) in enumerate(notes):
        if level is None or not math.isfinite(level):
            continue
        kw = dict(color=f"C{(n + j) % 10}", ls="--", lw=1, label=f"{label}: {fmt_number(level)}")
        # In a histogram the measured value is on x, so a level is a vertical line.
        (ax.axvline if plot == "hist" else ax.axhline)(level, **kw)
    ax.set_title(f"{first.suite} / {first.bench}: {first.figure or first.name}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=dpi)
    return True


def plot_groups(
    series: Iterable[Series],
    out_dir: str | Path,
    annotations: Annotations | None = None,
    dpi: int = 110,
) -> dict[str, Path]:
    """Draw one PNG per group (see group_id); returns group id -> path of groups drawn.

    Groups with nothing plottable are skipped; a plotting error skips that group only (one line on the
    log), so one odd series cannot take the whole report down. An OSError is the disk, not the data
    (no space, no permission): it propagates, since a report without its plots is not a report.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    annotations = annotations or {}
    paths: dict[str, Path] = {}
    used: set[str] = set()
    for gid, group in group_series(series).items():
        first = group[0]
        name = png_name(first.suite, first.bench, first.figure or first.name)
        stem, k = name[:-4], 2
        while name in used:  # two ids that sanitise alike must not overwrite each other
            name, k = f"{stem}-{k}.png", k + 1
        used.add(name)
        path = out / name
        try:
            if _plot_group(gid, group, path, annotations.get(gid, ()), dpi):
                paths[gid] = path
        except OSError:
            raise
        except Exception as e:
            debug = bool(os.environ.get("GPUDISSECT_DEBUG"))
            log.warning("plot %s skipped: %s: %s", visible(gid), type(e).__name__, visible(e), exc_info=debug)
    return paths


def plot_series(
    series: Iterable[Series],
    out_dir: str | Path,
    annotations: Annotations | None = None,
    dpi: int = 110,
) -> list[Path]:
    """Like plot_groups, returning just the written PNG paths."""
    return list(plot_groups(series, out_dir, annotations, dpi).values())
