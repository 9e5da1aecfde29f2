"""What the gemm suite's benchmarks share: one measured point (a Case: operands, our GEMM and cuBLAS's,
the checks, the alternating timing) and its Outcome, the error bounds, and the texts of its method.

Method of every point: A (M x K row-major) and B (column-major: stored N x K) random normal; our C and
cuBLAS's C (torch.matmul on the same operands, the same layout) must agree within a stated max-norm
bound, and ours must match a float64 reference on sampled entries; a point that fails either has no
TFLOPS figure. Timing: several operand sets rotated so that no GEMM starts from operands the previous
one left in L2; ours and cuBLAS each timed as a batch between CUDA events, the two sides in alternation
(order swapped every pair); ratio = median over pairs of t_cublas / t_ours; NVML SM clock and power
attributed to each side by the time windows of its batches.

torch is imported lazily (the package does not depend on it); without it the benchmarks end with a
clear message.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from ...analysis.stats import median_ci
from ...device.compiler import KernelSpec
from ...errors import CheckFailed, GpuDissectError
from ...gemm.variants import RUNGS, gemm_flops
from ...sass.disasm import failed_checks, find_tool
from ..context import BenchContext

SAMPLE = 256  # entries checked against the float64 reference
U_OUT = {"bf16": 2.0**-8, "fp16": 2.0**-11}  # unit roundoff of the output type
FP8_MAX = 448.0  # largest finite e4m3 value


def max_norm_bound(dtype: str, k: int) -> float:
    """Allowed max|ours - cuBLAS| / max|cuBLAS|: both round an fp32 sum to the output type (one unit
    roundoff each, relative to the largest entry at most) and sum in different orders (fp32 error
    grows at most like 4 u32 sqrt(K) for random data)."""
    return 2 * U_OUT[dtype] + 4 * 2.0**-24 * math.sqrt(k)


def fp8_bound(k: int) -> float:
    """fp8 e4m3 (bf16 out): allowed max|ours - _scaled_mm| / max|_scaled_mm| and relative-l2 error against
    the float64 product of the dequantised operands. The products are exact in fp32, but Hopper's fp8
    wgmma adds into the accumulator keeping only ~14 mantissa bits (DeepSeek-V3 technical report,
    §3.3.2): allow 2^-13 of the running sum per k32 instruction, adding up in the worst case, plus
    the bf16 rounding of both outputs."""
    return 2 * U_OUT["bf16"] + math.ceil(k / 32) * 2.0**-13


def ref_tolerance(k: int) -> float:
    """Relative-l2 error allowed against the float64 reference on the sampled entries (as tensor_lib)."""
    return max(1e-2, 4 * 2.0**-24 * math.sqrt(k))


def n_sets(m: int, n: int, k: int, l2_bytes: int) -> int:
    """Operand sets to rotate: enough that the sets together exceed twice the L2."""
    per = 2 * (m * k + n * k + m * n)
    return max(2, min(8, math.ceil(2 * l2_bytes / per)))


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise GpuDissectError(
            f"the gemm suite needs PyTorch with CUDA (cuBLAS is reached through torch, "
            f"and the operands are torch tensors): {e}; install torch, or skip this suite"
        ) from None
    if not torch.cuda.is_available():
        raise GpuDissectError(f"torch {torch.__version__} sees no CUDA device (a CPU-only build?)")
    return torch


@dataclass
class Outcome:
    ok: bool
    why: str
    ours_ms: list[float] = field(default_factory=list)
    cublas_ms: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    tel: dict[str, dict[str, float]] = field(default_factory=dict)  # side -> {"mhz", "watts"}
    iters: int = 0  # GEMMs per timed batch

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def ci(self) -> tuple[float, float] | None:
        """95 % confidence interval of the median ratio (order statistics; None below 6 pairs)."""
        return median_ci(self.ratios) if self.ratios else None

    def settled(self, rel: float) -> bool:
        """Whether the median ratio's confidence interval lies within +-rel of it."""
        ci = self.ci
        return ci is not None and ci[0] >= self.ratio * (1 - rel) and ci[1] <= self.ratio * (1 + rel)


