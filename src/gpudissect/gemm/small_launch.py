"""Launching the small-M path (gemm.small, kernels/gemm_small.cu) on raw device pointers: the kernel loaded
into the current context, its split-K workspace, the tensor maps, and a Launch the public API re-points per
call as it does the ladder's (gemm.launch)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

from ..capability import Target
from ..device import current
from ..device.compiler import arch_for, compile_kernel_file
from ..device.launch import param_array
from ..errors import GpuDissectError
from .launch import L2_PROMOTION, Launch, context_workspace, tensor_map
from .small import FILE, FUNCTION, SMALL, THREADS, VARIANTS, SmallVariant, check_small, pick_mp
from .variants import check_dims

_FUNCS: dict[tuple[SmallVariant, str, int], Any] = {}
_WORKSPACE: dict[tuple[SmallVariant, int], tuple[int, int]] = {}


def function(v: SmallVariant, dtype: str) -> Any:
    """The compiled, loaded kernel of `v` for `dtype` in the current context (cached)."""
    ctx = current.context()
    why = v.needs.why_not(Target(*ctx.cc))
    if why:
        raise GpuDissectError(f"the small-M path ({v.name}) cannot run on this GPU: it {why}")
    key = (v, dtype, ctx.handle)
    if key not in _FUNCS:
        cubin = compile_kernel_file(FILE, arch_for(*ctx.cc), v.defines(dtype))
        _FUNCS[key] = current.load_function(cubin, FUNCTION, v.smem_bytes, FILE)
    return _FUNCS[key]


def workspace(v: SmallVariant) -> tuple[int, int]:
    """Device addresses of `v`'s fp32 partial tiles and tile counters, allocated once per context for its
    largest split grid; the counters zeroed once here (graph-capture safe) and after that by the last CTA
    of each tile. Launches of one context share them: two split launches of one variant must not run
    concurrently on two streams (as the ladder's stream-K workspace)."""
    part, counters = v.workspace_bytes(current.context().sm_count)
    return context_workspace(_WORKSPACE, v, part, counters, "small-M")


@dataclass
class SmallLaunch(Launch):
    """A prepared small-M GEMM: a Launch (rebind, run, call) that also says how it split the work."""

    variant: SmallVariant = field(default_factory=lambda: VARIANTS[16])
    splits: int = 1

    def pdl(self) -> bool:
        """Always a programmatic dependent launch, its kernel letting the next grid in only at exit (gemm_small.cu
        SM_PDL_TRIGGER 2). A/B on the default variants against plain launches (dev/gemm_tile_sweep.py --small-pdl,
        results/h100-sxm5-80gb/profiles/gemm-pdl-trigger/): 3-12 % ahead at 16-256 tokens (Llama-3-8B down at 128
        tokens 1.13 of cuBLAS against 1.09), where a trigger at the kernel's start, as the ladder's, lost 2-14 % to
        plain launches. Our reading, not proven: these grids leave SMs free, and dependents let in at the start
        are placed there and beside CTAs still running, so the next grid starts unevenly spread; the ladder's
        CTAs fill their SMs' shared memory, and there the trigger's place made no difference."""
        return True


def prepare_small(
    dtype: str,
    a: int,
    bt: int,
    c: int,
    m: int,
    n: int,
    k: int,
    variant: SmallVariant | None = None,
    promotion: str = L2_PROMOTION,
    scale_a: int = 0,
    scale_b: int = 0,
) -> SmallLaunch:
    """C (m x n) = A (m x k, row-major) times B, bt being B stored n x k row-major, on the small-M path:
    `variant` None picks MP for m (pick_mp). e4m3: C (bf16) = scale_a * scale_b * A B^T, scale_a/scale_b the
    device addresses of one float32 each. Addresses are device pointers (16-byte aligned); the launch is
    re-pointed per call by rebind/run as the ladder's (slots: A and B^T are tensor maps, C and the scales
    pointers)."""
    check_small(dtype)
    check_dims(m, n, k, dtype=dtype)
    fp8 = dtype == "e4m3"
    if fp8 and not (scale_a and scale_b):
        raise ValueError("fp8 e4m3 needs scale_a and scale_b (device addresses of one float32 each)")
    v = variant or VARIANTS[pick_mp(m)]
    fn = function(v, dtype)
    grid, kb_per = v.schedule(m, n, k, current.context().sm_count, dtype)
    ws, counters = workspace(v) if grid[1] > 1 else (0, 0)
    tw = tensor_map(dtype, bt, n, k, v.bw, promotion)  # the weight: boxes of BW rows
    tx = tensor_map(dtype, a, m, k, v.mp, promotion)  # the tokens: boxes of MP rows, zero past M
    holders: list[Any] = [(ctypes.c_ubyte * 128).from_buffer_copy(t) for t in (tw, tx)]
    holders += [ctypes.c_uint64(c), ctypes.c_uint64(ws), ctypes.c_uint64(counters)]
    if fp8:
        holders += [ctypes.c_uint64(scale_a), ctypes.c_uint64(scale_b)]
    holders += [ctypes.c_int32(x) for x in (m, n, k, kb_per)]
    return SmallLaunch(
        fn,
        grid,
        THREADS,
        v.smem_bytes,
        holders,
        param_array(holders),
        1,
        SMALL,
        (1, 0, 2, 5, 6) if fp8 else (1, 0, 2, None, None),
        [a, bt, c, scale_a, scale_b],
        variant=v,
        splits=grid[1],
    )
