"""On the GPU machine: which tile width should run the shapes whose 128x256 tile pairs leave a wave partly idle
(issue 30 §2): rungs 6 (256-column pairs, data-parallel), 9 (128x128), 10 (256-column pairs, stream-K) and 11
(192-column pairs, stream-K; and forced data-parallel, `11dp`) timed against cuBLAS on the Llama-3 projections
at 512, 1024 and 2048 tokens and on squares 1024-4096 (bf16), and rungs 10 and 11 on e4m3 squares.

Each point: one set of rotated operands (bench/gemm/cases.py), every launch's output checked against cuBLAS and
float64 before it is timed, ours and cuBLAS in alternation (median of per-pair t_cublas / t_ours). Prints a line
per point and the best rung per shape beside the public default's (AUTO), and writes $OUT/tile_sweep.json.

Usage: PYTHONPATH=src python3 dev/gemm_tile_sweep.py [--quick | --targets | --targets224 | --pdl]
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
from gpudissect.gemm.variants import RUNGS

L2 = 50 << 20
VARIANTS = {
    "6": (6, None),
    "9": (9, None),
    "10": (10, None),
    "11": (11, None),
    "11dp": (11, "all"),
    "12": (12, None),
    "13": (13, None),
}
# --targets: the shapes the wide-tile rule (gemm.variants.pick_rung) moves to rung 11 or 12, and neighbours it keeps
TARGETS = [
    ("70b qkv 256", 256, 10240, 8192),
    ("70b qkv 512", 512, 10240, 8192),
    ("70b qkv 1024", 1024, 10240, 8192),
    ("8b qkv 512", 512, 6144, 4096),
    ("square 3072", 3072, 3072, 3072),
    ("square 4096", 4096, 4096, 4096),
    ("square 4352", 4352, 4352, 4352),
    ("square 5120", 5120, 5120, 5120),
    ("square 5888", 5888, 5888, 5888),
]
# --targets224: the shapes rung 13 (224 columns) takes, and the rung-9 shapes a wide tile now takes over rung 9
TARGETS_224 = [
    ("8b gate_up 512", 512, 28672, 4096),
    ("8b gate_up 256", 256, 28672, 4096),
    ("70b gate_up 256", 256, 57344, 8192),
    ("square 3328", 3328, 3328, 3328),
    ("8b qkv 1024", 1024, 6144, 4096),
    ("70b qkv 1024", 1024, 10240, 8192),
]


def launches(case: Case, rung: int, dp: Any) -> list[Any]:
    scales = list(zip(case.sa, case.sb)) if case.dtype == "e4m3" else [(None, None)] * case.sets
    m, n, k = case.m, case.n, case.k
    dp_units = RUNGS[rung].units(m, n) if dp == "all" else None
    return [
        prepare(
            rung,
            case.dtype,
            a.data_ptr(),
            bt.data_ptr(),
            c.data_ptr(),
            m,
            n,
            k,
            sa.data_ptr() if sa is not None else 0,
            sb.data_ptr() if sb is not None else 0,
            dp_units=dp_units,
        )
        for a, bt, c, (sa, sb) in zip(case.a, case.bt, case.c, scales)
    ]


PDL_SHAPES = [
    ("square 1024", 1024, 1024, 1024),
    ("square 2048", 2048, 2048, 2048),
    ("square 3072", 3072, 3072, 3072),
    ("square 4096", 4096, 4096, 4096),
    ("8b qkv 16", 16, 6144, 4096),
    ("8b down 128", 128, 4096, 14336),
    ("8b qkv 512", 512, 6144, 4096),
    ("70b qkv 512", 512, 10240, 8192),
    ("8b o 2048", 2048, 4096, 4096),
]


def pdl(rows: list[dict[str, Any]], pairs: int) -> None:
    """The public default's kernels (the small-M path where matmul takes it, else AUTO) launched with and without
    programmatic dependent launch (gemm.launch.PDL_FROM), each against cuBLAS in alternation on the same operands:
    what overlapping one GEMM's set-up with the end of the one before it buys, back to back."""
    from gpudissect.gemm import launch as gl
    from gpudissect.gemm import small
    from gpudissect.gemm.small_launch import prepare_small

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for label, m, n, k in PDL_SHAPES:
        case = Case(torch, 0, "bf16", m, n, k, L2)
        v = small.variant_for(m, n, "bf16", sms, forced=False)
        for name, first in (("pdl", 6), ("no pdl", 99), ("pdl again", 6)):
            gl.PDL_FROM = first  # read when a Launch is made
            ls = [
                prepare_small("bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, v, small.SMALL_PROMOTION)
                if v is not None
                else prepare(0, "bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k)
                for a, bt, c in zip(case.a, case.bt, case.c)
            ]
            r = {"shape": label, "dtype": "bf16", "m": m, "n": n, "k": k, **point(case, name, ls, pairs)}
            r["pdl"] = len(ls[0].fast.attrs or ()) > (ls[0].cluster > 1)
            rows.append(r)
            print(
                f"{label:>14} {name:<9} rung {ls[0].rung} pdl={r['pdl']} x{r.get('ratio')} {r.get('spread', '')} "
                f"{r.get('ours_us', '-')} us (cuBLAS {r.get('cublas_us', '-')}) {r.get('why', '')[:90]}",
                flush=True,
            )
        gl.PDL_FROM = 6
        del case
        torch.cuda.empty_cache()


def point(case: Case, name: str, ls: list[Any], pairs: int) -> dict[str, Any]:
    case.launches = ls
    try:
        out = case.compare(pairs, 10.0, None)
    except Exception as e:  # noqa: BLE001 - one variant failing must not hide the rest
        return {"variant": name, "ratio": None, "why": f"{type(e).__name__}: {e}"}
    if not out.ok:
        return {"variant": name, "ratio": None, "why": out.why}
    return {
        "variant": name,
        "rung": ls[0].rung,
        "grid": ls[0].grid,
        "ratio": round(out.ratio, 3),
        "spread": [round(min(out.ratios), 3), round(max(out.ratios), 3)],
        "ours_us": round(statistics.median(out.ours_ms) * 1e3, 2),
        "cublas_us": round(statistics.median(out.cublas_ms) * 1e3, 2),
    }


def shape(
    rows: list[dict[str, Any]], label: str, dtype: str, m: int, n: int, k: int, names: list[str], pairs: int
) -> None:
    t0 = time.perf_counter()
    case = Case(torch, 0, dtype, m, n, k, L2)  # AUTO: the public default's choice on these operands
    todo: list[tuple[str, list[Any]]] = [(f"auto(r{case.rung})", list(case.launches))]
    for name in names:
        rung, dp = VARIANTS[name]
        todo.append((name, launches(case, rung, dp)))
    for name, ls in todo:
        r = {"shape": label, "dtype": dtype, "m": m, "n": n, "k": k, **point(case, name, ls, pairs)}
        rows.append(r)
        print(
            f"{label:>18} {dtype} {name:<9} x{r.get('ratio')} {r.get('spread', '')} "
            f"{r.get('ours_us', '-')} us (cuBLAS {r.get('cublas_us', '-')}) grid {r.get('grid', '-')} "
            f"{r.get('why', '')[:90]}",
            flush=True,
        )
    print(f"  [{time.perf_counter() - t0:.1f} s]", flush=True)
    del case, todo
    torch.cuda.empty_cache()


def main() -> None:
    quick = "--quick" in sys.argv
    tokens = (512,) if quick else (512, 1024, 2048)
    pairs = 5 if quick else 7
    rows: list[dict[str, Any]] = []
    names = {"--targets224": "tile_targets224.json", "--targets": "tile_targets.json", "--pdl": "pdl.json"}
    name = next((v for k, v in names.items() if k in sys.argv), "tile_sweep.json")
    path = os.path.join(os.environ.get("OUT", "."), name)
    names16 = ["6", "9", "10", "11", "11dp"]
    try:
        if "--pdl" in sys.argv:
            pdl(rows, pairs)
        elif "--targets224" in sys.argv:
            for label, m, n, k in TARGETS_224:
                shape(rows, label, "bf16", m, n, k, ["6", "9", "10", "11", "12", "13"], pairs)
        elif "--targets" in sys.argv:
            for label, m, n, k in TARGETS:
                shape(rows, label, "bf16", m, n, k, ["6", "9", "10", "11", "12"], pairs)
        else:
            for model, projs in LLAMA.items():
                for proj, (n, k) in projs.items():
                    for m in tokens:
                        shape(rows, f"{model} {proj} {m}", "bf16", m, n, k, names16, pairs)
            for s in (1024, 1536, 2048, 2560, 3072, 3584, 4096):
                shape(rows, f"square {s}", "bf16", s, s, s, names16, pairs)
            for s in (2048, 3072, 4096):
                shape(rows, f"square {s}", "e4m3", s, s, s, ["10", "11", "11dp"], pairs)
    finally:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)
    print("\nbest per shape (the default beside it):")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("ratio") is not None:
            groups.setdefault((r["shape"], r["dtype"]), []).append(r)
    for (label, dtype), rs in groups.items():
        top = max(rs, key=lambda r: r["ratio"])
        auto = next((r for r in rs if r["variant"].startswith("auto")), {"variant": "-", "ratio": None})
        print(f"{label:>18} {dtype} best {top['variant']:<9} x{top['ratio']}", end="")
        print(f"  default {auto['variant']} x{auto['ratio']}")


if __name__ == "__main__":
    main()
