"""The one-pass FP8 cast (kernels/app_fp8cast.cu) on raw device pointers, launched on a given stream in the
context torch made current: compiled by device/compiler.py, loaded by device/current.py, launched through
device/fastlaunch.py (per call only the pointers and the element count change). No torch here:
app/float8_fused.py passes the tensors' addresses and torch's current stream.

One launch reads the tensor once (16-byte loads, grid-stride), writes its e4m3 copy scaled by the scale held
in the tensor's device state, and reduces its amax; the last CTA pushes the amax into the state's history and
sets the next call's scale (delayed scaling, no host sync). The state's layout is the kernel file's header.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..capability import Needs, Target
from ..device.compiler import KernelSpec

FILE = "app_fp8cast.cu"
THREADS = 256  # the kernel's THREADS
UNROLL = 4  # the kernel's UNROLL: 16-byte loads per thread per step
PER_VECTOR = {"bf16": 8, "f32": 4}  # elements per 16-byte load
OUT_ALIGN = {"bf16": 8, "f32": 4}  # bytes of e4m3 written per vector: the alignment the output needs
FUNCTIONS = {"bf16": "fp8cast_bf16", "f32": "fp8cast_f32"}
# the state's float words (the kernel file's ST_*), then the history
SCALE, AMAX, DONE, STEP, SCALE_INV, LAST = range(6)  # SCALE_INV 16-byte aligned: cuBLASLt needs it
HEADER_WORDS = 8
HISTORY = 16  # amaxes kept by default (TE's default history is 1024; 16 follows a weight's drift closely)
MAX_HISTORY = 4096  # the last CTA scans the whole history on its own: keep that short next to the cast
E4M3_MAX = 448.0

# cvt.rn.satfinite.e4m3x2.f32 is PTX for sm_89 on: the FP8 conversion, as the FP8 GEMMs need 8.9
NEEDS = Needs((8, 9))
_COMMON = [
    r"F2FP\.SATFINITE\.E4M3\.F32\.PACK_AB",  # two floats to two e4m3 bytes, saturated to +-448, in one instruction
    r"LDG\.E\.128\.CONSTANT",  # 16-byte read-only loads
    r"\bC?REDUX\.MAX\b",  # the warp's amax in one instruction (CREDUX on Blackwell)
    r"ATOMG\.E\.MAX\.STRONG\.GPU",  # one amax atomic per CTA
    r"ATOMG\.E\.ADD\.STRONG\.GPU",  # the CTA's arrival, to find the last one
    r"\A(?![\s\S]*\b(?:LDL|STL)\b)",  # no local memory
]
REQUIRED = {
    "fp8cast_bf16": [*_COMMON, r"STG\.E\.64\b"],  # 8 e4m3 bytes per 8 bf16 read
    "fp8cast_f32": [*_COMMON, r"STG\.E\s"],  # 4 e4m3 bytes per 4 floats read
}
SPEC = KernelSpec(FILE, REQUIRED, needs=NEEDS)


def state_words(history: int) -> int:
    """Float words of one tensor's state with `history` amaxes."""
    if not 1 <= history <= MAX_HISTORY:
        raise ValueError(f"amax history length must lie in 1 .. {MAX_HISTORY}, got {history}")
    return HEADER_WORDS + history


def fp8max_margin(margin: int, fp8_max: float = E4M3_MAX) -> float:
    """The numerator of the delayed scale: scale = fp8_max / 2^margin / max(history) (TE's margin)."""
    return fp8_max / 2.0**margin


