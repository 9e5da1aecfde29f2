"""Colours for the series of one plot: never the same colour twice inside a plot, however many series it has."""

from __future__ import annotations

import colorsys


def colors(n: int) -> list[str]:
    """n distinct colours: matplotlib's tab10 up to 10 (the familiar look), tab20 up to 20, beyond that n hues
    spread evenly round the colour wheel at two lightnesses."""
    if n <= 10:
        return [f"C{i}" for i in range(n)]
    if n <= 20:
        from matplotlib import colormaps

        cmap = colormaps["tab20"]
        # tab20 pairs a dark and a light shade of each hue: all the dark ones first, so 11 series still read apart
        order = [*range(0, 20, 2), *range(1, 20, 2)]
        return [_hex(cmap(order[i])[:3]) for i in range(n)]
    return [_hex(colorsys.hls_to_rgb(i / n, 0.38 if i % 2 else 0.55, 0.75)) for i in range(n)]


def _hex(rgb: tuple[float, ...]) -> str:
    return "#" + "".join(f"{round(255 * c):02x}" for c in rgb[:3])


# published values drawn on a plot: black and grey marks, one shape per source, so they never take a series' colour
MARK_SHAPES = ("D", "s", "^", "v", "P", "X", "*", "h")
MARK_COLORS = ("black", "dimgray")


def text_color_on(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever reads better on a cell of this colour (relative luminance)."""
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "white"
