"""The run report's content, built once for every format: the title, the front page (frontpage.py: the GPU at
a glance), per suite in the reader's order and per benchmark its figures (the published values of the GPU's
family inline, findings as paragraphs, methods and the other GPUs' values folded) and plots, then the run's
facts, the benchmark status table and all published values. Writes the plots' PNGs; markdown.py and html.py
format the Document it returns."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gpudissect.models import BenchResult, Figure, RunInfo, Series
from gpudissect.report.annotate import published_marks
from gpudissect.report.compare import (
    CLOCK_NOTE,
    PublishedLike,
    fmt_ref_cell,
    norm_unit,
    published_rows,
    resolve_refs,
)
from gpudissect.report.document import Block, Bullets, Details, Document, Heading, Image, Para, Table
from gpudissect.report.family import family_gpus, own_gpu_first
from gpudissect.report.figures import Annotations, group_series, plot_groups, png_width
from gpudissect.report.frontpage import FAILED_VALUE, SUITE_ORDER, front_page
from gpudissect.report.summary import failed_keys
from gpudissect.report.tables import NONE_CELL, fmt_number, fmt_opt, fmt_spread, fmt_value, truncate

__all__ = ["FAILED_VALUE", "build_document", "own_gpu_first", "write_report"]

_WIDE_PX = 900  # a plot wider than this (several panels) is shown across the page
_FINDING_CHARS = 40  # a text value longer than this is a finding: a paragraph, not a table cell


def _bench_order(
    benches: Sequence[BenchResult], series: Sequence[Series], figures: Sequence[Figure]
) -> dict[str, list[str]]:
    """suite -> benches: suites in the reader's order (unknown ones after, as first seen), benches in first-seen
    order (status table order, then figures, then series)."""
    order: dict[str, list[str]] = {}
    for obj in [*benches, *figures, *series]:
        lst = order.setdefault(obj.suite, [])
        if obj.bench not in lst:
            lst.append(obj.bench)
    rank = {s: i for i, s in enumerate(SUITE_ORDER)}
    return dict(sorted(order.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def _run_table(run: RunInfo) -> Table:
    def mhz(v: float | None) -> str:
        return f"{fmt_number(v)} MHz" if v else NONE_CELL

    rows = [
        ["GPU", run.gpu_name],
        ["UUID", run.gpu_uuid],
        ["SMs", str(run.sm_count)],
        ["L2 cache", fmt_value(run.l2_bytes, "bytes") if run.l2_bytes else NONE_CELL],
        ["SM clock (max)", mhz(run.sm_clock_max_mhz)],
        ["Memory clock (max)", mhz(run.mem_clock_max_mhz)],
        ["Memory bus", f"{run.mem_bus_bits} bit" if run.mem_bus_bits else NONE_CELL],
        ["Driver", run.driver or NONE_CELL],
        ["CUDA", run.cuda or NONE_CELL],
        ["NVRTC", run.nvrtc or NONE_CELL],
        ["gpudissect", run.tool_version or NONE_CELL],
        ["Arch", run.arch or NONE_CELL],
        ["Mode", run.mode or NONE_CELL],
        ["Run id", str(run.id)],
        ["Started", run.started or NONE_CELL],
        ["Ended", run.ended or "not recorded (run did not finish cleanly)"],
        ["Status", run.status or NONE_CELL],
    ]
    if run.selection:
        rows.append(["Selection", json.dumps(run.selection, sort_keys=True, default=str)])
    rows += _extra_rows(run)
    seen: set[tuple[str, str]] = set()
    unique = []
    for r in rows:
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            unique.append(r)
    return Table(["Property", "Value"], unique)


# Device properties the rows above already show (under their own name), when the values agree.
_SHOWN_ABOVE = {
    "sm_count": "sm_count",
    "l2_bytes": "l2_bytes",
    "mem_bus_bits": "mem_bus_bits",
    "arch": "arch",
    "nvrtc": "nvrtc",
    "cuda_driver": "cuda",
    "name": "gpu_name",
    "uuid": "gpu_uuid",
}
_BYTE_KEYS = ("bytes", "mem", "smem")


def _extra_rows(run: RunInfo) -> list[list[str]]:
    """The run's other device properties, without repeating a row above: equal values are dropped,
    kHz clocks that equal the MHz rows too, and cc_major/cc_minor become one row."""
    extra = dict(run.extra)
    rows: list[list[str]] = []
    if "cc_major" in extra and "cc_minor" in extra:
        rows.append(["Compute capability", f"{extra.pop('cc_major')}.{extra.pop('cc_minor')}"])
    for k, field_name in _SHOWN_ABOVE.items():
        if k in extra and str(extra[k]) == str(getattr(run, field_name)):
            del extra[k]
    for k, mhz in (("sm_clock_khz", run.sm_clock_max_mhz), ("mem_clock_khz", run.mem_clock_max_mhz)):
        v = extra.get(k)
        if isinstance(v, int | float) and mhz and abs(v / 1000 - mhz) < 0.5:
            del extra[k]
    for k in sorted(extra):
        v = extra[k]
        if isinstance(v, int) and not isinstance(v, bool) and any(b in k for b in _BYTE_KEYS) and v >= 1024:
            text = fmt_value(v, "bytes")
        else:
            text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
        rows.append([k, text])
    return rows


def _status_table(benches: Sequence[BenchResult]) -> Table:
    rows = []
    for b in benches:
        t = b.telemetry
        if t is None or t.samples == 0:
            clock = power = temp = NONE_CELL
            throttle = "no telemetry"
        else:
            clock = fmt_opt(t.sm_clock_mhz_median)
            if t.sm_clock_mhz_min is not None or t.sm_clock_mhz_max is not None:
                clock += f" ({fmt_opt(t.sm_clock_mhz_min)}–{fmt_opt(t.sm_clock_mhz_max)})"
            power = f"{fmt_opt(t.power_w_median)} / {fmt_opt(t.power_w_max)}"
            temp = fmt_opt(t.temp_c_max)
            throttle = ", ".join(t.throttle_reasons) or "none"
        rows.append(
            [
                b.suite,
                b.bench,
                b.status.upper() if b.status != "ok" else "ok",
                fmt_opt(b.seconds),
                clock,
                power,
                temp,
                throttle,
                truncate(b.message) if b.message else "",
            ]
        )
    return Table(
        [
            "Suite",
            "Bench",
            "Status",
            "Seconds",
            "SM clock median (min–max) MHz",
            "Power median / max W",
            "Temp max °C",
            "Throttle reasons",
            "Message",
        ],
        rows,
        "lllrrrrll",
    )


def _published_cells(
    figures: Sequence[Figure], refs: Iterable[PublishedLike] | None, gpus: list[str] | None
) -> dict[str, str]:
    """key -> "H800: 32 (000, Table 3; ratio 1.03); H100-SXM5: …" for every figure with values of `gpus`."""
    out = {}
    for r in published_rows(figures, refs, gpus):
        cells = [f"{g}: {fmt_ref_cell(c, r.unit)}" for g, cs in r.published.items() for c in cs]
        if cells:
            out[r.key] = "; ".join(cells) + (f" [{r.note}]" if r.note else "")
    return out


def _is_finding(f: Figure) -> bool:
    return f.check == "ok" and isinstance(f.value, str) and (len(f.value) > _FINDING_CHARS or "\n" in f.value)


def _figure_blocks(figs: Sequence[Figure], inline: dict[str, str], others: dict[str, str], family: str) -> list[Block]:
    """A benchmark's figures: numbers in a table (the family's published values inline), text findings as
    paragraphs across the page, then folded: how each figure was measured, and the other GPUs' values."""
    b: list[Block] = []
    rows = []
    for f in figs:
        if _is_finding(f):
            continue
        failed = f.check != "ok"
        rows.append(
            [
                f.key,
                FAILED_VALUE if failed else fmt_value(f.value, f.unit),
                f.unit,
                "" if failed else fmt_spread(f.spread, f.unit),
                "FAILED" if failed else "ok",
                inline.get(f.key, ""),
            ]
        )
    if rows:
        b.append(Table(["Key", "Value", "Unit", "Spread", "Check", f"Published ({family})"], rows, "lrllll"))
    findings = [(f.key, str(f.value)) for f in figs if _is_finding(f)]
    if findings:
        b.append(Bullets(findings))
    methods: dict[str, list[str]] = {}
    for f in figs:
        text = f.method + (f" — {f.note}" if f.note else "")
        if text:
            methods.setdefault(text, []).append(f.key)
    if methods:
        items = [(_keys_lead(keys), text) for text, keys in methods.items()]
        b.append(Details(f"How these {len(figs)} figures were measured", [Bullets(items)]))
    other_rows = [[f.key, others[f.key]] for f in figs if f.key in others]
    if other_rows:
        b.append(Details("Published for other GPUs", [Table(["Key", "Published (paper, table)"], other_rows)]))
    return b