class Case:
    """Operands, both GEMMs, the checks and the alternating timing of one (rung, dtype, M, N, K)."""

    def __init__(self, torch: Any, rung: int, dtype: str, m: int, n: int, k: int, l2: int):
        self.torch, self.rung, self.dtype, self.m, self.n, self.k = torch, rung, dtype, m, n, k
        g = torch.Generator(device="cuda")
        g.manual_seed(0x6E3 + m + 3 * n + 7 * k)
        self.sets = n_sets(m, n, k, l2)
        if dtype == "e4m3":
            # random normal quantised the usual way: per-tensor scale = amax / 448, operand = x / scale
            qa, qb = (self._quantised(torch, g, rows, k) for rows in (m, n))
            self.a, self.sa = [x for x, _ in qa], [s for _, s in qa]
            self.bt, self.sb = [x for x, _ in qb], [s for _, s in qb]
            cdt = torch.bfloat16
        else:
            cdt = torch.bfloat16 if dtype == "bf16" else torch.float16
            self.a = [torch.randn((m, k), generator=g, device="cuda", dtype=cdt) for _ in range(self.sets)]
            self.bt = [torch.randn((n, k), generator=g, device="cuda", dtype=cdt) for _ in range(self.sets)]
        self.c = [torch.empty((m, n), device="cuda", dtype=cdt) for _ in range(self.sets)]
        self.cb = [torch.empty((m, n), device="cuda", dtype=cdt) for _ in range(self.sets)]
        self.launches = self._launches()
        self.rung = self.launches[0].rung if self.launches else rung  # AUTO resolved: the rung that runs
        self.stream = torch.cuda.current_stream().cuda_stream

    def _launches(self) -> list[Any]:
        """One prepared launch of our GEMM per operand set (the benchmark's own path: no host work per call)."""
        scales = list(zip(self.sa, self.sb)) if self.dtype == "e4m3" else [(None, None)] * self.sets
        return [self._prepare(a, bt, c, sa, sb) for a, bt, c, (sa, sb) in zip(self.a, self.bt, self.c, scales)]

    def _prepare(self, a: Any, bt: Any, c: Any, sa: Any, sb: Any) -> Any:
        """The launch of one operand set (device checks override it to run another kernel or split)."""
        from ...gemm.launch import prepare

        s_a, s_b = (sa.data_ptr(), sb.data_ptr()) if sa is not None else (0, 0)
        return prepare(
            self.rung, self.dtype, a.data_ptr(), bt.data_ptr(), c.data_ptr(), self.m, self.n, self.k, s_a, s_b
        )

    def _quantised(self, torch: Any, g: Any, rows: int, k: int) -> list[tuple[Any, Any]]:
        out = []
        for _ in range(self.sets):
            x = torch.randn((rows, k), generator=g, device="cuda", dtype=torch.float32)
            scale = (x.abs().max() / FP8_MAX).reshape(())
            out.append(((x / scale).to(torch.float8_e4m3fn), scale.float()))
            del x
        return out

    def dequantised(self, which: str, rows: Any) -> Any:
        """Rows of A or of B^T (set 0) in float64, fp8 operands times their scale."""
        x = (self.a if which == "a" else self.bt)[0]
        if self.dtype != "e4m3":
            return x[rows].double()
        # gather the bytes (indexing kernels need not exist for float8), then widen
        x = x.view(self.torch.uint8)[rows].view(self.torch.float8_e4m3fn).double()
        return x * float((self.sa if which == "a" else self.sb)[0])

    def ours(self, i: int) -> None:
        self.launches[i % self.sets](self.stream)

    def cublas(self, i: int) -> None:
        j = i % self.sets
        if self.dtype == "e4m3":
            # cuBLAS's fp8 GEMM with the tensor cores' own accumulation (fast accum), as ours does
            r = self.torch._scaled_mm(
                self.a[j],
                self.bt[j].t(),
                scale_a=self.sa[j],
                scale_b=self.sb[j],
                out_dtype=self.torch.bfloat16,
                use_fast_accum=True,
            )
            self.cb[j] = r[0] if isinstance(r, tuple) else r  # torch < 2.4 returned (out, amax)
            return
        self.torch.matmul(self.a[j], self.bt[j].t(), out=self.cb[j])

    def check(self) -> tuple[bool, str, float, float]:
        """(ok, why, max-norm error vs cuBLAS, rel-l2 error vs float64 on sampled entries), set 0."""
        torch = self.torch
        self.ours(0)
        self.cublas(0)
        torch.cuda.synchronize()
        c, cb = self.c[0].float(), self.cb[0].float()
        if not bool(torch.isfinite(c).all()):
            return False, "non-finite values in our output", math.inf, math.inf
        err_cb = float((c - cb).abs().max()) / max(float(cb.abs().max()), 1e-30)
        g = torch.Generator(device="cuda")
        g.manual_seed(0xC0FFEE)
        ii = torch.randint(0, self.m, (SAMPLE,), generator=g, device="cuda")
        jj = torch.randint(0, self.n, (SAMPLE,), generator=g, device="cuda")
        ref = (self.dequantised("a", ii) * self.dequantised("b", jj)).sum(dim=1)
        got = self.c[0][ii, jj].double()
        err_ref = float(((got - ref) ** 2).sum().sqrt() / (ref**2).sum().sqrt())
        if self.dtype == "e4m3":
            b_cb = b_ref = fp8_bound(self.k)
        else:
            b_cb, b_ref = max_norm_bound(self.dtype, self.k), ref_tolerance(self.k)
        ok = err_cb <= b_cb and err_ref <= b_ref
        why = (
            f"max|ours - cuBLAS| / max|cuBLAS| = {err_cb:.3g} (bound {b_cb:.3g}); relative-l2 vs float64"
            f"{' of the dequantised operands' if self.dtype == 'e4m3' else ''} on "
            f"{SAMPLE} sampled entries = {err_ref:.3g} (bound {b_ref:.3g})"
        )
        return ok, why, err_cb, err_ref

    def _batch(self, side: str, iters: int, start: int) -> tuple[float, float, float]:
        """(ms per GEMM, host t0, host t1) of `iters` GEMMs of one side between CUDA events."""
        torch = self.torch
        fn = self.ours if side == "ours" else self.cublas
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.monotonic()
        e0.record()
        for i in range(iters):
            fn(start + i)
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1) / iters, t0, time.monotonic()

    def compare(
        self,
        pairs: int,
        target_ms: float,
        uuid: str | None,
        *,
        max_iters: int = 100,
        ci_rel: float | None = None,
        budget_s: float = 0.0,
    ) -> Outcome:
        """Time both sides in `pairs` alternating pairs of batches of about `target_ms` (at most `max_iters`
        GEMMs). With `ci_rel`: more pairs after those, until the 95 % confidence interval of the median ratio
        lies within +-ci_rel of it or `budget_s` seconds of pairs have passed, ending on an even count."""
        from ...device.telemetry import Sampler, summarize

        ok, why, _, _ = self.check()
        if not ok:
            return Outcome(False, why)
        one = min(self._batch("ours", 1, 0)[0] for _ in range(2))
        iters = max(1, min(max_iters, round(target_ms / max(one, 1e-3))))
        self._batch("cublas", iters, 0)  # warm cuBLAS's heuristics and workspace
        out = Outcome(True, why, iters=iters)
        windows: dict[str, list[tuple[float, float]]] = {"ours": [], "cublas": []}
        start = time.monotonic()
        with Sampler(uuid, period_s=0.01) as s:
            p = 0
            # adaptive: only after an even count, so that both orders weigh the same
            while p < pairs or (
                ci_rel is not None and (p % 2 == 1 or (not out.settled(ci_rel) and time.monotonic() - start < budget_s))
            ):
                order = ("ours", "cublas") if p % 2 == 0 else ("cublas", "ours")
                got = {}
                for side in order:
                    ms, t0, t1 = self._batch(side, iters, p)
                    got[side] = ms
                    windows[side].append((t0, t1))
                out.ours_ms.append(got["ours"])
                out.cublas_ms.append(got["cublas"])
                out.ratios.append(got["cublas"] / got["ours"])
                p += 1
        for side, win in windows.items():
            tel = summarize([x for x in s.samples if any(a <= x.t <= b for a, b in win)])
            if tel is not None and tel.sm_clock_mhz_median is not None:
                out.tel[side] = {"mhz": tel.sm_clock_mhz_median, "watts": tel.power_w_median or float("nan")}
        return out


