"""`gpudissect plan` (what a run would do on a GPU, without the GPU) and `gpudissect sass --all` (every variant
that plan would run on an arch, compiled and its SASS checked)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated

import typer

from .capability import Target
from .errors import GpuDissectError


def _target(arch: str | None) -> Target:
    """The named target, or the local GPU's; without either, one clear line."""
    if arch:
        try:
            t = Target.parse(arch)
        except ValueError as e:
            raise GpuDissectError(str(e)) from None
        if not t.known:
            raise GpuDissectError(
                f"{arch}: compute capability {t.major}.{t.minor} is not one gpudissect knows "
                "(sm_70 .. sm_121); name one of those"
            )
        return t
    from .errors import NoGpuError
    from .runner import probe_device, target_of

    try:
        facts = probe_device()
    except NoGpuError as e:
        raise GpuDissectError(f"{e}; name the GPU to plan for with --arch (e.g. --arch sm_80)") from None
    t = target_of(facts)
    assert t is not None
    return t


def plan_cmd(
    arch: Annotated[str | None, typer.Option("--arch", help="plan for this target (default: the local GPU)")] = None,
    suite: Annotated[list[str] | None, typer.Option("--suite", "-s", help="suite(s) to plan")] = None,
    bench: Annotated[list[str] | None, typer.Option("--bench", "-b", help="benchmark(s) to plan")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="a JSON list, one object per benchmark")] = False,
) -> None:
    """What `run` would do on a GPU: each benchmark run or skip (and why), and the kernel variants that would
    run. Needs no GPU with --arch."""
    from .bench.plan import plan
    from .bench.registry import select

    target = _target(arch)
    entries = plan(select(suite, bench), target)
    if as_json:
        typer.echo(json.dumps([e.as_dict() for e in entries], indent=1))
        return
    from . import cli_output

    rows = []
    for e in entries:
        if e.status == "run":
            n, k = len(e.variants), len(e.skipped_variants)
            what = f"{n} variant(s)" + (f", {k} skipped" if k else "") if n or k else "no kernels of its own"
        else:
            what = e.reason
        rows.append([e.suite, e.bench, e.status, what])
    cli_output.heading(f"plan for {target} ({target.family})")
    cli_output.blank()
    cli_output.table(
        ["SUITE", "BENCHMARK", "PLAN", "WHAT"], rows, styles=[None if r[2] == "run" else "dim" for r in rows]
    )
    n_run = sum(e.status == "run" for e in entries)
    cli_output.blank()
    cli_output.paragraph(f"{n_run} of {len(entries)} benchmarks run on {target.arch}; `--json` lists the variants.")


def check_all(
    arch: str, jobs: int | None, progress: Callable[[int, int, str], None] | None, bench: str | None = None
) -> bool:
    """`sass --all`: compile every variant the plan runs on `arch` (of every benchmark, or of `bench`) and
    check its SASS there; True when all hold."""
    from . import sasscheck
    from .bench.plan import plan
    from .bench.registry import load_all, select
    from .device.compiler import parallel_map, pool_work

    target = _target(arch)
    benches = select(None, [bench]) if bench else list(load_all().values())
    specs = {}
    for e, b in zip(plan(benches, target), benches):
        if e.status == "run":
            for s in b.variants(target)[0]:
                specs.setdefault(s.name, s)
    todo = list(specs.values())
    results = parallel_map(_check_one, todo, target.arch, jobs, progress, pool_work(todo, target.arch))
    ok = True
    for spec, (err, bad) in zip(todo, results):
        if err or bad:
            ok = False
            typer.echo(f"FAIL {sasscheck.variant_name(spec)}: " + (err or "; ".join(bad)))
    n_bad = sum(1 for e, b in results if e or b)
    typer.echo(f"{len(todo) - n_bad} of {len(todo)} variants compile for {target.arch} with the SASS they declare")
    return ok


def _check_one(spec, arch: str) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]  # runs in a pool
    from . import sasscheck

    try:
        funcs, checks = sasscheck.check_spec(spec, arch)
    except GpuDissectError as e:
        return (str(e).splitlines()[0] if str(e) else type(e).__name__), []
    return "", [sasscheck.describe(c, funcs) for c in checks if not c.found]