def _keys_lead(keys: list[str]) -> str:
    return ", ".join(keys) if len(keys) <= 3 else f"{', '.join(keys[:2])} and {len(keys) - 2} more"


def _published_section(
    figures: Sequence[Figure], refs: Iterable[PublishedLike] | None, gpus: list[str] | None
) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Published values")]
    rows = published_rows(figures, refs, gpus)
    if not rows:
        blocks.append(Para("No recorded figure has a published value to compare with.", "muted"))
        return blocks
    blocks.append(
        Para(
            "Ratio = ours / published, given only for cycle-unit figures, which are properties of "
            f"the architecture. Time- and clock-based units (GB/s, ns, TFLOPS, TOPS) are "
            f"{CLOCK_NOTE}: shown for context, without a ratio."
        )
    )
    table_rows = []
    for r in rows:
        ours = FAILED_VALUE if r.value is None else fmt_value(r.value, r.unit)
        for g, cells in r.published.items():
            for c in cells:
                ratio = NONE_CELL if c.ratio is None else f"{c.ratio:.2f}"
                src = ", ".join(x for x in (c.paper, c.table) if x)
                shown = fmt_value(c.value, c.unit) + ("" if norm_unit(c.unit) == norm_unit(r.unit) else f" {c.unit}")
                note = "; ".join(x for x in (c.note, r.note) if x)
                table_rows.append([r.key, ours, r.unit, g, shown, src, ratio, note])
    table = Table(["Key", "Ours", "Unit", "GPU", "Published", "Paper, table", "Ratio", "Note"], table_rows, "lrllrlrl")
    blocks.append(Details(f"Every published value beside ours ({len(table_rows)} rows)", [table]))
    return blocks


