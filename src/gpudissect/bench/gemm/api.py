"""`api_vs_cublas` (issue 30 §4): our public `gpudissect.gemm.matmul` against `torch.matmul` (cuBLAS) exactly
as a user calls them from torch: a new output tensor per call, B a column-major view, host time included.

- Host cost per call: 1,000 calls enqueued behind a sleep kernel that keeps the stream busy (the sleep is
  shown to be still running when the last call returns, else the batch is discarded), host time divided
  by the calls; a shape seen before (the plan cached), median of 5 batches. torch.matmul the same way.
- Ratios: per shape, operand sets rotated, both sides called back to back in batches between CUDA events,
  in alternation (the order swapped every pair); ratio = median over pairs of t_cublas / t_ours, so a side
  whose host cost exceeds its GPU time shows it. Full mode: batches of up to 1,000 calls, at least 7 pairs, then
  pairs added until the median's 95 % confidence interval (order statistics) is within +-0.5 % or 3 s have passed
  (profiles/gemm-api-noise: 7 pairs of at most 100 calls scattered the 2048 square's median by about +-1 %).
  Every output is checked against cuBLAS's (and sampled entries against float64) within the bounds of cases.py
  before it is timed.
- Shapes: squares 1024-8192, and every projection of a Llama-3-8B and -70B layer (fused QKV, O, fused
  gate+up, down) at 16, 128, 512, 2048 and 8192 tokens; bf16 (fp16 and e4m3 on the squares; e4m3 against
  torch._scaled_mm with the tensor cores' own accumulation); the projections in e4m3 too (keys
  gemm.api.llama_e4m3.*; quick mode: 16 and 128 tokens).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from ...gemm import small
from ...gemm.variants import BEST_FP8, RUNGS, check_dims, public_rung
from ...models import Point
from ..context import BenchContext
from ..registry import benchmark
from .cases import Case, Outcome, _free, _import_torch, _ratio_figure, _tflops, _tflops_figure, prove_sass
from .vs_cublas import LLAMA

SQUARES_QUICK, SQUARES_FULL = (2048, 4096), (1024, 2048, 3072, 4096, 8192)
TOKENS = (16, 128, 512, 2048, 8192)
FP8_TOKENS_QUICK = (16, 128)
FP8_SQUARES_QUICK, FP8_SQUARES_FULL = (4096,), (2048, 4096, 8192)
HOST_CALLS, HOST_BATCHES = 1000, 5
HOST_SHAPES = ((256, "host_us_per_call"), (2048, "host_us_per_call_2048"))
CI_REL, CI_BUDGET_S = 0.005, 3.0  # full mode: the median ratio's 95 % interval sought, and the time per shape


class ApiCase(Case):
    """A Case whose side "ours" is the public matmul and whose cuBLAS side allocates its output per call,
    as a user's torch.matmul(a, b) does."""

    def __init__(self, torch: Any, dtype: str, m: int, n: int, k: int, l2: int):
        from ...gemm import matmul, plan_for

        super().__init__(torch, 0, dtype, m, n, k, l2)
        self.matmul = matmul
        self.b = [bt.t() for bt in self.bt]  # column-major B: no copy on either side
        self.ours(0)
        plan = plan_for(self.a[0], self.b[0])
        self.rung = plan.rung if plan is not None else 0
        # the kernel that runs: a rung of the ladder, or the small-M path's variant (not a rung)
        variant = getattr(plan.launch, "variant", None) if plan is not None else None
        self.spec = variant.spec(dtype) if variant is not None else None
        self.kernel_name = variant.name if variant is not None else RUNGS[self.rung].name if self.rung else "?"
        self.pdl = bool(plan is not None and plan.launch.pdl())  # launched as a programmatic dependent launch

    def _launches(self) -> list[Any]:
        return []  # the public API prepares (and caches) its own

    def ours(self, i: int) -> None:
        j = i % self.sets
        if self.dtype == "e4m3":
            self.c[j] = self.matmul(self.a[j], self.b[j], scale_a=self.sa[j], scale_b=self.sb[j])
        else:
            self.c[j] = self.matmul(self.a[j], self.b[j])

    def cublas(self, i: int) -> None:
        j = i % self.sets
        if self.dtype != "e4m3":
            self.cb[j] = self.torch.matmul(self.a[j], self.b[j])
            return
        r = self.torch._scaled_mm(
            self.a[j],
            self.b[j],
            scale_a=self.sa[j],
            scale_b=self.sb[j],
            out_dtype=self.torch.bfloat16,
            use_fast_accum=True,
        )
        self.cb[j] = r[0] if isinstance(r, tuple) else r


