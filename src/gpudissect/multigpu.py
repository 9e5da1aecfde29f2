"""Dissect several GPUs at once and find the one that deviates.

`run_gpus` starts one process per GPU (CUDA_VISIBLE_DEVICES set to that GPU's UUID, so every child
sees exactly one device as device 0) that runs the chosen benchmarks through the ordinary runner
into ONE store: each GPU gets its own run, tagged by its UUID (the run's gpu_uuid) and by a shared
group tag in the run's `selection` and `extra`. `compare_group` then puts every figure of the group
side by side: the median over GPUs, each GPU's deviation from it, and a flag where the deviation
exceeds what the run-to-run spread explains (fleet qualification: a slow HBM stack, a throttling
board, a link trained down to a lower PCIe generation).

Clusters: `cluster_rank` is what each rank of a torchrun/srun job calls (`gpudissect cluster`, `-m gpudissect.cluster`):
the rank dissects its GPU into a private store, then rank 0 gathers every rank's export over
torch.distributed (gloo) and writes them into one store with the same group tag.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from .errors import GpuDissectError
from .models import Figure, RunInfo
from .store import Store

# NVLink multicast stays off in every process this module starts (see bench/link/nccl.py).
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def new_group() -> str:
    """A run-group tag: UTC time plus a random suffix, unique across hosts."""
    return time.strftime("g%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuidlib.uuid4().hex[:6]


def parse_gpus(spec: str, gpus: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """'all' or comma-separated indices ('0,2,3') -> the GPU records chosen (NVML index order)."""
    if not gpus:
        raise GpuDissectError("no GPU found (NVML lists none): --gpus needs at least one")
    text = spec.strip().lower()
    if text == "all":
        return list(gpus)
    by_index = {int(g["index"]): g for g in gpus}
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise GpuDissectError(f"--gpus takes 'all' or GPU indices like 0,1,3; got {spec!r}")
        i = int(part)
        if i not in by_index:
            raise GpuDissectError(f"--gpus: no GPU {i}; this machine has {', '.join(str(k) for k in sorted(by_index))}")
        if by_index[i] in out:
            raise GpuDissectError(f"--gpus names GPU {i} twice")
        out.append(by_index[i])
    return out


# ---- one GPU (inside a child, a rank, or a plain process) ----------------------------------------
def dissect_local(
    db: str | Path,
    suites: list[str] | None,
    benches: list[str] | None,
    mode: str,
    overrides: dict[str, str],
    group: str,
    tags: dict[str, Any] | None = None,
) -> int:
    """Run the selection on the one GPU this process sees (device 0) into `db`; returns the run id.
    The group tag and `tags` go into the run's selection and extra."""
    from .bench.registry import select
    from .runner import prepare, probe_device, run_benchmarks, start_run, target_of

    chosen = select(suites, benches)
    prepare(chosen, overrides, {})
    facts = probe_device()
    params = prepare(chosen, overrides, facts)
    store = Store(db)
    try:
        tags = dict(tags or {})
        sel = {"suites": suites, "benches": benches, "overrides": overrides, "group": group, **tags}
        run_id = start_run(store, dict(facts, group=group, **tags), mode, sel)
        run_benchmarks(store, run_id, chosen, mode, params, facts.get("uuid"), target=target_of(facts))
        return run_id
    finally:
        store.close()


def child_main(spec_path: str) -> None:
    """Entry of a per-GPU child started by run_gpus (spec: JSON of dissect_local's arguments)."""
    spec = json.loads(Path(spec_path).read_text())
    try:
        run_id = dissect_local(
            spec["db"], spec["suites"], spec["benches"], spec["mode"], spec["overrides"], spec["group"], spec["tags"]
        )
    except GpuDissectError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"run {run_id}")


def default_child_cmd(spec_path: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from gpudissect.multigpu import child_main; child_main(sys.argv[1])",
        str(spec_path),
    ]


