"""Plots drawn as grids of cells: heatmaps (one panel per series) and long sequences of a few levels (a 0/1
flag per access), which a line plot would paint as one solid block."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure as MplFigure

from gpudissect.models import Series
from gpudissect.report.palette import colors, text_color_on
from gpudissect.report.tables import fmt_number

# Cell numbers: at least this size in points at the report's scale (a 110-dpi PNG shown at ~0.8 of its size
# is about 8 px), at most the size of the axis labels; smaller cells show colour only.
_MIN_CELL_PT = 7.0
_MAX_CELL_PT = 9.0
_MAX_NUMBERED_CELLS = 600  # beyond this many cells per panel the numbers are noise, and slow to draw
_PANEL_FRACTION = 0.62  # the share of a panel's width and height left to the cells (labels, colour bar)

SEQUENCE_MIN_POINTS = 256
_SEQUENCE_MAX_LEVELS = 4


def _label(text: str, unit: str) -> str:
    return f"{text} ({unit})" if unit else text


def cell_font_pt(cell_w_in: float, cell_h_in: float, longest: int) -> float | None:
    """The font size (points) that fits a number of `longest` characters in a cell, or None when it would be
    smaller than readable."""
    if longest <= 0:
        return None
    fit_w = cell_w_in * 0.9 * 72 / (0.6 * longest)  # a digit is about 0.6 em wide
    fit_h = cell_h_in * 0.75 * 72
    pt = min(_MAX_CELL_PT, fit_w, fit_h)
    return pt if pt >= _MIN_CELL_PT else None


def draw_heatmaps(fig: MplFigure, group: list[Series]) -> int:
    """One panel per series: x = Point.x (e.g. #warps), rows = Point.extra["ilp"] (or "row"), colour = y."""
    n = len(group)
    cols = min(n, 3)
    rows_n = math.ceil(n / cols)
    fig_w, fig_h = max(4.2 * cols, 6.5), 3.4 * rows_n
    fig.set_size_inches(fig_w, fig_h)  # room for the title over one panel
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
        _thin_ticks(ax, xs, ys)
        ax.set_xlabel(_label(s.x_label, s.x_unit))
        ax.set_ylabel(str(s.params.get("rows") or key))
        ax.set_title(f"{s.name} ({s.y_unit})", fontsize=9)
        _cell_numbers(ax, im, grid, fig_w / cols, fig_h / rows_n)
        fig.colorbar(im, ax=ax, shrink=0.8)
        drawn += 1
    return drawn


def _thin_ticks(ax, xs: list[float], ys: list[float]) -> None:
    """At most ~16 labelled ticks per axis: a 64-column grid labelled on every column is unreadable."""
    for set_ticks, values in ((ax.set_xticks, xs), (ax.set_yticks, ys)):
        step = max(1, math.ceil(len(values) / 16))
        idx = list(range(0, len(values), step))
        set_ticks(idx, [fmt_number(values[j]) for j in idx])


def _cell_numbers(ax, im, grid: np.ndarray, panel_w_in: float, panel_h_in: float) -> None:
    if grid.size > _MAX_NUMBERED_CELLS:
        return
    texts = {rc: fmt_number(v) for rc, v in np.ndenumerate(grid) if math.isfinite(v)}
    if not texts:
        return
    rows, cols = grid.shape
    pt = cell_font_pt(
        panel_w_in * _PANEL_FRACTION / cols, panel_h_in * _PANEL_FRACTION / rows, max(map(len, texts.values()))
    )
    if pt is None:
        return
    for (r, c), text in texts.items():
        ax.text(c, r, text, ha="center", va="center", fontsize=pt, color=text_color_on(im.cmap(im.norm(grid[r, c]))))


def is_level_sequence(group: list[Series]) -> bool:
    """One long series of a few levels over consecutive indices (a far/near flag per access): drawn as a
    grid of cells, since a line between 0 and 1 thousands of times is a solid block."""
    if len(group) != 1:
        return False
    pts = group[0].points
    if len(pts) < SEQUENCE_MIN_POINTS:
        return False
    ys = {float(p.y) for p in pts}
    xs = [float(p.x) for p in pts]
    return (
        len(ys) <= _SEQUENCE_MAX_LEVELS
        and all(math.isfinite(y) for y in ys)
        and all(x.is_integer() for x in xs)
        and len(set(xs)) == len(xs)
    )


def draw_level_sequence(fig: MplFigure, s: Series) -> int:
    """Index k at row k // width, column k % width; one colour per level, named in the colour bar."""
    pts = sorted(s.points, key=lambda p: p.x)
    x0 = int(pts[0].x)
    n = int(pts[-1].x) - x0 + 1
    width = 2 ** max(4, math.ceil(math.log2(math.sqrt(n))))  # a power of two: rows start at round indices
    rows = math.ceil(n / width)
    levels = sorted({float(p.y) for p in pts})
    grid = np.full((rows, width), np.nan)
    for p in pts:
        k = int(p.x) - x0
        grid[k // width, k % width] = levels.index(float(p.y))
    fig.set_size_inches(7.5, max(3.0, min(7.5, 7.5 * rows / width + 1.2)))
    ax = fig.add_subplot()
    cmap = ListedColormap(colors(len(levels)))
    norm = BoundaryNorm(np.arange(len(levels) + 1) - 0.5, len(levels))
    im = ax.imshow(grid, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xlabel(f"{s.x_label} mod {width}")
    ax.set_ylabel(f"{s.x_label} // {width}" + (f" (from {x0})" if x0 else ""))
    bar = fig.colorbar(im, ax=ax, ticks=range(len(levels)), shrink=0.8)
    bar.ax.set_yticklabels([fmt_number(v) for v in levels])
    bar.set_label(_label(s.y_label, s.y_unit), fontsize=8)
    ax.set_title(s.name, fontsize=9)
    return 1