def _enqueue_cycles(torch: Any, call: Any, calls: int) -> int:
    """Cycles of a sleep kernel (~2 GHz) that outlasts enqueueing `calls` calls, from 100 unheld ones (4x their
    time, 20 ms to 2 s); the calls warmed first (plan cached, allocator primed)."""
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(100):
        call()
    est = (time.perf_counter() - t0) / 100 * calls  # seconds to enqueue a batch, the stream not held
    torch.cuda.synchronize()
    return int(min(max(4 * est, 0.02), 2.0) * 2.0e9)


def _held_batch(torch: Any, call: Any, calls: int, cycles: int) -> float | None:
    """Per-call host microseconds of `calls` calls enqueued behind a sleep kernel; None where the sleep had ended
    before the last call returned (a call may have waited on the GPU)."""
    torch.cuda._sleep(cycles)
    busy = torch.cuda.Event()
    busy.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    t1 = time.perf_counter()
    held = not busy.query()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6 if held else None


def host_pairs(
    torch: Any, ours: Any, theirs: Any, calls: int = HOST_CALLS, batches: int = HOST_BATCHES
) -> tuple[list[float], list[float], list[float], int]:
    """Host microseconds per call of `ours` and `theirs`, batch by batch in alternation (the order swapped every
    pair), so both see the host at the same speed: per side the values of its held batches, the per-pair ratios
    ours / theirs where both were held, and the sleep's cycles."""
    cycles = max(_enqueue_cycles(torch, ours, calls), _enqueue_cycles(torch, theirs, calls))
    mine: list[float] = []
    other: list[float] = []
    ratios: list[float] = []
    for i in range(batches):
        order = (ours, theirs) if i % 2 == 0 else (theirs, ours)
        got = {id(f): _held_batch(torch, f, calls, cycles) for f in order}
        x, y = got[id(ours)], got[id(theirs)]
        if x is not None:
            mine.append(x)
        if y is not None:
            other.append(y)
        if x is not None and y is not None:
            ratios.append(x / y)
    return mine, other, ratios, cycles


def _host_figures(ctx: BenchContext, torch: Any) -> None:
    from ...gemm import matmul

    for n, key in HOST_SHAPES:
        a = torch.randn((n, n), device="cuda", dtype=torch.bfloat16)
        b = torch.randn((n, n), device="cuda", dtype=torch.bfloat16).t()
        mine, other, ratios, cycles = host_pairs(torch, lambda: matmul(a, b), lambda: torch.matmul(a, b))
        how = (
            f"{n}^3 bf16, B column-major, a new output per call, shape seen before; batches of {HOST_CALLS} calls "
            f"enqueued behind a {cycles / 2e9 * 1e3:.0f} ms sleep kernel (~2 GHz) that is still running when the "
            f"last returns, gpudissect.gemm.matmul and torch.matmul in alternation ({HOST_BATCHES} pairs, the order "
            f"swapped every pair); "
        )
        for got, name, what in (
            (mine, f"gemm.api.{key}", "host time / calls of gpudissect.gemm.matmul"),
            (other, f"gemm.api.torch_{key}", "host time / calls of torch.matmul"),
        ):
            method = how + f"{what}, median of {len(got)} of {HOST_BATCHES} batches"
            if not got:
                ctx.figure(name, "n/a", "us", "measured", method, check="failed", note="the stream ran dry")
                continue
            ctx.figure(name, round(statistics.median(got), 2), "us", "measured", method, spread=(min(got), max(got)))
        name = f"gemm.api.{key.replace('host_us_per_call', 'host_vs_torch')}"
        method = how + f"ours / torch.matmul's per pair of batches, median of {len(ratios)} pairs (< 1: ours cheaper)"
        if ratios:
            ctx.figure(
                name,
                round(statistics.median(ratios), 3),
                "ratio",
                "measured",
                method,
                spread=(min(ratios), max(ratios)),
            )
        else:
            ctx.figure(name, "n/a", "ratio", "measured", method, check="failed", note="no pair held the stream")
        ctx.progress(n, HOST_SHAPES[-1][0], f"host cost at {n}^3")


