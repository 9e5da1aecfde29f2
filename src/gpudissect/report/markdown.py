"""Markdown rendering of the run report: formats the Document that sections.py builds."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gpudissect.models import BenchResult, Figure, RunInfo, Series
from gpudissect.report.compare import PublishedLike
from gpudissect.report.document import Block, Bullets, Details, Document, Heading, Image, Para, Table
from gpudissect.report.figures import Annotations
from gpudissect.report.sections import write_report
from gpudissect.report.tables import md_table
from gpudissect.report.tables import md_text as _md_text


def _blocks(blocks: Sequence[Block]) -> list[str]:
    parts: list[str] = []
    for blk in blocks:
        if isinstance(blk, Heading):
            parts.append("#" * blk.level + " " + _md_text(blk.text))
        elif isinstance(blk, Para):
            text = _md_text(blk.text)
            parts.append({"alert": f"> **{text}**", "muted": f"_{text}_"}.get(blk.style, text))
        elif isinstance(blk, Bullets):
            parts.append(
                "\n".join(
                    f"- **{_md_text(lead)}** {_md_text(rest)}" if lead else f"- {_md_text(rest)}"
                    for lead, rest in blk.items
                )
            )
        elif isinstance(blk, Table):
            parts.append(md_table(blk.headers, blk.rows, blk.align))
        elif isinstance(blk, Image):
            parts.append(f"![{_md_text(blk.alt)}]({blk.src})")  # src: a file name we made (figures.png_name)
        elif isinstance(blk, Details):
            # GitHub and Python-Markdown read Markdown inside <details> when blank lines part it from the tags
            parts.append(f"<details><summary>{_md_text(blk.summary)}</summary>")
            parts.extend(_blocks(blk.blocks))
            parts.append("</details>")
    return parts


def to_markdown(doc: Document) -> str:
    """Every text of the document is run data or ours, shown as typed (tables.md_text, escape_cell): the
    only Markdown in the page is what this function writes, and the only links are our own images."""
    return "\n\n".join(_blocks(doc.blocks)) + "\n"


def render_markdown(
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
    """Write out_dir/report.md and its PNGs; refs=None uses gpudissect.reference.* if present."""
    return write_report(
        to_markdown, "report.md", run, benches, series, figures, refs, out_dir, annotations, ref_gpus, progress
    )