@dataclass
class ChildOutcome:
    gpu: dict[str, Any]
    returncode: int
    log_tail: str
    seconds: float


def run_gpus(
    spec: str,
    suites: list[str] | None,
    benches: list[str] | None,
    quick: bool,
    overrides: dict[str, str],
    db: str | Path,
    group: str | None = None,
    parallel: bool = True,
    gpus: Sequence[dict[str, Any]] | None = None,
    child_cmd: Callable[[Path], list[str]] = default_child_cmd,
    log: Callable[[str], None] = print,
) -> tuple[str, list[ChildOutcome]]:
    """Dissect every GPU of `spec` ('all' or '0,1,...'), one process per GPU, into one store.
    Parallel by default (each GPU at once, as a fleet check runs); parallel=False runs them one
    after another, which host-link benchmarks need (GPUs share the host's memory and PCIe root).
    Returns the group tag and each child's outcome; the caller decides the exit code."""
    from .device import hostmem

    listed = list(gpus) if gpus is not None else hostmem.gpu_list()
    chosen = parse_gpus(spec, listed)
    group = group or new_group()
    Store(db).close()  # create the schema once, before children write concurrently
    mode = "quick" if quick else "full"
    outcomes: list[ChildOutcome] = []
    with tempfile.TemporaryDirectory(prefix="gd-multi-") as tmp:
        procs: list[tuple[dict[str, Any], subprocess.Popen[bytes], Path, float]] = []

        def start(g: dict[str, Any]) -> None:
            sp = Path(tmp) / f"gpu{g['index']}.json"
            sp.write_text(
                json.dumps(
                    {
                        "db": str(db),
                        "suites": suites,
                        "benches": benches,
                        "mode": mode,
                        "overrides": overrides,
                        "group": group,
                        "tags": {"gpu_index": int(g["index"]), "gpus": [int(x["index"]) for x in chosen]},
                    }
                )
            )
            logf = Path(tmp) / f"gpu{g['index']}.log"
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(g.get("uuid") or g["index"]), **NO_MULTICAST)
            with open(logf, "wb") as fh:
                p = subprocess.Popen(child_cmd(sp), env=env, stdout=fh, stderr=subprocess.STDOUT)
            procs.append((g, p, logf, time.monotonic()))
            log(f"GPU {g['index']} ({g.get('uuid', '?')}): started")

        def finish(item: tuple[dict[str, Any], subprocess.Popen[bytes], Path, float]) -> None:
            g, p, logf, t0 = item
            rc = p.wait()
            tail = "\n".join(logf.read_text(errors="replace").strip().splitlines()[-5:])
            outcomes.append(ChildOutcome(g, rc, tail, round(time.monotonic() - t0, 1)))
            log(
                f"GPU {g['index']}: {'ok' if rc == 0 else f'exit code {rc}'} after {outcomes[-1].seconds:.0f} s"
                + ("" if rc == 0 else f"\n{tail}")
            )

        try:
            if parallel:
                for g in chosen:
                    start(g)
                for item in list(procs):
                    finish(item)
            else:
                for g in chosen:
                    start(g)
                    finish(procs[-1])
        except KeyboardInterrupt:
            for _, p, _, _ in procs:
                p.terminate()
            raise
    return group, outcomes


# ---- the group's runs and the deviation analysis --------------------------------------------
def group_runs(store: Store, group: str) -> list[RunInfo]:
    runs = [r for r in store.runs() if (r.selection or {}).get("group") == group]
    if not runs:
        known = sorted(
            {str((r.selection or {}).get("group")) for r in store.runs() if (r.selection or {}).get("group")}
        )
        raise GpuDissectError(
            f"no runs of group {group!r} in {store.path}" + (f"; groups: {', '.join(known)}" if known else "")
        )
    return runs


