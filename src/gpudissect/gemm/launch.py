"""Launching a rung on raw device pointers: compile (NVRTC, cached), load into the current context,
encode the TMA tensor maps, launch on a given stream. No torch here: the API and the benchmark pass
pointers and a stream handle (torch's current stream, so our GEMMs order with torch's work). The driver
calls are the device layer's: device/current.py (the context torch made current), device/tensormap.py,
device/launch.py."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

from ..capability import Target
from ..device import current
from ..device.compiler import arch_for, compile_kernel_file
from ..device.fastlaunch import PreparedLaunch, fail, repointer
from ..device.launch import max_active_clusters, param_array
from ..device.tensormap import encode_tiled, tiled_arguments
from ..errors import GpuDissectError
from .variants import AUTO, BEST, RUNGS, Rung, check_dims, pick_rung, public_rung, split_all

_TMAP_DTYPE = {"bf16": "BFLOAT16", "fp16": "FLOAT16", "e4m3": "UINT8"}  # TMA copies fp8 as bytes
ELEM_BYTES = {"bf16": 2, "fp16": 2, "e4m3": 1}
OUT_DTYPE = {"bf16": "bf16", "fp16": "fp16", "e4m3": "bf16"}  # C's type per input type
PDL_FROM = 6  # the first rung whose kernel (gemm_ws) waits for its predecessor: launched with PDL
_FUNCS: dict[tuple[int, str, int], Any] = {}  # (rung, dtype, context handle) -> CUfunction
_WORKSPACE: dict[tuple[int, int], tuple[int, int]] = {}  # (rung, context handle) -> (partials, flags) addresses


def function(rung: Rung, dtype: str) -> Any:
    """The compiled, loaded kernel of `rung` for `dtype` in the current context (cached)."""
    ctx = current.context()
    cc = ctx.cc
    why = rung.needs.why_not(Target(*cc))
    if why:
        raise GpuDissectError(f"rung {rung.number} ({rung.name}) cannot run on this GPU: it {why}")
    key = (rung.number, dtype, ctx.handle)
    if key not in _FUNCS:
        cubin = compile_kernel_file("gemm.cu", arch_for(*cc), rung.defines(dtype))
        _FUNCS[key] = current.load_function(cubin, rung.function, rung.smem_bytes, "gemm.cu")
    return _FUNCS[key]


# No L2 promotion on the TMA maps: ahead of 256-byte promotion at 4096^3 and level at 8192^3 and K = 8192 in
# a device check (results/h100-sxm5-80gb/profiles/gemm-promotion/)
L2_PROMOTION = "NONE"


def tensor_map(
    dtype: str,
    ptr: int,
    rows: int,
    cols: int,
    box_rows: int,
    promotion: str = L2_PROMOTION,
    box_bytes: int = 128,
    swizzle: str = "128B",
) -> bytes:
    """128-byte CUtensorMap of a row-major rows x cols matrix (cols contiguous), boxes of `box_bytes` bytes of
    columns (by default one 128-byte swizzle row: 64 16-bit or 128 fp8 elements) x box_rows rows, zero fill
    outside the matrix on loads, clipped at its edge on stores."""
    eb = ELEM_BYTES[dtype]
    if ptr % 16:
        raise ValueError(f"matrix address {ptr:#x} is not 16-byte aligned (TMA needs it)")
    args = tiled_arguments(
        _TMAP_DTYPE[dtype],
        ptr,
        (cols, rows),
        (cols * eb,),
        (box_bytes // eb, box_rows),
        swizzle=swizzle,
        l2_promotion=promotion,
    )
    return encode_tiled(args, what=f"{rows}x{cols} {dtype}")


def workspace(rung: Rung, ctas: int) -> tuple[int, int]:
    """Device addresses of a stream-K rung's fp32 partial sums and its flags (zeroed once; each flag is
    zeroed again by the CTA that consumes it), allocated once per context for the largest grid.
    Launches of one context share them: two stream-K GEMMs must not run concurrently on two streams."""
    if not rung.stream_k:
        return 0, 0
    part, flags = rung.workspace_bytes(ctas)
    return context_workspace(_WORKSPACE, rung.number, part, flags, "stream-K")


def context_workspace(
    cache: dict[Any, tuple[int, int]], owner: Any, part_bytes: int, flag_bytes: int, what: str
) -> tuple[int, int]:
    """(partial sums, flags) device addresses of `owner`'s split workspace in the current context, allocated on
    first use and kept in `cache`; the flags zeroed on a private stream (legal under a graph capture)."""
    key = (owner, current.context().handle)
    if key not in cache:
        p = current.alloc(part_bytes, f"{what} partial sums")
        f = current.alloc(flag_bytes, f"{what} flags")
        current.zero32(f, flag_bytes // 4, f"{what} flags")
        cache[key] = (p, f)
    return cache[key]


@dataclass
class Launch:
    """One prepared GEMM C = A B^T: everything but the operands' addresses and the stream is fixed, so a
    timing loop or a cached plan of the public API pays only the launch. `rebind` points it at other
    matrices of the same shape and type: the tensor maps re-pointed in place, the pointer arguments set."""

    fn: Any
    grid: tuple[int, int, int]
    block: int
    smem: int
    holders: list[Any]
    params: Any
    cluster: int = 1
    rung: int = 0  # the rung it runs (AUTO resolved)
    # holders[i] for A, B^T, C, scale_a, scale_b (None: not an argument of this rung): a 128-byte tensor map
    # or a pointer
    slots: tuple[int | None, ...] = (None, None, None, None, None)
    bound: list[int] = field(default_factory=list)  # the addresses the slots hold now
    fast: PreparedLaunch | None = None
    # per operand (A, B^T, C, scale_a, scale_b): what re-points its slot (None: not an argument of this rung)
    setters: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        cluster = (self.cluster, 1, 1) if self.cluster > 1 else None
        self.fast = PreparedLaunch(self.fn, self.grid, (self.block, 1, 1), self.smem, self.params, cluster, self.pdl())
        self.setters = [None if s is None else self._setter(self.holders[s]) for s in self.slots]

    def pdl(self) -> bool:
        """Whether it is launched as a programmatic dependent launch: rungs 6+, whose kernel waits for the grid
        before it (griddepcontrol.wait). Its set-up then overlaps the end of the kernel before it: 2048^3 1.02 of
        cuBLAS against 0.94 without (results/h100-sxm5-80gb/profiles/gemm-pdl/)."""
        return self.rung >= PDL_FROM

    @staticmethod
    def _setter(h: Any) -> Any:
        if isinstance(h, ctypes.c_uint64):

            def set_pointer(addr: int) -> None:
                h.value = addr

            return set_pointer
        return repointer(h)  # a tensor map: the driver re-points it in place

    def rebind(self, a: int, bt: int, c: int, scale_a: int = 0, scale_b: int = 0) -> None:
        """Point the launch at other operands (same shape, type and rung); 16-byte alignment is checked
        here for pointers and by the driver for tensor maps."""
        bound, setters = self.bound, self.setters
        for j, addr in enumerate((a, bt, c, scale_a, scale_b)):
            if addr == bound[j]:
                continue
            set_ = setters[j]
            if set_ is not None:
                if j < 3 and addr % 16:
                    raise ValueError(f"matrix address {addr:#x} is not 16-byte aligned (our kernels need it)")
                set_(addr)
            bound[j] = addr

    def run(self, a: int, bt: int, c: int, scale_a: int, scale_b: int, stream: int) -> None:
        """rebind, then launch on `stream`: the public API's per-call path, in one frame. A new output per call
        is the common case: only C's slot is re-pointed then, without rebind's walk over every slot."""
        bound = self.bound
        if a != bound[0] or bt != bound[1] or scale_a != bound[3] or scale_b != bound[4]:
            self.rebind(a, bt, c, scale_a, scale_b)
        elif c != bound[2]:
            if c % 16:
                raise ValueError(f"matrix address {c:#x} is not 16-byte aligned (our kernels need it)")
            self.setters[2](c)
            bound[2] = c
        self.fast(stream, "launch gemm")  # type: ignore[misc]

    def runner(self, lock: Any) -> Any:
        """run(a, bt, c, stream): `run` for operands without scales (16-bit) in one frame, under `lock`: matmul's
        path for a cached call, where each Python frame and attribute lookup is a measurable part of the host cost.
        C is the caller's new output (torch's allocator aligns it to 512 bytes: not checked again)."""
        fast, bound, set_c, rebind = self.fast, self.bound, self.setters[2], self.rebind
        assert fast is not None
        call, pcfg, fn, params, cfg = fast.call, fast.pcfg, fast.fn, fast.params, fast.cfg

        def run(a: int, bt: int, c: int, stream: int) -> None:
            with lock:
                if a != bound[0] or bt != bound[1] or bound[3] or bound[4]:
                    rebind(a, bt, c)
                elif c != bound[2]:
                    set_c(c)
                    bound[2] = c
                if stream != fast.stream:
                    cfg.hStream = fast.stream = stream
                status = call(pcfg, fn, params, None)
            if status:
                raise fail(status, "launch gemm")

        return run

    def __call__(self, stream: int = 0) -> None:
        assert self.fast is not None
        self.fast(stream, "launch gemm (cluster)" if self.cluster > 1 else "launch gemm")


def resident_clusters(fn: Any, rung: Rung, sms: int) -> int:
    """Clusters of `rung` that fit on the GPU at once (a persistent grid must not exceed it)."""
    if rung.cluster_size == 1:
        return sms
    cs = rung.cluster_size
    n = max_active_clusters(fn, (cs, 1, 1), (rung.threads, 1, 1), rung.smem_bytes)
    if n < 1:
        raise GpuDissectError(f"rung {rung.number}: no cluster of {cs} CTAs fits on this GPU")
    return n


def prepare(
    rung_number: int,
    dtype: str,
    a: int,
    bt: int,
    c: int,
    m: int,
    n: int,
    k: int,
    scale_a: int = 0,
    scale_b: int = 0,
    dp_units: int | None = None,
    promotion: str = L2_PROMOTION,
) -> Launch:
    """C (m x n) = A (m x k, row-major) times B where bt is B stored n x k row-major (B column-major);
    rung_number AUTO: the public default's per-shape choice (variants.pick_rung).
    e4m3: C (bf16) = scale_a * scale_b * A B^T, scale_a/scale_b the device addresses of one float32 each.
    dp_units (stream-K rungs, for experiments): units to run data-parallel instead of the rung's rule;
    promotion (for experiments): the operands' L2 promotion (NONE, L2_64B, L2_128B, L2_256B)."""
    if dtype not in _TMAP_DTYPE:
        raise ValueError(f"dtype {dtype!r} is not supported; supported: {', '.join(_TMAP_DTYPE)}")
    check_dims(m, n, k, rung_number, dtype)
    if dtype == "e4m3" and not (scale_a and scale_b):
        raise ValueError("fp8 e4m3 needs scale_a and scale_b (device addresses of one float32 each)")
    if rung_number == AUTO:
        # where the TMA rungs cannot run, the public default is rung 1 (or says why there is none)
        rung_number = public_rung(Target(*current.context().cc), dtype)
        if rung_number != AUTO:
            check_dims(m, n, k, rung_number, dtype)
    if rung_number == AUTO:
        sms = current.context().sm_count
        clusters = resident_clusters(function(RUNGS[BEST], dtype), RUNGS[BEST], sms)
        if dp_units is None and split_all(m, n, k, dtype, clusters):
            rung_number, dp_units = BEST, 0
        else:
            rung_number = pick_rung(m, n, k, dtype, clusters)
    rung = RUNGS[rung_number]
    fn = function(rung, dtype)
    sms = current.context().sm_count
    resident = resident_clusters(fn, rung, sms) if rung.persistent else sms
    slots: tuple[int | None, ...]
    if rung.number == 1:
        holders: list[Any] = [ctypes.c_uint64(a), ctypes.c_uint64(bt), ctypes.c_uint64(c)]
        slots = (0, 1, 2, None, None)
    elif rung.number >= 6:
        # each CTA of a cluster loads its 1/cluster slice of the shared operand tile and multicasts it;
        # C leaves in 64 x 64 boxes of the output type
        ta = tensor_map(dtype, a, m, k, rung.bm // rung.cluster_n, promotion)
        tb = tensor_map(dtype, bt, n, k, rung.bn // rung.cluster, promotion)
        # C leaves in 64 x 64 boxes (128-byte swizzle); a tile width not a multiple of 64 in 64 x 32 ones, unswizzled
        tc = tensor_map(OUT_DTYPE[dtype], c, m, n, 64, box_bytes=rung.epi_cols * 2, swizzle=rung.epi_swizzle)
        holders = [(ctypes.c_ubyte * 128).from_buffer_copy(t) for t in (ta, tb, tc)]
        holders += [ctypes.c_uint64(scale_a), ctypes.c_uint64(scale_b)]
        holders += [ctypes.c_uint64(x) for x in workspace(rung, resident * rung.cluster_size)]
        slots = (0, 1, 2, 3, 4)
    else:
        # a clustered rung loads its 1/cluster slice of the B tile and multicasts it
        ta, tb = tensor_map(dtype, a, m, k, rung.bm), tensor_map(dtype, bt, n, k, rung.bn // rung.cluster)
        holders = [
            (ctypes.c_ubyte * 128).from_buffer_copy(ta),
            (ctypes.c_ubyte * 128).from_buffer_copy(tb),
            ctypes.c_uint64(c),
        ]
        slots = (0, 1, 2, None, None)
    holders += [ctypes.c_int32(m), ctypes.c_int32(n), ctypes.c_int32(k)]
    if rung.number >= 6:
        dp = rung.dp_units(m, n, k, resident, dtype) if dp_units is None else dp_units
        if not 0 <= dp:
            raise ValueError(f"dp_units must be >= 0, got {dp}")
        holders.append(ctypes.c_int32(dp))
    params = param_array(holders)
    return Launch(
        fn,
        rung.grid(m, n, resident),
        rung.threads,
        rung.smem_bytes,
        holders,
        params,
        rung.cluster_size,
        rung.number,
        slots,
        [a, bt, c, scale_a, scale_b],
    )
