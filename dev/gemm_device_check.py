"""On the GPU machine: rungs of kernels/gemm.cu on small and odd shapes against a float64 product,
printing the errors, then timings against cuBLAS. A quick look before the gemm suite runs; exit code 1
if any rung is wrong. Usage: PYTHONPATH=src python3 dev/gemm_device_check.py [all|new]

- `all` (default): every rung, bf16 and fp16 (and e4m3 on rungs with an fp8 build), small and odd
  shapes; then bf16 at 8192 for rungs 3-7 and cuBLAS, and e4m3 at 8192 against torch._scaled_mm.
- `new`: the public default rung (BEST, the reference) and the rungs built after rung 7 (the stream-K
  rung checked on shapes that split every tile, one k-block, a partial k-block, each launch repeated
  for identical bits), then timings at 2304, 3072 (partial last waves), 4096 and 8192.
Timings: ours and cuBLAS in alternation (rounds of 10-GEMM batches between CUDA events, order rotated
each round), medians over rounds; the ratio is the median of per-round t_cublas / t_ours.

`... gemm_device_check.py power` runs the public rung and cuBLAS alone for 2 s turns each at 4096 and 8192
with NVML sampled, so clock and power are each side's own: TFLOPS per SM-GHz and per watt.

`... gemm_device_check.py lastwave` checks and times rung 8 against rung 10 (stream-K also on a last wave
more than half full), and a forced split where rung 10's rule declines, on shapes with such a last wave.

`... gemm_device_check.py promotion` times the public rung with its operands' TMA L2 promotion at 256 B
(shipped), 128 B and none, against cuBLAS at 4096 and 8192.

`... gemm_device_check.py hint` runs the public rung with and without a suspend-time hint on its mbarrier
waits, and cuBLAS, each alone in 1.5 s turns (clock and power per side) at 4096 and 8192.

`... gemm_device_check.py cluster4` checks the public rung built in 2 x 2 clusters (both operands multicast)
and times it against the public rung and cuBLAS at 3072-8192, in rotation and each alone.

`... gemm_device_check.py epilogue` checks and times the public rung's epilogue experiments (a whole-tile
staging of C on 3 stages, accumulators overwritten instead of zeroed; EPILOGUE_VARIANTS) against it and cuBLAS.

`... gemm_device_check.py dispatch` checks and times rung 6 (no stream-K code) and accumulator-overwrite
variants against the public rung and cuBLAS on shapes where rung 10 splits nothing, and at 8192.

`... gemm_device_check.py keepdesc` checks and times the public rungs with their descriptor bases kept in
registers (KEEP_VARIANTS) against the unchanged rungs and cuBLAS.

`... gemm_device_check.py groups` times the public rung with 4, 8, 16, 32 tile rows per group of the
tile order at 4096 and 8192 (rotated operands) against cuBLAS.

`... gemm_device_check.py profile N|MxNxK RUNG [DTYPE]` (RUNG 101-199: the public rung with RUNG - 100 tile rows
per group) instead runs, after a warm-up, one GEMM of ours and
one of cuBLAS (torch.matmul, or torch._scaled_mm for e4m3) between cudaProfilerStart/Stop, for
`ncu --profile-from-start off ...` to profile side by side."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import torch

from gpudissect.bench.gemm.cases import FP8_MAX, fp8_bound, max_norm_bound
from gpudissect.gemm import BEST, RUNGS, matmul

TDT = {"bf16": torch.bfloat16, "fp16": torch.float16}
SHAPES = [(128, 128, 64), (256, 512, 1024), (1024, 1024, 4096)]
ODD = [(136, 264, 72), (8, 8, 8), (1000, 2056, 520)]  # not multiples of the tiles: TMA rungs only
# stream-K: fewer units than clusters (every tile split), 1-2 partial waves, one k-block, a partial k-block
SK = [(2304, 2304, 2304), (3072, 3072, 1024), (4096, 4096, 4096), (8, 8, 64), (2048, 8192, 64), (1536, 2560, 200)]
# fp8 needs K % 16 (16-byte rows); odd M and N still, a partial last k-block, one tile smaller than a box
ODD_FP8 = [(128, 256, 128), (136, 264, 80), (8, 16, 16), (1008, 2064, 528), (2048, 1040, 4096)]
# (_scaled_mm itself needs M and N multiples of 16: those shapes are compared with it too)


def err(c: torch.Tensor, ref: torch.Tensor) -> float:
    return float((c.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def quantise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor e4m3 quantisation as usual: scale = amax / 448, stored x / scale."""
    scale = (x.abs().max() / FP8_MAX).float().reshape(())
    return (x / scale).to(torch.float8_e4m3fn), scale


