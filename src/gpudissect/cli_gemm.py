"""`gpudissect gemm --m M --n N --k K --dtype bf16`: our GEMM against cuBLAS on one shape, checked.

The coordinator mounts `gemm_app` on the main CLI (app.add_typer(gemm_app, name="gemm")). Bad input
prints one line and exits 2 here already, so the command behaves the same mounted or alone.
"""

from __future__ import annotations

import statistics
from typing import Annotated, Any

import typer

from .errors import GpuDissectError

gemm_app = typer.Typer(help="Our tensor-core GEMM against cuBLAS on one shape (checked, timed in alternation).")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def validate(m: int, n: int, k: int, dtype: str, rung: int | None) -> int:
    """Everything that can be refused before a GPU is touched (ValueError naming the rule); returns the
    rung to run (the default one of the dtype when none is named; gemm.SMALL: the small-M path)."""
    from .gemm import small
    from .gemm.api import default_rung
    from .gemm.variants import AUTO, DTYPES, RUNGS, check_dims

    if dtype not in DTYPES:
        raise ValueError(f"--dtype {dtype!r} is not supported; supported: {', '.join(DTYPES)}")
    r = default_rung(dtype) if rung is None else rung
    if r == small.SMALL:
        small.check_small(dtype)
        check_dims(m, n, k, AUTO, dtype)
        return r
    if r not in RUNGS and not (rung is None and r == 0):
        built = ", ".join(map(str, RUNGS))
        raise ValueError(f"--rung {r} is not built; built rungs: {built}, and {small.SMALL} (the small-M path)")
    check_dims(m, n, k, r, dtype)
    return r


def small_variant(
    m: int, n: int, dtype: str, rung: int | None, asked: int | None, sms: int, k: int = 0, l2_bytes: int = 0
) -> Any:
    """The small-M variant the command times (None: a rung of the ladder): the public default's choice where no
    rung is named, or rung SMALL forced (the default's variant, else the token tile for M), as `matmul` does."""
    from .gemm import small

    if asked is not None and rung != small.SMALL:
        return None
    return small.variant_for(m, n, dtype, sms, rung == small.SMALL, k, l2_bytes)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise GpuDissectError(
            "`gpudissect gemm` needs PyTorch with CUDA (operands and cuBLAS come from torch); install torch"
        ) from None
    if not torch.cuda.is_available():
        raise GpuDissectError("torch sees no CUDA device")
    return torch


@gemm_app.callback(invoke_without_command=True)
def gemm(
    m: Annotated[int, typer.Option("--m", help="rows of A and C (any; rung 1: multiple of 128)")] = 8192,
    n: Annotated[int, typer.Option("--n", help="columns of B and C (multiple of 8: 16-byte rows of C)")] = 8192,
    k: Annotated[
        int, typer.Option("--k", help="inner dimension (multiple of 8, fp8: 16: 16-byte rows of A and B)")
    ] = 8192,
    dtype: Annotated[
        str, typer.Option("--dtype", help="bf16, fp16 or e4m3 (fp8 in, bf16 out, vs torch._scaled_mm)")
    ] = "bf16",
    rung: Annotated[
        int | None,
        typer.Option(
            "--rung",
            help="ladder rung, or 20 for the small-M path (default: the public per-shape choice: the small-M path "
            "for few rows, else rung 10, 9 or 6)",
        ),
    ] = None,
    pairs: Annotated[int, typer.Option("--pairs", help="alternating timing pairs", min=1, max=1000)] = 9,
) -> None:
    """Run our GEMM and cuBLAS's on the same operands: check both agree, time them in alternation."""
    asked = rung
    try:
        rung = validate(m, n, k, dtype, rung)
        torch = _torch()
        from .bench.gemm.cases import Case, SmallCase, _tflops

        props = torch.cuda.get_device_properties(0)
        l2 = int(props.L2_cache_size)
        variant = small_variant(m, n, dtype, rung, asked, int(props.multi_processor_count), k, l2)
        if variant is not None:
            case: Any = SmallCase(torch, variant, dtype, m, n, k, l2)
        else:
            case = Case(torch, rung, dtype, m, n, k, l2)
        out = case.compare(pairs, 20.0, None)
    except (ValueError, GpuDissectError) as e:
        _fail(str(e))
        return
    from . import cli_output
    from .gemm.variants import RUNGS, describe_schedule

    ran = case.rung
    say = cli_output.paragraph  # a terminal wraps the long lines with a hanging indent; redirected: one line each
    default = " (the per-shape default)" if asked is None else ""
    if variant is not None:
        g = case.launches[0].grid
        say(f"{m} x {n} x {k} {dtype}, the small-M path (rung {ran}, {variant.name}){default}")
        say(
            f"schedule: {g[0]} token tile(s) of {variant.mp} x {g[2]} weight tile(s) of {variant.bw} rows, K split "
            f"{g[1]} way(s), {variant.ctas_per_sm} CTA(s) per SM, {variant.stages}-stage TMA ring"
        )
    else:
        say(f"{m} x {n} x {k} {dtype}, rung {ran} ({RUNGS[ran].name}){default if rung != ran else ''}")
    if variant is None and ran >= 2:
        clusters = case.launches[0].grid[0] // RUNGS[ran].cluster_size
        say(f"schedule: {describe_schedule(RUNGS[ran], m, n, k, clusters, dtype)}")
    say(f"check: {'ok' if out.ok else 'FAILED'}: {out.why}", style="green" if out.ok else "red")
    if not out.ok:
        raise typer.Exit(1)
    ours = statistics.median(_tflops(m, n, k, t) for t in out.ours_ms)
    cub = statistics.median(_tflops(m, n, k, t) for t in out.cublas_ms)
    say(f"ours   {ours:8.1f} TFLOPS")
    say(f"cuBLAS {cub:8.1f} TFLOPS")
    say(f"ours / cuBLAS {out.ratio:.3f} (median of {pairs} alternating pairs)")
    for side, v in out.tel.items():
        say(f"{side}: SM clock {v['mhz']:.0f} MHz, power {v['watts']:.0f} W (NVML)")
