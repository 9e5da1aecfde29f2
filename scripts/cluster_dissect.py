"""Dissect every GPU of a cluster job into one store: each rank dissects its own GPU, rank 0
gathers the exports over torch.distributed (gloo) and writes them with one group tag.

torchrun, one node with 8 GPUs (or several nodes with --nnodes/--rdzv-endpoint):
    torchrun --nproc-per-node 8 scripts/cluster_dissect.py --suite memory --db fleet.sqlite

Slurm, one task per GPU:
    export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) MASTER_PORT=29511
    srun --ntasks-per-node 8 --gpus-per-task 1 python3 scripts/cluster_dissect.py --suite memory --db fleet.sqlite

Then: `gpudissect compare --gpus GROUP --db fleet.sqlite` (GROUP is printed by rank 0), or
python3 -c "from gpudissect.multigpu import compare_gpus; print(compare_gpus('GROUP', 'fleet.sqlite'))".
The --db path only has to be writable on rank 0's node. NVLink multicast stays off in every rank.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _k, _v in {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}.items():
    os.environ[_k] = _v  # before anything could initialise NCCL


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", action="append", help="suite(s) to run (default: all)")
    ap.add_argument("--bench", action="append", help="benchmark(s) to run")
    ap.add_argument("--full", action="store_true", help="full sweeps instead of quick ones")
    ap.add_argument("--set", action="append", default=[], dest="sets", help="parameter override NAME=VALUE")
    ap.add_argument("--db", required=True, type=Path, help="store rank 0 writes (created if absent)")
    ap.add_argument("--group", help="group tag (default: from the job id, else the time)")
    a = ap.parse_args(argv)

    from gpudissect.errors import GpuDissectError
    from gpudissect.multigpu import cluster_rank, dissect_local, pin_local_gpu, rank_env

    try:
        rank, world, local = rank_env()
        try:
            import torch.distributed  # noqa: F401
        except ImportError:
            raise GpuDissectError("torch is needed to gather results across ranks (pip install torch)") from None
        overrides = {}
        for s in a.sets:
            if "=" not in s:
                raise GpuDissectError(f"--set takes NAME=VALUE, got {s!r}")
            k, v = s.split("=", 1)
            overrides[k.strip()] = v.strip()
        job = os.environ.get("SLURM_JOB_ID") or os.environ.get("TORCHELASTIC_RUN_ID")
        group = a.group or (f"job{job}" if job and job != "none" else None)
        if group is None:
            raise GpuDissectError("give --group (no SLURM_JOB_ID or torchrun run id to name the group after)")
        pin_local_gpu(local)
        mode = "full" if a.full else "quick"
        written = cluster_rank(
            lambda db, grp, tags: dissect_local(db, a.suite, a.bench, mode, overrides, grp, tags), a.db, group
        )
    except GpuDissectError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if written is not None:
        print(f"group {group}: {written} of {world} rank(s) written to {a.db}")
        return 0 if written == world else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
