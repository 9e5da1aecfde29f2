"""Library anchor for the tensor suite: cuBLAS GEMM throughput through torch (issue 3, item 7).

The instruction-level results (mma, wgmma) say what the tensor cores can do; this says what a
vendor library reaches on the same GPU in the same run. 000 §6.3 measures Transformer Engine's
te.Linear the same way (square GEMMs, throughput over N) but prints it only as a plot.

torch is imported inside the benchmark: the package does not depend on it. torch uses the
primary CUDA context, which the child process already made current through the CUDA driver API.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from ...app.deps import require_torch, set_tf32
from ...app.timing import event_ms
from ...models import Point
from ..context import BenchContext
from ..registry import Needs, Param, benchmark, comma_ints, comma_names


@dataclass(frozen=True)
class GemmType:
    name: str
    in_bytes: int  # bytes per input element
    out_bytes: int  # bytes per output element
    unit: str  # "TFLOPS" | "TOPS"
    tol: float  # relative-l2 tolerance vs the float64 reference (0: must be exact)
    acc_u: float  # unit roundoff of the accumulation: the tolerance grows as 4 u sqrt(n) beyond `tol`
    min_cc: tuple[int, int] = (7, 0)
    what: str = ""  # the torch call, for the method line

    @property
    def suffix(self) -> str:
        return "tops" if self.unit == "TOPS" else "tflops"


_U32, _U64 = 2.0**-24, 2.0**-53
TYPES: dict[str, GemmType] = {
    t.name: t
    for t in (
        GemmType("fp64", 8, 8, "TFLOPS", 1e-12, _U64, what="torch.matmul float64"),
        GemmType("fp32", 4, 4, "TFLOPS", 1e-5, _U32, what="torch.matmul float32, TF32 disabled"),
        # TF32 rounds inputs to 10 mantissa bits: ~4e-4 relative error on random data.
        GemmType("tf32", 4, 4, "TFLOPS", 2e-3, _U32, (8, 0), "torch.matmul float32, TF32 allowed"),
        GemmType("fp16", 2, 2, "TFLOPS", 1e-2, _U32, what="torch.matmul float16"),
        GemmType("bf16", 2, 2, "TFLOPS", 1e-2, _U32, (8, 0), "torch.matmul bfloat16"),
        # FP8 on Hopper accumulates with reduced precision (fast accumulation even more so).
        GemmType(
            "e4m3",
            1,
            2,
            "TFLOPS",
            5e-2,
            2.0**-14,
            (8, 9),
            "torch._scaled_mm e4m3 x e4m3 (B column-major), float32 tensor scales, bf16 out",
        ),
        GemmType(
            "e4m3_fastacc", 1, 2, "TFLOPS", 5e-2, 2.0**-14, (8, 9), "torch._scaled_mm as e4m3, use_fast_accum=True"
        ),
        GemmType("int8", 1, 4, "TOPS", 0.0, 0.0, (7, 5), "torch._int_mm int8 x int8 (B column-major) -> int32"),
    )
}
FULL_SIZES = (1024, 2048, 4096, 8192, 16384)
QUICK_SIZES = (1024, 4096, 8192)
SAMPLE = 256  # output entries checked against the float64 reference per product
SCALE_A, SCALE_B = 0.5, 0.25  # fp8 tensor scales: powers of two, so the reference is exact


def tolerance(t: GemmType, n: int) -> float:
    """Relative-l2 error allowed for an n x n x n product of type t (0 = exact)."""
    if t.tol == 0.0:
        return 0.0
    return max(t.tol, 4.0 * t.acc_u * math.sqrt(n))


def n_sets(t: GemmType, n: int, l2_bytes: int, max_sets: int = 3) -> int:
    """Input sets to rotate through: several while one set's A, B and C fit in L2, so that a GEMM
    does not start with the operands the previous one left there; one otherwise."""
    per_gemm = n * n * (2 * t.in_bytes + t.out_bytes)
    return max_sets if per_gemm <= l2_bytes else 1


def bytes_needed(t: GemmType, n: int, sets: int) -> int:
    """Device memory one (type, size) point holds at once: inputs, output, conversion temporary,
    reference sample, plus a margin for cuBLAS workspace."""
    inputs = sets * 2 * n * n * t.in_bytes
    out = n * n * t.out_bytes
    temp = n * n * 2 if t.in_bytes == 1 and t.name != "int8" else 0  # fp16 source of an fp8 matrix
    ref = 2 * SAMPLE * n * 8
    return inputs + out + temp + ref + (256 << 20)


def parse_types(text: str) -> list[str]:
    names = list(comma_names(text))
    bad = [s for s in names if s not in TYPES]
    if bad or not names:
        raise ValueError(f"unknown type(s) {', '.join(bad) or '(none)'}; valid: {', '.join(TYPES)}")
    return names


def parse_sizes(text: str) -> list[int]:
    sizes = list(comma_ints(text))
    bad = [n for n in sizes if n < 32 or n % 16]
    if bad or not sizes:
        raise ValueError(f"sizes must be multiples of 16 and >= 32 (fp8 and int8 GEMMs need it), got {bad or text!r}")
    return sizes


def _check_fraction(v: float, _facts: Any) -> str | None:
    return None if 0.05 <= v <= 0.9 else "must lie in 0.05 .. 0.9"


def tflops(n: int, ms: float) -> float:
    return 2.0 * n**3 / (ms * 1e-3) / 1e12


def rel_l2(got: Any, ref: Any) -> float:
    """||got - ref|| / ||ref|| for array-likes with float64 values (numpy or torch)."""
    diff = float(((got - ref) ** 2).sum()) ** 0.5
    norm = float((ref**2).sum()) ** 0.5
    return diff / norm if norm > 0 else (0.0 if diff == 0 else math.inf)


# ---------------------------------------------------------------------------------------
def _import_torch() -> Any:
    return require_torch("cublas_gemm (cuBLAS is reached through torch)")


class _Case:
    """Inputs, the GEMM call and the reference check of one (type, size)."""

    def __init__(self, torch: Any, t: GemmType, n: int, sets: int, dev: str):
        self.torch, self.t, self.n, self.dev = torch, t, n, dev
        g = torch.Generator(device=dev)
        g.manual_seed(0x5EED + n)
        self.a: list[Any] = []
        self.b: list[Any] = []  # B as the call takes it (a column-major view for fp8 / int8)
        for _ in range(sets):
            self.a.append(self._rand(g, (n, n)))
            bt = self._rand(g, (n, n))
            self.b.append(bt.t() if t.in_bytes == 1 else bt)
        if t.name.startswith("e4m3"):
            self.sa = torch.tensor(SCALE_A, dtype=torch.float32, device=dev)
            self.sb = torch.tensor(SCALE_B, dtype=torch.float32, device=dev)

    def _rand(self, g: Any, shape: tuple[int, int]) -> Any:
        torch, name = self.torch, self.t.name
        if name == "int8":
            return torch.randint(-128, 127, shape, generator=g, device=self.dev, dtype=torch.int8)
        if name.startswith("e4m3"):
            return torch.randn(shape, generator=g, device=self.dev, dtype=torch.float16).to(torch.float8_e4m3fn)
        dtype = {
            "fp64": torch.float64,
            "fp32": torch.float32,
            "tf32": torch.float32,
            "fp16": torch.float16,
            "bf16": torch.bfloat16,
        }[name]
        return torch.randn(shape, generator=g, device=self.dev, dtype=dtype)

    def __call__(self, i: int) -> Any:
        torch, k = self.torch, i % len(self.a)
        a, b = self.a[k], self.b[k]
        if self.t.name == "int8":
            return torch._int_mm(a, b)
        if self.t.name.startswith("e4m3"):
            out = torch._scaled_mm(
                a,
                b,
                scale_a=self.sa,
                scale_b=self.sb,
                out_dtype=torch.bfloat16,
                use_fast_accum=self.t.name == "e4m3_fastacc",
            )
            return out[0] if isinstance(out, tuple) else out  # torch < 2.4 returned (out, amax)
        return torch.matmul(a, b)

    def check(self, c: Any) -> tuple[bool, float, str]:
        """Compare SAMPLE random entries of C = A B (set 0) with a float64 (int64) reference."""
        torch, n = self.torch, self.n
        g = torch.Generator(device=self.dev)
        g.manual_seed(0xC0FFEE + n)
        ii = torch.randint(0, n, (SAMPLE,), generator=g, device=self.dev)
        jj = torch.randint(0, n, (SAMPLE,), generator=g, device=self.dev)
        a, b = self.a[0], self.b[0]
        if c.shape != (n, n):
            return False, math.inf, f"output shape {tuple(c.shape)}, expected {(n, n)}"
        got = c[ii, jj]
        if self.t.name == "int8":
            rows = a[ii].to(torch.int64)
            cols = b.t()[jj].to(torch.int64)  # b.t() is the row-major storage: its rows are B's columns
            ref = (rows * cols).sum(dim=1)
            bad = int((got.to(torch.int64) != ref).sum())
            return bad == 0, float(bad), f"{bad} of {SAMPLE} sampled entries differ from the exact int64 product"
        if self.t.name.startswith("e4m3"):
            # index the fp8 storage as bytes (indexing kernels for float8 are not guaranteed)
            rows = a.view(torch.uint8)[ii].view(a.dtype).to(torch.float32).to(torch.float64)
            cols = b.t().contiguous().view(torch.uint8)[jj].view(a.dtype).to(torch.float32).to(torch.float64)
            ref = (rows * cols).sum(dim=1) * (SCALE_A * SCALE_B)
        else:
            rows = a[ii].to(torch.float64)
            cols = b[:, jj].t().to(torch.float64)
            ref = (rows * cols).sum(dim=1)
        got64 = got.to(torch.float64)
        if not bool(torch.isfinite(got64).all()):
            return False, math.inf, "non-finite values in the output"
        err = rel_l2(got64, ref)
        tol = tolerance(self.t, n)
        return err <= tol, err, f"relative-l2 error {err:.3g} vs float64 reference (tolerance {tol:.3g})"


def _batch(torch: Any, case: _Case, iters: int, graph: bool) -> tuple[Any, str]:
    """A callable that enqueues `iters` GEMMs. Small GEMMs run faster than Python can launch them,
    so those are captured once in a CUDA graph and replayed; eager launches otherwise, or if the
    capture fails."""
    if graph:
        g = None
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
                for i in range(len(case.a)):
                    case(i)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i in range(iters):
                    case(i)
            return g.replay, f"one CUDA graph of {iters} GEMMs"
        except Exception:  # noqa: BLE001 - capture unsupported here: time eager launches instead
            del g
            torch.cuda.synchronize()

    def eager() -> None:
        for i in range(iters):
            case(i)

    return eager, f"{iters} eager GEMM launches"


GRAPH_BELOW_MS = 0.2  # GEMMs shorter than this are launched from a CUDA graph
GRAPH_OUT_BYTES = 1 << 30  # outputs a captured batch may allocate


@benchmark(
    name="cublas_gemm",
    title="cuBLAS GEMM throughput by type and size (through torch)",
    axes={"type": ", ".join(TYPES), "size": "square n = 1024 .. 16384 (quick: 1024, 4096, 8192)"},
    kernels=[],
    params={
        "types": Param(None, f"comma-separated GEMM types (default all: {','.join(TYPES)})", parse_types),
        "sizes": Param(
            None, "comma-separated square sizes (default: quick 1024,4096,8192; full 1024..16384)", parse_sizes
        ),
        "mem_fraction": Param(
            0.6, "largest share of the free device memory one point may hold", float, _check_fraction
        ),
    },
    timeout_s=900,
    needs=Needs(),  # every GPU: a type this one lacks (TF32, BF16 before sm_80; FP8 before sm_89) says n/a
    paper="issue 3 item 7; 000 §6.3 / Fig. 7 (te.Linear, plot only)",
    torch=True,
)
def cublas_gemm(ctx: BenchContext) -> None:
    from ...device.telemetry import Sampler, summarize

    torch = _import_torch()
    dev = f"cuda:{getattr(ctx.device, 'ordinal', 0)}"
    torch.cuda.set_device(dev)
    cc = (ctx.props["cc_major"], ctx.props["cc_minor"])
    l2 = int(ctx.props["l2_bytes"])
    names = ctx.params.get("types") or list(TYPES)
    sizes = ctx.params.get("sizes") or list(QUICK_SIZES if ctx.quick else FULL_SIZES)
    frac = ctx.params.get("mem_fraction") or 0.6
    reps = 5 if ctx.quick else 9
    target_ms = 20.0 if ctx.quick else 50.0
    free0, _ = torch.cuda.mem_get_info(dev)
    budget = int(frac * free0)
    versions = f"torch {torch.__version__}, CUDA {torch.version.cuda}"
    total, done = len(names) * len(sizes), 0

    for name in names:
        t = TYPES[name]
        pts: list[Point] = []
        samples: list[Any] = []
        if cc < t.min_cc:
            for n in sizes:
                ctx.figure(
                    f"tc.cublas.{name}.{n}.{t.suffix}",
                    f"n/a: needs compute capability {t.min_cc[0]}.{t.min_cc[1]}",
                    t.unit,
                    "measured",
                    t.what,
                )
            done += len(sizes)
            continue
        set_tf32(torch, name == "tf32")
        for n in sizes:
            done += 1
            key = f"tc.cublas.{name}.{n}.{t.suffix}"
            sets = n_sets(t, n, l2)
            need = bytes_needed(t, n, sets)
            if need > budget:
                ctx.figure(
                    key,
                    f"skipped: needs {need / 2**30:.1f} GiB, {frac:.0%} of free memory is {budget / 2**30:.1f} GiB",
                    t.unit,
                    "measured",
                    t.what,
                )
                ctx.progress(done, total, f"{name} {n}: skipped (memory)")
                continue
            case = None
            try:
                case = _Case(torch, t, n, sets, dev)
                c = case(0)  # first call: cuBLAS heuristics, workspace
                torch.cuda.synchronize()
                ok, err, why = case.check(c)
                del c
                ok = ctx.soft_check(ok, f"cuBLAS {name} n={n}: {why}")
                if ok and name == "tf32":  # an error at fp32 level means TF32 was not used: wrong label
                    ok = ctx.soft_check(
                        err > TYPES["fp32"].tol,
                        f"cuBLAS tf32 n={n}: {why}, as small as full fp32's: TF32 was apparently not used",
                    )
                one = min(event_ms(torch, lambda: case(0), 3))
                iters = max(1, min(200, round(target_ms / max(one, 1e-3))))
                graph = one < GRAPH_BELOW_MS
                if graph:
                    iters = max(1, min(iters, GRAPH_OUT_BYTES // (n * n * t.out_bytes)))
                run, how = _batch(torch, case, iters, graph)
                run()  # warm the batch (graph upload)
                with Sampler(ctx.props.get("uuid"), period_s=0.02) as s:
                    ms = [m / iters for m in event_ms(torch, run, reps)]
                samples += s.samples
                del run
            except Exception as e:  # noqa: BLE001 - one type's API failure must not hide the others
                msg = f"cuBLAS {name} n={n}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                ctx.soft_check(False, msg)
                ctx.figure(key, "n/a", t.unit, "measured", t.what, check="failed", note=msg)
                ctx.progress(done, total, f"{name} {n}: failed")
                continue
            finally:
                case = None  # free the operands now (the timing lambdas share this cell)
                torch.cuda.empty_cache()
            vals = [tflops(n, m) for m in ms]
            med = statistics.median(vals)
            method = (
                f"{t.what}; {n}x{n}x{n}, 2n^3 ops; CUDA events around {how} rotating {sets} "
                f"input set(s), median of {reps} reps; {SAMPLE} random outputs checked; {versions}"
            )
            ctx.figure(
                key,
                round(med, 2),
                t.unit,
                "measured",
                method,
                spread=(min(vals), max(vals)),
                check="ok" if ok else "failed",
                note=why,
            )
            ctx.figure(
                f"tc.cublas.{name}.{n}.rel_l2_error",
                float(f"{err:.4g}") if math.isfinite(err) else "inf",
                "ratio" if t.tol else "mismatches",
                "measured",
                f"{SAMPLE} random entries vs float64 (int: exact int64) reference",
            )
            if ok:
                pts.append(ctx.point(n, vals, iters=iters, sets=sets, graph=graph))
            ctx.progress(done, total, f"{name} {n}: {med:.1f} {t.unit}")
        if pts:
            ctx.series(
                name,
                "matrix size n",
                "",
                "throughput",
                t.unit,
                pts,
                plot="logx",
                figure="cublas_gemm_int8" if t.unit == "TOPS" else "cublas_gemm",
                what=t.what,
            )
            best = max(pts, key=lambda p: p.y)
            ctx.figure(
                f"tc.cublas.{name}.peak_{t.suffix}",
                round(best.y, 2),
                t.unit,
                "derived",
                f"largest median over sizes (n = {int(best.x)})",
            )
        tel = summarize(samples)
        if tel is not None and tel.sm_clock_mhz_median is not None:
            reasons = ", ".join(tel.throttle_reasons) or "none"
            ctx.figure(
                f"tc.cublas.{name}.sm_clock_mhz",
                round(tel.sm_clock_mhz_median, 1),
                "MHz",
                "measured",
                f"NVML median over the timed loops ({tel.samples} samples)",
                spread=(tel.sm_clock_mhz_min, tel.sm_clock_mhz_max),
                note=f"throttle reasons: {reasons}",
            )
            if tel.power_w_median is not None:
                ctx.figure(
                    f"tc.cublas.{name}.power_watts",
                    round(tel.power_w_median, 1),
                    "W",
                    "measured",
                    f"NVML median over the timed loops (max {tel.power_w_max:.1f} W)",
                )
    set_tf32(torch, False)
