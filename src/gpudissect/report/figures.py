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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator  # noqa: E402

from gpudissect.report.figures_grid import draw_heatmaps, draw_level_sequence, is_level_sequence  # noqa: E402
from gpudissect.report.palette import MARK_COLORS, MARK_SHAPES, colors  # noqa: E402

_draw_heatmaps = draw_heatmaps  # the name the tests know

log = logging.getLogger(__name__)

Annotations = Mapping[str, Sequence[tuple[str, float]]]


@dataclass(frozen=True)
class Mark:
    """A published value drawn on a plot: at one point of a line plot (x), on one bar (category, series), or,
    with neither, as a horizontal line across the plot. `source` ("H800, 000 Table 3") names it in the legend."""

    source: str
    y: float
    x: float | None = None
    category: str | None = None
    series: str | None = None


Marks = Mapping[str, Sequence[Mark]]

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


def _spans_decades(values: Iterable[float], ratio: float) -> bool:
    """All positive and the largest at least `ratio` times the smallest: a linear axis would flatten the rest."""
    v = [x for x in values if math.isfinite(x)]
    return bool(v) and min(v) > 0 and max(v) / min(v) >= ratio


def _log_scale(ax, which: str) -> None:
    """A log axis labelled in plain numbers (1000, 2000, 5000), not only at the powers of ten."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_number(v)))
    axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _pos: fmt_number(v)))


_BAR_LOG_RATIO = 20.0  # a bar 20x another leaves the small one a sliver on a linear axis
_LINE_LOG_RATIO = 1000.0  # lines bear more (a latency curve from 30 to 700 cycles stays linear)


def _draw_lines(ax, group: list[Series], plot: str) -> tuple[int, dict[tuple[str, float], tuple[float, float]]]:
    """Returns the number of series drawn and, for published marks, (series, x) -> (x, y) of every point."""
    logx = plot in ("logx", "loglog")
    all_x: list[np.ndarray] = []
    all_y: list[np.ndarray] = []
    points: dict[tuple[str, float], tuple[float, float]] = {}
    palette = colors(len(group))
    drawn = 0
    logy = plot in ("loglog", "logy")
    for i, s in enumerate(group):
        x, y, lo, hi = _finite_xy(s, need_pos_x=logx, need_pos_y=logy)
        if x.size == 0:
            continue
        color = palette[i]
        ax.plot(x, y, color=color, label=s.name, lw=1.4, marker="o" if x.size <= _MARKER_MAX_POINTS else None, ms=3)
        if _has_spread(s):
            if x.size >= _BAND_MIN_POINTS:
                ax.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)
            else:
                ax.errorbar(x, y, yerr=[y - lo, hi - y], fmt="none", ecolor=color, capsize=2, lw=1)
        points.update({(s.name, float(a)): (float(a), float(b)) for a, b in zip(x, y)})
        all_x.append(x)
        all_y.append(y)
        drawn += 1
    if not drawn:
        return 0, {}
    xs = np.concatenate(all_x)
    bytes_x = is_bytes_unit(group[0].x_unit)
    if logx:
        ax.set_xscale("log", base=2 if bytes_x else 10)
        if bytes_x:
            _pow2_byte_axis(ax, xs)
    elif bytes_x:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_bytes(v, compact=True)))
    if logy or _spans_decades(np.concatenate(all_y), _LINE_LOG_RATIO):
        ax.set_yscale("log")
    return drawn, points


_LONG_LABEL = 14  # category labels longer than this: bars lie down, one row per category
_MAX_LYING = 60  # more categories than this would make a lying plot taller than a page


def _draw_bar(ax, group: list[Series]) -> tuple[int, dict[tuple[str, str], tuple[float, float]], bool]:
    """Grouped bars. Returns the series drawn, (category, series) -> (position, bar width) for published marks,
    and whether the bars lie horizontally (long or many category names, which slanted would overlap)."""
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
        return 0, {}, False
    # long names lie down (slanted they overlap); many short ones (bit positions) stay upright, every k-th named
    horizontal = max(len(c) for c in cats) > _LONG_LABEL and len(cats) <= _MAX_LYING
    width = 0.8 / len(group)
    idx = np.arange(len(cats))
    palette = colors(len(group))
    where: dict[tuple[str, str], tuple[float, float]] = {}
    for i, (s, vals) in enumerate(zip(group, per)):
        if not vals:
            continue
        pos = [idx[cats.index(c)] + (i - (len(group) - 1) / 2) * width for c in vals]
        where.update({(c, s.name): (p, width) for c, p in zip(vals, pos)})
        ys = np.array([v[0] for v in vals.values()])
        err = None
        if _has_spread(s):
            err = [ys - np.array([v[1] for v in vals.values()]), np.array([v[2] for v in vals.values()]) - ys]
        if horizontal:
            ax.barh(pos, ys, height=width, color=palette[i], label=s.name, xerr=err, capsize=2)
        else:
            ax.bar(pos, ys, width=width, color=palette[i], label=s.name, yerr=err, capsize=2)
    values = [v[0] for vals in per for v in vals.values()]
    if horizontal:
        ax.set_yticks(idx, cats, fontsize=8)
        ax.invert_yaxis()  # the first category on top, as a table reads
        if _spans_decades(values, _BAR_LOG_RATIO):
            _log_scale(ax, "x")
    else:
        step = max(1, math.ceil(len(cats) / 32))
        ax.set_xticks(idx[::step])
        slant = len(cats) > 8 and step == 1
        ax.set_xticklabels(cats[::step], rotation=30 if slant else 0, ha="right" if slant else "center")
        if _spans_decades(values, _BAR_LOG_RATIO):
            _log_scale(ax, "y")
    return sum(1 for v in per if v), where, horizontal


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
    palette = colors(len(group))
    for i, (s, y) in enumerate(zip(group, data)):
        if y.size:
            ax.hist(
                y,
                bins=edges,
                color=palette[i],
                alpha=0.55 if len(group) > 1 else 0.85,
                label=s.name,
                histtype="stepfilled",
            )
            drawn += 1
    return drawn


def _draw_marks(ax, marks: Sequence[Mark], points, bars, horizontal: bool) -> None:
    """Published values in black and grey, one marker shape per source: on the bar or point they belong to,
    or as a dotted line across the plot. A mark whose bar or point is not on the plot is left out."""
    sources = list(dict.fromkeys(m.source for m in marks))
    for j, src in enumerate(sources):
        color, shape = MARK_COLORS[j % len(MARK_COLORS)], MARK_SHAPES[j % len(MARK_SHAPES)]
        mine = [m for m in marks if m.source == src]
        xs: list[float] = []
        ys: list[float] = []
        for m in mine:
            if m.category is not None:
                hit = bars.get((m.category, m.series))
                if hit is not None:
                    xs.append(hit[0])
                    ys.append(m.y)
            elif m.x is not None:
                if (m.series, float(m.x)) in points:
                    xs.append(float(m.x))
                    ys.append(m.y)
            else:
                ax.axhline(m.y, color=color, ls=":", lw=1.3, label=f"published {src}: {fmt_number(m.y)}")
        if xs:
            px, py = (ys, xs) if horizontal else (xs, ys)
            ax.scatter(
                px,
                py,
                marker=shape,
                s=28,
                facecolors="none",
                edgecolors=color,
                linewidths=1.3,
                zorder=5,
                label=f"published {src}",
            )


def _plot_group(
    group: list[Series], path: Path, notes: Sequence[tuple[str, float]], marks: Sequence[Mark], dpi: int
) -> bool:
    first = group[0]
    plot = (first.plot or "line").lower()
    fig = MplFigure(figsize=(7.5, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    title = f"{first.suite} / {first.bench}: {first.figure or first.name}"
    if plot == "heatmap" or (plot in ("line", "logx") and is_level_sequence(group)):
        if not (draw_heatmaps(fig, group) if plot == "heatmap" else draw_level_sequence(fig, first)):
            return False
        fig.suptitle(title, fontsize=9)
        fig.savefig(path, dpi=dpi)
        return True
    ax = fig.add_subplot()
    points: dict = {}
    bars: dict = {}
    horizontal = False
    if plot == "hist":
        drawn = _draw_hist(ax, group)
        ax.set_xlabel(_label(first.y_label, first.y_unit))
        ax.set_ylabel("count")
    elif plot == "bar":
        drawn, bars, horizontal = _draw_bar(ax, group)
        x_label, y_label = _label(first.x_label, first.x_unit), _label(first.y_label, first.y_unit)
        ax.set_xlabel(y_label if horizontal else x_label)
        ax.set_ylabel(x_label if horizontal else y_label)
        if horizontal:  # room for one row of bars per category
            fig.set_size_inches(7.5, max(4.4, 1.4 + 0.2 * len(ax.get_yticks())))
            ax.margins(y=0.01)
    else:  # "line", "logx", "logy", "loglog"; unknown hints fall back to a plain line plot
        drawn, points = _draw_lines(ax, group, plot if plot in ("logx", "logy", "loglog") else "line")
        ax.set_xlabel(_label(first.x_label, first.x_unit))
        ax.set_ylabel(_label(first.y_label, first.y_unit))
    if not drawn:
        return False
    palette = colors(len(group) + len(notes))  # our own levels continue the series' colours, never repeat one
    for j, (label, level) in enumerate(notes):
        if level is None or not math.isfinite(level):
            continue
        kw = dict(color=palette[len(group) + j], ls="--", lw=1, label=f"{label}: {fmt_number(level)}")
        # In a histogram the measured value is on x, so a level is a vertical line.
        (ax.axvline if plot == "hist" or horizontal else ax.axhline)(level, **kw)
    if marks and plot != "hist":
        _draw_marks(ax, marks, points, bars, horizontal)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7 if len(ax.get_legend_handles_labels()[0]) > 8 else 8)
    fig.savefig(path, dpi=dpi)
    return True


def plot_groups(
    series: Iterable[Series],
    out_dir: str | Path,
    annotations: Annotations | None = None,
    dpi: int = 110,
    marks: Marks | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Path]:
    """Draw one PNG per group (see group_id); returns group id -> path of groups drawn. `annotations` are our
    own levels (dashed lines), `marks` the published values that belong on a plot; `progress(done, total)` after
    each group (a whole run's report draws ~400 plots, most of its time).

    Groups with nothing plottable are skipped; a plotting error skips that group only (one line on the
    log), so one odd series cannot take the whole report down. An OSError is the disk, not the data
    (no space, no permission): it propagates, since a report without its plots is not a report.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    annotations = annotations or {}
    marks = marks or {}
    paths: dict[str, Path] = {}
    used: set[str] = set()
    groups = group_series(series)
    for i, (gid, group) in enumerate(groups.items(), 1):
        if progress:
            progress(i, len(groups))
        first = group[0]
        name = png_name(first.suite, first.bench, first.figure or first.name)
        stem, k = name[:-4], 2
        while name in used:  # two ids that sanitise alike must not overwrite each other
            name, k = f"{stem}-{k}.png", k + 1
        used.add(name)
        path = out / name
        try:
            if _plot_group(group, path, annotations.get(gid, ()), marks.get(gid, ()), dpi):
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


def png_width(path: Path) -> int:
    """A PNG's width in pixels, from its header (bytes 16-19 of the IHDR chunk)."""
    with open(path, "rb") as fh:
        head = fh.read(24)
    return int.from_bytes(head[16:20], "big") if head[:8] == b"\x89PNG\r\n\x1a\n" else 0
