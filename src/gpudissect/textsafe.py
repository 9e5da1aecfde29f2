"""Text from runs and exports made safe to show: control characters become visible escapes.

A GPU name, note or path can come from an imported export, i.e. from anyone. Printed raw, an escape
sequence in it retitles or clears the terminal, a newline fakes an output line, a bidi override reorders
what is shown, and a lone surrogate (valid in JSON) cannot even be encoded. Every human-readable output
goes through `visible`; JSON output needs nothing (json.dumps escapes all of these itself).
"""

from __future__ import annotations


def _escape(cp: int) -> str:
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


_SHORT = {ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"}
_CONTROLS = [
    *range(0x20),  # C0: ESC, BEL, backspace, newline...
    *range(0x7F, 0xA0),  # DEL and C1 (0x9b is a one-byte CSI to some terminals)
    0x061C,  # Arabic letter mark
    0x200E,  # left-to-right and right-to-left marks
    0x200F,
    0x2028,  # line and paragraph separators: line breaks to some viewers
    0x2029,
    *range(0x202A, 0x202F),  # bidi embeddings and overrides
    *range(0x2066, 0x206A),  # bidi isolates
    *range(0xD800, 0xE000),  # lone surrogates: no encoding can print them
]
_ONE_LINE = {cp: _SHORT.get(cp) or _escape(cp) for cp in _CONTROLS}
_MULTI_LINE = {cp: v for cp, v in _ONE_LINE.items() if cp not in (ord("\n"), ord("\t"))}


def visible(text: object, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (ESC -> \\x1b, newline -> \\n), so it prints
    as one inert line; keep_newlines keeps newlines and tabs for a block of lines (a compiler log)."""
    return str(text).translate(_MULTI_LINE if keep_newlines else _ONE_LINE)
