"""How the CLI prints tables and long text: adapted to a terminal, plain when redirected.

On a terminal (stdout a TTY): rich tables whose columns fit its width, paragraphs wrapped at spaces with a
hanging indent, colour; a word is never broken (a table too narrow for its longest words prints a block
per row instead).
Redirected (a pipe, a file): plain aligned text, nothing wrapped or cut, no box characters or escape
codes, the same bytes whatever the terminal was. Machine-readable output (--json, --format md) never comes
here: it is the same on a terminal and in a file.

Every text is shown with textsafe.visible and as rich Text, never markup: a GPU name or note from an
imported export is shown, never obeyed. Tests force a terminal by patching is_terminal and terminal_width.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Sequence

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .report.tables import plain_table
from .textsafe import visible

# a table cell: its text, or (text, rich style) to colour it on a terminal
Cell = str | tuple[str, str]
_PAD = 2  # rich's default cell padding, one space each side


def is_terminal() -> bool:
    """Whether stdout is a terminal (a person reads it) rather than a pipe or a file."""
    return sys.stdout.isatty()


def terminal_width() -> int:
    return shutil.get_terminal_size().columns


def width() -> int | None:
    """Columns to fit on a terminal; None when redirected, where nothing is wrapped or cut."""
    return max(terminal_width(), 20) if is_terminal() else None


_consoles: list[Console] = []


def _console() -> Console:
    """A rich console on the current stdout (a test's, too) at the terminal's width, made once per stdout."""
    w = max(terminal_width(), 20)
    if not (_consoles and _consoles[0].file is sys.stdout and _consoles[0].width == w):
        _consoles[:] = [Console(file=sys.stdout, width=w, highlight=False)]
    return _consoles[0]


def _text(cell: Cell) -> str:
    return visible(cell[0] if isinstance(cell, tuple) else cell)


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


def _fit(mins: list[int], maxs: list[int], room: int) -> list[int] | None:
    """Content widths of the columns within `room`: each at least its longest word; the room left goes to
    the columns that need least first (they stay on one line), the rest is shared evenly by the widest.
    None when even the longest words do not fit."""
    if sum(maxs) <= room:
        return list(maxs)
    if sum(mins) > room:
        return None
    widths = list(mins)
    open_ = sorted(range(len(widths)), key=lambda i: maxs[i] - mins[i])
    while open_:
        spare = room - sum(widths)
        share = spare // len(open_)
        i = open_[0]
        if maxs[i] - widths[i] <= share:  # the least needy column fits whole
            widths[i] = maxs[i]
            open_.pop(0)
            continue
        for k, i in enumerate(open_):  # the others split what is left, the remainder to the widest
            widths[i] += share + (1 if k >= len(open_) - spare % len(open_) else 0)
        break
    return widths


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    styles: Sequence[str | None] | None = None,
    right: Sequence[int] = (),
    whole: Sequence[int] = (),
) -> None:
    """Rows under `headers`: a rich table on a terminal, aligned plain columns when redirected.
    `styles`: a rich style per row (terminal only); `right`: indices of right-aligned columns; `whole`: columns
    whose cells are never wrapped (an instruction's text)."""
    head = [visible(h) for h in headers]
    body = [[_text(c) for c in r] + [""] * (len(head) - len(r)) for r in rows]
    if not is_terminal():  # redirected: never wrapped
        typer.echo(plain_table(head, body))
        return
    n = len(head)
    room = max(terminal_width(), 20) - (n + 1) - _PAD * n  # borders and padding
    cols = list(zip(*[head, *body]))
    maxs = [max(map(cell_len, c)) for c in cols]
    mins = [maxs[i] if i in whole else max(map(_longest_word, c)) for i, c in enumerate(cols)]
    widths = _fit(mins, maxs, room)
    if widths is None:  # a terminal too narrow to keep the words whole: a block per row
        _records(head, body, rows, styles)
        return
    t = Table(header_style="bold")
    for i, (h, w) in enumerate(zip(head, widths)):
        t.add_column(Text(h), width=max(w, 1), justify="right" if i in right else "left", overflow="fold")
    for r, raw, style in zip(body, rows, styles or [None] * len(body)):
        t.add_row(*(Text(c, style=_cell_style(raw, i)) for i, c in enumerate(r)), style=style)
    _console().print(t)


def _cell_style(raw: Sequence[Cell], i: int) -> str:
    c = raw[i] if i < len(raw) else ""
    return c[1] if isinstance(c, tuple) else ""


def _records(
    head: list[str], body: list[list[str]], rows: Sequence[Sequence[Cell]], styles: Sequence[str | None] | None
) -> None:
    """A terminal too narrow for the table's longest words: each row as a block, its first cell a title line
    (with the second when that is short) and every other non-empty cell `HEADER: value` below it, wrapped
    with a hanging indent."""
    con = _console()
    labels = [(h or "-") + ":" for h in head]
    pad = max(map(cell_len, labels[1:]), default=0) + 4
    # a short second column (a status) joins the title line
    short = 2 if len(head) > 2 and max((cell_len(r[1]) for r in body), default=0) <= 12 else 1
    for cells, raw, style in zip(body, rows, styles or [None] * len(body)):
        title = Text(cells[0], style=_cell_style(raw, 0) or style or "")
        if short == 2:
            title.append("  " + cells[1], style=_cell_style(raw, 1) or style or "")
        con.print(title, soft_wrap=True)
        for i in range(short, len(head)):
            if not cells[i]:
                continue
            first = f"  {labels[i]:<{pad - 2}}"
            for k, text in enumerate(_wrap_lines(cells[i], first, " " * pad)):
                t = Text(text[:pad] if k == 0 else " " * pad, style="dim")
                t.append(text[pad:], style=_cell_style(raw, i) or style or "")
                con.print(t, soft_wrap=True)


def _wrap_lines(text: str, first: str, rest: str) -> list[str]:
    lines = textwrap.wrap(
        text,
        max(terminal_width(), 20),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [first]


def wrap(text: str, indent: int = 0, hang: int = 4) -> list[str]:
    """`text` as lines: on a terminal wrapped at spaces to its width, the lines after the first indented
    `hang` more (a word longer than the line stays whole); redirected, one line."""
    text = visible(text)
    first = " " * indent
    if not is_terminal():
        return [first + text]
    return _wrap_lines(text, first, " " * (indent + hang))


def paragraph(text: str, indent: int = 0, hang: int = 4, style: str | None = None) -> None:
    """Long text on stdout, wrapped with a hanging indent on a terminal (see wrap); style: terminal only."""
    for line in wrap(text, indent, hang):
        _line(line, style)


def field(label: str, texts: Sequence[str], pad: int, indent: int = 2) -> None:
    """Texts under a label (`  method:      text`, `pad` columns for the label and its colon): the first
    text beside the label, each further one below it in the same column. On a terminal each text wraps at
    spaces with a hanging indent to that column, the label dim; redirected, one line per text."""
    for i, text in enumerate(texts):
        head = " " * indent + f"{(label + ':') if i == 0 else '':<{pad}} "
        if not is_terminal():
            typer.echo(head + visible(text))
            continue
        for k, wrapped in enumerate(_wrap_lines(visible(text), head, " " * len(head))):
            t = Text(wrapped[: len(head)], style="dim" if k == 0 else "")
            t.append(wrapped[len(head) :])
            _console().print(t, soft_wrap=True)


def line(text: str, style: str | None = None) -> None:
    """One line never wrapped by us (SASS): styled on a terminal, which folds it where it must, plain when
    redirected."""
    _line(visible(text), style)


def _line(text: str, style: str | None) -> None:
    if is_terminal() and style:
        _console().print(Text(text, style=style), soft_wrap=True)
    else:
        typer.echo(text)


def heading(text: str) -> None:
    """A section's title: bold and wrapped like a paragraph on a terminal, one plain line otherwise."""
    paragraph(text, style="bold")


def rule(title: str) -> None:
    """A section's header line: a rule across a terminal, `--- title` when redirected."""
    if is_terminal():
        _console().rule(Text(visible(title)), characters="-")
    else:
        typer.echo(f"--- {visible(title)}")


def blank() -> None:
    typer.echo("")


def count(n: int, noun: str) -> str:
    """ "1 figure", "2 figures"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def done(text: str) -> None:
    """A command's final pass/fail line, on stderr (stdout stays the command's output)."""
    typer.echo(visible(text), err=True)
