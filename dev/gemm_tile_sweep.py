"""On the GPU machine: which tile width should run the shapes whose 128x256 tile pairs leave a wave partly idle
(issue 30 §2): rungs 6 (256-column pairs, data-parallel), 9 (128x128), 10 (256-column pairs, stream-K) and 11
(192-column pairs, stream-K; and forced data-parallel, `11dp`) timed against cuBLAS on the Llama-3 projections
at 512, 1024 and 2048 tokens and on squares 1024-4096 (bf16), and rungs 10 and 11 on e4m3 squares.

Each point: one set of rotated operands (bench/gemm/cases.py), every launch's output checked against cuBLAS and
float64 before it is timed, ours and cuBLAS in alternation (median of per-pair t_cublas / t_ours). Prints a line
per point and the best rung per shape beside the public default's (AUTO), and writes $OUT/tile_sweep.json.

--fp8: every rung on e4m3 squares and Llama-3 projections, with `bf16rule` (the rung pick_rung gives bf16 on the
shape) beside BEST_FP8 (rung 10, matmul's fp8 default): whether fp8 should take bf16's per-shape choice.
--fp8-small: e4m3 at 16-256 tokens: the ladder's pick (`auto`), rung 9, rung 10 with every unit split along K over
all clusters (`10split`, the split-all rule), and the small-M path's e4m3 build (the variant its default rule picks,
and the token tile's one- and two-CTA-per-SM forms).
--one-wave: the one-wave shapes (2048^3 and neighbours) on rungs 6, 7 and 10, 15 pairs each, twice.
--small-pdl: the small-M path launched plainly and as a dependent launch whose kernel lets the next grid be scheduled
at its start, once its last load is issued, or at its exit (gemm_small.cu SM_PDL_TRIGGER 0, 1, 2).

--ladder-pdl: the same for the ladder's public default per shape (gemm.cu GM_PDL_TRIGGER 0, 1, 2).
--l2-prefetch: the ladder's dependent launches against builds that prefetch the first 2, 4 or 8 k-blocks of their
first unit into L2 before the PDL wait (gemm.cu GM_L2_PREFETCH).

Usage: PYTHONPATH=src python3 dev/gemm_tile_sweep.py [--quick | --targets | --targets224 | --pdl | --fp8 | --fp8-small
       | --small-pdl | --ladder-pdl | --l2-prefetch | --one-wave]
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
from gpudissect.gemm.variants import RUNGS, pick_rung

L2 = 50 << 20
VARIANTS = {
    "6": (6, None),
    "9": (9, None),
    "10": (10, None),
    "11": (11, None),
    "11dp": (11, "all"),
    "12": (12, None),
    "13": (13, None),
    "10split": (10, 0),
    "7": (7, None),
}
# --one-wave: the shapes whose 128 x 256 pairs make one wave (2048^3 and its neighbours), on every 256-wide tile:
# rung 6 (the default there), rung 7 (256 x 128 tiles, A multicast along N), rung 10, rung 13
ONE_WAVE = [
    ("square 2048", "bf16", 2048, 2048, 2048),
    ("square 2048", "fp16", 2048, 2048, 2048),
    ("square 2048", "e4m3", 2048, 2048, 2048),
    ("2048 x 2048 x 8192", "bf16", 2048, 2048, 8192),
    ("1024 x 4096 x 4096", "bf16", 1024, 4096, 4096),
]
FP8_SQUARES = (1024, 1536, 2048, 2304, 2560, 3072, 3328, 3840, 4096, 4352, 5120)
SMALL_PDL_SHAPES = [
    ("8b qkv 16", 16, 6144, 4096),
    ("70b qkv 16", 16, 10240, 8192),
    ("70b o 64", 64, 8192, 8192),
    ("8b o 128", 128, 4096, 4096),
    ("8b down 128", 128, 4096, 14336),
    ("70b down 128", 128, 8192, 28672),
    ("8b gate_up 128", 128, 28672, 4096),
    ("8b qkv 256", 256, 6144, 4096),
]
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


def pointers(case: Case) -> list[tuple[int, int, int, int, int]]:
    """(A, B^T, C, scale_a, scale_b) device addresses of each of the case's operand sets (scales 0 for 16-bit)."""
    scales = list(zip(case.sa, case.sb)) if case.dtype == "e4m3" else [(None, None)] * case.sets
    return [
        (
            a.data_ptr(),
            bt.data_ptr(),
            c.data_ptr(),
            sa.data_ptr() if sa is not None else 0,
            sb.data_ptr() if sb is not None else 0,
        )
        for a, bt, c, (sa, sb) in zip(case.a, case.bt, case.c, scales)
    ]


def small_launches(case: Case, v: Any) -> list[Any]:
    """The small-M path's launches of variant `v` on the case's operand sets (scales for e4m3)."""
    from gpudissect.gemm import small
    from gpudissect.gemm.small_launch import prepare_small

    return [
        prepare_small(case.dtype, a, bt, c, case.m, case.n, case.k, v, small.SMALL_PROMOTION, sa, sb)
        for a, bt, c, sa, sb in pointers(case)
    ]