def gpu_label(run: RunInfo) -> str:
    sel = run.selection or {}
    where = f"{sel['host']}:" if sel.get("host") else ""
    idx = sel.get("gpu_index", sel.get("rank", "?"))
    return f"{where}{idx} {run.gpu_uuid[:12]}"


@dataclass
class KeyDeviation:
    key: str
    unit: str
    median: float | str | None
    scale: float  # what counts as noise for this key (same unit as the values)
    values: dict[str, float | str | None]  # GPU label -> value (None: missing or failed check)
    rel_dev: dict[str, float | None] = field(default_factory=dict)
    flagged: list[str] = field(default_factory=list)
    note: str = ""


# Text figures that describe conditions rather than results: NVML throttle reasons are the union of
# what the window's samples reported, so one sample at the cap edge changes them while the clock and
# throughput (flagged on their own) stay level; seen on an H200 pair at 1980 MHz on both boards.
DIAGNOSTIC_TEXT_SUFFIXES = ("throttle_reasons",)


def deviations(
    key: str,
    unit: str,
    per_gpu: dict[str, tuple[float | str | None, tuple[float, float] | None]],
    k: float = 3.0,
    min_rel: float = 0.0,
) -> KeyDeviation:
    """Which GPU deviates on one key. per_gpu: label -> (value, (min, max) over repetitions).

    Noise is the larger of (a) the median half-range of the GPUs' own repetitions and (b) the
    spread between GPUs (1.4826 x median absolute deviation, robust to the outlier itself). A GPU
    is flagged when |value - median| > k x noise and its relative deviation is at least min_rel.
    With two GPUs no single one can be blamed: both are flagged when they differ beyond the noise.
    A GPU without a value (missing, failed check) is always flagged. Text values (a PCIe
    generation string, an inferred page size) flag every GPU that differs from the most common one."""
    values = {g: v for g, (v, _) in per_gpu.items()}
    out = KeyDeviation(key, unit, None, 0.0, values)
    missing = [g for g, v in values.items() if v is None or (isinstance(v, float) and not math.isfinite(v))]
    nums = {g: float(v) for g, v in values.items() if isinstance(v, (int, float)) and g not in missing}
    texts = {g: v for g, v in values.items() if isinstance(v, str)}
    if texts:
        counts = Counter(texts.values()).most_common()
        tie = len(counts) > 1 and counts[0][1] == counts[1][1]
        out.median = "no majority" if tie else counts[0][0]
        if key.endswith(DIAGNOSTIC_TEXT_SUFFIXES):
            out.flagged = sorted(missing)
            out.note = (
                "diagnostic text (NVML throttle reasons seen in the window): shown, not flagged; "
                "the clock and throughput keys say whether it cost anything"
            )
        elif tie:  # no majority (two GPUs that differ, say): nothing says which one deviates, so all are flagged
            out.flagged = sorted(set(missing) | set(texts))
            out.note = "text values with no majority: every GPU flagged"
        else:
            out.flagged = sorted(missing + [g for g, v in texts.items() if v != out.median])
            out.note = "text values: flagged where they differ from the most common one"
        return out
    out.flagged = sorted(missing)
    if not nums:
        return out
    med = statistics.median(nums.values())
    out.median = med
    halves = [(s[1] - s[0]) / 2 for g, (_, s) in per_gpu.items() if g in nums and s and None not in s]
    noise = statistics.median(halves) if halves else 0.0
    mad = 1.4826 * statistics.median(abs(v - med) for v in nums.values())
    out.scale = max(noise, mad) if len(nums) >= 3 else noise
    for g, v in nums.items():
        out.rel_dev[g] = (v - med) / med if med else None
    if len(nums) < 2:
        return out
    for g, v in nums.items():
        rel = abs(out.rel_dev[g]) if out.rel_dev[g] is not None else math.inf
        if abs(v - med) > k * out.scale and rel >= min_rel and (out.scale > 0 or v != med):
            out.flagged.append(g)
    if len(nums) == 2:
        out.note = "two GPUs: a difference beyond the noise flags both (no majority to tell which one deviates)"
    out.flagged.sort()
    return out