def scaled_mm(a8: torch.Tensor, b8: torch.Tensor, sa: torch.Tensor, sb: torch.Tensor) -> torch.Tensor:
    r = torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=True)
    return r[0] if isinstance(r, tuple) else r  # torch < 2.4 returned (out, amax)


def check_16bit(rung: int, dt: str, m: int, n: int, k: int) -> bool:
    a = torch.randn(m, k, device="cuda", dtype=TDT[dt])
    b = torch.randn(n, k, device="cuda", dtype=TDT[dt]).t()  # column-major B
    t0 = time.time()
    c = matmul(a, b, rung=rung)
    torch.cuda.synchronize()
    e = err(c, a.double() @ b.double())
    ok = e <= max_norm_bound(dt, k) + 2.0**-8
    # the same launch again, twice: identical bits (a fixed summation order; stream-K's flags reset)
    same = all(torch.equal(matmul(a, b, rung=rung), c) for _ in range(2))
    print(
        f"rung {rung} {dt} {m}x{n}x{k}: max err {e:.3g}, repeat {'identical' if same else 'DIFFERENT'} "
        f"{'ok' if ok and same else 'WRONG'} ({time.time() - t0:.2f}s)",
        flush=True,
    )
    return ok and same


def check_fp8(rung: int, m: int, n: int, k: int, b_rowmajor: bool = False) -> bool:
    a8, sa = quantise(torch.randn(m, k, device="cuda"))
    bt8, sb = quantise(torch.randn(n, k, device="cuda"))
    b8 = bt8.t() if not b_rowmajor else bt8.float().t().contiguous().to(torch.float8_e4m3fn)
    t0 = time.time()
    c = matmul(a8, b8, rung=rung, scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    ref = (a8.double() * float(sa)) @ (b8.double() * float(sb))
    e = err(c, ref)
    e_cb = err(c, scaled_mm(a8, bt8.t(), sa, sb).double()) if m % 16 == 0 and n % 16 == 0 else float("nan")
    ok = c.dtype == torch.bfloat16 and e <= fp8_bound(k) and not e_cb > fp8_bound(k)
    print(
        f"rung {rung} e4m3 {m}x{n}x{k}{' (row-major B)' if b_rowmajor else ''}: max err vs float64 {e:.3g}, "
        f"vs _scaled_mm {e_cb:.3g} (bound {fp8_bound(k):.3g}) {'ok' if ok else 'WRONG'} ({time.time() - t0:.2f}s)",
        flush=True,
    )
    return ok


def checks(rungs: list[int]) -> bool:
    for r in rungs:
        for dt in RUNGS[r].dtypes:
            try:
                if dt == "e4m3":
                    good = all(check_fp8(r, *s) for s in ODD_FP8) and check_fp8(r, 512, 384, 256, b_rowmajor=True)
                else:
                    good = all(
                        check_16bit(r, dt, *s)
                        for s in SHAPES + (ODD if r >= 2 else []) + (SK if RUNGS[r].stream_k else [])
                    )
            except Exception as e:  # noqa: BLE001 - a trapped kernel poisons the context: stop here
                print(f"rung {r} {dt}: {type(e).__name__}: {e}", flush=True)
                return False
            if not good:
                return False
    a = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)  # row-major B: a transposed copy
    b = torch.randn(256, 384, device="cuda", dtype=torch.bfloat16)
    e = err(matmul(a, b), a.double() @ b.double())
    print(f"row-major B 512x384x256 bf16: max err {e:.3g}", flush=True)
    return e <= 2.0**-6


