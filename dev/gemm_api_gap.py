"""On the GPU machine: why the 2048^3 square reads level with cuBLAS through `matmul` (api_vs_cublas) but 2-4 % ahead
on prepared launches (vs_cublas, dev/gemm_tile_sweep.py): the same shape timed both ways in one process, each also
with the stream held busy by a sleep kernel before every batch (so that neither side's first calls find the GPU
idle), twice in turn. Prints a line per (way, held) and writes $OUT/api_gap.json.

Usage: PYTHONPATH=src python3 dev/gemm_api_gap.py [SIZE ...]   (default 2048; bf16)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from typing import Any

import torch

from gpudissect.bench.gemm.api import ApiCase
from gpudissect.bench.gemm.cases import Case

L2 = 50 << 20
PAIRS = 15
SLEEP_CYCLES = 1_000_000  # ~0.5 ms at ~2 GHz: longer than enqueueing a few calls
PLAIN_BATCH = Case._batch


def held_batch(self: Any, side: str, iters: int, start: int) -> tuple[float, float, float]:
    """Case._batch behind a sleep kernel enqueued before its first event: the host enqueues while the GPU sleeps."""
    torch.cuda._sleep(SLEEP_CYCLES)
    return PLAIN_BATCH(self, side, iters, start)


def measure(case: Any, held: bool) -> dict[str, Any]:
    if held:
        Case._batch = held_batch  # type: ignore[method-assign]
    try:
        out = case.compare(PAIRS, 25.0, None)
    finally:
        Case._batch = PLAIN_BATCH  # type: ignore[method-assign]
    if not out.ok:
        return {"ok": False, "why": out.why}
    ours, theirs = statistics.median(out.ours_ms), statistics.median(out.cublas_ms)
    return {
        "ok": True,
        "ratio": round(out.ratio, 4),
        "spread": [round(min(out.ratios), 4), round(max(out.ratios), 4)],
        "ours_us": round(ours * 1e3, 2),
        "cublas_us": round(theirs * 1e3, 2),
        "ratio_of_medians": round(theirs / ours, 4),
        "iters": out.iters,
    }


def main() -> None:
    sizes = [int(x) for x in sys.argv[1:]] or [2048]
    rows = []
    for n in sizes:
        cases = {"prepared": Case(torch, 0, "bf16", n, n, n, L2), "api": ApiCase(torch, "bf16", n, n, n, L2)}
        for rep in range(2):
            for way in ("prepared", "api") if rep == 0 else ("api", "prepared"):
                for held in (False, True):
                    r = {"n": n, "way": way, "held": held, "rep": rep, **measure(cases[way], held)}
                    rows.append(r)
                    print(
                        f"{n} {way:<8} {'held' if held else 'cold':<4} rep {rep}: x{r.get('ratio')} {r.get('spread')} "
                        f"ours {r.get('ours_us')} us cuBLAS {r.get('cublas_us')} us (ratio of medians "
                        f"{r.get('ratio_of_medians')}) {r.get('why', '')}",
                        flush=True,
                    )
    with open(os.path.join(os.environ.get("OUT", "."), "api_gap.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