class SmallCase(Case):
    """A Case whose launches run the small-M path (gemm.small) with `variant`, its weight map promoted as the
    public default's (`promotion`): what `matmul` runs for few rows, timed the same way."""

    def __init__(
        self, torch: Any, variant: Any, dtype: str, m: int, n: int, k: int, l2: int, promotion: str | None = None
    ):
        from ...gemm import small

        self.variant = variant
        self.promotion = small.SMALL_PROMOTION if promotion is None else promotion
        super().__init__(torch, small.SMALL, dtype, m, n, k, l2)

    def _prepare(self, a: Any, bt: Any, c: Any, sa: Any, sb: Any) -> Any:
        from ...gemm.small_launch import prepare_small

        s_a, s_b = (sa.data_ptr(), sb.data_ptr()) if sa is not None else (0, 0)
        return prepare_small(
            self.dtype,
            a.data_ptr(),
            bt.data_ptr(),
            c.data_ptr(),
            self.m,
            self.n,
            self.k,
            self.variant,
            self.promotion,
            s_a,
            s_b,
        )


def _tflops(m: int, n: int, k: int, ms: float) -> float:
    return gemm_flops(m, n, k) / (ms * 1e-3) / 1e12


def _method(case: Case, out: Outcome, pairs: int) -> str:
    other = (
        "torch._scaled_mm (cuBLAS fp8, use_fast_accum=True: the tensor cores' accumulation, as ours; "
        "per-tensor scales amax/448, bf16 out)"
        if case.dtype == "e4m3"
        else "torch.matmul (cuBLAS)"
    )
    first = case.launches[0] if case.launches else None
    pdl = ", launched as programmatic dependent launches" if getattr(first, "pdl", lambda: False)() else ""
    return (
        f"{case.m}x{case.n}x{case.k} {case.dtype}, rung {case.rung} ({RUNGS[case.rung].name}{pdl}) vs "
        f"{other} on the same operands; {case.sets} operand sets rotated; CUDA events around "
        f"batches, {pairs} alternating pairs; TFLOPS = 2MNK / median time; ratio = median of per-pair "
        f"t_cublas / t_ours; checked: {out.why}"
    )


