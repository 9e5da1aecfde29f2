"""gpudissect list | run | runs | show | report | export | import | compare | sass | doctor | cluster

Every error a user can cause (bad input, missing GPU, broken files, unwritable paths) ends as one line
on stderr and exit code 2 (see _OneLineErrors); reading commands open the store read-only.
"""

from __future__ import annotations

import csv
import importlib
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape as _no_markup
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text
from typer.core import TyperGroup

from . import cli_output
from .cli_progress import progress_line as _progress_line
from .errors import GpuDissectError
from .exportschema import dumps
from .textsafe import visible
from .version import __version__

# typer's click (vendored inside typer since 0.2x, the click package before): its exception classes
_UsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
_ClickException = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
_NoArgsIsHelp = getattr(sys.modules[_UsageError.__module__], "NoArgsIsHelpError", ())


class Terminated(BaseException):
    """SIGTERM, raised where the process is (see _sigterm_raises): a BaseException, so no `except
    Exception` swallows it and every cleanup (finally, except BaseException) runs on the way out."""


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While writing files: SIGTERM raises Terminated instead of killing the process outright, so temporary
    files and staging folders are removed; the previous handler is restored afterwards."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        yield  # handlers belong to the main thread; a SIGTERM ignored on purpose (nohup-like) stays ignored
        return

    def terminate(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


class _OneLineErrors(TyperGroup):
    """Turns every error into one line on stderr: usage errors, GpuDissectError, file and store errors
    exit 2; anything else is a bug and exits 70 (GPUDISSECT_DEBUG=1 shows its traceback)."""

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        code: Any = 0
        try:
            code = super().main(
                args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False, **extra
            )
        except _NoArgsIsHelp as e:  # type: ignore[misc]
            typer.echo(e.ctx.get_help() if e.ctx else str(e), err=True)
            code = 2
        except _UsageError as e:
            where = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
            code = _fail(f"{e.format_message()}{where}", 2)
        except _ClickException as e:
            code = _fail(e.format_message(), e.exit_code)
        except typer.Abort:
            code = _fail("aborted", 130)
        except Terminated:
            code = _fail("terminated (SIGTERM); files being written were removed", 128 + signal.SIGTERM)
        except GpuDissectError as e:
            from .errors import CompileError

            code = _fail(str(e), 2, keep_lines=isinstance(e, CompileError))  # a compiler log stays readable
        except OSError as e:
            if os.environ.get("GPUDISSECT_DEBUG"):
                raise
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            code = _fail(f"{where}{e.strerror or e}", 2)
        except sqlite3.Error as e:
            if os.environ.get("GPUDISSECT_DEBUG"):
                raise
            code = _fail(f"store error: {e}", 2)
        except Exception as e:
            if os.environ.get("GPUDISSECT_DEBUG"):
                raise
            code = _fail(f"internal error {type(e).__name__}: {e} (GPUDISSECT_DEBUG=1 shows the traceback)", 70)
        if not isinstance(code, int):
            code = 0
        if standalone_mode:
            sys.exit(code)
        return code


def _fail(message: str, code: int, keep_lines: bool = False) -> int:
    # messages quote paths and run data: control characters are shown, never sent to the terminal
    text = visible(message, keep_newlines=True) if keep_lines else visible(" ".join(message.split()))
    typer.echo(f"error: {text}", err=True)
    return code


app = typer.Typer(
    cls=_OneLineErrors,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Dissect NVIDIA GPUs by microbenchmarking.",
)
console = Console()
err = Console(stderr=True)

DbOpt = Annotated[
    Path | None, typer.Option("--db", help="SQLite store (default: $GPUDISSECT_DB or the per-user data dir)")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="machine-readable JSON on stdout")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpudissect {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Dissect NVIDIA GPUs by microbenchmarking."""


def _db_path(db: Path | None) -> Path:
    """The store's path: --db, else $GPUDISSECT_DB, else the per-user default; a `~user` that does not
    exist is one clear error (Path.expanduser would raise RuntimeError)."""
    from .report.outfile import expand
    from .store import default_db_path

    if db is not None:
        return expand(db)
    env = os.environ.get("GPUDISSECT_DB")
    if env:
        try:
            return expand(env)
        except GpuDissectError as e:
            raise GpuDissectError(f"GPUDISSECT_DB: {e}") from None
    try:
        return default_db_path()
    except RuntimeError:  # XDG_DATA_HOME or HOME names a home that is not there
        raise GpuDissectError(
            "cannot find a home directory for the default store: pass --db or set GPUDISSECT_DB"
        ) from None


def _read_store(db: Path | None):  # type: ignore[no-untyped-def]
    """The store for reading: read-only, never created; a missing or foreign file is one clear error."""
    from .store import Store

    return Store(_db_path(db), read_only=True)


def _write_store(db: Path | None):  # type: ignore[no-untyped-def]
    from .store import Store

    return Store(_db_path(db))


def _read_only_why(path: Path) -> str | None:
    """Why SQLite could not write the store at `path` (an existing file), or None. SQLite needs the file
    and its directory (where it creates its journal and -wal)."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "on a read-only file system"
    except OSError:
        pass
    if not os.access(path, os.W_OK):
        return "no write permission on the file"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"its directory {path.parent} is not writable, and SQLite writes its journal there"
    return None


def _check_store_writable(db: Path | None, then: str) -> Path:
    """Before the GPU is probed or an import is written: an existing store must be ours and writable;
    a new one's directory must allow creating it. Nothing is created here. Returns the store's path."""
    path = _db_path(db)
    if path.is_dir():
        raise GpuDissectError(f"store {path} is a directory; --db takes a file")
    if path.exists():
        if path.stat().st_size > 0:
            _read_store(path).close()
        why = _read_only_why(path)
        if why:
            raise GpuDissectError(f"the store {path} is read-only ({why}): {then}")
    else:
        parent = next((d for d in path.parents if d.exists()), Path("."))
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise GpuDissectError(f"cannot create the store {path}: {parent} is not a writable directory; {then}")
    return path


def _print_json(data: Any) -> None:
    typer.echo(dumps(data, indent=1, default=str, ensure_ascii=False))  # strict JSON: no NaN tokens


# ---- list --------------------------------------------------------------------------------------
@app.command("list")
def list_cmd(
    names: Annotated[
        list[str] | None, typer.Argument(metavar="[BENCH|SUITE]...", help="benchmarks or suites to describe")
    ] = None,
    long: Annotated[bool, typer.Option("--long", "-l", help="axes, parameters and kernels of each benchmark")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Suites and benchmarks: one line each; `list BENCH` or --long for axes and parameters."""
    from . import listing
    from .bench.registry import load_all, select

    reg = load_all()
    benches = list(reg.values())
    if names:
        suites = {b.suite for b in benches}
        picked: list[Any] = []
        for n in names:
            for b in select([n], None) if n in suites else select(None, [n]):
                if b not in picked:
                    picked.append(b)
        benches = picked
    if as_json:
        _print_json(listing.as_json(benches))
    elif long or names:
        typer.echo(listing.long(benches, cli_output.width()), nl=False)
    elif not benches:
        typer.echo("no benchmarks registered")
    else:
        cli_output.table(*listing.table(benches))
        cli_output.blank()
        cli_output.paragraph(listing.footer(benches))


# ---- run ids -----------------------------------------------------------------------------------
MAX_RUN_ID = 2**63 - 1  # SQLite's largest integer: a larger id is no run, not an OverflowError


def _run_id(value: int | None) -> int | None:
    if value is not None and not 1 <= value <= MAX_RUN_ID:
        raise typer.BadParameter(f"no run {value}: run ids are whole numbers from 1 to 2^63-1")
    return value


def _run_ref(ref: str) -> int | None:
    """A run id given as text (compare A B), or None where `ref` is no number (a file name). Only ASCII
    digits: str.isdigit() also takes '²', which int() refuses."""
    if not (ref.isascii() and ref.isdigit()):
        return None
    n = int(ref)
    if not 1 <= n <= MAX_RUN_ID:
        raise GpuDissectError(f"no run {ref}: run ids are whole numbers from 1 to 2^63-1")
    return n


# ---- run ---------------------------------------------------------------------------------------
def _parse_sets(sets: list[str]) -> dict[str, str]:
    out = {}
    for s in sets:
        if "=" not in s or not s.split("=", 1)[0].strip():
            raise GpuDissectError(f"--set takes NAME=VALUE (or BENCH.NAME=VALUE), got {s!r}")
        k, v = s.split("=", 1)
        out[k.strip()] = v.strip()
    return out


@app.command()
def run(
    suite: Annotated[list[str] | None, typer.Option("--suite", "-s", help="suite(s) to run")] = None,
    bench: Annotated[list[str] | None, typer.Option("--bench", "-b", help="benchmark(s) to run")] = None,
    quick: Annotated[bool | None, typer.Option("--quick/--full", help="quick (default) or full sweeps")] = None,
    db: DbOpt = None,
    sets: Annotated[
        list[str] | None, typer.Option("--set", help="parameter override NAME=VALUE or BENCH.NAME=VALUE")
    ] = None,
    resume: Annotated[
        int | None,
        typer.Option("--resume", metavar="RUN", help="finish the unfinished benchmarks of run RUN", callback=_run_id),
    ] = None,
    gpus: Annotated[
        str | None,
        typer.Option(
            "--gpus",
            metavar="all|0,1,...",
            help="dissect several GPUs: one process per GPU, one run per GPU in one store",
        ),
    ] = None,
    one_at_a_time: Annotated[
        bool,
        typer.Option(
            "--one-at-a-time",
            help="with --gpus: one GPU after another (for host-link benchmarks, which share the host's PCIe)",
        ),
    ] = False,
    label: Annotated[str, typer.Option("--label", help="a name for the run, shown by `runs`")] = "",
) -> None:
    """Run benchmarks on the local GPU and store the results (each benchmark committed as it ends)."""
    from .bench.registry import select
    from .runner import prepare, probe_device, resume_plan, run_benchmarks, start_run, target_of

    overrides = _parse_sets(sets or [])
    _check_label(label)
    if one_at_a_time and gpus is None:
        raise GpuDissectError("--one-at-a-time goes with --gpus")
    if gpus is not None:
        if resume is not None:
            raise GpuDissectError("--resume finishes one run on one GPU; drop --gpus (or --resume)")
        _run_gpus(gpus, suite, bench, quick is not False, overrides, db, not one_at_a_time)
        return
    if resume is not None:
        conflicts = [
            o for o, given in (("--suite", suite), ("--bench", bench), ("--quick/--full", quick is not None)) if given
        ]
        if conflicts:
            raise GpuDissectError(
                f"--resume {resume} finishes that run with its own selection and mode; drop {', '.join(conflicts)}"
            )
        reader = _read_store(db)
        mode, benches, stored = resume_plan(reader, resume)
        reader.close()
        overrides = stored | overrides
    else:
        mode = "full" if quick is False else "quick"
        benches = select(suite, bench)
    prepare(benches, overrides, {})  # input errors that need no device come first
    _check_store_writable(db, "no run was started")
    facts = probe_device()  # no GPU or driver: a clear one-line error, nothing launched
    _check_compiler_knows(facts)
    params = prepare(benches, overrides, facts)
    store = _write_store(db)
    if resume is not None:
        run_id = resume
        store.reopen_run(run_id)
    else:
        run_id = start_run(store, facts, mode, {"suites": suite, "benches": bench, "overrides": overrides}, label)
    console.print(
        f"[bold]run {run_id}[/]: "
        + _no_markup(
            visible(
                f"{facts['name']} ({facts['arch']}, {facts['sm_count']} SMs, "
                f"L2 {facts['l2_bytes'] >> 20} MiB), {len(benches)} benchmark(s), {mode} -> {store.path}"
            )
        )
    )
    from .eta import for_run

    # the CPU-only benchmarks run beside the others and add nothing to the run's time
    eta = for_run(store, str(facts.get("name", "")), mode, run_id, [b.key for b in benches if b.needs_gpu])
    summary: list[tuple[str, str, str, str]] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
        console=console,
        transient=False,
    ) as prog:
        overall = prog.add_task("all", total=len(benches), note=eta.text())
        tasks: dict[str, int] = {}

        def on_progress(b, done, total, text):  # type: ignore[no-untyped-def]
            if b.key not in tasks:
                tasks[b.key] = prog.add_task(b.name, total=total, note="")
            prog.update(tasks[b.key], completed=done, total=total, note=text)
            prog.update(overall, note=eta.text())

        def on_done(o):  # type: ignore[no-untyped-def]
            r = o.result
            key = f"{r.suite}/{r.bench}"
            if key not in tasks:
                tasks[key] = prog.add_task(r.bench, total=1, note="")
            tid = tasks[key]
            prog.update(tid, completed=prog.tasks[tid].total, note=f"{r.status} {r.seconds:.0f}s")
            eta.done(key)
            prog.advance(overall)
            prog.update(overall, note=eta.text())
            n_ok = sum(1 for f in o.figures if f.check == "ok")
            summary.append((r.bench, r.status, f"{r.seconds:.1f}", f"{n_ok} figures; {visible(r.message[:90])}"))

        try:
            status = run_benchmarks(
                store, run_id, benches, mode, params, facts.get("uuid"), on_progress, on_done, target_of(facts)
            )
        except KeyboardInterrupt:
            err.print(
                f"[yellow]interrupted: results so far are in run {run_id}; "
                f"`gpudissect run --resume {run_id}` finishes it[/]"
            )
            raise typer.Exit(130) from None
    cli_output.heading(f"run {run_id}: {status}")
    cli_output.table(  # shown as text: a message with [brackets] is not rich markup
        ["BENCHMARK", "STATUS", "SECONDS", "RESULT"],
        [list(row) for row in summary],
        styles=[None if row[1] == "ok" else "red" for row in summary],
        right=(2,),
    )
    if status != "ok":
        raise typer.Exit(1)


def _check_compiler_knows(facts: dict[str, Any]) -> None:
    """A GPU newer (or older) than the installed NVRTC compiles for: one line now, not a failure per kernel."""
    from .device.compiler import unsupported_why
    from .sass.disasm import unreadable_why

    why = unsupported_why(str(facts.get("arch", "")))
    if why:
        raise GpuDissectError(f"cannot compile for this GPU ({facts.get('name', '?')}): {why}")
    # every kernel's SASS is checked before it is timed: a disassembler that cannot read this GPU's code
    # would fail every benchmark
    why = unreadable_why(str(facts.get("arch", "")))
    if why:
        raise GpuDissectError(f"cannot check kernels for this GPU ({facts.get('name', '?')}): {why}")


def _run_gpus(
    spec: str,
    suite: list[str] | None,
    bench: list[str] | None,
    quick: bool,
    overrides: dict[str, str],
    db: Path | None,
    parallel: bool,
) -> None:
    """`run --gpus`: every chosen GPU dissected by its own process into one store (gpudissect.multigpu)."""
    from . import multigpu
    from .bench.registry import select
    from .runner import prepare

    prepare(select(suite, bench), overrides, {})  # input errors before any process starts
    # nothing is created before the GPUs are found: run_gpus lists them, then creates the store's schema
    path = _check_store_writable(db, "no run was started")
    group, outcomes = multigpu.run_gpus(
        spec,
        suite,
        bench,
        quick,
        overrides,
        path,
        parallel=parallel,
        log=lambda line: err.print(Text(visible(line, keep_newlines=True)), highlight=False),
    )
    bad = [o for o in outcomes if o.returncode != 0]
    typer.echo(
        f"group {group}: {len(outcomes) - len(bad)}/{len(outcomes)} GPU(s) ok -> {path}\n"
        f"compare them: gpudissect compare --gpus {group}" + (f" --db {db}" if db else "")
    )
    if bad:
        raise typer.Exit(1)


def _compare_gpus(group: str, limit: float, only_flagged: bool, fmt: str, db: Path | None) -> None:
    """Per figure key the median over the group's GPUs and each GPU's deviation; a GPU is flagged when it
    deviates beyond 3 x the noise (its own run-to-run spread or the spread between GPUs) and the threshold."""
    from . import multigpu

    store = _read_store(db)
    try:
        labels, rows = multigpu.compare_group(store, group, 3.0, limit)  # no such group: one clear error
    finally:
        store.close()
    flagged = sorted({g for r in rows for g in r.flagged})
    if fmt == "json":
        _print_json(
            {
                "group": group,
                "gpus": labels,
                "flagged": flagged,
                "keys": [
                    {"key": r.key, "unit": r.unit, "flagged": r.flagged} for r in rows if r.flagged or not only_flagged
                ],
            }
        )
    elif fmt == "md":
        # GPU labels come from the store (imported runs too): shown, not obeyed
        typer.echo(visible(multigpu.comparison_text(group, labels, rows, 3.0, limit, only_flagged), True), nl=False)
    else:
        from .cli_compare import print_group

        print_group(group, labels, rows, limit, only_flagged)
    if flagged:
        raise typer.Exit(1)


# ---- reading the store -------------------------------------------------------------------------
@app.command()
def runs(db: DbOpt = None, as_json: JsonFlag = False) -> None:
    """Stored runs."""
    from dataclasses import asdict

    store = _read_store(db)
    rows = []
    for r in store.runs():
        bs = store.benches(r.id)
        rows.append((r, sum(b.status == "ok" for b in bs), len(bs), list(dict.fromkeys(b.suite for b in bs))))
    if as_json:
        _print_json([asdict(r) | {"benchmarks_ok": ok, "benchmarks": n, "suites": s} for r, ok, n, s in rows])
        return
    if not rows:
        typer.echo(visible(f"no runs in {store.path}"))
        return
    cli_output.table(
        ["ID", "LABEL", "GPU", "MODE", "STARTED", "STATUS", "BENCHMARKS", "SUITES", "SOURCE"],
        [
            [str(r.id), r.label or "-", r.gpu_name, r.mode, r.started[:16], r.status, f"{ok}/{n} ok"]
            + [",".join(suites) or "-", r.source or "-"]
            for r, ok, n, suites in rows
        ],
        styles=[None if r.status == "ok" else "yellow" for r, *_ in rows],
        right=(0,),
    )


def _load(db: Path | None, run_id: int | None, from_json: Path | None):  # type: ignore[no-untyped-def]
    """(run, benches, series, figures) from the store or from a JSON export."""
    if from_json is not None:
        if run_id is not None:
            raise GpuDissectError(f"give a run id or --from-json, not both (run {run_id} and {from_json})")
        from .exportio import from_export

        return from_export(from_json)
    store = _read_store(db)
    info = store.run(run_id)
    return info, store.benches(info.id), store.series(info.id), store.figures(info.id)


RunArg = Annotated[int | None, typer.Argument(metavar="[RUN]", help="run id (default: latest)", callback=_run_id)]
FromJson = Annotated[Path | None, typer.Option("--from-json", help="read an export instead of the store")]


@app.command()
def show(
    key: Annotated[str, typer.Argument(help="figure key, or a glob such as 'mem.latency.*'")],
    run_id: RunArg = None,
    db: DbOpt = None,
    from_json: FromJson = None,
    as_json: JsonFlag = False,
) -> None:
    """One figure: value, method, spread, clock state, published values, and the run it came from."""
    from .report import show as sh

    if run_id is None and from_json is None:  # the newest run that has the figure, said so
        info, benches, figures, picked = sh.newest_with(_read_store(db), key)
        typer.echo(
            visible(f"from run {info.id} ({info.gpu_name}, {info.mode}, {info.started}): the newest with {key}"),
            err=True,
        )
    else:
        info, benches, _series, figures = _load(db, run_id, from_json)
        picked = sh.pick(figures, key)
    found = [sh.details(f, info, benches, figures) for f in picked]
    glob = len(found) > 1 or "*" in key or "?" in key or "[" in key
    if as_json:
        _print_json(found if glob else found[0])
    elif not cli_output.is_terminal():  # redirected: plain, one line a field, never wrapped
        typer.echo(sh.as_table(found) if glob else sh.as_text(found[0]))
    elif glob:
        _show_table(found)
    else:
        title, fields = sh.fields(found[0])
        cli_output.heading(title)
        for label, texts in fields:
            cli_output.field(label, texts, sh.LABEL)


def _show_table(found: list[dict[str, Any]]) -> None:
    """`show GLOB` on a terminal: a table fitted to its width (failed figures red), then the run and the
    clock block once, wrapped with a hanging indent."""
    from .report import show as sh

    rows = sh.table_rows(found)
    failed = [r[-1] != "ok" for r in rows]
    cli_output.table(sh.TABLE_HEAD, rows, styles=["red" if f else None for f in failed], right=(1,))
    cli_output.blank()
    for indent, text in sh.table_tail(found):
        cli_output.paragraph(text, indent=indent)


def _run_ids(values: list[int] | None) -> list[int]:
    return [v for v in (values or []) if _run_id(v) is not None]


@app.command()
def report(
    run_ids: Annotated[
        list[int] | None,
        typer.Argument(
            metavar="[RUN]...",
            help="run id (default: latest); two or more runs: the GPUs side by side",
            callback=_run_ids,
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="md or html")] = "md",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="output directory (new, empty, or a previous report); default: "
            "~/.local/share/gpudissect/reports/run-ID-FORMAT ($XDG_DATA_HOME), never the current directory",
        ),
    ] = None,
    db: DbOpt = None,
    from_json: FromJson = None,
) -> None:
    """Render a report: the GPU at a glance, then per suite its figures (published values beside them) and plots.
    With two or more runs, a comparison instead: one column per run, the figures at least two of them have,
    with ratios. --out is a new path, an empty directory, or an earlier report (recognised by its manifest);
    the report is built aside and replaces the earlier one only when complete."""
    from .report.output import check_report_dir, write_report_dir

    if fmt not in ("md", "html"):
        raise GpuDissectError(f"--format must be md or html, not {fmt!r}")
    ids = run_ids or []
    if ids and from_json is not None:
        raise GpuDissectError(f"give a run id or --from-json, not both (run {ids[0]} and {from_json})")
    target = check_report_dir(out).path if out is not None else None  # before reading anything
    if len(ids) > 1:
        _report_runs(ids, fmt, target, db)
        return
    info, benches, series, figures = _load(db, ids[0] if ids else None, from_json)
    if target is None:
        target = check_report_dir(_default_report_dir(info.id, fmt, from_json)).path
    from .report.annotate import annotations_for
    from .report.html import render_html
    from .report.markdown import render_markdown

    render = render_markdown if fmt == "md" else render_html
    notes = annotations_for(series, figures)
    with _sigterm_raises():
        path = write_report_dir(
            target,
            lambda d: render(info, benches, series, figures, None, d, annotations=notes, progress=_plot_progress),
        )
    plots = len(list(path.parent.glob("*.png")))
    cli_output.done(f"report: {cli_output.count(len(figures), 'figure')}, {cli_output.count(plots, 'plot')} -> {path}")


def _report_runs(ids: list[int], fmt: str, target: Path | None, db: Path | None) -> None:
    """`report RUN RUN ...`: the runs side by side (report/multirun.py)."""
    from .report.multirun import RunFigures, write_comparison
    from .report.output import check_report_dir, write_report_dir

    store = _read_store(db)
    runs = []
    for i in dict.fromkeys(ids):
        info = store.run(i)
        runs.append(RunFigures(info, store.figures(info.id)))
    if len(runs) < 2:
        raise GpuDissectError(f"a comparison takes two different runs, got run {ids[0]} twice")
    if target is None:
        name = "compare-" + "-".join(str(r.run.id) for r in runs)[:80]
        target = check_report_dir(_default_report_dir(0, fmt, None, name)).path
    with _sigterm_raises():
        path = write_report_dir(target, lambda d: write_comparison(fmt, runs, d))
    cli_output.done(f"report: {len(runs)} runs side by side -> {path}")


def _export_accelsim(run_id: int | None, out: str | None, db: Path | None) -> None:
    """`export --format accelsim -o DIR`: DIR/gpgpusim.config (report/accelsim.py)."""
    from .report.accelsim import config_text, write_dir
    from .store import expand_path

    if out is None or out == "-":
        raise GpuDissectError("--format accelsim writes DIR/gpgpusim.config: give -o DIR")
    directory = expand_path(out, "-o")
    if not directory.parent.is_dir():
        raise GpuDissectError(f"cannot write {directory}: {directory.parent} is not an existing directory")
    store = _read_store(db)
    info = store.run(run_id)
    text = config_text(info, store.figures(info.id))
    try:
        path = write_dir(str(directory), text)
    except ValueError as e:
        raise GpuDissectError(str(e)) from None
    except OSError as e:
        raise GpuDissectError(f"cannot write {directory}: {e.strerror or e}") from None
    typer.echo(f"exported run {info.id} as an Accel-Sim config fragment to {visible(path)}", err=True)


def _default_report_dir(run_id: int, fmt: str, from_json: Path | None, name: str | None = None) -> Path:
    """Where `report` writes without --out: the user's data directory, one folder per run and format (an
    export's by its file name), replaced on the next report of the same run."""
    import re

    from .store import expand_path

    base = expand_path(os.environ.get("XDG_DATA_HOME") or "~/.local/share", "XDG_DATA_HOME") / "gpudissect"
    if name is None:
        name = f"run-{run_id}" if from_json is None else "export-" + re.sub(r"[^\w.-]", "_", from_json.name)[:80]
    try:
        (base / "reports").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GpuDissectError(f"cannot make {base / 'reports'} for the report: {e.strerror}; give --out DIR") from None
    return base / "reports" / f"{name}-{fmt}"


EXPORT_FORMATS = ("json", "csv", "parquet", "accelsim")


@app.command()
def export(
    run_id: RunArg = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="json, csv, parquet (needs pyarrow and -o) or accelsim (a GPGPU-Sim config fragment: -o DIR)",
        ),
    ] = "json",
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="file (default or '-': stdout); a file is replaced atomically, a symlink's target is, "
            "a device or FIFO is written into; a .gz name compresses JSON",
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Export a run (everything: run facts, statuses, raw series, figures)."""
    from .report.outfile import plan_output, write_output

    if fmt not in EXPORT_FORMATS:
        raise GpuDissectError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    if fmt == "accelsim":
        _export_accelsim(run_id, out, db)
        return
    target = plan_output(out if out is not None else "-")  # checked before any work
    if fmt == "parquet":
        if not target.is_file:
            raise GpuDissectError("--format parquet writes a binary file: give -o FILE.parquet")
        from .api import require_pyarrow

        require_pyarrow()
    store = _read_store(db)
    rid = store.run(run_id).id
    gz = fmt == "json" and target.is_file and (out or "").lower().endswith(".gz")
    if fmt == "json":
        data = store.export(rid)

        def write(fh: Any) -> None:
            text = dumps(data, indent=1, default=str) + "\n"
            if gz:  # -o run.json.gz: compressed (import, compare and open read it as is)
                from .exportio import gzip_bytes

                fh.write(gzip_bytes(text))
            else:
                fh.write(text)
    elif fmt == "csv":
        rows = list(store.iter_csv_rows(rid))

        def write(fh: Any) -> None:
            csv.writer(fh).writerows(rows)
    else:
        from .api import parquet_table

        table = parquet_table(store.export(rid))

        def write(fh: Any) -> None:
            import pyarrow.parquet as pq

            pq.write_table(table, fh)

    with _sigterm_raises():
        write_output(target, write, binary=fmt == "parquet" or gz)
    if target.is_file:
        typer.echo(f"exported run {rid} to {visible(target.shown)}", err=True)


@app.command("import")
def import_cmd(
    export_file: Annotated[Path, typer.Argument(metavar="EXPORT.json", help="a file written by `gpudissect export`")],
    db: DbOpt = None,
    label: Annotated[str | None, typer.Option("--label", help="a name for the run (default: the export's own)")] = None,
) -> None:
    """Bring a run exported on another machine (the GPU host) into a store, under a new run id."""
    from dataclasses import replace

    from .exportio import from_export

    info, benches, series, figures = from_export(export_file)  # checked before the store is touched
    if label is not None:
        _check_label(label)
    was = f"; {info.source}" if info.source else ""
    info = replace(
        info,
        label=info.label if label is None else label,
        source=f"imported from {export_file.name} (run {info.id} there{was})"[:500],
    )
    path = _check_store_writable(db, "nothing was imported")
    store = _write_store(path)
    rid = store.import_run(info, benches, series, figures)
    typer.echo(
        visible(
            f"imported run {info.id} of {export_file} as run {rid} into {store.path} "
            f"({len(benches)} benchmarks, {len(figures)} figures, {len(series)} series)"
        )
    )


def _check_label(label: str) -> None:
    if len(label) > 200 or any(ord(c) < 32 or ord(c) == 127 for c in label):
        raise GpuDissectError("--label takes one line of at most 200 characters")


def _threshold(text: str) -> float:
    t = text.strip().rstrip("%")
    try:
        v = float(t)
    except ValueError:
        raise GpuDissectError(f"--threshold takes a percentage such as 5 or 2.5%, not {text!r}") from None
    if not (0 <= v < 1e6):
        raise GpuDissectError(f"--threshold must be a percentage >= 0, not {text!r}")
    return v / 100


@app.command()
def compare(
    run_a: Annotated[str | None, typer.Argument(metavar="A", help="run id or export JSON")] = None,
    run_b: Annotated[str | None, typer.Argument(metavar="B", help="run id or export JSON")] = None,
    threshold: Annotated[
        str, typer.Option("--threshold", "-t", help="flag relative changes above this percentage")
    ] = "5",
    only_changed: Annotated[
        bool, typer.Option("--only-changed", help="list only figures that changed beyond the threshold")
    ] = False,
    fmt: Annotated[
        str, typer.Option("--format", help="text (a table on a terminal, plain columns when redirected), md or json")
    ] = "text",
    gpus: Annotated[
        str | None,
        typer.Option("--gpus", metavar="GROUP", help="the GPUs of one `run --gpus` group instead of two runs"),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Compare the figures of two runs (summary first), or the GPUs of one `run --gpus` group (which GPU
    deviates); exit code 1 when a figure changed beyond the threshold or a GPU deviates."""
    from .report.compare import compare_runs, compare_summary, comparison_blocks, comparison_json, comparison_markdown

    if fmt not in ("text", "md", "json"):
        raise GpuDissectError(f"--format must be text, md or json, not {fmt!r}")
    limit = _threshold(threshold)
    if gpus is not None:
        if run_a is not None or run_b is not None:
            raise GpuDissectError("--gpus compares the GPUs of one group: give no runs A and B with it")
        _compare_gpus(gpus, limit, only_changed, fmt, db)
        return
    if run_a is None or run_b is None:
        raise GpuDissectError("compare takes two runs A and B (ids or export files), or --gpus GROUP")
    store_cache: list[Any] = []

    def load(ref: str):  # type: ignore[no-untyped-def]
        from .report.outfile import expand

        run_id = _run_ref(ref)
        if run_id is not None:
            if not store_cache:
                store_cache.append(_read_store(db))
            store = store_cache[0]
            info = store.run(run_id)
            label = f"run {info.id} ({info.gpu_name}, {info.mode}, {info.started})"
            return label, store.figures(info.id)
        p = expand(ref)
        if p.suffix.lower() != ".json" and not p.exists():
            raise GpuDissectError(f"{ref!r} is neither a run id nor an export file")
        from .exportio import from_export

        info, _b, _s, figs = from_export(p)
        return f"{p.name} (run {info.id}, {info.gpu_name}, {info.mode}, {info.started})", figs

    label_a, figs_a = load(run_a)
    label_b, figs_b = load(run_b)
    diffs = compare_runs(figs_a, figs_b, limit)
    bench_of = {f.key: f"{f.suite}/{f.bench}" for f in [*figs_a, *figs_b]}
    if fmt == "json":
        _print_json(comparison_json(diffs, limit, label_a, label_b, only_changed))
    elif fmt == "md":
        typer.echo(comparison_markdown(diffs, limit, label_a, label_b, only_changed, bench_of), nl=False)
    else:
        from .cli_compare import print_blocks

        print_blocks(comparison_blocks(diffs, limit, label_a, label_b, only_changed, bench_of))
    if compare_summary(diffs, limit)["changed"]:
        raise typer.Exit(1)


# ---- kernels -----------------------------------------------------------------------------------
@app.command()
def sass(
    bench: Annotated[str | None, typer.Argument(help="benchmark name")] = None,
    arch: Annotated[str, typer.Option("--arch", help="target to compile for (default sm_90a)")] = "sm_90a",
    full: Annotated[bool, typer.Option("--full", help="print the whole disassembly")] = False,
    ptx_map: Annotated[bool, typer.Option("--map", help="the PTX -> SASS table of every tensor instruction")] = False,
    fmt: Annotated[
        str, typer.Option("--format", help="--map's table: text (a table, plain columns when redirected) or md")
    ] = "text",
    check_all: Annotated[
        bool, typer.Option("--all", help="every variant `plan --arch` would run: compiled, SASS checked")
    ] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="compile processes (default: CPU count)")] = None,
    control: Annotated[
        bool,
        typer.Option(
            "--control",
            help="every instruction with its decoded control fields (stall, yield, barriers, wait mask, reuse)",
        ),
    ] = False,
) -> None:
    """Show the SASS of a benchmark's kernels with the required instructions highlighted."""
    import re

    from . import sasscheck

    sasscheck.check_arch(arch)
    if fmt not in ("text", "md"):
        raise GpuDissectError(f"--format must be text or md, not {fmt!r}")
    if fmt != "text" and not ptx_map:
        raise GpuDissectError("--format is for --map's table")
    if jobs is not None and jobs < 1:
        raise GpuDissectError(f"--jobs must be at least 1, not {jobs}")
    if check_all:
        if ptx_map or full or control:
            raise GpuDissectError("--all checks variants: give it with --arch, --jobs and optionally one benchmark")
        from .cli_plan import check_all as check_every_variant

        if not check_every_variant(arch, jobs, _progress_line, bench):
            raise typer.Exit(1)
        return
    if ptx_map:
        if bench is not None:
            raise GpuDissectError("--map covers every tensor kernel: give no benchmark with it")
        from .sassmap import render_markdown, table_rows

        rows = sasscheck.map_all(arch, jobs, _progress_line)
        if fmt == "md":
            typer.echo(render_markdown(rows, arch), nl=False)
        else:
            head, cells = table_rows(rows, arch)
            cli_output.table(head, cells, styles=["yellow" if c[2] else None for c in cells])
        tensor = len({r.ptx for r in rows if r.tensor})
        n_ptx = len({r.ptx for r in rows})
        n_specs = len({r.spec for r in rows})
        cli_output.done(
            f"sass --map: {cli_output.count(n_ptx, 'tensor instruction')} from "
            f"{cli_output.count(n_specs, 'kernel variant')} ({arch}), {tensor} with a tensor-core SASS opcode"
        )
        return
    if bench is None:
        raise GpuDissectError("name a benchmark (see `gpudissect list`) or pass --map")
    from .bench.registry import select

    if control:
        if full:
            raise GpuDissectError("--control already lists every instruction: give it without --full")
        from .cli_isa import control_listing

        typer.echo(control_listing(bench, arch), nl=False)
        return
    b = select(None, [bench])[0]
    if not b.kernels:
        typer.echo(
            f"{b.key} has no kernels of its own (it times library calls or runs on the CPU): "
            "there is no SASS of ours to show"
        )
        return
    results = sasscheck.check_benchmark(b, arch, jobs, _progress_line)
    bad = 0
    for spec, funcs, checks in results:
        # labels such as "tensor_mma.cu[f16.m16n8k16]" hold brackets: cli_output shows text, never markup
        cli_output.rule(f"{sasscheck.variant_name(spec)} ({arch})")
        bad += not all(c.found for c in checks)
        for c in checks:  # a line of SASS is never wrapped by us: a terminal folds what it must
            cli_output.line("  " + sasscheck.describe(c, funcs), "green" if c.found else "red")
        if full:
            pats = [re.compile(p) for ps in spec.required.values() for p in ps]
            for fn, text in funcs.items():
                cli_output.line(fn, "bold")
                for line in text.splitlines():
                    cli_output.line(line, "yellow" if any(p.search(line) for p in pats) else None)
    kernels = cli_output.count(len(results), "kernel")
    if bad:
        cli_output.done(f"sass: {bad} of {kernels} of {b.key} missing required SASS ({arch})")
        raise typer.Exit(1)
    cli_output.done(f"sass: {kernels} of {b.key}, all required SASS present ({arch})")


def _plot_progress(done: int, total: int) -> None:
    """The report's sign of life while it draws its plots (most of its time): a counter on a terminal's stderr,
    cleared when done; nothing when stderr is redirected, where a failure must stay one line."""
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K" + (f"drawing plots {done}/{total}" if done < total else ""))
        sys.stderr.flush()


@app.command()
def doctor(
    db: DbOpt = None,
    fetch_cuda12: Annotated[
        bool,
        typer.Option(
            "--fetch-cuda12",
            help="first fetch a CUDA 12 cuobjdump (from the triton 3.4.0 wheel on PyPI): the one that reads Volta code",
        ),
    ] = False,
) -> None:
    """What gpudissect can find: GPU, driver, toolkit, NVRTC, disassembler, store; exit 1 when `run` lacks something."""
    from .doctor import checks

    if fetch_cuda12:
        from .sass import legacy

        try:
            console.print(f"CUDA 12 cuobjdump: {visible(legacy.fetch())}", highlight=False)
        except (OSError, RuntimeError) as e:
            raise GpuDissectError(f"--fetch-cuda12: {e}") from None

    rows: list[list[cli_output.Cell]] = []
    missing = []
    for c in checks(_db_path(db)):
        status = ("ok", "green") if c.ok else (("missing", "red") if c.needed else ("absent", "yellow"))
        rows.append([c.name, status, c.detail])
        if c.needed and not c.ok:
            missing.append(c.name)
    cli_output.heading(f"gpudissect {__version__} doctor")
    cli_output.table(["COMPONENT", "STATUS", "DETAIL"], rows)
    if missing:
        err.print(f"`gpudissect run` cannot work here: missing {', '.join(missing)}", highlight=False)
        raise typer.Exit(1)
    cli_output.paragraph("everything `gpudissect run` needs is present")


# ---- sub-apps and commands of other modules: the one place where they are added ---------------------------
# (module, attribute, command name): a typer.Typer attribute becomes a command group.
SUB_APPS: list[tuple[str, str, str]] = [
    ("gpudissect.cli_isa", "isa_app", "isa"),
    ("gpudissect.cli_gemm", "gemm_app", "gemm"),
]


# (module, function, command name): a single command whose options live beside its logic (its module also
# runs it alone, e.g. under torchrun -m).
COMMANDS: list[tuple[str, str, str]] = [
    ("gpudissect.cli_plan", "plan_cmd", "plan"),
    ("gpudissect.cluster", "cluster", "cluster"),
]


def _add_sub_apps() -> None:
    for module, attr, name in COMMANDS:
        app.command(name)(getattr(importlib.import_module(module), attr))
    for module, attr, name in SUB_APPS:
        app.add_typer(getattr(importlib.import_module(module), attr), name=name)


_add_sub_apps()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