def _fits_rung1(m: int, n: int, k: int) -> bool:
    try:
        check_dims(m, n, k, 1)
    except ValueError:
        return False
    return True


def _jobs(quick: bool) -> list[tuple[str, str, str, int, int, int]]:
    """(group, dtype, key part, M, N, K) in run order; fp8 last (a trap poisons the context)."""
    sq = SQUARES_QUICK if quick else SQUARES_FULL
    jobs = [("square", dt, str(n), n, n, n) for dt in (("bf16",) if quick else ("bf16", "fp16")) for n in sq]
    jobs += [
        ("llama", "bf16", f"{model}.{proj}.{t}", t, n, k)
        for model, projs in LLAMA.items()
        for proj, (n, k) in projs.items()
        for t in TOKENS
    ]
    jobs += [
        ("llama_e4m3", "e4m3", f"{model}.{proj}.{t}", t, n, k)
        for model, projs in LLAMA.items()
        for proj, (n, k) in projs.items()
        for t in (FP8_TOKENS_QUICK if quick else TOKENS)
    ]
    jobs += [("square", "e4m3", str(n), n, n, n) for n in (FP8_SQUARES_QUICK if quick else FP8_SQUARES_FULL)]
    return jobs


@benchmark(
    name="api_vs_cublas",
    title="Our GEMM as users call it (gpudissect.gemm.matmul) against torch.matmul: host cost and speed",
    axes={
        "dtype": "bf16 (squares also fp16 in full mode); e4m3 squares vs torch._scaled_mm",
        "shape": "squares 2048/4096 (full: 1024-8192), Llama-3 8B/70B projections at 16-8192 tokens",
    },
    # the TMA rungs the default picks from; rung 1, the public default where they cannot run (sm_80 on)
    kernels=[RUNGS[r].spec(dt) for r in RUNGS if r >= 6 for dt in RUNGS[r].dtypes]
    + [RUNGS[1].spec(dt) for dt in RUNGS[1].dtypes]
    # the small-M path (gemm.small: the default takes it where default_variant names a variant)
    + [v.spec(dt) for v in small.DEFAULTS for dt in small.DTYPES],
    timeout_s=900,
    needs=RUNGS[1].needs,
    paper="issue 30 §4 (measured as users call it)",
    torch=True,
    host_timed=True,
)
def api_vs_cublas(ctx: BenchContext) -> None:
    runs = {s.name for s in ctx.runnable(ctx.bench.kernels)}
    torch = _import_torch()
    _host_figures(ctx, torch)
    pairs, target = (3, 10.0) if ctx.quick else (7, 25.0)
    # full mode: batches of up to 1,000 calls, pairs added until the median's 95 % interval is within +-0.5 %
    # (profiles/gemm-api-noise: 7 pairs of <= 100 calls scattered the 2048 square's median by about +-1 %)
    more = {} if ctx.quick else {"max_iters": 1000, "ci_rel": CI_REL, "budget_s": CI_BUDGET_S}
    jobs = [j for j in _jobs(ctx.quick) if j[1] != "e4m3" or RUNGS[BEST_FP8].spec("e4m3").name in runs]
    excluded = []
    if public_rung(ctx.target, "bf16") == 1:  # no wgmma: rung 1's whole-tile rules decide which shapes run
        excluded = [j for j in jobs if not _fits_rung1(*j[3:])]
        jobs = [j for j in jobs if j not in excluded]
    llama: dict[str, list[tuple[str, float]]] = {"llama": [], "llama_e4m3": []}
    curves: dict[tuple[str, str], list[Point]] = {}
    for i, (group, dt, lbl, m, n, k) in enumerate(jobs, 1):
        base = f"gemm.api.{dt}.{lbl}" if group == "square" else f"gemm.api.{group}.{lbl}"
        case: ApiCase | None = None
        try:
            case = ApiCase(torch, dt, m, n, k, int(ctx.props["l2_bytes"]))
            prove_sass(ctx, case.rung, dt, case.spec)
            out = case.compare(pairs, target, ctx.props.get("uuid"), **more)
        except Exception as e:  # noqa: BLE001 - one failing shape must not hide the others
            out = Outcome(False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        ctx.soft_check(out.ok, f"matmul {dt} {m}x{n}x{k}: {out.why}")
        if not out.ok:
            ctx.figure(f"{base}.vs_cublas", "n/a", "ratio", "measured", f"{lbl} {dt}", check="failed", note=out.why)
            ctx.progress(i, len(jobs), f"{lbl} {dt}: failed")
            _free(torch, case)
            continue
        assert case is not None
        other = "torch._scaled_mm (fast accumulation)" if dt == "e4m3" else "torch.matmul"
        method = (
            f"{m}x{n}x{k} {dt}: gpudissect.gemm.matmul ({_kernel_text(case)}"
            f"{', a programmatic dependent launch' if case.pdl else ''}) vs {other}, both "
            f"called as a user does (new output each call, B a column-major view), host time included; "
            f"{case.sets} operand sets rotated; batches of {out.iters} calls between CUDA events, "
            f"{_pairs_text(out, pairs, bool(more))}; ratio = median of per-pair t_cublas / t_ours; checked: {out.why}"
        )
        _ratio_figure(ctx, f"{base}.vs_cublas", out, method)
        _tflops_figure(ctx, f"{base}.tflops", [_tflops(m, n, k, ms) for ms in out.ours_ms], method)
        _tflops_figure(ctx, f"{base}.cublas_tflops", [_tflops(m, n, k, ms) for ms in out.cublas_ms], method)
        if group in llama:
            llama[group].append((lbl, out.ratio))
            curves.setdefault((group, lbl.rsplit(".", 1)[0]), []).append(Point.of(m, out.ratios))
        ctx.progress(i, len(jobs), f"{lbl} {dt}: x{out.ratio:.3f} of cuBLAS ({_kernel_text(case)})")
        _free(torch, case)
    for (group, name), pts in curves.items():
        figure = "gemm_api_llama" if group == "llama" else "gemm_api_llama_e4m3"
        ctx.series(name, "tokens (M)", "", "ours / cuBLAS", "ratio", pts, plot="logx", figure=figure)
    for group, shapes in llama.items():
        if shapes:
            _llama_figures(ctx, group, shapes, sum(j[0] == group for j in excluded))


def _kernel_text(case: ApiCase) -> str:
    """The kernel that ran: a rung of the ladder, or a variant of the small-M path (matmul's rung=SMALL)."""
    if case.rung == small.SMALL:
        return f"the small-M path (rung={small.SMALL}), variant {case.kernel_name}"
    return f"rung {case.rung}, {case.kernel_name}"


def _pairs_text(out: Outcome, pairs: int, adaptive: bool) -> str:
    """How many pairs were timed and why, with the median ratio's 95 % interval where there is one."""
    n = len(out.ratios)
    goal = f"the median's 95 % interval within +-{CI_REL:.1%}"
    if not adaptive:
        text = f"{n} alternating pairs"
    elif out.settled(CI_REL):
        text = f"{n} alternating pairs (at least {pairs}, until {goal})"
    else:
        text = f"{n} alternating pairs (at least {pairs}; {CI_BUDGET_S:g} s ran out before {goal})"
    ci = out.ci
    return text + (f", 95 % interval of the median ratio {ci[0]:.3f}-{ci[1]:.3f}" if ci else "")


def _llama_figures(ctx: BenchContext, group: str, shapes: list[tuple[str, float]], excluded: int) -> None:
    """The median and the lowest per-shape ratio of one dtype's Llama-3 projection shapes."""
    rs = [r for _, r in shapes]
    worst = min(shapes, key=lambda x: x[1])
    tokens = sorted({int(lbl.rsplit(".", 1)[1]) for lbl, _ in shapes})
    what = "Llama-3 projection shapes" + (" in e4m3 (against torch._scaled_mm)" if group == "llama_e4m3" else "")
    ctx.figure(
        f"gemm.api.{group}.median_vs_cublas",
        round(statistics.median(rs), 3),
        "ratio",
        "derived",
        f"median over {len(rs)} {what} (8B and 70B, {', '.join(map(str, tokens))} tokens) of the per-shape ratio "
        "through the public API"
        + (
            f"; {excluded} shapes left out: rung 1, the default without wgmma, needs M and N multiples of 128 and K "
            "of 32"
            if excluded
            else ""
        ),
        spread=(min(rs), max(rs)),
    )
    ctx.figure(
        f"gemm.api.{group}.min_vs_cublas",
        round(worst[1], 3),
        "ratio",
        "derived",
        f"the lowest per-shape ratio of the {len(rs)} {what}: {worst[0]}",
    )
