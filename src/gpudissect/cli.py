"""gpudissect list | run | runs | report | export | compare | sass | doctor"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import __version__
from .errors import GpuDissectError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help="Dissect NVIDIA GPUs by microbenchmarking.")
console = Console()
err = Console(stderr=True)

DbOpt = Annotated[Optional[Path], typer.Option("--db", help="SQLite store (default: per-user data dir or $GPUDISSECT_DB)")]


def _store(db: Path | None):
    from .store import Store

    return Store(db)


@app.command("list")
def list_cmd() -> None:
    """Suites and benchmarks with their axes and parameters."""
    from .bench.registry import load_all

    t = Table(title="gpudissect benchmarks")
    t.add_column("suite", no_wrap=True)
    t.add_column("benchmark", no_wrap=True)
    for c in ("what", "axes", "parameters (--set)", "paper"):
        t.add_column(c)
    for b in load_all().values():
        axes = "\n".join(f"{k}: {v}" for k, v in b.axes.items())
        params = "\n".join(f"{k}={v.default} ({v.help})" for k, v in b.params.items())
        t.add_row(b.suite, b.name, b.title, axes, params, b.paper)
    console.print(t)


def _parse_sets(sets: list[str]) -> dict[str, str]:
    out = {}
    for s in sets:
        if "=" not in s:
            raise GpuDissectError(f"--set takes NAME=VALUE (or BENCH.NAME=VALUE), got {s!r}")
        k, v = s.split("=", 1)
        out[k.strip()] = v.strip()
    return out


@app.command()
def run(
    suite: Annotated[Optional[list[str]], typer.Option("--suite", "-s", help="suite(s) to run")] = None,
    bench: Annotated[Optional[list[str]], typer.Option("--bench", "-b", help="benchmark(s) to run")] = None,
    quick: Annotated[bool, typer.Option("--quick/--full", help="quick (default) or full sweeps")] = True,
    db: DbOpt = None,
    sets: Annotated[Optional[list[str]], typer.Option("--set", help="parameter override NAME=VALUE")] = None,
    resume: Annotated[Optional[int], typer.Option("--resume", help="finish the unfinished benchmarks of run RUN")] = None,
) -> None:
    """Run benchmarks on the local GPU and store the results (each benchmark committed as it ends)."""
    from .bench.registry import select
    from .runner import prepare, probe_device, run_benchmarks, start_run

    store = _store(db)
    mode = "quick" if quick else "full"
    overrides = _parse_sets(sets or [])
    if resume is not None:
        from .runner import resume_plan

        mode, benches, stored = resume_plan(store, resume)
        overrides = stored | overrides
    else:
        benches = select(suite, bench)
    prepare(benches, overrides, {})  # input errors that need no device come first
    facts = probe_device()  # no GPU or driver: a clear one-line error, nothing launched
    params = prepare(benches, overrides, facts)
    if resume is not None:
        run_id = resume
        store.reopen_run(run_id)
    else:
        run_id = start_run(store, facts, mode, {"suites": suite, "benches": bench, "overrides": overrides})
    console.print(f"[bold]run {run_id}[/]: {facts['name']} ({facts['arch']}, {facts['sm_count']} SMs, "
                  f"L2 {facts['l2_bytes'] >> 20} MiB), {len(benches)} benchmark(s), {mode} -> {store.path}")
    summary: list[tuple[str, str, str, str]] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[note]}"), console=console, transient=False) as prog:
        overall = prog.add_task("all", total=len(benches), note="")
        tasks: dict[str, int] = {}

        def on_progress(b, done, total, text):  # type: ignore[no-untyped-def]
            if b.key not in tasks:
                tasks[b.key] = prog.add_task(b.name, total=total, note="")
            prog.update(tasks[b.key], completed=done, total=total, note=text)

        def on_done(o):  # type: ignore[no-untyped-def]
            r = o.result
            if r.bench not in {t.split('/')[-1] for t in tasks}:
                tasks[f"{r.suite}/{r.bench}"] = prog.add_task(r.bench, total=1, note="")
            tid = tasks[f"{r.suite}/{r.bench}"]
            prog.update(tid, completed=prog.tasks[tid].total, note=f"{r.status} {r.seconds:.0f}s")
            prog.advance(overall)
            n_ok = sum(1 for f in o.figures if f.check == "ok")
            summary.append((r.bench, r.status, f"{r.seconds:.1f}", f"{n_ok} figures; {r.message[:90]}"))

        try:
            status = run_benchmarks(store, run_id, benches, mode, params, facts.get("uuid"), on_progress, on_done)
        except KeyboardInterrupt:
            err.print(f"[yellow]interrupted: results so far are in run {run_id}; `gpudissect run --resume {run_id}` finishes it[/]")
            raise typer.Exit(130)
    t = Table(title=f"run {run_id}: {status}")
    for c in ("benchmark", "status", "seconds", "result"):
        t.add_column(c)
    for row in summary:
        t.add_row(*row, style=None if row[1] == "ok" else "red")
    console.print(t)
    if status != "ok":
        raise typer.Exit(1)


@app.command()
def runs(db: DbOpt = None) -> None:
    """Stored runs."""
    t = Table()
    for c in ("id", "gpu", "mode", "started", "status", "benchmarks"):
        t.add_column(c)
    store = _store(db)
    for r in store.runs():
        bs = store.benches(r.id)
        t.add_row(str(r.id), r.gpu_name, r.mode, r.started, r.status, f"{sum(b.status == 'ok' for b in bs)}/{len(bs)} ok")
    console.print(t)


def _load(db: Path | None, run_id: int | None, from_json: Path | None):  # type: ignore[no-untyped-def]
    """(run, benches, series, figures) from the store or from a JSON export."""
    if from_json is not None:
        from .exportio import from_export

        return from_export(from_json)
    store = _store(db)
    info = store.run(run_id)
    return info, store.benches(info.id), store.series(info.id), store.figures(info.id)


@app.command()
def report(
    run_id: Annotated[Optional[int], typer.Argument(metavar="RUN", help="run id (default: latest)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="md or html")] = "md",
    out: Annotated[Path, typer.Option("--out", help="output directory")] = Path("gpudissect-report"),
    db: DbOpt = None,
    from_json: Annotated[Optional[Path], typer.Option("--from-json", help="render from an export instead of the store")] = None,
) -> None:
    """Render a report (tables, figures, published values side by side)."""
    from .report.annotate import annotations_for
    from .report.html import render_html
    from .report.markdown import render_markdown

    if fmt not in ("md", "html"):
        raise GpuDissectError(f"--format must be md or html, not {fmt!r}")
    info, benches, series, figures = _load(db, run_id, from_json)
    render = render_markdown if fmt == "md" else render_html
    path = render(info, benches, series, figures, None, out, annotations=annotations_for(series, figures))
    console.print(f"report written: {path}")


@app.command()
def export(
    run_id: Annotated[Optional[int], typer.Argument(metavar="RUN", help="run id (default: latest)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="json or csv")] = "json",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="file (default: stdout)")] = None,
    db: DbOpt = None,
) -> None:
    """Export a run (everything: run facts, statuses, raw series, figures)."""
    store = _store(db)
    rid = store.run(run_id).id
    fh = open(out, "w", newline="") if out else sys.stdout
    try:
        if fmt == "json":
            json.dump(store.export(rid), fh, indent=1, default=str)
            fh.write("\n")
        elif fmt == "csv":
            csv.writer(fh).writerows(store.iter_csv_rows(rid))
        else:
            raise GpuDissectError(f"--format must be json or csv, not {fmt!r}")
    finally:
        if out:
            fh.close()
    if out:
        err.print(f"exported run {rid} to {out}")


@app.command()
def compare(
    run_a: Annotated[str, typer.Argument(help="run id or export JSON")],
    run_b: Annotated[str, typer.Argument(help="run id or export JSON")],
    db: DbOpt = None,
) -> None:
    """Compare the figures of two runs (flags changes above 5%)."""
    from .report.compare import compare_runs, diffs_markdown

    def figs(ref: str):  # type: ignore[no-untyped-def]
        p = Path(ref)
        if p.suffix == ".json" and p.exists():
            return _load(db, None, p)[3]
        if not ref.isdigit():
            raise GpuDissectError(f"{ref!r} is neither a run id nor an export file")
        return _load(db, int(ref), None)[3]

    console.print(diffs_markdown(compare_runs(figs(run_a), figs(run_b)), f"run {run_a}", f"run {run_b}"), markup=False)


@app.command()
def sass(
    bench: Annotated[Optional[str], typer.Argument(help="benchmark name")] = None,
    arch: Annotated[str, typer.Option("--arch", help="target (default sm_90a)")] = "sm_90a",
    full: Annotated[bool, typer.Option("--full", help="print the whole disassembly")] = False,
    ptx_map: Annotated[bool, typer.Option("--map", help="the PTX -> SASS table of every tensor instruction")] = False,
) -> None:
    """Show the SASS of a benchmark's kernels with the required instructions highlighted."""
    from .sasscheck import check_benchmark

    from .bench.registry import select

    if ptx_map:
        from .sassmap import ptx_sass_map, render_markdown

        print(render_markdown(ptx_sass_map(arch), arch))
        return
    if bench is None:
        raise GpuDissectError("name a benchmark (see `gpudissect list`) or pass --map")
    b = select(None, [bench])[0]
    ok = True
    for spec, funcs, checks in check_benchmark(b, arch):
        console.rule(f"{spec.name} ({arch})")
        for c in checks:
            ok &= c.found
            mark = "[green]found[/]" if c.found else "[red]MISSING[/]"
            console.print(f"  {c.function}: /{c.pattern}/ {mark} {c.example}", markup=True, highlight=False)
        if full:
            import re

            pats = [re.compile(p) for ps in spec.required.values() for p in ps]
            for fn, text in funcs.items():
                console.print(f"[bold]{fn}[/]")
                for line in text.splitlines():
                    hit = any(p.search(line) for p in pats)
                    console.print(f"[yellow]{line}[/]" if hit else line, markup=hit, highlight=False)
    if not ok:
        raise typer.Exit(1)


@app.command()
def doctor() -> None:
    """What gpudissect can find: GPU, driver, toolkit, NVRTC, headers, disassembler — and why not."""
    from .doctor import checks

    t = Table(title=f"gpudissect {__version__} doctor")
    for c in ("component", "status", "detail"):
        t.add_column(c)
    for name, ok, detail in checks():
        t.add_row(name, "[green]ok[/]" if ok else "[red]missing[/]", detail)
    console.print(t)


def main() -> None:
    try:
        app()
    except GpuDissectError as e:
        err.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
