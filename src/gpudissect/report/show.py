"""`gpudissect show KEY`: one figure with its method, spread, clock state, published values and run."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence
from typing import Any

from gpudissect.errors import GpuDissectError
from gpudissect.models import BenchResult, Figure, RunInfo
from gpudissect.report.compare import PublishedLike, fmt_ref_cell, published_rows
from gpudissect.report.tables import fmt_opt, fmt_spread, fmt_value, is_bytes_unit
from gpudissect.textsafe import visible


def pick(figures: Sequence[Figure], pattern: str) -> list[Figure]:
    """Figures whose key is `pattern` or matches it as a glob (mem.latency.*); else an error with
    the nearest keys."""
    last: dict[str, Figure] = {}
    for f in figures:
        last[f.key] = f
    if pattern in last:
        return [last[pattern]]
    hits = [last[k] for k in sorted(last) if fnmatch.fnmatchcase(k, pattern)]
    if hits:
        return hits
    near = difflib.get_close_matches(pattern, list(last), n=5, cutoff=0.5)
    hint = f"; nearest: {', '.join(near)}" if near else f"; the run has {len(last)} figures (`gpudissect export`)"
    raise GpuDissectError(f"no figure {pattern!r} in this run{hint}")


def newest_with(store: Any, pattern: str) -> tuple[RunInfo, list[BenchResult], list[Figure], list[Figure]]:
    """(run, its benches, its figures, the picked ones) of the newest run holding a figure that `pattern` names;
    without one, the error of the newest run (its nearest keys), saying that no run has it."""
    runs = store.runs()
    if not runs:
        store.run(None)  # the store's own "no runs" error
    for info in reversed(runs):
        figures = store.figures(info.id)
        try:
            picked = pick(figures, pattern)
        except GpuDissectError:
            continue
        return info, store.benches(info.id), figures, picked
    try:
        pick(store.figures(runs[-1].id), pattern)
    except GpuDissectError as e:
        raise GpuDissectError(f"{e} (nor in any of the {len(runs)} stored runs)") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _clock_lines(f: Figure, bench: BenchResult | None, figures: Sequence[Figure]) -> list[str]:
    out = []
    own = next(
        (
            g
            for g in figures
            if g.bench == f.bench and g.key.startswith("clock.") and g.key.endswith(".sm_mhz") and g.check == "ok"
        ),
        None,
    )
    if own is not None:
        out.append(f"SM clock measured in the benchmark's own kernels: {fmt_value(own.value)} MHz ({own.key})")
    t = bench.telemetry if bench else None
    if t is not None and t.samples:
        out.append(
            f"NVML during the benchmark: SM clock median {fmt_opt(t.sm_clock_mhz_median)} MHz "
            f"({fmt_opt(t.sm_clock_mhz_min)}–{fmt_opt(t.sm_clock_mhz_max)}), memory clock "
            f"{fmt_opt(t.mem_clock_mhz_median)} MHz, power median {fmt_opt(t.power_w_median)} W, "
            f"throttle reasons: {', '.join(t.throttle_reasons) or 'none'}"
        )
    return out or ["no clock recorded for this benchmark"]


def details(
    f: Figure,
    run: RunInfo,
    benches: Sequence[BenchResult],
    figures: Sequence[Figure],
    refs: Iterable[PublishedLike] | None = None,
) -> dict[str, Any]:
    bench = next((b for b in benches if (b.suite, b.bench) == (f.suite, f.bench)), None)
    rows = published_rows([f], refs)
    published = [f"{gpu}: {fmt_ref_cell(c, f.unit)}" for r in rows for gpu, cells in r.published.items() for c in cells]
    return {
        "key": f.key,
        "value": None if f.check != "ok" else f.value,
        "unit": f.unit,
        "kind": f.kind,
        "check": f.check,
        "spread": list(f.spread) if f.spread else None,
        "method": f.method,
        "note": f.note,
        "benchmark": f"{f.suite}/{f.bench}",
        "benchmark_status": bench.status if bench else None,
        "clock": _clock_lines(f, bench, figures),
        "published": published,
        "run": {
            "id": run.id,
            "gpu": run.gpu_name,
            "arch": run.arch,
            "mode": run.mode,
            "started": run.started,
            "status": run.status,
            "tool_version": run.tool_version,
            "driver": run.driver,
        },
    }


def _full(value: Any, unit: str) -> str:
    """The value to 6 significant digits (tables round to 3; one figure's own view should not)."""
    if isinstance(value, float) and not is_bytes_unit(unit):
        return f"{value:.6g}"
    return fmt_value(value, unit)


def _value_line(d: dict[str, Any]) -> str:
    value = "FAILED: no number recorded" if d["check"] != "ok" else f"{_full(d['value'], d['unit'])} {d['unit']}"
    return f"{d['key']} = {value.strip()}  [{d['kind']}, check {d['check']}]"


def _run_line(r: dict[str, Any]) -> str:
    return (
        f"{r['id']}: {r['gpu']} ({r['arch']}), {r['mode']} mode, started {r['started']}, "
        f"status {r['status']}, gpudissect {r['tool_version']}, driver {r['driver']}"
    )


def fields(d: dict[str, Any]) -> tuple[str, list[tuple[str, list[str]]]]:
    """One figure as (its value line, [(label, texts)]): the text of `as_text`, not yet made visible, for the
    CLI to print plain or wrapped on a terminal."""
    out: list[tuple[str, list[str]]] = []
    if d["spread"]:
        out.append(
            ("spread", [f"{fmt_spread(tuple(d['spread']), d['unit'])} {d['unit']} (min – max over repetitions)"])
        )
    out.append(("method", [d["method"] or "not recorded"]))
    if d["note"]:
        out.append(("note", [d["note"]]))
    out.append(("benchmark", [f"{d['benchmark']} (status {d['benchmark_status'] or 'not recorded'})"]))
    out.append(("clock", d["clock"]))
    out.append(("published", d["published"] or ["no published value for this key"]))
    out.append(("run", [_run_line(d["run"])]))
    return _value_line(d), out


LABEL = 12  # a field's label column in as_text, its colon included


def as_text(d: dict[str, Any]) -> str:
    """The figure, redirected: every field one line, its control characters made visible (a note from
    an imported export can hold escape sequences or newlines that would fake output lines)."""
    title, labelled = fields(d)
    lines = [visible(title)]
    for label, texts in labelled:
        for i, t in enumerate(texts):
            lines.append(f"  {(label + ':') if i == 0 else '':<{LABEL}} {visible(t)}")
    return "\n".join(lines)


TABLE_HEAD = ["KEY", "VALUE", "UNIT", "SPREAD (MIN-MAX)", "CHECK"]


def table_rows(ds: Sequence[dict[str, Any]]) -> list[list[str]]:
    """One row per figure under TABLE_HEAD (key, value, unit, spread, check), not yet made visible."""
    rows = []
    for d in ds:
        value = "FAILED" if d["check"] != "ok" else _full(d["value"], d["unit"]).strip()
        spread = fmt_spread(tuple(d["spread"]), d["unit"]) if d["spread"] and d["check"] == "ok" else ""
        rows.append([d["key"], value, d["unit"], spread, d["check"]])
    return rows


def table_tail(ds: Sequence[dict[str, Any]]) -> list[tuple[int, str]]:
    """What follows the table, as (indent, text): the run, then per benchmark its clock block once."""
    out = [(0, f"run {_run_line(ds[0]['run'])}")]
    for bench in dict.fromkeys(d["benchmark"] for d in ds):
        d = next(x for x in ds if x["benchmark"] == bench)
        out.append((0, f"{bench} (status {d['benchmark_status'] or 'not recorded'}):"))
        out += [(2, c) for c in d["clock"]]
    out.append((0, "one figure in full (method, published values): gpudissect show KEY"))
    return out


def as_table(ds: Sequence[dict[str, Any]]) -> str:
    """Several figures, redirected: one row each (key, value, unit, spread, check), then the run and, per
    benchmark, the clock block once."""
    from gpudissect.report.tables import plain_table

    rows = [[visible(x) for x in r] for r in table_rows(ds)]
    lines = [plain_table(TABLE_HEAD, rows), ""]
    lines += [" " * indent + visible(text) for indent, text in table_tail(ds)]
    return "\n".join(lines)