def grid(n: int, dtype: str, resident: int) -> int:
    """CTAs for n elements: enough for one UNROLL step of every thread, at most the `resident` CTAs the GPU
    holds at once (one wave; the kernel strides over the rest)."""
    vectors = n // PER_VECTOR[dtype]
    return max(1, min(-(-vectors // (THREADS * UNROLL)), resident))


def one_pass_bytes(n: int, in_bytes: int) -> int:
    """Bytes one fused cast of n elements moves at least: each element read once, its e4m3 byte written once."""
    return n * (in_bytes + 1)


def check_alignment(x: int, q: int, dtype: str) -> None:
    if x % 16:
        raise ValueError(f"fp8 cast input address {x:#x} is not 16-byte aligned")
    if q % OUT_ALIGN[dtype]:
        raise ValueError(f"fp8 cast output address {q:#x} is not {OUT_ALIGN[dtype]}-byte aligned")


class Caster:
    """The cast kernel for one input type, loaded in the current context after its SASS was checked (what runs
    is what was checked), with one prepared launch per grid size; the parameter values are shared."""

    def __init__(self, dtype: str):
        from ..device import current
        from ..device.compiler import arch_for, compile_kernel_file
        from ..device.driver import check_result, driver
        from ..device.launch import param_array
        from ..errors import GpuDissectError

        if dtype not in FUNCTIONS:
            raise ValueError(f"the fp8 cast reads {', '.join(FUNCTIONS)}, not {dtype}")
        ctx = current.context()
        target = Target(*ctx.cc)
        why = NEEDS.why_not(target)
        if why:
            raise GpuDissectError(f"the fused fp8 cast {why}")
        cubin = compile_kernel_file(FILE, arch_for(*ctx.cc))
        check_sass(cubin, target)
        self.dtype = dtype
        self.fn = current.load_function(cubin, FUNCTIONS[dtype], 0, FILE)
        # one full wave: 8 CTAs of 256 an SM on Hopper (32 registers), 6 on Ada's 1536-thread SMs
        per_sm = check_result(
            driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(self.fn, THREADS, 0),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        )
        self.resident = max(1, int(per_sm)) * ctx.sm_count
        self.x, self.q, self.state = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
        self.n, self.write, self.hist, self.margin = (
            ctypes.c_int64(),
            ctypes.c_int32(),
            ctypes.c_int32(),
            ctypes.c_float(),
        )
        self.holders = [self.x, self.q, self.n, self.state, self.write, self.hist, self.margin]
        self.params = param_array(self.holders)
        self.launches: dict[int, Any] = {}

    def __call__(
        self, x: int, q: int, n: int, state: int, write: bool, history: int, margin_max: float, stream: int
    ) -> None:
        """Cast n elements at x into q (write False: amax only), with the state at `state` of `history` amaxes,
        on `stream`."""
        check_alignment(x, q, self.dtype)
        if n < 1:
            raise ValueError("nothing to cast (0 elements)")
        g = grid(n, self.dtype, self.resident)
        launch = self.launches.get(g)
        if launch is None:
            from ..device.fastlaunch import PreparedLaunch

            launch = self.launches[g] = PreparedLaunch(self.fn, (g, 1, 1), (THREADS, 1, 1), 0, self.params)
        self.x.value, self.q.value, self.n.value, self.state.value = x, q, n, state
        self.write.value, self.hist.value, self.margin.value = int(write), history, margin_max
        launch(stream, "launch fp8 cast")


def check_sass(cubin: bytes, target: Target) -> None:
    """CheckFailed where the cubin lacks the SASS SPEC declares for `target` (no disassembler: not checked,
    as for the benchmarks' own kernels; `gpudissect doctor` says so)."""
    from ..errors import CheckFailed
    from ..sass.disasm import disassemble_cached, failed_checks, find_tool

    if find_tool("cuobjdump") is None:
        return
    bad = failed_checks(disassemble_cached(cubin), SPEC.required_for(target))
    if bad:
        raise CheckFailed(f"{FILE} on {target.arch}: " + "; ".join(bad))


CASTERS: dict[tuple[int, str], Caster] = {}  # (device key, input type) -> its Caster


def caster(device_key: int, dtype: str) -> Caster:
    """The Caster of `dtype` for a device (keyed by the caller, e.g. torch's device index: one primary
    context per device), made on first use in the context current then."""
    c = CASTERS.get((device_key, dtype))
    if c is None:
        c = CASTERS[(device_key, dtype)] = Caster(dtype)
    return c
