"""On the GPU machine: does a small-M variant that re-reads the weight from L2 (several token tiles) lose more than
cuBLAS when the GPU is hot? profiles/gemm-api-noise found e4m3 Llama-3-8B down at 128 tokens (small32c1: 4 token
tiles, each re-reading the 59 MB weight from L2) 16 % slower after a power-limited burst, cuBLAS 4 %. If L2
bandwidth (which follows the SM clock) binds it, a variant that reads the weight once (one token tile, K split over
the SMs) should hold up better. Each shape and forced variant (SmallCase: prepared launches against cuBLAS, operands
checked) is timed `cold` (after 0.3 s idle) and `hot` (after 0.5 s of 8192^3 GEMMs), in rounds, the order rotated;
NVML's SM clock in each side's batches is kept. Prints a line per (shape, variant, condition); writes
$OUT/small_heat.json.

Usage: PYTHONPATH=src python3 dev/gemm_small_heat.py [ROUNDS] [first | n4096]   (default 4, first)
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import torch

from gpu_conditions import heat, nvml_uuid, record, write_rows
from gpudissect.bench.gemm.cases import SmallCase
from gpudissect.gemm.small import MPS, ONE_PER_SM, VARIANTS, default_variant

L2 = 50 << 20
SHAPES = [  # (label, dtype, M, N, K)
    ("8b.down.128", "e4m3", 128, 4096, 14336),
    ("8b.down.128", "bf16", 128, 4096, 14336),
    ("70b.down.128", "e4m3", 128, 8192, 28672),
    ("8b.qkv.128", "e4m3", 128, 6144, 4096),
    ("8b.down.64", "e4m3", 64, 4096, 14336),
]
CANDIDATES = [ONE_PER_SM[32], ONE_PER_SM[64], ONE_PER_SM[128], VARIANTS[128]]
# `n4096`: the shapes where the rule takes 4 token tiles (Llama-3-8B O and down, N = 4096: 32 weight tiles) at 64-256
# tokens, in both dtypes, against the same with 2 and 1 token tiles (K split to fill the SMs instead)
N4096 = [
    (f"8b.{proj}.{m}", dt, m, 4096, k)
    for proj, k in (("o", 4096), ("down", 14336))
    for m in (64, 128, 256)
    for dt in ("bf16", "e4m3")
]


def candidates(m: int, which: str) -> list[Any]:
    if which == "first":
        return CANDIDATES
    return [ONE_PER_SM[mp] for mp in MPS if -(-m // mp) <= 4 and mp <= m]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    which = sys.argv[2] if len(sys.argv) > 2 else "first"
    u = nvml_uuid()
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    rows = []
    for label, dt, m, n, k in SHAPES if which == "first" else N4096:
        rule = default_variant(m, n, dt, sms, k, props.L2_cache_size)
        cases = {}
        for v in candidates(m, which):
            if -(-m // v.mp) > 8:
                continue
            try:
                cases[v.name] = SmallCase(torch, v, dt, m, n, k, L2)
            except Exception as e:  # noqa: BLE001 - one variant failing must not hide the rest
                print(f"{label} {dt} {v.name}: {type(e).__name__}: {e}", flush=True)
        got: dict[tuple[str, str], list[dict[str, Any]]] = {}
        keys = [(name, cond) for name in cases for cond in ("cold", "hot")]
        for r in range(rounds):
            for name, cond in keys[r % len(keys) :] + keys[: r % len(keys)]:
                if cond == "hot":
                    heat(torch)
                else:
                    torch.cuda.synchronize()
                    time.sleep(0.3)
                out = cases[name].compare(7, 25.0, u, max_iters=1000)
                if not out.ok:
                    print(f"{label} {dt} {name} {cond}: FAILED {out.why}", flush=True)
                    continue
                got.setdefault((name, cond), []).append(record(out))
        for (name, cond), xs in got.items():
            pooled = [y for x in xs for y in x["ratios"]]
            ours = statistics.median(x["ours_us"] for x in xs)
            theirs = statistics.median(x["cublas_us"] for x in xs)
            mhz = [x["mhz"].get("ours") for x in xs if x["mhz"].get("ours")]
            print(
                f"{label:>13} {dt} {name:>10}{'*' if rule is not None and rule.name == name else ' '} {cond:>4}: "
                f"x{statistics.median(pooled):.3f} (rounds {min(x['ratio'] for x in xs):.3f}-"
                f"{max(x['ratio'] for x in xs):.3f}) ours {ours:.2f} us cuBLAS {theirs:.2f} us"
                f" SM {statistics.median(mhz) if mhz else float('nan'):.0f} MHz",
                flush=True,
            )
            rows.append(
                {
                    "shape": label,
                    "dtype": dt,
                    "variant": name,
                    "rule": rule.name if rule else None,
                    "condition": cond,
                    "runs": xs,
                }
            )
        del cases
        torch.cuda.empty_cache()
    write_rows(f"small_heat_{which}", rounds, rows)


if __name__ == "__main__":
    main()
