"""Put our figures beside published values, and compare two runs with each other."""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from gpudissect.models import Figure
from gpudissect.report.tables import NONE_CELL, fmt_value, md_table, md_text

UnitClass = Literal["cycles", "clock", "other"]

CLOCK_NOTE = "clock/SKU dependent"


class PublishedLike(Protocol):
    """What the report needs from a published value (gpudissect.reference.*.Published)."""

    @property
    def key(self) -> str: ...
    @property
    def gpu(self) -> str: ...
    @property
    def value(self) -> float: ...
    @property
    def unit(self) -> str: ...
    @property
    def paper(self) -> str: ...
    @property
    def table(self) -> str: ...
    @property
    def note(self) -> str: ...


def _reference_sources() -> list[tuple[str, str]]:
    """Every module of gpudissect.reference with the tuple it exports: the module's name in capitals
    (memory -> MEMORY, isa_banks -> ISA_BANKS), else PUBLISHED. A new suite's references need no list here."""
    import pkgutil

    from .. import reference

    out = []
    for m in sorted(pkgutil.iter_modules(reference.__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            out.append((f"gpudissect.reference.{m.name}", m.name.upper()))
    return out


def default_refs() -> tuple[PublishedLike, ...]:
    """All published records available, imported lazily so the report works without them: each reference
    module's papers' values, then its INDEPENDENT ones (public reproductions of the papers' code, with source)."""
    out: list[PublishedLike] = []
    for mod_name, attr in _reference_sources():
        mod = importlib.import_module(mod_name)  # a broken reference module is a bug: let it say so
        records = getattr(mod, attr, None)
        if records is None:
            records = getattr(mod, "PUBLISHED", ())
        out.extend(records)
        out.extend(getattr(mod, "INDEPENDENT", ()))
    return tuple(out)


def resolve_refs(refs: Iterable[PublishedLike] | None) -> tuple[PublishedLike, ...]:
    return default_refs() if refs is None else tuple(refs)


def norm_unit(unit: str) -> str:
    u = (unit or "").strip().lower()
    for word in ("cycles", "cycle", "clocks", "clock", "clks", "clk"):
        if u == word:
            return "cycles"
    return u


_TIME_FREQ = {"ns", "us", "µs", "ms", "s", "sec", "hz", "khz", "mhz", "ghz", "w"}


def unit_class(unit: str) -> UnitClass:
    """cycles: architecture property (comparable across SKUs); clock: depends on clocks/SKU."""
    u = (unit or "").strip().lower()
    if not u:
        return "other"
    if u.endswith(("/s", "flops", "ops")) or u in _TIME_FREQ:
        return "clock"  # GB/s, TB/s, ns, TFLOPS, TOPS, MHz...
    if "cycle" in u or "clk" in u or "clock" in u:
        return "cycles"  # cycles, bytes/cycle/SM, ops/clk/SM
    return "other"


def _number(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def _last_by_key(figures: Iterable[Figure]) -> dict[str, Figure]:
    last: dict[str, Figure] = {}
    for f in figures:
        last[f.key] = f  # same rule as the summary: the latest figure for a key wins
    return last


@dataclass(frozen=True)
class RefCell:
    """One published value for one GPU, with our/published ratio where that is meaningful."""

    value: float
    unit: str
    paper: str
    table: str
    note: str = ""
    ratio: float | None = None


@dataclass
class Row:
    key: str
    suite: str
    bench: str
    value: float | str | None  # None: our check failed, no number
    unit: str
    kind: str
    spread: tuple[float, float] | None
    check: str
    unit_class: UnitClass
    note: str  # e.g. "clock/SKU dependent"
    published: dict[str, list[RefCell]] = field(default_factory=dict)  # gpu -> cells, every column

    @property
    def gpus(self) -> list[str]:
        return list(self.published)


def published_rows(
    figures: Sequence[Figure],
    refs: Iterable[PublishedLike] | None = None,
    gpus: list[str] | None = None,
) -> list[Row]:
    """One row per figure key with published values (for `gpus`, default all), sorted by key.

    Every row's `published` has the same GPU columns, in `gpus` order or, by default, the
    order the GPUs first appear in the reference records.
    """
    refs_t = resolve_refs(refs)
    ours = _last_by_key(figures)
    by_key: dict[str, list[PublishedLike]] = {}
    for r in refs_t:
        if r.key in ours and (gpus is None or r.gpu in gpus):
            by_key.setdefault(r.key, []).append(r)
    if gpus is None:
        cols: list[str] = []
        for r in refs_t:
            if r.key in by_key and r.gpu not in cols:
                cols.append(r.gpu)
    else:
        cols = list(gpus)

    rows: list[Row] = []
    for key in sorted(by_key):
        f = ours[key]
        cls = unit_class(f.unit)
        ok = f.check == "ok"
        mine = _number(f.value) if ok else None
        # A NaN/inf "ok" figure is no number either (the summary drops it too).
        value: float | str | None = None
        if ok and (isinstance(f.value, str) or mine is not None):
            value = f.value
        notes: list[str] = []
        if cls == "clock":
            notes.append(CLOCK_NOTE)
        cells: dict[str, list[RefCell]] = {g: [] for g in cols}
        for r in by_key[key]:
            ratio = None
            if cls == "cycles" and mine is not None and norm_unit(r.unit) == norm_unit(f.unit):
                pv = _number(r.value)
                if pv:  # zero/NaN published value: no ratio
                    ratio = mine / pv
            elif norm_unit(r.unit) != norm_unit(f.unit) and "unit differs" not in notes:
                notes.append("unit differs")
            cells[r.gpu].append(RefCell(float(r.value), r.unit, r.paper, r.table, getattr(r, "note", "") or "", ratio))
        rows.append(Row(key, f.suite, f.bench, value, f.unit, f.kind, f.spread, f.check, cls, "; ".join(notes), cells))
    return rows


def fmt_ref_cell(cell: RefCell, our_unit: str) -> str:
    """ "28 (Luo 2024, Table 3; ratio 1.04)"; the unit is shown only where it differs from ours."""
    text = fmt_value(cell.value, cell.unit)
    if norm_unit(cell.unit) != norm_unit(our_unit):
        text += f" {cell.unit}"
    src = ", ".join(s for s in (cell.paper, cell.table) if s)
    extra = [src] if src else []
    if cell.note:
        extra.append(cell.note)
    if cell.ratio is not None:
        extra.append(f"ratio {cell.ratio:.2f}")
    return f"{text} ({'; '.join(extra)})" if extra else text


# --------------------------------------------------------------------------- run vs run


@dataclass(frozen=True)
class Diff:
    key: str
    unit: str
    a: float | str | None  # None: missing in that run or its check failed
    b: float | str | None
    rel_change: float | None  # (b - a) / |a|
    flagged: bool
    reason: str = ""
    check_a: str | None = None  # "ok" | "failed" | None (key absent)
    check_b: str | None = None


def compare_runs(a: Sequence[Figure], b: Sequence[Figure], threshold: float = 0.05) -> list[Diff]:
    """Figure-by-figure diff of two runs, flagging >threshold changes, one-sided keys, failures."""
    fa, fb = _last_by_key(a), _last_by_key(b)
    out: list[Diff] = []
    for key in sorted(fa.keys() | fb.keys()):
        x, y = fa.get(key), fb.get(key)
        unit = (y if y is not None else x).unit  # type: ignore[union-attr]
        if x is None or y is None:
            one = x if x is not None else y
            assert one is not None
            val = one.value if one.check == "ok" else None
            out.append(
                Diff(
                    key,
                    unit,
                    val if x is not None else None,
                    val if y is not None else None,
                    None,
                    True,
                    f"only in {'A' if y is None else 'B'}",
                    x.check if x is not None else None,
                    y.check if y is not None else None,
                )
            )
            continue
        va = x.value if x.check == "ok" else None
        vb = y.value if y.check == "ok" else None
        rel: float | None = None
        reason = ""
        if va is None or vb is None:
            reason = (
                "check failed in both" if va is None and vb is None else f"check failed in {'A' if va is None else 'B'}"
            )
        elif norm_unit(x.unit) != norm_unit(y.unit):
            reason = f"unit changed: {x.unit} -> {y.unit}"
        elif isinstance(va, str) or isinstance(vb, str):
            if va != vb:
                reason = "value changed"
        else:
            na, nb = _number(va), _number(vb)
            if na is None or nb is None:
                reason = "non-finite value"
            elif na == 0:
                rel = 0.0 if nb == 0 else None
                if nb != 0:
                    reason = "changed from zero"
            else:
                rel = (nb - na) / abs(na)
                if abs(rel) > threshold:
                    reason = f"changed {rel:+.1%}"
                    if x.spread and y.spread and max(x.spread[0], y.spread[0]) <= min(x.spread[1], y.spread[1]):
                        # beyond the threshold, yet within what the runs themselves scattered
                        reason += " (min–max spreads overlap)"
        out.append(Diff(key, unit, va, vb, rel, bool(reason), reason, x.check, y.check))
    return out


def diffs_markdown(diffs: Sequence[Diff], label_a: str = "A", label_b: str = "B") -> str:
    """Markdown table of compare_runs() output, flagged rows marked with "!"."""
    if not diffs:
        return "_No figures in either run._"
    rows = []
    for d in diffs:
        rel = NONE_CELL if d.rel_change is None else f"{d.rel_change:+.1%}"
        rows.append(
            [
                "!" if d.flagged else "",
                d.key,
                "FAILED" if d.check_a == "failed" else fmt_value(d.a, d.unit),
                "FAILED" if d.check_b == "failed" else fmt_value(d.b, d.unit),
                d.unit,
                rel,
                d.reason,
            ]
        )
    return md_table(["", "Key", label_a, label_b, "Unit", "Change", "Why flagged"], rows, "llrrlrl")


def is_change(d: Diff) -> bool:
    """A figure in both runs that differs beyond the threshold (value, unit, or whether its check passed)."""
    return d.check_a is not None and d.check_b is not None and d.flagged and d.reason != "check failed in both"


def _one_sided(diffs: Sequence[Diff], side: str) -> list[Diff]:
    return [d for d in diffs if (d.check_b if side == "A" else d.check_a) is None]


def _largest(changes: Sequence[Diff], top: int) -> list[Diff]:
    # numeric changes by size, then the ones without a ratio (failed checks, text or unit changes)
    return sorted(changes, key=lambda d: (d.rel_change is None, -abs(d.rel_change or 0.0), d.key))[:top]


def compare_summary(diffs: Sequence[Diff], threshold: float) -> dict[str, int | float]:
    both = [d for d in diffs if d.check_a is not None and d.check_b is not None]
    return {
        "threshold": threshold,
        "compared": len(both),
        "changed": sum(1 for d in both if is_change(d)),
        "failed_in_a": sum(1 for d in both if d.check_a == "failed"),
        "failed_in_b": sum(1 for d in both if d.check_b == "failed"),
        "only_in_a": len(_one_sided(diffs, "A")),
        "only_in_b": len(_one_sided(diffs, "B")),
    }


def _diff_row(d: Diff) -> list[str]:
    return [
        "!" if is_change(d) else "",
        d.key,
        "FAILED" if d.check_a == "failed" else fmt_value(d.a, d.unit),
        "FAILED" if d.check_b == "failed" else fmt_value(d.b, d.unit),
        d.unit,
        NONE_CELL if d.rel_change is None else f"{d.rel_change:+.1%}",
        d.reason if is_change(d) or d.reason == "check failed in both" else "",
    ]


def _by_bench(diffs: Sequence[Diff], bench_of: dict[str, str]) -> list[list[str]]:
    counts: dict[str, list[str]] = {}
    for d in diffs:
        counts.setdefault(bench_of.get(d.key, "?"), []).append(d.key)
    return [
        [b, str(len(keys)), ", ".join(keys[:3]) + (", …" if len(keys) > 3 else "")]
        for b, keys in sorted(counts.items())
    ]


@dataclass
class _Comparison:
    """What a comparison shows, whatever it is printed as: the summary counts, the largest changes, the figures
    listed (all in both runs, or only the changed ones) and, per side, the keys only that run has."""

    summary: dict[str, int]
    largest: list[Diff]
    title: str
    shown: list[Diff]
    one_sided: list[tuple[str, str, list[list[str]], int]]  # side, label, rows by benchmark, how many keys


def _comparison(
    diffs: Sequence[Diff],
    threshold: float,
    labels: tuple[str, str],
    only_changed: bool,
    bench_of: dict[str, str] | None,
    top: int,
) -> _Comparison:
    changes = [d for d in diffs if is_change(d)]
    shown = changes if only_changed else [d for d in diffs if d.check_a is not None and d.check_b is not None]
    sides = []
    if not only_changed:
        for side, label in zip(("A", "B"), labels):
            one = _one_sided(diffs, side)
            if one:
                sides.append((side, label, _by_bench(one, bench_of or {}), len(one)))
    return _Comparison(
        compare_summary(diffs, threshold),
        _largest(changes, top) if changes else [],
        "Changed figures" if only_changed else "Figures in both runs",
        shown,
        sides,
    )


def comparison_markdown(
    diffs: Sequence[Diff],
    threshold: float,
    label_a: str,
    label_b: str,
    only_changed: bool = False,
    bench_of: dict[str, str] | None = None,
    top: int = 10,
) -> str:
    """The summary first (counts and the largest changes), then the figures of both runs (or only the
    changed ones), then the keys only one run has, grouped by benchmark. Plain Markdown whose lines
    never depend on a terminal's width."""
    c = _comparison(diffs, threshold, (label_a, label_b), only_changed, bench_of, top)
    s = c.summary
    head = ["", "Key", "A", "B", "Unit", "Change", "Why flagged"]
    parts = [
        f"# Compare A = {md_text(label_a)} with B = {md_text(label_b)}",
        "\n".join(
            [
                f"- threshold: {threshold * 100:g}% relative change",
                f"- figures in both runs: {s['compared']}; changed beyond the threshold: **{s['changed']}**",
                f"- failed checks: {s['failed_in_a']} in A, {s['failed_in_b']} in B",
                f"- only in A: {s['only_in_a']}; only in B: {s['only_in_b']} (not compared)",
            ]
        ),
    ]
    if c.largest:
        parts += ["## Largest changes", md_table(head, [_diff_row(d) for d in c.largest], "llrrlrl")]
    parts.append(f"## {c.title} ({len(c.shown)})")
    parts.append(md_table(head, [_diff_row(d) for d in c.shown], "llrrlrl") if c.shown else "_none_")
    for side, label, rows, n in c.one_sided:
        parts.append(f"## Only in {side} ({n}, {md_text(label)})")
        parts.append(md_table(["Benchmark", "Figures", "Keys"], rows, "lrl"))
    return "\n\n".join(parts) + "\n"


def comparison_blocks(
    diffs: Sequence[Diff],
    threshold: float,
    label_a: str,
    label_b: str,
    only_changed: bool = False,
    bench_of: dict[str, str] | None = None,
    top: int = 10,
) -> list[tuple]:
    """comparison_markdown's content as plain text for a terminal or a pipe: ("heading", text),
    ("lines", [text]) and ("table", headers, rows, changed) blocks, `changed` a flag per row."""
    c = _comparison(diffs, threshold, (label_a, label_b), only_changed, bench_of, top)
    s = c.summary
    head = ["", "KEY", "A", "B", "UNIT", "CHANGE", "WHY FLAGGED"]
    blocks: list[tuple] = [
        ("heading", f"Compare A = {label_a} with B = {label_b}"),
        (
            "lines",
            [
                f"threshold: {threshold * 100:g}% relative change",
                f"figures in both runs: {s['compared']}; changed beyond the threshold: {s['changed']}",
                f"failed checks: {s['failed_in_a']} in A, {s['failed_in_b']} in B",
                f"only in A: {s['only_in_a']}; only in B: {s['only_in_b']} (not compared)",
            ],
        ),
    ]
    if c.largest:
        rows = [_diff_row(d) for d in c.largest]
        blocks += [("heading", "Largest changes"), ("table", head, rows, [True] * len(rows))]
    blocks.append(("heading", f"{c.title} ({len(c.shown)})"))
    if c.shown:
        blocks.append(("table", head, [_diff_row(d) for d in c.shown], [is_change(d) for d in c.shown]))
    else:
        blocks.append(("lines", ["none"]))
    for side, label, rows, n in c.one_sided:
        blocks += [
            ("heading", f"Only in {side} ({n}, {label})"),
            ("table", ["BENCHMARK", "FIGURES", "KEYS"], rows, [False] * len(rows)),
        ]
    return blocks


def comparison_json(
    diffs: Sequence[Diff], threshold: float, label_a: str, label_b: str, only_changed: bool = False, top: int = 10
) -> dict[str, object]:
    def rec(d: Diff) -> dict[str, object]:
        return {
            "key": d.key,
            "unit": d.unit,
            "a": d.a,
            "b": d.b,
            "check_a": d.check_a,
            "check_b": d.check_b,
            "rel_change": d.rel_change,
            "changed": is_change(d),
            "reason": d.reason,
        }

    changes = [d for d in diffs if is_change(d)]
    return {
        "a": label_a,
        "b": label_b,
        "summary": compare_summary(diffs, threshold),
        "largest_changes": [rec(d) for d in _largest(changes, top)],
        "figures": [rec(d) for d in (changes if only_changed else diffs)],
    }


__all__ = [
    "CLOCK_NOTE",
    "Diff",
    "PublishedLike",
    "RefCell",
    "Row",
    "compare_runs",
    "compare_summary",
    "comparison_json",
    "comparison_markdown",
    "is_change",
    "default_refs",
    "diffs_markdown",
    "fmt_ref_cell",
    "norm_unit",
    "published_rows",
    "resolve_refs",
    "unit_class",
]
