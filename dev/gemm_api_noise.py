"""On the GPU machine: how api_vs_cublas's way of timing a shape (7 alternating pairs of batches of at most 100
calls) scatters, against longer batches, a GPU made hot first, and pairs added until the median's 95 % confidence
interval is within +-0.5 %. Each condition is timed in rounds, the conditions' order rotated every round, on the
public `matmul` (ApiCase) as the benchmark does. Prints a line per (shape, condition) and writes
$OUT/api_noise.json.

Usage: PYTHONPATH=src python3 dev/gemm_api_noise.py [ROUNDS] [SET]   (default 6, squares; SET: squares, fp8-small)
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import torch

from gpu_conditions import heat, nvml_uuid, record, write_rows
from gpudissect.bench.gemm.api import ApiCase

L2 = 50 << 20
SETS: dict[str, list[tuple[str, str, int, int, int]]] = {}
SETS["squares"] = [  # (label, dtype, M, N, K)
    ("2048", "bf16", 2048, 2048, 2048),
    ("2048", "fp16", 2048, 2048, 2048),
    ("1024", "bf16", 1024, 1024, 1024),
    ("4096", "bf16", 4096, 4096, 4096),
    ("8b.gate_up.512", "bf16", 512, 28672, 4096),
    ("8b.qkv.16", "bf16", 16, 6144, 4096),
]

# the e4m3 decode shapes that read 3-11 % lower with long batches in the first adaptive run, and two that did not
SETS["fp8-small"] = [
    ("8b.down.128", "e4m3", 128, 4096, 14336),
    ("8b.down.16", "e4m3", 16, 4096, 14336),
    ("8b.qkv.16", "e4m3", 16, 6144, 4096),
    ("8b.o.16", "e4m3", 16, 4096, 4096),
    ("8b.gate_up.16", "e4m3", 16, 28672, 4096),
    ("70b.o.16", "e4m3", 16, 8192, 8192),
]


CONDITIONS: dict[str, dict[str, Any]] = {
    "bench": {},  # as api_vs_cublas now: 7 pairs, 25 ms target, at most 100 calls
    "long": {"max_iters": 1000},
    "hot": {"heat": True},
    "adaptive": {"max_iters": 1000, "ci_rel": 0.005, "budget_s": 3.0},
}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    which = sys.argv[2] if len(sys.argv) > 2 else "squares"
    u = nvml_uuid()
    rows = []
    for label, dt, m, n, k in SETS[which]:
        case = ApiCase(torch, dt, m, n, k, L2)
        got: dict[str, list[dict[str, Any]]] = {c: [] for c in CONDITIONS}
        names = list(CONDITIONS)
        for r in range(rounds):
            for c in names[r % len(names) :] + names[: r % len(names)]:
                kw = dict(CONDITIONS[c])
                if kw.pop("heat", False):
                    heat(torch)
                t0 = time.monotonic()
                out = case.compare(7, 25.0, u, **kw)
                if not out.ok:
                    print(f"{label} {dt} {c}: FAILED {out.why}", flush=True)
                    continue
                got[c].append(record(out) | {"seconds": time.monotonic() - t0})
        for c, xs in got.items():
            if not xs:
                continue
            meds = [x["ratio"] for x in xs]
            pooled = [y for x in xs for y in x["ratios"]]
            ours = statistics.median(x["ours_us"] for x in xs)
            theirs = statistics.median(x["cublas_us"] for x in xs)
            print(
                f"{label:>15} {dt} {c:>8}: medians {min(meds):.4f}-{max(meds):.4f} "
                f"(median {statistics.median(meds):.4f}, sd {statistics.pstdev(meds):.4f}); "
                f"pooled {statistics.median(pooled):.4f} over {len(pooled)} pairs; iters {xs[0]['iters']}, "
                f"pairs {[x['pairs'] for x in xs]}, ours {ours:.2f} us, cuBLAS {theirs:.2f} us, "
                f"{sum(x['seconds'] for x in xs):.1f} s",
                flush=True,
            )
            rows.append({"shape": label, "dtype": dt, "condition": c, "runs": xs})
        del case
        torch.cuda.empty_cache()
    write_rows(f"api_noise_{which}", rounds, rows)


if __name__ == "__main__":
    main()