def _suite_sections(
    benches: Sequence[BenchResult],
    series: Sequence[Series],
    figures: Sequence[Figure],
    published: tuple[dict[str, str], dict[str, str], str],
    images: dict[str, Path],
    out: Path,
) -> list[Block]:
    """Per suite a section, per benchmark its status when not ok, its figures and its plots."""
    b: list[Block] = []
    status = {(x.suite, x.bench): x for x in benches}
    owner = {gid: (g[0].suite, g[0].bench) for gid, g in group_series(series).items()}
    inline, others, family = published
    for suite, bench_names in _bench_order(benches, series, figures).items():
        b.append(Heading(2, f"Suite: {suite}"))
        for bench in bench_names:
            b.append(Heading(3, f"{suite} / {bench}"))
            res = status.get((suite, bench))
            if res is None:
                b.append(Para("No status recorded for this benchmark.", "muted"))
            elif res.status != "ok":
                b.append(Para(f"Status {res.status.upper()}: {res.message or 'no message'}", "alert"))
            figs = [f for f in figures if f.suite == suite and f.bench == bench]
            if figs:
                b.extend(_figure_blocks(figs, inline, others, family))
            else:
                b.append(Para("No figures recorded.", "muted"))
            imgs = [(gid, p) for gid, p in images.items() if owner.get(gid) == (suite, bench)]
            for gid, p in imgs:
                b.append(Image(p.relative_to(out).as_posix(), gid, wide=png_width(p) > _WIDE_PX))
            has_series = any(s.suite == suite and s.bench == bench for s in series)
            if has_series and not imgs:
                b.append(Para("Series recorded, but nothing plottable.", "muted"))
    return b


def _summary_line(run: RunInfo, benches: Sequence[BenchResult], figures: Sequence[Figure]) -> Para:
    n_failed = len(failed_keys(figures))
    n_bad = sum(1 for x in benches if x.status not in ("ok", "skipped"))
    n_skipped = sum(1 for x in benches if x.status == "skipped")
    clock = f", SM clock up to {fmt_number(run.sm_clock_max_mhz)} MHz" if run.sm_clock_max_mhz else ""
    label = f" '{run.label}'" if getattr(run, "label", None) else ""
    return Para(
        f"{run.gpu_name} ({run.arch}, {run.sm_count} SMs{clock}), run {run.id}{label}, {run.mode} mode, status "
        f"{run.status}: {len(benches)} benchmarks ({n_bad} not ok, {n_skipped} skipped), {len(figures)} figures "
        f"({n_failed} without a number)."
    )


def build_document(
    run: RunInfo,
    benches: Sequence[BenchResult],
    series: Sequence[Series],
    figures: Sequence[Figure],
    refs: Iterable[PublishedLike] | None,
    out_dir: str | Path,
    annotations: Annotations | None = None,
    ref_gpus: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Document:
    """Build the report content and write its PNGs into out_dir (`progress(done, total)` per plot drawn)."""
    out = Path(out_dir)
    refs = resolve_refs(refs)
    if ref_gpus is None:  # the papers' figures of this GPU first, then its family's, then the others
        ref_gpus = own_gpu_first(refs, run)
    family = [g for g in family_gpus(refs, run) if g in ref_gpus]
    rest = [g for g in ref_gpus if g not in family]
    out.mkdir(parents=True, exist_ok=True)
    images = plot_groups(
        series, out, annotations, marks=published_marks(series, figures, refs, family), progress=progress
    )
    doc = Document(f"gpudissect report: {run.gpu_name}")
    b = doc.blocks
    b += [Heading(1, doc.title), _summary_line(run, benches, figures)]
    b += front_page(run, benches, figures, refs, family, out)
    family_label = "none"
    if family:
        family_label = family[0] + (f" and {len(family) - 1} more of its family" if len(family) > 1 else "")
    published = (_published_cells(figures, refs, family), _published_cells(figures, refs, rest), family_label)
    b += _suite_sections(benches, series, figures, published, images, out)
    b += [Heading(2, "Run"), _run_table(run), Heading(2, "Benchmarks")]
    b.append(_status_table(benches) if benches else Para("No benchmark status recorded.", "muted"))
    b += _published_section(figures, refs, ref_gpus)
    return doc


def write_report(
    format_document: Callable[[Document], str],
    filename: str,
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
    """Build the document (its PNGs go into out_dir) and write out_dir/filename in one format."""
    out = Path(out_dir)
    doc = build_document(run, benches, series, figures, refs, out, annotations, ref_gpus, progress)
    path = out / filename
    path.write_text(format_document(doc), encoding="utf-8")
    return path