def compare_group(
    store: Store, group: str, k: float = 3.0, min_rel: float = 0.0, keys: Sequence[str] | None = None
) -> tuple[list[str], list[KeyDeviation]]:
    """(GPU labels, one KeyDeviation per figure key measured on any GPU of the group)."""
    runs = group_runs(store, group)
    labels = [gpu_label(r) for r in runs]
    figs: dict[str, dict[str, Figure]] = {}
    units: dict[str, str] = {}
    for lab, r in zip(labels, runs):
        for f in store.figures(r.id):
            figs.setdefault(f.key, {})[lab] = f
            units[f.key] = f.unit
    out = []
    for key in sorted(figs) if keys is None else keys:
        per = {}
        for lab in labels:
            f = figs.get(key, {}).get(lab)
            ok = f is not None and f.check == "ok"
            per[lab] = (f.value if ok else None, f.spread if ok else None)  # type: ignore[union-attr]
        out.append(deviations(key, units.get(key, ""), per, k, min_rel))
    return labels, out


def deviation_rows(labels: list[str], rows: list[KeyDeviation], only_flagged: bool = False) -> list[list[str]]:
    """Per key: key, unit, the median over GPUs, each GPU's value with its deviation ('!' marks a flagged
    GPU, 'missing !' one without the key), and how many GPUs are flagged ('' for none)."""
    out = []
    for r in rows:
        if only_flagged and not r.flagged:
            continue
        cells = []
        for lab in labels:
            v = r.values.get(lab)
            if v is None:
                cells.append("missing !")
                continue
            dev = r.rel_dev.get(lab)
            txt = f"{v:.4g}" if isinstance(v, float) else str(v)
            if dev is not None:
                txt += f" ({100 * dev:+.1f}%)"
            cells.append(txt + (" !" if lab in r.flagged else ""))
        med = f"{r.median:.4g}" if isinstance(r.median, float) else str(r.median)
        out.append([r.key, r.unit, med, *cells, str(len(r.flagged) or "")])
    return out


def format_comparison(labels: list[str], rows: list[KeyDeviation], only_flagged: bool = False) -> str:
    """Markdown: per key the median over GPUs and each GPU's value with its deviation; '!' marks
    a flagged GPU."""
    head = "| key | unit | median | " + " | ".join(labels) + " | flagged |"
    lines = [head, "| --- | --- | ---: |" + " ---: |" * len(labels) + " --- |"]
    for row in deviation_rows(labels, rows, only_flagged):
        lines.append(f"| `{row[0]}` | " + " | ".join(row[1:]) + " |")
    return "\n".join(lines) + "\n"


def summary_line(group: str, labels: list[str], rows: list[KeyDeviation], k: float = 3.0, min_rel: float = 0.0) -> str:
    """Which GPUs of the group are flagged, and beyond what."""
    flagged = sorted({g for r in rows for g in r.flagged})
    return (
        f"group {group}: {len(labels)} GPU(s), {len(rows)} figure keys; flagged beyond {k:g} x noise"
        + (f" and {100 * min_rel:g}%" if min_rel else "")
        + ": "
        + (", ".join(flagged) if flagged else "none")
    )


def comparison_text(
    group: str,
    labels: list[str],
    rows: list[KeyDeviation],
    k: float = 3.0,
    min_rel: float = 0.0,
    only_flagged: bool = False,
) -> str:
    """The summary line (which GPUs are flagged) and the per-key table (Markdown)."""
    return summary_line(group, labels, rows, k, min_rel) + "\n\n" + format_comparison(labels, rows, only_flagged)


def compare_gpus(
    group: str, db: str | Path | None = None, k: float = 3.0, min_rel: float = 0.0, only_flagged: bool = False
) -> str:
    """What `gpudissect compare --gpus GROUP` prints (the store opened read-only)."""
    store = Store(db, read_only=True)
    try:
        labels, rows = compare_group(store, group, k, min_rel)
    finally:
        store.close()
    return comparison_text(group, labels, rows, k, min_rel, only_flagged)


