"""The compute ceilings a run measured: FMA on the CUDA cores (FP32, FP64), the best tensor-core rate per
type (dense and 2:4 sparse), DPX; each beside the published per-SM peak of the run's own GPU model
(reference/peaks.py, None for a GPU without a record) with the ratio."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpudissect.models import Figure, RunInfo
from gpudissect.report.tables import NONE_CELL, fmt_number

# tc.<mma|wgmma>[_sp].<a>_<d>.<shape>.<what>fma_per_clk_sm: the per-SM rate every tensor benchmark records
_TC = re.compile(r"^tc\.(mma|wgmma)(_sp)?\.([a-z0-9]+)_([a-z0-9]+)\.(m\d+n\d+k\d+)\.((?:[a-z]+_)*)fma_per_clk_sm$")
_CUDA_CORES = (
    ("FP32 FMA (FFMA)", "isa.throughput.ffma_per_clk_sm", "peak.fp32.fma_per_clk_sm"),
    ("FP64 FMA (DFMA)", "isa.throughput.dfma_per_clk_sm", "peak.fp64.fma_per_clk_sm"),
)
# widest type first, as the papers' tables list them
_TYPE_ORDER = ("f64", "tf32", "f16", "f16_f16acc", "bf16", "fp8", "fp8_f16acc", "int8", "int4", "b1", "fp4")
_DPX = re.compile(r"^dpx\.([a-z0-9_]+)\.ops_per_clk_sm$")


@dataclass(frozen=True)
class Ceiling:
    what: str
    key: str  # the figure it is read from
    per_clk_sm: float
    unit: str
    tflops: float | None  # at the clock the benchmark ran (its own TFLOPS figure), where it has one
    published: float | None  # per SM per clock, the run's GPU model
    source: str

    @property
    def ratio(self) -> float | None:
        return self.per_clk_sm / self.published if self.published else None


def _ok_numbers(figures: Sequence[Figure]) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in figures:
        v = f.value
        if f.check == "ok" and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out[f.key] = float(v)
        else:
            out.pop(f.key, None)
    return out


def _peaks(run: RunInfo):  # type: ignore[no-untyped-def]
    from gpudissect.reference.peaks import peaks_for

    return peaks_for({"gpu_name": run.gpu_name, "sm_count": run.sm_count, "extra": run.extra or {}})


def _tensor_type(a: str, d: str) -> str:
    from gpudissect.reference.peaks import tensor_type

    try:
        return tensor_type(re.sub(r"(and|xor)$", "", a), d)
    except ValueError:
        return a


def ceilings(run: RunInfo, figures: Sequence[Figure]) -> list[Ceiling]:
    nums = _ok_numbers(figures)
    pk = _peaks(run)
    out: list[Ceiling] = []
    for what, key, peak_key in _CUDA_CORES:
        if key in nums:
            pub = pk.value(peak_key) if pk else None
            clock = nums.get("clock.native_instructions.sm_mhz") or run.sm_clock_max_mhz
            tflops = 2 * nums[key] * run.sm_count * clock / 1e6 if clock and run.sm_count else None
            out.append(Ceiling(what, key, nums[key], "FMA/clk/SM", tflops, pub, pk.model if pk and pub else ""))
    out += _tensor(nums, pk)
    dpx = [(v, k) for k, v in nums.items() if _DPX.match(k) and not k.endswith("_sm80.ops_per_clk_sm")]
    if dpx:
        v, k = max(dpx)
        name = _DPX.match(k).group(1)  # type: ignore[union-attr]
        out.append(Ceiling(f"DPX (best: {name})", k, v, "calls/clk/SM", None, None, ""))
    return out


def _tensor(nums: dict[str, float], pk) -> list[Ceiling]:  # type: ignore[no-untyped-def]
    """The best measured rate per (tensor type, sparse), over instructions, shapes and operand sources."""
    from gpudissect.reference.peaks import fma_per_clk_sm

    best: dict[tuple[str, bool], tuple[float, str, str, str]] = {}
    for key, v in nums.items():
        m = _TC.match(key)
        if not m or "arch_peak" in m.group(6):
            continue
        sparse, a, d = bool(m.group(2)), m.group(3), m.group(4)
        t = _tensor_type(a, d)
        if (t, sparse) not in best or v > best[(t, sparse)][0]:
            best[(t, sparse)] = (v, key, a, d)
    out = []
    rank = {t: i for i, t in enumerate(_TYPE_ORDER)}
    for (t, sparse), (v, key, a, d) in sorted(best.items(), key=lambda kv: (rank.get(kv[0][0], 99), kv[0])):
        pub = None
        if pk is not None:
            try:
                pub = fma_per_clk_sm(pk, re.sub(r"(and|xor)$", "", a), sparse=sparse, acc=d)
            except ValueError:
                pub = None
        base = key.removesuffix("fma_per_clk_sm")
        tf = nums.get(base + "tflops") or nums.get(base + "tops")  # its own TFLOPS figure, at the clock it ran
        label = f"tensor {t}" + (" 2:4 sparse" if sparse else "")
        out.append(Ceiling(label, key, v, "FMA/clk/SM", tf, pub, pk.model if pk and pub else ""))
    return out


HEADERS = ["Unit", "Measured per SM per clock", "TFLOPS / TOPS (at the run's clock)", "Published peak", "Ratio", "Key"]


def ceiling_cells(c: Ceiling) -> list[str]:
    return [
        c.what,
        f"{fmt_number(c.per_clk_sm)} {c.unit}",
        NONE_CELL if c.tflops is None else fmt_number(c.tflops),
        NONE_CELL if c.published is None else f"{fmt_number(c.published)} ({c.source})",
        NONE_CELL if c.ratio is None else f"{c.ratio:.2f}",
        c.key,
    ]
