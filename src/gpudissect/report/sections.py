"""The run report's content, built once for every format: a title line, the problems that need attention,
the run's facts, the benchmark status table, per suite and benchmark its figures (with published values)
and plots, and all published values side by side. Writes the plots' PNGs; markdown.py and html.py format
the Document it returns."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gpudissect.models import BenchResult, Figure, RunInfo, Series
from gpudissect.report.compare import (
    CLOCK_NOTE,
    PublishedLike,
    fmt_ref_cell,
    norm_unit,
    published_rows,
    resolve_refs,
)
from gpudissect.report.document import Block, Bullets, Document, Heading, Image, Para, Table
from gpudissect.report.figures import Annotations, group_series, plot_groups
from gpudissect.report.summary import failed_keys
from gpudissect.report.tables import NONE_CELL, fmt_number, fmt_opt, fmt_spread, fmt_value, truncate

FAILED_VALUE = "FAILED: no number recorded"

# NVML reasons that are not a performance problem (idle, clocks set on purpose).
_BENIGN_THROTTLE = ("idle", "applicationsclock", "applicationclock", "displayclock", "none")


def _is_benign(reason: str) -> bool:
    r = "".join(ch for ch in reason.lower() if ch.isalnum())
    return any(b in r for b in _BENIGN_THROTTLE)


def _bench_order(
    benches: Sequence[BenchResult], series: Sequence[Series], figures: Sequence[Figure]
) -> dict[str, list[str]]:
    """suite -> benches, in first-seen order (status table order, then figures, then series)."""
    order: dict[str, list[str]] = {}
    for obj in [*benches, *figures, *series]:
        lst = order.setdefault(obj.suite, [])
        if obj.bench not in lst:
            lst.append(obj.bench)
    return order


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


def _problems(benches: Sequence[BenchResult], figures: Sequence[Figure]) -> list[Block]:
    items: list[tuple[str, str]] = []
    last = {f.key: f for f in figures}
    for key in failed_keys(figures):
        f = last[key]
        why = f.note or f.method
        items.append((FAILED_VALUE, f"— {key} ({f.suite}/{f.bench})" + (f": {why}" if why else "")))
    for b in benches:
        if b.status != "ok":
            msg = truncate(b.message, 500) if b.message else "no message"
            items.append((f"Bench {b.status.upper()}", f"— {b.suite}/{b.bench}: {msg}"))
    for b in benches:
        bad = [r for r in (b.telemetry.throttle_reasons if b.telemetry else []) if not _is_benign(r)]
        if bad and b.status == "ok":
            items.append(
                ("Throttled", f"— {b.suite}/{b.bench}: {', '.join(bad)}; figures from it may be clock-limited")
            )
    if not items:
        return [Para("No failed checks, failed benchmarks or throttling.", "muted")]
    return [Bullets(items, "alert")]


def _published_cells(
    figures: Sequence[Figure], refs: Iterable[PublishedLike] | None, gpus: list[str] | None
) -> dict[str, str]:
    """key -> "H800: 32 (000, Table 3; ratio 1.03); A100: …" for every figure with published values."""
    out = {}
    for r in published_rows(figures, refs, gpus):
        cells = [f"{g}: {fmt_ref_cell(c, r.unit)}" for g, cs in r.published.items() for c in cs]
        if cells:
            out[r.key] = "; ".join(cells) + (f" [{r.note}]" if r.note else "")
    return out


def _figure_table(figs: Sequence[Figure], published: dict[str, str] | None = None) -> Table:
    published = published or {}
    rows = []
    for f in figs:
        failed = f.check != "ok"
        method = f.method + (f" — {f.note}" if f.note else "")
        rows.append(
            [
                f.key,
                FAILED_VALUE if failed else fmt_value(f.value, f.unit),
                f.unit,
                f.kind,
                method,
                "" if failed else fmt_spread(f.spread, f.unit),
                "FAILED" if failed else "ok",
                published.get(f.key, ""),
            ]
        )
    return Table(
        ["Key", "Value", "Unit", "Kind", "Method", "Spread", "Check", "Published (paper, table)"], rows, "lrlllllll"
    )


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
    blocks.append(
        Table(["Key", "Ours", "Unit", "GPU", "Published", "Paper, table", "Ratio", "Note"], table_rows, "lrllrlrl")
    )
    return blocks


def _suite_sections(
    benches: Sequence[BenchResult],
    series: Sequence[Series],
    figures: Sequence[Figure],
    published: dict[str, str],
    images: dict[str, Path],
    out: Path,
) -> list[Block]:
    """Per suite a section, per benchmark its status when not ok, its figure table and its plots."""
    b: list[Block] = []
    status = {(x.suite, x.bench): x for x in benches}
    owner = {gid: (g[0].suite, g[0].bench) for gid, g in group_series(series).items()}
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
                b.append(_figure_table(figs, published))
            else:
                b.append(Para("No figures recorded.", "muted"))
            imgs = [(gid, p) for gid, p in images.items() if owner.get(gid) == (suite, bench)]
            for gid, p in imgs:
                b.append(Image(p.relative_to(out).as_posix(), gid))
            has_series = any(s.suite == suite and s.bench == bench for s in series)
            if has_series and not imgs:
                b.append(Para("Series recorded, but nothing plottable.", "muted"))
    return b


def build_document(
    run: RunInfo,
    benches: Sequence[BenchResult],
    series: Sequence[Series],
    figures: Sequence[Figure],
    refs: Iterable[PublishedLike] | None,
    out_dir: str | Path,
    annotations: Annotations | None = None,
    ref_gpus: list[str] | None = None,
) -> Document:
    """Build the report content and write its PNGs into out_dir."""
    out = Path(out_dir)
    images = plot_groups(series, out, annotations)
    doc = Document(f"gpudissect report: {run.gpu_name}")
    b = doc.blocks
    b.append(Heading(1, doc.title))
    n_failed = len(failed_keys(figures))
    n_bad = sum(1 for x in benches if x.status != "ok")
    b.append(
        Para(
            f"{run.gpu_name} ({run.arch}), run {run.id}, {run.mode} mode, status {run.status}: "
            f"{len(benches)} benchmarks ({n_bad} not ok), {len(figures)} figures "
            f"({n_failed} without a number)."
        )
    )
    b.append(Heading(2, "Attention"))
    b.extend(_problems(benches, figures))
    b.append(Heading(2, "Run"))
    b.append(_run_table(run))
    b.append(Heading(2, "Benchmarks"))
    if benches:
        b.append(_status_table(benches))
    else:
        b.append(Para("No benchmark status recorded.", "muted"))
    if ref_gpus is None:  # the papers' figures of this GPU first, then its family's, then the others
        refs = resolve_refs(refs)
        ref_gpus = own_gpu_first(refs, run)
    published = _published_cells(figures, refs, ref_gpus)
    b.extend(_suite_sections(benches, series, figures, published, images, out))
    b.extend(_published_section(figures, refs, ref_gpus))
    return doc


def own_gpu_first(refs: Iterable[PublishedLike], run: RunInfo) -> list[str]:
    """The published GPU labels, the run's own model first, then its architecture family, then the rest."""
    from gpudissect.capability import Target
    from gpudissect.reference.gpu_labels import own_first

    try:
        family = Target.parse(run.arch).family
    except ValueError:  # an imported run's arch we cannot read: no family to prefer
        family = ""
    return own_first((r.gpu for r in refs), run.gpu_name, family)


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
) -> Path:
    """Build the document (its PNGs go into out_dir) and write out_dir/filename in one format."""
    out = Path(out_dir)
    doc = build_document(run, benches, series, figures, refs, out, annotations, ref_gpus)
    path = out / filename
    path.write_text(format_document(doc), encoding="utf-8")
    return path