# ---- clusters: gather exports into one store -------------------------------------------------
def import_export(store: Store, data: dict[str, Any], selection_extra: dict[str, Any] | None = None) -> int:
    """Write one run's export (Store.export format) into `store` as a new run, tagged with
    `selection_extra` (group, host, rank); the same checked reader and writer as `gpudissect import`."""
    from dataclasses import replace

    from .exportio import records_from_export

    if data.get("format") != "gpudissect-export":
        raise GpuDissectError("not a gpudissect export")
    run, benches, series, figures = records_from_export(data, "gathered export")
    tags = selection_extra or {}
    run = replace(run, selection={**run.selection, **tags}, extra={**run.extra, **tags})
    return store.import_run(run, benches, series, figures)


def rank_env() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun's variables or Slurm's."""
    for r, w, lr in (("RANK", "WORLD_SIZE", "LOCAL_RANK"), ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")):
        if r in os.environ and w in os.environ:
            return int(os.environ[r]), int(os.environ[w]), int(os.environ.get(lr, "0"))
    raise GpuDissectError(
        "no rank found: launch through torchrun (RANK/WORLD_SIZE) or srun (SLURM_PROCID/SLURM_NTASKS)"
    )


def pin_local_gpu(local_rank: int) -> None:
    """Each rank sees one GPU as device 0: its local rank's, unless the launcher already gave it
    exactly one (srun --gpus-per-task=1)."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis and "," not in vis:
        return
    pool = vis.split(",") if vis else None
    os.environ["CUDA_VISIBLE_DEVICES"] = pool[local_rank] if pool else str(local_rank)


def cluster_rank(
    dissect: Callable[[Path, str, dict[str, Any]], int], db: str | Path, group: str, backend: str = "gloo"
) -> int | None:
    """One rank of a cluster job: dissect this rank's GPU into a private store, then gather every
    rank's export on rank 0 over torch.distributed and write them into `db`. Returns the number of
    runs written (rank 0) or None (other ranks). MASTER_ADDR/MASTER_PORT must be set (torchrun
    does; under srun export them, see gpudissect/cluster.py)."""
    import socket

    import torch.distributed as dist

    os.environ.update(NO_MULTICAST)
    rank, world, local = rank_env()
    if "RANK" not in os.environ:  # srun: torch's env:// init reads these names
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(local))
    host = socket.gethostname()
    tags = {"host": host, "rank": rank, "local_rank": local, "world_size": world}
    with tempfile.TemporaryDirectory(prefix=f"gd-rank{rank}-") as tmp:
        mine = Path(tmp) / "rank.sqlite"
        payload: dict[str, Any]
        try:
            run_id = dissect(mine, group, tags)
            st = Store(mine)
            try:
                payload = {"export": st.export(run_id), "tags": tags}
            finally:
                st.close()
        except Exception as e:  # noqa: BLE001 - the other ranks still gather; rank 0 reports this one
            payload = {"error": f"{host} rank {rank}: {type(e).__name__}: {e}", "tags": tags}
    # ranks finish their dissections at different times: the group forms afterwards, with a
    # timeout long enough for the slowest rank's full run
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world, timeout=timedelta(hours=12))
    try:
        gathered: list[Any] = [None] * world if rank == 0 else []
        dist.gather_object(payload, gathered if rank == 0 else None, dst=0)
    finally:
        dist.destroy_process_group()
    if rank != 0:
        return None
    store = Store(db)
    written = 0
    try:
        for item in gathered:
            if "error" in item:
                print(f"error: {item['error']}", file=sys.stderr)
                continue
            import_export(store, item["export"], dict(item["tags"], group=group))
            written += 1
    finally:
        store.close()
    return written
