"""On the GPU machine: which kernel should run a small-M GEMM (issue 30 §2), measured over the whole space the
small-M path can take, and the rung fp8 should run on squares.

Part 1, small M: for every Llama-3 8B/70B projection at 16-512 tokens, one set of operands (bench/gemm/cases.py:
rotated sets, checked against cuBLAS and float64) and, on it, the ladder's default and every small-M variant
(gemm.small.SmallVariant: token tile MP, weight rows BW 64/128, CTAs per SM, weight map's L2 promotion) whose
token tiles number at most 8, each timed against cuBLAS in alternation (median of per-pair t_cublas / t_ours).
Part 2, squares: rungs 6, 7, 9, 10 on bf16 and rungs 6 and 10 on e4m3 (against torch._scaled_mm) at 2048-8192.

Prints a line per point, the best variant per shape and M, and writes $OUT/small_sweep.json.

Usage: PYTHONPATH=src python3 dev/gemm_small_sweep.py [--tokens 16,32,...] [--no-squares]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any

import torch

from gpudissect.bench.gemm.cases import Case
from gpudissect.bench.gemm.vs_cublas import LLAMA
from gpudissect.gemm.launch import prepare
from gpudissect.gemm.small import MPS, SmallVariant, pick_mp
from gpudissect.gemm.small_launch import prepare_small

L2 = 50 << 20
PAIRS, TARGET_MS = 3, 5.0


def candidates(m: int) -> list[tuple[SmallVariant, str]]:
    """Small-M variants worth timing at M tokens: token tiles up to the one that holds M, at most 8 of them."""
    out = []
    for mp in MPS:
        if mp > pick_mp(m) or -(-m // mp) > 8:
            continue
        for bw, ctas in ((128, 1), (128, 2), (64, 2), (64, 3)):
            for promo in ("L2_256B",) if (bw, ctas) != (128, 2) else ("L2_256B", "NONE"):
                out.append((SmallVariant(mp, bw=bw, ctas_per_sm=ctas), promo))
    return out


def timed(case: Case, launches: list[Any]) -> dict[str, Any]:
    case.launches = launches
    try:
        out = case.compare(PAIRS, TARGET_MS, None)
    except Exception as e:  # noqa: BLE001 - one variant failing must not hide the rest
        return {"ratio": None, "why": f"{type(e).__name__}: {e}"}
    if not out.ok:
        return {"ratio": None, "why": out.why}
    return {
        "ratio": round(out.ratio, 3),
        "spread": [round(min(out.ratios), 3), round(max(out.ratios), 3)],
        "ours_us": round(statistics.median(out.ours_ms) * 1e3, 2),
        "cublas_us": round(statistics.median(out.cublas_ms) * 1e3, 2),
    }


def small_m(tokens: list[int], rows: list[dict[str, Any]]) -> None:
    for model, projs in LLAMA.items():
        for proj, (n, k) in projs.items():
            for m in tokens:
                case = Case(torch, 0, "bf16", m, n, k, L2)  # the ladder's default (AUTO) on its own operands
                ladder = list(case.launches)
                base = {"model": model, "proj": proj, "m": m, "n": n, "k": k}
                todo: list[tuple[str, Any]] = [("ladder", None)] + [(f"{v.name}/{p}", (v, p)) for v, p in candidates(m)]
                for name, how in todo:
                    t0 = time.perf_counter()
                    if how is None:
                        launches, info = ladder, f"rung {ladder[0].rung} grid {ladder[0].grid}"
                    else:
                        v, p = how
                        try:
                            launches = [
                                prepare_small("bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, v, p)
                                for a, bt, c in zip(case.a, case.bt, case.c)
                            ]
                        except Exception as e:  # noqa: BLE001
                            rows.append({**base, "variant": name, "ratio": None, "why": f"{type(e).__name__}: {e}"})
                            continue
                        sl = launches[0]
                        info = f"stages {v.stages} splits {sl.splits} grid {sl.grid}"
                    r = timed(case, launches)
                    row = {**base, "variant": name, "info": info, **r}
                    rows.append(row)
                    print(
                        f"{model:>3} {proj:>7} M={m:<4} {name:<22} x{r.get('ratio')} "
                        f"{r.get('ours_us', '-')} us (cuBLAS {r.get('cublas_us', '-')}) {info} "
                        f"{r.get('why', '')[:80]} [{time.perf_counter() - t0:.2f} s]",
                        flush=True,
                    )
                del case, ladder
                torch.cuda.empty_cache()


def squares(rows: list[dict[str, Any]]) -> None:
    for dtype, rungs, sizes in (("bf16", (6, 7, 9, 10), (2048, 3072, 4096)), ("e4m3", (6, 10), (2048, 4096, 8192))):
        for s in sizes:
            case = Case(torch, 10, dtype, s, s, s, L2)
            for r in rungs:
                scales = list(zip(case.sa, case.sb)) if dtype == "e4m3" else [(None, None)] * case.sets
                launches = [
                    prepare(
                        r,
                        dtype,
                        a.data_ptr(),
                        bt.data_ptr(),
                        c.data_ptr(),
                        s,
                        s,
                        s,
                        sa.data_ptr() if sa is not None else 0,
                        sb.data_ptr() if sb is not None else 0,
                    )
                    for a, bt, c, (sa, sb) in zip(case.a, case.bt, case.c, scales)
                ]
                case.launches = launches
                out = case.compare(5, 10.0, None)
                row = {
                    "square": s,
                    "dtype": dtype,
                    "rung": r,
                    "ratio": round(out.ratio, 3) if out.ok else None,
                    "spread": [round(min(out.ratios), 3), round(max(out.ratios), 3)] if out.ok else None,
                    "why": "" if out.ok else out.why,
                }
                rows.append(row)
                print(f"square {s} {dtype} rung {r}: x{row['ratio']} {row['spread']} {row['why'][:80]}", flush=True)
            del case
            torch.cuda.empty_cache()


def best(rows: list[dict[str, Any]]) -> None:
    print("\nbest per shape and M (ladder beside it):")
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in rows:
        if "m" in r and r.get("ratio") is not None:
            groups.setdefault((r["model"], r["proj"], r["m"]), []).append(r)
    for (model, proj, m), rs in groups.items():
        top = max(rs, key=lambda r: r["ratio"])
        lad = next((r["ratio"] for r in rs if r["variant"] == "ladder"), None)
        print(f"{model:>3} {proj:>7} M={m:<4} best {top['variant']:<22} x{top['ratio']}  ladder x{lad}  {top['info']}")


def prebuild(tokens: list[int]) -> None:
    """Compile every variant the sweep times, in parallel (NVRTC runs outside the GIL), before any timing."""
    from concurrent.futures import ThreadPoolExecutor

    from gpudissect.device.compiler import arch_for, compile_kernel_file
    from gpudissect.gemm.small import FILE

    arch = arch_for(*torch.cuda.get_device_capability())
    todo = {v for m in tokens for v, _ in candidates(m)}
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda v: compile_kernel_file(FILE, arch, v.defines("bf16")), todo))
    print(f"{len(todo)} small-M variants built", flush=True)


def main() -> None:
    args = sys.argv[1:]
    tokens = [16, 32, 64, 128, 256, 512]
    if "--tokens" in args:
        tokens = [int(t) for t in args[args.index("--tokens") + 1].split(",")]
    prebuild(tokens)
    rows: list[dict[str, Any]] = []
    path = os.path.join(os.environ.get("OUT", "."), "small_sweep.json")
    try:
        small_m(tokens, rows)
        best(rows)
        if "--no-squares" not in args:
            squares(rows)
    finally:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
