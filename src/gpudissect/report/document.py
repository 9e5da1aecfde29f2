"""The report as plain data: a title and a list of blocks (headings, paragraphs, bullet lists, tables,
images). sections.py fills it from a run; markdown.py and html.py only format it, so both formats show
the same content in the same order."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str
    style: Literal["plain", "alert", "muted"] = "plain"


@dataclass
class Bullets:
    items: list[tuple[str, str]]  # (bold lead, rest); rendered "lead rest"
    style: Literal["plain", "alert"] = "plain"


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    align: str = ""  # one letter per column: "r" a number column (right-aligned), "l" (default) text


@dataclass
class Image:
    src: str  # relative to the report file
    alt: str
    wide: bool = False  # a picture of several panels: shown as wide as the page, not beside another


@dataclass
class Details:
    """Blocks a reader opens on demand (methods, long published lists): folded in HTML, a <details> in Markdown."""

    summary: str
    blocks: list[Block]


Block = Heading | Para | Bullets | Table | Image | Details


@dataclass
class Document:
    title: str
    blocks: list[Block] = field(default_factory=list)


# Cell texts that say something went wrong (a failed check, a crashed benchmark); a format may highlight them.
_ALERT_CELL = re.compile(r"^(FAILED|CRASHED|HUNG|INTERRUPTED)\b")


def is_alert_cell(text: str) -> bool:
    return _ALERT_CELL.match(text) is not None