def alternate(sides: dict[str, Callable[[], None]], rounds: int = 6, batch: int = 10) -> dict[str, list[float]]:
    """ms per GEMM of each side per round, the sides run in rotating order each round."""
    names = list(sides)
    for f in sides.values():  # warm-up: compile, cuBLAS heuristics
        f()
    torch.cuda.synchronize()
    ms: dict[str, list[float]] = {s: [] for s in names}
    for r in range(rounds):
        for s in names[r % len(names) :] + names[: r % len(names)]:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(batch):
                sides[s]()
            e1.record()
            e1.synchronize()
            ms[s].append(e0.elapsed_time(e1) / batch)
    return ms


def report(n: int, what: str, ms: dict[str, list[float]], ref: str) -> None:
    for s, v in ms.items():
        ratio = statistics.median(c / o for c, o in zip(ms[ref], v))
        print(
            f"{what} {n}: {s:>8} {2 * n**3 / statistics.median(v) / 1e9:6.0f} TFLOPS, {ref}/{s} time ratio {ratio:.3f}",
            flush=True,
        )


def stream() -> int:
    return torch.cuda.current_stream().cuda_stream


def operand_sets(m: int, n: int, k: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(A, B^T) bf16 pairs, enough of them (2-8, ~200 MB) that rotating them no GEMM starts from the L2
    its predecessor left."""
    count = max(2, min(8, -(-(200 << 20) // (2 * (m * k + n * k + m * n)))))
    return [
        (torch.randn(m, k, device="cuda", dtype=torch.bfloat16), torch.randn(n, k, device="cuda", dtype=torch.bfloat16))
        for _ in range(count)
    ]


def rotating(launches: list[Callable[[int], None]]) -> Callable[[], None]:
    """A side that runs the prepared launches in turn, one per call."""
    it = iter(range(1 << 30))
    return lambda: launches[next(it) % len(launches)](stream())


def cublas_rotating(sets: list[tuple[torch.Tensor, torch.Tensor]], out: torch.Tensor) -> Callable[[], None]:
    """cuBLAS (torch.matmul) on the same rotating operand sets."""
    it = iter(range(1 << 30))

    def run() -> None:
        a, bt = sets[next(it) % len(sets)]
        torch.matmul(a, bt.t(), out=out)

    return run


def rotation(m: int, n: int, k: int, rungs: dict[int, str], rounds: int) -> dict[str, list[float]]:
    """ms per bf16 GEMM of each labelled rung of ours and of cuBLAS, alternated (`alternate`) on operand sets
    rotated so that no GEMM starts from the L2 its predecessor left."""
    from gpudissect.gemm.launch import prepare

    sets = operand_sets(m, n, k)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    sides: dict[str, Callable[[], None]] = {
        label: rotating([prepare(r, "bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k) for a, bt in sets])
        for r, label in rungs.items()
    }
    sides["cublas"] = cublas_rotating(sets, c)
    return alternate(sides, rounds=rounds)


def register(variants: dict[int, tuple[str, int, dict]]) -> None:
    """Temporary rungs for a mode: number -> (label, the rung it varies, the Rung fields it changes)."""
    from dataclasses import replace

    for number, (_, base, changes) in variants.items():
        RUNGS[number] = replace(RUNGS[base], number=number, **changes)


def timings(rungs: list[int], sizes: tuple[int, ...]) -> None:
    from gpudissect.gemm.launch import prepare

    for n in sizes:
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        bt = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        cb = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        sides: dict[str, Callable[[], None]] = {}
        for r in rungs:
            launch = prepare(r, "bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), n, n, n)
            sides[f"rung{r}"] = lambda launch=launch: launch(stream())
        sides["cublas"] = lambda: torch.matmul(a, bt.t(), out=cb)
        report(n, "bf16", alternate(sides), "cublas")
        a = bt = c = cb = None  # free this size's operands (the lambdas share these cells)
    n = 8192
    a8, sa = quantise(torch.randn(n, n, device="cuda"))
    bt8, sb = quantise(torch.randn(n, n, device="cuda"))
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    sides = {}
    for r in (r for r in rungs if "e4m3" in RUNGS[r].dtypes):
        launch = prepare(r, "e4m3", a8.data_ptr(), bt8.data_ptr(), c.data_ptr(), n, n, n, sa.data_ptr(), sb.data_ptr())
        sides[f"rung{r}"] = lambda launch=launch: launch(stream())
    sides["scaled_mm"] = lambda: scaled_mm(a8, bt8.t(), sa, sb)
    report(n, "e4m3", alternate(sides), "scaled_mm")


def groups(sizes: tuple[int, ...] = (4096, 8192), group_ms: tuple[int, ...] = (4, 8, 16, 32)) -> int:
    """The public rung with other tile-row groupings (GM_GROUP), timed against cuBLAS in alternation on
    operand sets rotated so that no GEMM starts from the L2 its predecessor left."""
    # temporary rungs 100 + g: the public one with another grouping
    register({100 + g: (f"group{g}", BEST, {"group_m": g}) for g in group_ms})
    for n in sizes:
        report(n, f"bf16 rung {BEST}", rotation(n, n, n, {100 + g: f"group{g}" for g in group_ms}, rounds=8), "cublas")
    return 0


# shapes with a last wave more than half full (units of 256 x 256 on 66 clusters): squares, Yan's
# rectangles and Llama projections; the 2048-wide ones are below rung 10's idle threshold (probed split)
LAST_WAVE = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 4096, 8192),
    (8192, 4096, 4096),
    (16384, 4096, 4096),
    (4096, 16384, 4096),
    (8192, 8192, 16384),
    (4096, 6144, 4096),
    (4096, 10240, 8192),
    (4096, 2048, 2048),
    (8192, 2048, 2048),
]


def last_wave(shapes: list[tuple[int, int, int]] = LAST_WAVE, rounds: int = 8) -> int:
    """Rung 8 (last wave left whole) against rung 10 (its rule) and, where the rule leaves the last wave
    whole, rung 10 forced to split it (dp_units = whole waves): checked against cuBLAS (max error, and
    repeated launches bit-identical), then timed with cuBLAS in alternation on rotated operand sets."""
    from gpudissect.bench.gemm.cases import max_norm_bound
    from gpudissect.gemm.launch import prepare

    bad = 0
    for m, n, k in shapes:
        sets = operand_sets(m, n, k)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        cb = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        probe = prepare(10, "bf16", sets[0][0].data_ptr(), sets[0][1].data_ptr(), c.data_ptr(), m, n, k)
        clusters = probe.grid[0] // RUNGS[10].cluster_size
        units = RUNGS[10].units(m, n)
        variants = {"rung8": (8, None), "rung10": (10, None)}
        rule = RUNGS[10].dp_units(m, n, k, clusters)
        if rule == units and units > clusters:
            variants["split"] = (10, units // clusters * clusters)
        print(
            f"{m}x{n}x{k}: {units} units on {clusters} clusters ({units / clusters:.2f} waves), "
            f"k-blocks {-(-k // 64)}, rung 10 dp {rule}",
            flush=True,
        )
        sides: dict[str, Callable[[], None]] = {}
        torch.matmul(sets[0][0], sets[0][1].t(), out=cb)
        for name, (r, dp) in variants.items():
            launches = [
                prepare(r, "bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, dp_units=dp) for a, bt in sets
            ]
            launches[0](stream())
            torch.cuda.synchronize()
            e = err(c, cb.double())
            first = c.clone()
            launches[0](stream())
            same = torch.equal(first, c)
            ok = e <= max_norm_bound("bf16", k) and same
            bad += not ok
            print(
                f"  {name}: max err vs cuBLAS {e:.3g}, repeat {'identical' if same else 'DIFFERENT'} "
                f"{'ok' if ok else 'WRONG'}",
                flush=True,
            )
            sides[name] = rotating(launches)
        sides["cublas"] = cublas_rotating(sets, cb)
        ms = alternate(sides, rounds=rounds)
        for name, v in ms.items():
            ratio = statistics.median(x / y for x, y in zip(ms["cublas"], v))
            r8 = statistics.median(x / y for x, y in zip(ms["rung8"], v))
            print(
                f"  {name:>7}: {2 * m * n * k / statistics.median(v) / 1e9:6.0f} TFLOPS, vs cuBLAS {ratio:.3f}, "
                f"vs rung 8 {r8:.3f}",
                flush=True,
            )
        del sets, c, cb
        torch.cuda.empty_cache()
    return 1 if bad else 0


PROMO_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 8192), (8192, 4096, 4096), (4096, 4096, 2048)]


def promotion(
    shapes: list[tuple[int, int, int]] = PROMO_SHAPES,
    kinds: tuple[str, ...] = ("L2_256B", "L2_128B", "NONE"),
    rounds: int = 24,
) -> int:
    """The public rung with other L2 promotions of its operand tensor maps against cuBLAS, in alternation on
    rotated operand sets (the shipped maps promote to 256-byte sectors)."""
    from gpudissect.gemm.launch import prepare

    for m, n, k in shapes:
        sets = operand_sets(m, n, k)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        sides: dict[str, Callable[[], None]] = {}
        for kind in kinds:
            sides[kind] = rotating(
                [
                    prepare(BEST, "bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, promotion=kind)
                    for a, bt in sets
                ]
            )
        sides["cublas"] = cublas_rotating(sets, c)
        ms = alternate(sides, rounds=rounds)
        for name, v in ms.items():
            ratio = statistics.median(x / y for x, y in zip(ms["cublas"], v))
            vs = statistics.median(x / y for x, y in zip(ms["L2_256B"], v))
            q = statistics.quantiles([x / y for x, y in zip(ms["L2_256B"], v)], n=4)
            print(
                f"bf16 rung {BEST} {m}x{n}x{k}: {name:>8} {2 * m * n * k / statistics.median(v) / 1e9:6.0f} TFLOPS, "
                f"vs cuBLAS {ratio:.3f}, vs L2_256B {vs:.3f} (quartiles {q[0]:.3f} / {q[2]:.3f})",
                flush=True,
            )
        del sets, c
    return 0


def solo_turns(n: int, cases: dict, turns: int, seconds: float) -> None:
    """Each case (our variants) and cuBLAS (on the first case's operands) alone in turns of `seconds`,
    order rotated each turn, NVML sampled (the power_split turns): per side the median TFLOPS, SM clock
    and power, TFLOPS per SM-GHz and per watt, printed."""
    from gpudissect.bench.gemm.power import _solo, efficiency

    first = next(iter(cases.values()))
    order = list(cases) + ["cublas"]
    stats: dict[str, list[tuple[float, float, float]]] = {s: [] for s in order}
    for turn in range(turns):
        for side in order[turn % len(order) :] + order[: turn % len(order)]:
            case = first if side == "cublas" else cases[side]
            stats[side].append(_solo(case, "cublas" if side == "cublas" else "ours", seconds, None))
    for side, v in stats.items():
        tf, mhz, w = (statistics.median(x[j] for x in v) for j in range(3))
        per_ghz, per_w = efficiency(tf, mhz, w)
        print(
            f"bf16 {n} {side:>7}: {tf:6.1f} TFLOPS at {mhz:5.0f} MHz, {w:5.1f} W: {per_ghz:6.1f} TFLOPS/GHz, "
            f"{per_w:5.3f} TFLOPS/W (medians of {len(v)} turns of {seconds:g} s; per turn "
            f"{', '.join(f'{x[0]:.0f}' for x in v)})",
            flush=True,
        )


def wait_hint(
    sizes: tuple[int, ...] = (4096, 8192), hint_ns: int = 10_000_000, turns: int = 4, seconds: float = 1.5
) -> int:
    """The public rung with and without a suspend-time hint on its mbarrier waits, and cuBLAS, each alone
    in turns of `seconds` (the power_split turns: each side's own clock and power under the cap)."""
    from dataclasses import replace

    from gpudissect.bench.gemm.cases import Case

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    RUNGS[200] = replace(RUNGS[BEST], number=200, wait_hint_ns=hint_ns)
    for n in sizes:
        cases = {"plain": Case(torch, BEST, "bf16", n, n, n, l2), "hint": Case(torch, 200, "bf16", n, n, n, l2)}
        for name, case in cases.items():
            ok, why, _, _ = case.check()
            print(f"{name} {n}: check {'ok' if ok else 'FAILED'}: {why}", flush=True)
        solo_turns(n, cases, turns, seconds)
        del cases
        torch.cuda.empty_cache()
    return 0


def stagger(
    sizes: tuple[int, ...] = (4096, 8192), lags: tuple[int, ...] = (0, 1, 2, 3), turns: int = 4, seconds: float = 1.5
) -> int:
    """The public rung with its second consumer warpgroup started 0-3 k-blocks after the first (GM_STAGGER), checked
    on stream-K and odd shapes, then each alone in 1.5 s turns with cuBLAS (clock and power per side)."""
    from dataclasses import replace

    from gpudissect.bench.gemm.cases import Case

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for lag in lags:
        if lag:
            RUNGS[300 + lag] = replace(RUNGS[BEST], number=300 + lag, stagger=lag)
            if not all(check_16bit(300 + lag, "bf16", *s) for s in SHAPES + ODD + SK):
                return 1
    for n in sizes:
        cases = {f"lag{lag}": Case(torch, 300 + lag if lag else BEST, "bf16", n, n, n, l2) for lag in lags}
        for name, case in cases.items():
            ok, why, _, _ = case.check()
            print(f"{name} {n}: check {'ok' if ok else 'FAILED'}: {why}", flush=True)
            if not ok:
                return 1
        solo_turns(n, cases, turns, seconds)
        del cases
        torch.cuda.empty_cache()
    return 0


def power(sizes: tuple[int, ...] = (4096, 8192), turns: int = 3, seconds: float = 2.0) -> int:
    """The public rung and cuBLAS each run alone for `seconds` per turn (sides rotated, operands rotated),
    NVML sampled every 20 ms over the second half of each turn (past the power ramp): per side TFLOPS, SM
    clock and board power, and TFLOPS per SM-GHz (the speed at equal clock) and per watt. The same turns
    as the gemm suite's power_split benchmark (bench/gemm/power.py), printed, unstored."""
    from gpudissect.bench.gemm.cases import Case

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for n in sizes:
        solo_turns(n, {f"rung{BEST}": Case(torch, BEST, "bf16", n, n, n, l2)}, turns, seconds)
        torch.cuda.empty_cache()
    return 0


def cluster4(
    sizes: tuple[int, ...] = (3072, 4096, 6144, 8192),
    solo: tuple[int, ...] = (4096, 8192),
    turns: int = 4,
    seconds: float = 1.5,
) -> int:
    """The public rung in 2 x 2 clusters (A multicast along N and B along M: each CTA reads a quarter less
    from L2, but a 4-CTA cluster may leave SMs unused): its resident clusters printed, checked on every
    shape and type, timed in rotation with the public rung and cuBLAS (rotated operands), then each alone
    in turns (clock and power per side)."""
    from dataclasses import replace

    from gpudissect.bench.gemm.cases import Case
    from gpudissect.gemm.launch import function, resident_clusters

    torch.zeros(1, device="cuda")  # a current CUDA context for the occupancy query
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    RUNGS[400] = replace(RUNGS[BEST], number=400, cluster=2, cluster_n=2)
    for r in (BEST, 400):
        rc = resident_clusters(function(RUNGS[r], "bf16"), RUNGS[r], sms)
        print(
            f"rung {r}: {rc} resident clusters of {RUNGS[r].cluster_size} CTAs = "
            f"{rc * RUNGS[r].cluster_size} of {sms} SMs",
            flush=True,
        )
    if not checks([400]):
        return 1
    for n in sizes:
        report(n, "bf16", rotation(n, n, n, {BEST: "rung10", 400: "2x2"}, rounds=8), "cublas")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for n in solo:
        solo_turns(
            n,
            {"rung10": Case(torch, BEST, "bf16", n, n, n, l2), "2x2": Case(torch, 400, "bf16", n, n, n, l2)},
            turns,
            seconds,
        )
        torch.cuda.empty_cache()
    return 0


# Epilogue experiments (numbers 501+, registered by register_epilogue_variants): the public rung with 3
# stages (the shared memory a whole-tile staging needs), with that staging (a slot per box: one barrier
# pair per tile), with the tile's first wgmma overwriting the accumulators instead of zeroing them, both.
# (as run on 2026-11-24: the public rung then zeroed its accumulators, so 500 is that rung, the baseline)
EPILOGUE_VARIANTS = {
    500: ("rung10", BEST, {"no_zero": False}),
    501: ("s3", BEST, {"stages": 3, "no_zero": False}),
    502: ("whole3", BEST, {"stages": 3, "epi_whole": True, "no_zero": False}),
    503: ("nozero", BEST, {"no_zero": True}),
    504: ("whole3nz", BEST, {"stages": 3, "epi_whole": True, "no_zero": True}),
}


def epilogue(sizes: tuple[int, ...] = (4096, 8192), turns: int = 4, seconds: float = 1.5) -> int:
    """The epilogue experiments checked (every type; small, odd and stream-K shapes), timed in rotation with
    the public rung and cuBLAS (rotated operands), then each alone in turns (clock and power per side)."""
    from gpudissect.bench.gemm.cases import Case

    register(EPILOGUE_VARIANTS)
    if not checks(list(EPILOGUE_VARIANTS)):
        return 1
    names = {r: name for r, (name, _, _) in EPILOGUE_VARIANTS.items()}
    for n in sizes:
        ms = rotation(n, n, n, names, rounds=12)
        report(n, "bf16", ms, "cublas")
        for name, v in ms.items():
            q = statistics.quantiles([x / y for x, y in zip(ms[names[500]], v)], n=4)
            print(
                f"bf16 {n}: {name:>8} vs rung{BEST}: "
                f"median {statistics.median(x / y for x, y in zip(ms[names[500]], v)):.4f} "
                f"(quartiles {q[0]:.4f} / {q[2]:.4f})",
                flush=True,
            )
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for n in sizes:
        solo_turns(n, {name: Case(torch, r, "bf16", n, n, n, l2) for r, name in names.items()}, turns, seconds)
        torch.cuda.empty_cache()
    return 0


# Dispatch experiments (numbers 505+): rung 6 (the same kernel without the stream-K code) for the shapes on
# which rung 10 splits nothing, with and without the accumulators overwritten instead of zeroed.
# (as run on 2026-11-24, when the shipped rungs zeroed their accumulators: 509 is the public rung as it was)
DISPATCH_VARIANTS = {
    509: (f"rung{BEST}", BEST, {"no_zero": False}),
    505: ("r6", 6, {"no_zero": False}),
    506: ("r6nz", 6, {"no_zero": True}),
    507: ("r10nz", BEST, {"no_zero": True}),
}
DISPATCH_SHAPES = [(4096, 4096, 4096), (4096, 4096, 8192), (8192, 8192, 8192)]


def dispatch(shapes: list[tuple[int, int, int]] = DISPATCH_SHAPES, turns: int = 6, seconds: float = 1.5) -> int:
    """Rung 6 and the accumulator-overwrite variants against the public rung: checked (every type; small, odd
    and, for rung 10's, stream-K shapes), timed in rotation (16 rounds, rotated operands) with cuBLAS, then each
    alone in turns at 4096 (clock and power per side)."""
    from gpudissect.bench.gemm.cases import Case

    register(DISPATCH_VARIANTS)
    if not checks(list(DISPATCH_VARIANTS)):
        return 1
    names = {r: name for r, (name, _, _) in DISPATCH_VARIANTS.items()}
    for m, n, k in shapes:
        ms = rotation(m, n, k, names, rounds=16)
        for name, v in ms.items():
            ratios = [x / y for x, y in zip(ms[f"rung{BEST}"], v)]
            q = statistics.quantiles(ratios, n=4)
            print(
                f"bf16 {m}x{n}x{k}: {name:>8} {2 * m * n * k / statistics.median(v) / 1e9:6.1f} TFLOPS, vs cuBLAS "
                f"{statistics.median(x / y for x, y in zip(ms['cublas'], v)):.4f}, "
                f"vs rung{BEST} {statistics.median(ratios):.4f} "
                f"(quartiles {q[0]:.4f} / {q[2]:.4f})",
                flush=True,
            )
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    solo_turns(4096, {name: Case(torch, r, "bf16", 4096, 4096, 4096, l2) for r, name in names.items()}, turns, seconds)
    return 0


# Descriptor experiment (numbers 510+): the shared-window descriptor bases made opaque to ptxas, so it keeps
# them in registers (and the k-loop's counters in uniform ones) instead of rebuilding them every k-block.
KEEP_VARIANTS = {510: ("r6keep", 6, {"keep_desc": True}), 511: ("r10keep", BEST, {"keep_desc": True})}
KEEP_SHAPES = {510: (4096, 4096, 4096), 511: (8192, 8192, 8192)}  # where the rung varied is the public choice


def keep_desc(rounds: int = 16) -> int:
    """Each descriptor variant checked (every type; small, odd and stream-K shapes), then timed in rotation
    against the rung it varies and cuBLAS on a shape where that rung is the public default's choice."""
    register(KEEP_VARIANTS)
    if not checks(list(KEEP_VARIANTS)):
        return 1
    for number, (name, base, _) in KEEP_VARIANTS.items():
        m, n, k = KEEP_SHAPES[number]
        ms = rotation(m, n, k, {base: f"rung{base}", number: name}, rounds=rounds)
        ratios = [x / y for x, y in zip(ms[f"rung{base}"], ms[name])]
        q = statistics.quantiles(ratios, n=4)
        for label, v in ms.items():
            print(
                f"bf16 {m}x{n}x{k}: {label:>8} {2 * m * n * k / statistics.median(v) / 1e9:6.1f} TFLOPS, vs cuBLAS "
                f"{statistics.median(x / y for x, y in zip(ms['cublas'], v)):.4f}",
                flush=True,
            )
        print(
            f"bf16 {m}x{n}x{k}: {name} vs rung{base} {statistics.median(ratios):.4f} "
            f"(quartiles {q[0]:.4f} / {q[2]:.4f})",
            flush=True,
        )
    return 0


def main(mode: str) -> int:
    torch.manual_seed(0)
    new = sorted({BEST} | {r for r in RUNGS if r > 7})  # the public default and the rungs built after rung 7
    if not checks(list(RUNGS) if mode == "all" else new):
        return 1
    timings(
        [r for r in RUNGS if r >= 3] if mode == "all" else new,
        (8192,) if mode == "all" else (1536, 2048, 2304, 2560, 3072, 3840, 4352, 4096, 8192),
    )
    return 0


def profile(shape: str, rung: int, dtype: str = "bf16") -> int:
    """One GEMM of `shape` (N for N^3, or MxNxK) of ours and one of cuBLAS between profiler start and stop."""
    experiments = EPILOGUE_VARIANTS | DISPATCH_VARIANTS | KEEP_VARIANTS
    if rung in experiments:
        register({rung: experiments[rung]})
    if 100 < rung < 200:  # the public rung with rung - 100 tile rows per group of the tile order
        register({rung: (f"group{rung - 100}", BEST, {"group_m": rung - 100})})
    m, n, k = (int(x) for x in shape.split("x")) if "x" in shape else (int(shape),) * 3
    if dtype == "e4m3":
        a8, sa = quantise(torch.randn(m, k, device="cuda"))
        bt8, sb = quantise(torch.randn(n, k, device="cuda"))
        ours = lambda: matmul(a8, bt8.t(), rung=rung, scale_a=sa, scale_b=sb)
        theirs = lambda: scaled_mm(a8, bt8.t(), sa, sb)
    else:
        a = torch.randn(m, k, device="cuda", dtype=TDT[dtype])
        b = torch.randn(n, k, device="cuda", dtype=TDT[dtype]).t()
        ours = lambda: matmul(a, b, rung=rung)
        theirs = lambda: a @ b
    for _ in range(3):  # warm-up (compile, cuBLAS heuristics); ncu counts launches, so skip these with -s
        ours()
        theirs()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()  # with ncu --profile-from-start off only these two are profiled
    ours()
    theirs()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


# the modes that take no arguments; those marked seeded draw their operands after torch.manual_seed(0)
MODES: dict[str, tuple[Callable[[], int], bool]] = {
    "groups": (groups, False),
    "power": (power, False),
    "stagger": (stagger, False),
    "cluster4": (cluster4, True),
    "hint": (wait_hint, False),
    "promotion": (promotion, False),
    "epilogue": (epilogue, True),
    "dispatch": (dispatch, True),
    "keepdesc": (keep_desc, True),
    "lastwave": (lambda: last_wave() if checks([10]) else 1, True),
}

if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "profile":
        sys.exit(profile(sys.argv[2], int(sys.argv[3]), *(sys.argv[4:])))
    if len(sys.argv) == 2 and sys.argv[1] in MODES:
        mode, seeded = MODES[sys.argv[1]]
        if seeded:
            torch.manual_seed(0)
        sys.exit(mode())
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] not in ("all", "new")):
        print(
            f"usage: gemm_device_check.py [all|new|{'|'.join(MODES)}] | profile N|MxNxK RUNG [bf16|fp16|e4m3]",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(main(sys.argv[1] if len(sys.argv) == 2 else "all"))