def _tflops_figure(ctx: BenchContext, key: str, tf: list[float], method: str, note: str = "") -> None:
    """One side's TFLOPS over the alternating pairs: their median, min..max as the spread."""
    ctx.figure(key, round(statistics.median(tf), 1), "TFLOPS", "measured", method, spread=(min(tf), max(tf)), note=note)


def _ratio_figure(ctx: BenchContext, key: str, out: Outcome, method: str) -> None:
    """Ours against cuBLAS: the median of the per-pair t_cublas / t_ours, min..max as the spread."""
    ctx.figure(key, round(out.ratio, 3), "ratio", "measured", method, spread=(min(out.ratios), max(out.ratios)))


def _telemetry_note(out: Outcome) -> str:
    parts = [f"{side}: {v['mhz']:.0f} MHz, {v['watts']:.0f} W" for side, v in out.tel.items()]
    if not parts:
        return "no NVML samples"
    # NVML refreshes clock and power more slowly than the sides alternate (batches of ~15-40 ms), so
    # the two medians mostly coincide: they give the operating point both ran at, not a per-side split
    return (
        "NVML (sampled every 10 ms) in each side's batches: "
        + "; ".join(parts)
        + " (NVML refreshes slower than the alternation: the shared operating point)"
    )


def prove_sass(ctx: BenchContext, rung: int, dtype: str, spec: KernelSpec | None = None) -> None:
    """Before a rung is timed: its cubin as built for this GPU (the one gemm.launch loads) must hold the SASS
    its variant declares for this GPU's family; CheckFailed naming the missing pattern otherwise. Without a
    disassembler nothing is checked (`gpudissect doctor` says so). `spec`: the kernel that runs where it is not
    a rung of the ladder (the small-M path)."""
    spec = spec or RUNGS[rung].spec(dtype)
    required = spec.required_for(ctx.target)
    if not required or find_tool("cuobjdump") is None:
        return
    bad = failed_checks(ctx.sass(spec), required)
    if bad:
        raise CheckFailed(f"{spec.variant} on {ctx.target.arch}: " + "; ".join(bad))


def _measure(
    ctx: BenchContext, torch: Any, rung: int, dtype: str, m: int, n: int, k: int, pairs: int, target_ms: float
) -> tuple[Case | None, Outcome]:
    case = None
    try:
        case = Case(torch, rung, dtype, m, n, k, int(ctx.props["l2_bytes"]))
        prove_sass(ctx, case.rung, dtype)
        out = case.compare(pairs, target_ms, ctx.props.get("uuid"))
    except Exception as e:  # noqa: BLE001 - one failing point must not hide the others
        out = Outcome(False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    ctx.soft_check(out.ok, f"rung {rung} {dtype} {m}x{n}x{k}: {out.why}")
    return case, out


def _free(torch: Any, case: Case | None) -> None:
    del case
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except RuntimeError:  # a kernel that trapped left the context unusable: the later points fail and say so
        pass
