"""The text of `gpudissect compare` (the default --format text): two runs' figures, or the GPUs of a group,
as tables through cli_output (rich on a terminal, plain columns when redirected). Markdown and JSON are
report/compare.py's and multigpu's, the same on a terminal and in a file."""

from __future__ import annotations

from typing import Any

from . import cli_output

_NUMERIC = ("A", "B", "CHANGE", "FIGURES", "MEDIAN")


def print_blocks(blocks: list[tuple[Any, ...]]) -> None:
    """report.compare.comparison_blocks: headings, indented lines and tables (changed rows red on a
    terminal), a blank line between sections."""
    for i, block in enumerate(blocks):
        if block[0] == "heading":
            if i:
                cli_output.blank()
            cli_output.heading(block[1])
        elif block[0] == "lines":
            for text in block[1]:
                cli_output.paragraph(text, indent=2)
        else:
            _, head, rows, changed = block
            right = tuple(i for i, h in enumerate(head) if h in _NUMERIC)
            cli_output.table(head, rows, styles=["red" if c else None for c in changed], right=right)


def print_group(group: str, labels: list[str], rows: list[Any], limit: float, only_flagged: bool) -> None:
    """`compare --gpus`: which GPUs are flagged, then per key the median and each GPU's deviation (flagged
    keys red on a terminal)."""
    from . import multigpu

    cli_output.paragraph(multigpu.summary_line(group, labels, rows, 3.0, limit))
    cli_output.blank()
    cells = multigpu.deviation_rows(labels, rows, only_flagged)
    cli_output.table(
        ["KEY", "UNIT", "MEDIAN", *labels, "FLAGGED"],
        cells,
        styles=["red" if c[-1] else None for c in cells],
        right=tuple(range(2, 3 + len(labels))),
    )
