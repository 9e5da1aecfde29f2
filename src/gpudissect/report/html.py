"""HTML rendering of the run report: formats the Document that sections.py builds as one self-contained
page (inline CSS, a table of contents, PNGs side by side)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gpudissect.models import BenchResult, Figure, RunInfo, Series
from gpudissect.report.compare import PublishedLike
from gpudissect.report.document import (
    Block,
    Bullets,
    Details,
    Document,
    Heading,
    Image,
    Para,
    Table,
    is_alert_cell,
)
from gpudissect.report.figures import Annotations
from gpudissect.report.sections import write_report
from gpudissect.textsafe import visible

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #1d1d1f; overflow-wrap: anywhere; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { margin-top: 1.5em; }
div.tbl { max-width: 100%; overflow-x: auto; margin: .6em 0; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; vertical-align: top; text-align: left; }
th, td { overflow-wrap: normal; }
th { background: #f6f8fa; }
td.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.bad, li.bad, p.alert { color: #b00020; font-weight: 600; }
p.muted { color: #777; font-style: italic; }
ul.alert { border-left: 4px solid #b00020; padding: .3em 1.5em; background: #fff4f4; }
details { margin: .4em 0; } summary { cursor: pointer; color: #0b57d0; }
details > div { padding-left: 1em; border-left: 2px solid #eee; }
figure { display: inline-block; margin: .5em 1em .5em 0; max-width: 100%; vertical-align: top; }
figure img { max-width: 100%; width: 560px; height: auto; border: 1px solid #eee; }
figure.wide { display: block; margin-right: 0; }
figure.wide img { width: auto; }
figcaption { font-size: 12px; color: #555; }
nav ul { columns: 3; font-size: 13px; }
"""


def _esc(text: object) -> str:
    return html.escape(visible("" if text is None else text, keep_newlines=True))


def _slug(text: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "s"
    slug, k = base, 2
    while slug in used:
        slug, k = f"{base}-{k}", k + 1
    used.add(slug)
    return slug


def _table(t: Table) -> str:
    """Every table sits in its own box that scrolls sideways: a wide one never widens the page."""
    head = "".join(f"<th>{_esc(h)}</th>" for h in t.headers)
    body = []
    for row in t.rows:
        cells = []
        for i, c in enumerate(row):
            cls = []
            if i < len(t.align) and t.align[i] == "r":
                cls.append("r")
            if is_alert_cell(str(c)):
                cls.append("bad")
            attr = f' class="{" ".join(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{_esc(c)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="tbl"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _blocks(blocks: Sequence[Block], used: set[str], toc: list[tuple[str, str]]) -> list[str]:
    parts: list[str] = []
    for blk in blocks:
        if isinstance(blk, Heading):
            slug = _slug(blk.text, used)
            if blk.level == 2:
                toc.append((slug, blk.text))
            parts.append(f'<h{blk.level} id="{slug}">{_esc(blk.text)}</h{blk.level}>')
        elif isinstance(blk, Para):
            cls = f' class="{blk.style}"' if blk.style != "plain" else ""
            parts.append(f"<p{cls}>{_esc(blk.text)}</p>")
        elif isinstance(blk, Bullets):
            items = "".join(
                f"<li><strong>{_esc(lead)}</strong> {_esc(rest)}</li>" if lead else f"<li>{_esc(rest)}</li>"
                for lead, rest in blk.items
            )
            cls = ' class="alert"' if blk.style == "alert" else ""
            parts.append(f"<ul{cls}>{items}</ul>")
        elif isinstance(blk, Table):
            parts.append(_table(blk))
        elif isinstance(blk, Image):
            cls = ' class="wide"' if blk.wide else ""
            parts.append(
                f'<figure{cls}><a href="{_esc(blk.src)}"><img src="{_esc(blk.src)}" alt="{_esc(blk.alt)}" '
                f'loading="lazy"></a><figcaption>{_esc(blk.alt)}</figcaption></figure>'
            )
        elif isinstance(blk, Details):
            inner = "\n".join(_blocks(blk.blocks, used, toc))
            parts.append(f"<details><summary>{_esc(blk.summary)}</summary><div>\n{inner}\n</div></details>")
    return parts


def to_html(doc: Document) -> str:
    used: set[str] = set()
    toc: list[tuple[str, str]] = []
    parts = _blocks(doc.blocks, used, toc)
    nav = ""
    if toc:
        links = "".join(f'<li><a href="#{s}">{_esc(t)}</a></li>' for s, t in toc)
        nav = f"<nav><ul>{links}</ul></nav>"
    # The first block is the h1 title; the table of contents goes right after it.
    head, rest = (parts[:1], parts[1:]) if parts else ([], [])
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(doc.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join([*head, nav, *rest])
        + "\n</body>\n</html>\n"
    )


def render_html(
    run: RunInfo,
    benches: Sequence[BenchResult],
    series: Sequence[Series],
    figures: Sequence[Figure],
    refs: Iterable[PublishedLike] | None,
    out_dir: str | Path,
    annotations: Annotations | None = None,
    ref_gpus: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Write out_dir/report.html and its PNGs (referenced by relative path)."""
    return write_report(
        to_html, "report.html", run, benches, series, figures, refs, out_dir, annotations, ref_gpus, progress
    )
