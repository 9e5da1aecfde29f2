"""`gpudissect cluster`: dissect every GPU of a cluster job into one store. Each rank dissects its own GPU,
rank 0 gathers the exports over torch.distributed (gloo) and writes them with one group tag
(multigpu.cluster_rank does the work; this module is its command line).

torchrun, one node with 8 GPUs (or several nodes with --nnodes/--rdzv-endpoint):
    torchrun --nproc-per-node 8 -m gpudissect.cluster --suite memory --db fleet.sqlite
    torchrun --nproc-per-node 8 --no-python gpudissect cluster --suite memory --db fleet.sqlite

Slurm, one task per GPU:
    export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) MASTER_PORT=29511
    srun --ntasks-per-node 8 --gpus-per-task 1 python3 -m gpudissect.cluster --suite memory --db fleet.sqlite

Then: `gpudissect compare --gpus GROUP --db fleet.sqlite` (GROUP is printed by rank 0), or
python3 -c "from gpudissect.multigpu import compare_gpus; print(compare_gpus('GROUP', 'fleet.sqlite'))".
The --db path only has to be writable on rank 0's node. NVLink multicast stays off in every rank.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from .errors import GpuDissectError


def _parse_sets(sets: list[str]) -> dict[str, str]:
    overrides = {}
    for s in sets:
        if "=" not in s:
            raise GpuDissectError(f"--set takes NAME=VALUE, got {s!r}")
        k, v = s.split("=", 1)
        overrides[k.strip()] = v.strip()
    return overrides


def _job_group(given: str | None) -> str:
    """The group tag: --group, else the Slurm job id or torchrun's run id."""
    job = os.environ.get("SLURM_JOB_ID") or os.environ.get("TORCHELASTIC_RUN_ID")
    group = given or (f"job{job}" if job and job != "none" else None)  # torchrun's default run id is "none"
    if group is None:
        raise GpuDissectError("give --group (no SLURM_JOB_ID or torchrun run id to name the group after)")
    return group


def cluster(
    *,
    suite: Annotated[list[str] | None, typer.Option("--suite", help="suite(s) to run (default: all)")] = None,
    bench: Annotated[list[str] | None, typer.Option("--bench", help="benchmark(s) to run")] = None,
    full: Annotated[bool, typer.Option("--full", help="full sweeps instead of quick ones")] = False,
    sets: Annotated[list[str] | None, typer.Option("--set", help="parameter override NAME=VALUE")] = None,
    db: Annotated[Path, typer.Option("--db", help="store rank 0 writes (created if absent)")],
    group: Annotated[
        str | None,
        typer.Option("--group", help="group tag (default: job<id> from SLURM_JOB_ID or torchrun's run id)"),
    ] = None,
) -> None:
    """Dissect every GPU of a torchrun/srun job into one store: a rank per GPU, rank 0 gathers (needs torch)."""
    from .multigpu import NO_MULTICAST

    os.environ.update(NO_MULTICAST)  # before anything could initialise NCCL
    from .multigpu import cluster_rank, dissect_local, pin_local_gpu, rank_env

    _rank, world, local = rank_env()
    try:
        import torch.distributed  # noqa: F401
    except ImportError:
        raise GpuDissectError("torch is needed to gather results across ranks (pip install torch)") from None
    overrides = _parse_sets(sets or [])
    tag = _job_group(group)
    pin_local_gpu(local)
    mode = "full" if full else "quick"
    written = cluster_rank(
        lambda path, grp, tags: dissect_local(path, suite, bench, mode, overrides, grp, tags), db, tag
    )
    if written is not None:  # rank 0
        typer.echo(f"group {tag}: {written} of {world} rank(s) written to {db}")
        if written != world:
            raise typer.Exit(1)


def main(argv: list[str] | None = None) -> None:
    """`python -m gpudissect.cluster` (what torchrun -m and srun start): the command alone, errors as one line."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command()(cluster)
    try:
        app(args=argv, prog_name="python -m gpudissect.cluster")
    except GpuDissectError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
