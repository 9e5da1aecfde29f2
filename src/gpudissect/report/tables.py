"""Markdown table and number formatting helpers shared by all report renderers."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence

from gpudissect.textsafe import visible

NONE_CELL = "—"  # shown where there is no value, so empty cells never look like zero

_BYTE_UNITS = {"b", "byte", "bytes"}
_BYTE_STEPS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_BOUND = re.compile(r"^\s*(>=|<=|>|<|~|≥|≤)(\s*)(\d+(?:\.\d+)?)\s*$")


def is_bytes_unit(unit: str | None) -> bool:
    return (unit or "").strip().lower() in _BYTE_UNITS


def fmt_bytes(n: float, compact: bool = False) -> str:
    """Binary-prefixed size: 49152 -> "48.0 KiB"; compact drops a trailing ".0" (axis ticks)."""
    x = float(n)
    if not math.isfinite(x):
        return str(x)
    sign = "-" if x < 0 else ""
    x = abs(x)
    for i, step in enumerate(_BYTE_STEPS):
        if x < 1024 or i == len(_BYTE_STEPS) - 1:
            if step == "B":
                return f"{sign}{fmt_number(x)} B"
            text = f"{x:.1f}"
            if compact and text.endswith(".0"):
                text = text[:-2]
            return f"{sign}{text} {step}"
        x /= 1024
    raise AssertionError("unreachable")


def fmt_number(v: float | int) -> str:
    """About 3 significant digits without pretending precision, no exponent for everyday ranges.

    Integral values print as integers (32 cycles, 1024 threads); large values keep their
    integer part (3353 GB/s rather than 3.35e+03) because exponents are hard to read in tables.
    """
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, numbers.Integral):
        return str(int(v))
    x = float(v)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1e9 or ax < 1e-3:
        return f"{x:.3g}"
    if x.is_integer():
        return str(int(x))
    decimals = max(0, 2 - math.floor(math.log10(ax)))
    # trailing zeros are significant digits here: a ratio of 1.004 reads "1.00", not "1"
    return f"{x:.{decimals}f}"


def fmt_value(value: float | int | str | None, unit: str = "") -> str:
    """A figure's value for a table cell; bytes also get a human-readable size."""
    if value is None:
        return NONE_CELL
    if isinstance(value, str):
        # bounds such as ">= 71793901568" bytes read as sizes too: ">= 66.9 GiB (71793901568)"
        m = _BOUND.match(value)
        if m and is_bytes_unit(unit):
            return f"{m.group(1)}{m.group(2)}{fmt_value(float(m.group(3)), unit)}"
        return value
    if unit in ("ratio", "fraction") and isinstance(value, float) and value.is_integer():
        return f"{value:.2f}"  # a measured ratio of exactly 1.0 (rounded) is "1.00", not the integer "1"
    if is_bytes_unit(unit):
        x = float(value)
        if math.isfinite(x) and abs(x) >= 1024:
            exact = str(int(x)) if x.is_integer() else fmt_number(x)
            return f"{fmt_bytes(x)} ({exact})"
    return fmt_number(value)


def fmt_spread(spread: tuple[float, float] | Sequence[float] | None, unit: str = "") -> str:
    if not spread or len(spread) != 2:
        return ""
    lo, hi = spread
    if is_bytes_unit(unit):
        return f"{fmt_bytes(lo)} – {fmt_bytes(hi)}"
    return f"{fmt_number(lo)} – {fmt_number(hi)}"


def fmt_opt(v: float | None, suffix: str = "") -> str:
    """Optional telemetry number: missing stays visibly missing."""
    if v is None:
        return NONE_CELL
    return f"{fmt_number(v)}{suffix}"


def truncate(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Run data is text, never Markdown: raw HTML (<script>, <svg onload=...>) and link or image syntax
# ([x](javascript:...), ![..](..), [x]: url) must show as typed. Entities for <, >, & work in every
# renderer (Python-Markdown does not honour a backslash before <); backslash escapes for the rest.
_MD_ESCAPES = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "`": "\\`", "<": "&lt;", ">": "&gt;", "&": "&amp;"})
_MD_CELL_ESCAPES = str.maketrans({**{chr(k): v for k, v in _MD_ESCAPES.items()}, "|": "\\|"})


def md_text(text: object) -> str:
    """Text for a Markdown heading, paragraph or list item: one line, control characters visible, and
    nothing in it read as HTML, a link or an image."""
    return visible(" ".join(str(text).split())).translate(_MD_ESCAPES)


def escape_cell(text: object) -> str:
    """Make any text safe inside a GitHub-flavoured Markdown table cell: md_text's escapes, `|` escaped,
    line breaks as <br>."""
    s = "" if text is None else str(text)
    lines = re.split(r"\r\n|\r|\n", s.strip())
    return "<br>".join(visible(line).translate(_MD_CELL_ESCAPES) for line in lines).strip()


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> str:
    """Render a GFM table; `align` is one letter per column (l, r, c), default left."""
    n = len(headers)
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    sep = [marks.get(align[i] if i < len(align) else "l", "---") for i in range(n)]
    lines = [
        "| " + " | ".join(escape_cell(h) for h in headers) + " |",
        "| " + " | ".join(sep) + " |",
    ]
    for row in rows:
        cells = [escape_cell(c) for c in list(row)[:n]]
        cells += [""] * (n - len(cells))  # short rows: pad rather than break the table
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plain_table(headers: list[str], rows: list[list[str]]) -> str:
    """Aligned columns that never wrap: the same text on a terminal and in a file."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [headers, *rows])