def launches(case: Case, rung: int, dp: Any) -> list[Any]:
    m, n, k = case.m, case.n, case.k
    dp_units = RUNGS[rung].units(m, n) if dp == "all" else dp  # "all": data-parallel; 0: every unit split along K
    return [
        prepare(rung, case.dtype, a, bt, c, m, n, k, sa, sb, dp_units=dp_units) for a, bt, c, sa, sb in pointers(case)
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


LADDER_PDL_SHAPES = [
    ("square 1024", "bf16", 1024, 1024, 1024),
    ("square 2048", "bf16", 2048, 2048, 2048),
    ("square 2048", "fp16", 2048, 2048, 2048),
    ("square 3072", "bf16", 3072, 3072, 3072),
    ("square 4096", "bf16", 4096, 4096, 4096),
    ("square 8192", "bf16", 8192, 8192, 8192),
    ("8b qkv 512", "bf16", 512, 6144, 4096),
    ("8b down 512", "bf16", 512, 4096, 14336),
    ("8b gate_up 512", "bf16", 512, 28672, 4096),
    ("70b qkv 512", "bf16", 512, 10240, 8192),
    ("8b o 2048", "bf16", 2048, 4096, 4096),
    ("8b qkv 16", "e4m3", 16, 6144, 4096),
    ("square 2048", "e4m3", 2048, 2048, 2048),
    ("square 4096", "e4m3", 4096, 4096, 4096),
]


def ladder_builds(rows: list[dict[str, Any]], pairs: int, modes: list[tuple[str, bool, dict[str, int]]]) -> None:
    """The ladder's public default per shape (AUTO), built with each mode's extra gemm.cu defines and launched as a
    dependent launch or plainly, each against cuBLAS in alternation."""
    from gpudissect.device import current
    from gpudissect.device.compiler import arch_for, compile_kernel_file
    from gpudissect.gemm import launch as gl

    funcs: dict[tuple[int, str, str], Any] = {}
    original = gl.function
    for label, dtype, m, n, k in LADDER_PDL_SHAPES:
        gl.function = original
        case = Case(torch, 0, dtype, m, n, k, L2)
        rung = case.rung
        for name, dependent, extra in modes:

            def fn(r: Any, dt: str, extra: dict[str, int] = extra) -> Any:
                key = (r.number, dt, repr(sorted(extra.items())))
                if key not in funcs:
                    ctx = current.context()
                    cubin = compile_kernel_file("gemm.cu", arch_for(*ctx.cc), {**r.defines(dt), **extra})
                    funcs[key] = current.load_function(cubin, r.function, r.smem_bytes, "gemm.cu")
                return funcs[key]

            gl.function = fn
            gl.PDL_FROM = 6 if dependent else 99  # read when a Launch is made
            ls = launches(case, rung, None)
            r = {"shape": label, "dtype": dtype, "m": m, "n": n, "k": k, "defines": extra}
            r.update(point(case, name, ls, pairs))
            rows.append(r)
            print(
                f"{label:>14} {dtype} rung {rung:<2} {name:<15} x{r.get('ratio')} {r.get('spread', '')} "
                f"{r.get('ours_us', '-')} us (cuBLAS {r.get('cublas_us', '-')}) {r.get('why', '')[:90]}",
                flush=True,
            )
        gl.PDL_FROM = 6
        gl.function = original
        del case
        torch.cuda.empty_cache()


LADDER_PDL_MODES = [
    ("plain", False, {}),
    ("pdl start", True, {"GM_PDL_TRIGGER": 0}),
    ("pdl last load", True, {"GM_PDL_TRIGGER": 1}),
    ("pdl exit", True, {"GM_PDL_TRIGGER": 2}),
    ("pdl start again", True, {"GM_PDL_TRIGGER": 0}),
]
# --l2-prefetch: the shipped build (dependent launch, trigger at the start) against builds that prefetch the first
# k-blocks of their first unit into L2 before the PDL wait (GM_L2_PREFETCH)
L2_PREFETCH_MODES = [
    ("pdl", True, {}),
    ("prefetch 2", True, {"GM_L2_PREFETCH": 2}),
    ("prefetch 4", True, {"GM_L2_PREFETCH": 4}),
    ("prefetch 8", True, {"GM_L2_PREFETCH": 8}),
    ("pdl again", True, {}),
]


def small_pdl(rows: list[dict[str, Any]], pairs: int) -> None:
    """The small-M path's default variant per shape: plain launches, and dependent launches of builds that trigger
    the next grid at their start (today's build), after their last load, or at exit; plain again at the end."""
    from gpudissect.device import current
    from gpudissect.device.compiler import arch_for, compile_kernel_file
    from gpudissect.gemm import small
    from gpudissect.gemm import small_launch as sl

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    funcs: dict[tuple[Any, int], Any] = {}
    modes = (
        ("plain", False, 0),
        ("pdl start", True, 0),
        ("pdl last load", True, 1),
        ("pdl exit", True, 2),
        ("plain again", False, 0),
    )
    for label, m, n, k in SMALL_PDL_SHAPES:
        v = small.variant_for(m, n, "bf16", sms, forced=False)
        if v is None:
            print(f"{label:>14}: the ladder runs it, not the small-M path", flush=True)
            continue
        case = Case(torch, 0, "bf16", m, n, k, L2)
        for name, dependent, trigger in modes:

            def fn(var: Any, dtype: str, trigger: int = trigger) -> Any:
                if (var, trigger) not in funcs:
                    ctx = current.context()
                    defines = {**var.defines(dtype), "SM_PDL_TRIGGER": trigger}
                    cubin = compile_kernel_file(small.FILE, arch_for(*ctx.cc), defines)
                    funcs[var, trigger] = current.load_function(cubin, small.FUNCTION, var.smem_bytes, small.FILE)
                return funcs[var, trigger]

            sl.function = fn
            sl.SmallLaunch.pdl = lambda self, d=dependent: d  # type: ignore[method-assign]
            ls = [
                sl.prepare_small("bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, v, small.SMALL_PROMOTION)
                for a, bt, c in zip(case.a, case.bt, case.c)
            ]
            r = {"shape": label, "dtype": "bf16", "m": m, "n": n, "k": k, "small": v.name}
            r.update(point(case, name, ls, pairs))
            rows.append(r)
            print(
                f"{label:>14} {v.name:<12} {name:<13} x{r.get('ratio')} {r.get('spread', '')} "
                f"{r.get('ours_us', '-')} us (cuBLAS {r.get('cublas_us', '-')}) grid {r.get('grid', '-')} "
                f"{r.get('why', '')[:90]}",
                flush=True,
            )
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
        if name == "bf16rule":
            todo.append((name, []))
            continue
        if name == "small":  # the small-M path: the public default's variant, and the token tile's other form
            from gpudissect.gemm import small

            sms = torch.cuda.get_device_properties(0).multi_processor_count
            mp = small.pick_mp(m)
            picked = small.default_variant(m, n, dtype, sms)
            for v in dict.fromkeys(x for x in (picked, small.ONE_PER_SM[mp], small.VARIANTS[mp]) if x is not None):
                tag = "small default" if v == picked else "small"
                todo.append((f"{tag} {v.name}", small_launches(case, v)))
            continue
        rung, dp = VARIANTS[name]
        todo.append((name, launches(case, rung, dp)))
    if "bf16rule" in names:  # the rung the public default picks for bf16 on this shape, run in this dtype
        from gpudissect.gemm.launch import function, resident_clusters

        sms = torch.cuda.get_device_properties(0).multi_processor_count
        clusters = resident_clusters(function(RUNGS[10], "bf16"), RUNGS[10], sms)
        pick = pick_rung(m, n, k, "bf16", clusters)
        todo = [t for t in todo if t[0] != "bf16rule"]
        todo.append((f"bf16rule(r{pick})", launches(case, pick, None)))
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
    names = {
        "--targets224": "tile_targets224.json",
        "--targets": "tile_targets.json",
        "--pdl": "pdl.json",
        "--fp8": "tile_fp8.json",
        "--fp8-small": "tile_fp8_small.json",
        "--one-wave": "one_wave.json",
        "--small-pdl": "small_pdl.json",
        "--ladder-pdl": "ladder_pdl.json",
        "--l2-prefetch": "l2_prefetch.json",
    }
    name = next((v for k, v in names.items() if k in sys.argv), "tile_sweep.json")
    path = os.path.join(os.environ.get("OUT", "."), name)
    names16 = ["6", "9", "10", "11", "11dp"]
    try:
        if "--pdl" in sys.argv:
            pdl(rows, pairs)
        elif "--ladder-pdl" in sys.argv:
            ladder_builds(rows, pairs, LADDER_PDL_MODES)
        elif "--l2-prefetch" in sys.argv:
            ladder_builds(rows, pairs, L2_PREFETCH_MODES)
        elif "--small-pdl" in sys.argv:
            small_pdl(rows, pairs)
        elif "--one-wave" in sys.argv:
            for label, dt, m, n, k in ONE_WAVE:
                for _ in range(2):
                    shape(rows, label, dt, m, n, k, ["6", "7", "10", "6"], 15)
        elif "--fp8-small" in sys.argv:
            for model, projs in LLAMA.items():
                for proj, (n, k) in projs.items():
                    for m in (16, 64, 128, 256):
                        shape(rows, f"{model} {proj} {m}", "e4m3", m, n, k, ["9", "10split", "small"], pairs)
        elif "--fp8" in sys.argv:
            every = ["6", "9", "10", "11", "12", "13", "bf16rule"]
            for s in FP8_SQUARES:
                shape(rows, f"square {s}", "e4m3", s, s, s, every, pairs)
            for model, projs in LLAMA.items():
                for proj, (n, k) in projs.items():
                    for m in (512, 1024, 2048):
                        shape(rows, f"{model} {proj} {m}", "e4m3", m, n, k, every, pairs)
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
