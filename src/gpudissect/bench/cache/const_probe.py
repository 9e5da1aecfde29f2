"""The constant-cache probe machinery (no benchmark here): the kernels of kernels/cache_const.cu, the
sequential chain laid in their 64 KiB `__constant__` array, and ConstProbe, which launches the chases
and checks where every lane ended.
"""

from __future__ import annotations

import numpy as np

from ...device.cuda import Arg, Buffer, Module
from ...errors import GpuDissectError
from ..context import BenchContext
from ..registry import KernelSpec
from ..shared import one_block_per_sm_smem
from .sources import CLOCK_READ, const_prelude

_LDC_INDEXED = r"LDC R\d+, c\[0x3\]\[R\d+\]"
CONST = KernelSpec(
    "cache_const.cu",
    {
        "const_chase": [_LDC_INDEXED, CLOCK_READ],
        "const_chase_warp": [_LDC_INDEXED, CLOCK_READ],
        "const_thrash": [_LDC_INDEXED, CLOCK_READ, r"\bFFMA\b"],
    },
)
WORDS = 16384  # the kernel's __constant__ array: 64 KiB, the most one constant bank holds


def thrash_spec(n_thrash: int) -> KernelSpec:
    """cache_const.cu with n_thrash FFMAs in const_thrash (the generated #define before the file)."""
    return KernelSpec(
        CONST.file, CONST.required, prelude=const_prelude(n_thrash), label=f"cache_const.cu[thrash{n_thrash}]"
    )


def const_buffer(module: Module, name: str = "cdata") -> Buffer:
    """Device address and size of a module's __constant__ symbol."""
    return module.global_buffer(name)


def seq_chain(footprint: int, stride: int) -> tuple[np.ndarray, int]:
    """Word array with a sequential cycle through footprint // stride elements `stride` bytes apart
    (element i -> i + 1, the last back to the first); returns it and the element count."""
    if stride % 4 or stride <= 0:
        raise GpuDissectError("constant chase stride must be a positive multiple of 4 bytes")
    n = footprint // stride
    if n < 2 or n * stride > WORDS * 4:
        raise GpuDissectError(f"constant chase of {n} x {stride} B does not fit 64 KiB")
    w = stride // 4
    words = np.zeros(WORDS, np.uint32)
    idx = np.arange(n, dtype=np.uint32) * w
    words[idx] = np.roll(idx, -1)
    return words, n


def chain_end(n: int, stride: int, start_elem: int, steps: int) -> int:
    return ((start_elem + steps) % n) * (stride // 4)


def distinct_starts(k: int, n: int) -> list[int]:
    """Lane l starts at element (l % k) * (n // k): k groups, n // k elements apart, so the k groups
    load k distinct addresses at every step of a sequential chain."""
    if not 1 <= k <= 32 or n < k:
        raise ValueError("need 1 <= k <= 32 and n >= k")
    return [(lane % k) * (n // k) for lane in range(32)]


def const_grid(lo: int, hi: int, per_octave: int, align: int) -> list[int]:
    """Geometric sizes from lo to hi, per_octave points a doubling, rounded to multiples of align."""
    n = int(np.ceil(np.log2(hi / lo) * per_octave)) + 1
    return sorted({int(round(v / align)) * align for v in np.geomspace(lo, hi, n)})


class ConstProbe:
    """Chases through CONST's `cdata` (buffers freed with the benchmark); remembers the SMs that read
    it (a cold pass needs one that did not) and the clock of every long chase."""

    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.mod = ctx.module(CONST)
        self.cbuf = const_buffer(self.mod)
        self.ctx.check(self.cbuf.nbytes == WORDS * 4, f"cdata is {self.cbuf.nbytes} bytes, expected {WORDS * 4}")
        self.res = ctx.alloc(8 * 64)
        self.starts = ctx.alloc(4 * 32)
        self.used_sms: set[int] = set()
        self.clock: list[float] = []
        self.layout: tuple[int, int] | None = None

    def lay(self, footprint: int, stride: int) -> int:
        words, n = seq_chain(footprint, stride)
        self.dev.upload(words, self.cbuf)
        self.layout = (n, stride)
        return n

    def chase(self, warm: int, steps: int) -> float:
        """Cycles per load of one lane over the laid chain (after `warm` untimed loads)."""
        n, stride = self.layout  # type: ignore[misc]
        self.ctx.kernel(CONST, "const_chase")(1, 1, [Arg.u32(0), Arg.u32(warm), Arg.u32(steps), Arg.ptr(self.res)])
        self.dev.sync("const_chase")
        end, cyc, sm, ns = (int(v) for v in self.dev.download(self.res, np.uint64, 4))
        want = chain_end(n, stride, 0, warm + steps)
        self.ctx.check(end == want, f"constant chase ended at word {end}, expected {want}")
        self.used_sms.add(sm)
        if ns >= 20_000:  # %globaltimer ticks coarsely: only long chases give the clock
            self.clock.append(cyc / ns * 1000)
        return cyc / steps

    def warp(self, starts_elem: list[int], warm: int, steps: int, target_sm: int | None = None) -> float | None:
        """Cycles per warp-wide load with lane l starting at element starts_elem[l]; None when no
        block ran on target_sm."""
        n, stride = self.layout  # type: ignore[misc]
        w = stride // 4
        self.dev.upload(np.array([s * w for s in starts_elem], np.uint32), self.starts)
        self.dev.memset32(self.res, 0, 2 * 64)
        fn = self.ctx.kernel(CONST, "const_chase_warp")
        args = [
            Arg.ptr(self.starts),
            Arg.u32(warm),
            Arg.u32(steps),
            Arg.u32(0xFFFFFFFF if target_sm is None else target_sm),
            Arg.ptr(self.res),
        ]
        if target_sm is None:
            fn(1, 32, args)
        else:  # one block per SM
            fn(self.ctx.props["sm_count"], 32, args, smem=one_block_per_sm_smem(self.ctx.props))
        self.dev.sync("const_chase_warp")
        res = self.dev.download(self.res, np.uint64, 34)
        if target_sm is not None and int(res[32]) == 0:
            return None
        for lane, s in enumerate(starts_elem):
            want = chain_end(n, stride, s, warm + steps)
            self.ctx.check(int(res[lane]) == want, f"lane {lane} ended at word {int(res[lane])}, expected {want}")
        self.used_sms.add(int(res[33]))
        return float(res[32]) / steps

    def cold(self, starts_elem: list[int], steps: int) -> float:
        """A pass with no warm-up on an SM that never ran this module's constants: L2 (or DRAM)."""
        for sm in range(self.ctx.props["sm_count"] - 1, -1, -1):
            if sm in self.used_sms:
                continue
            self.used_sms.add(sm)
            v = self.warp(starts_elem, 0, steps, sm)
            if v is not None:
                return v
        raise GpuDissectError("no unused SM left for a cold constant pass")

    def warm_l2(self) -> None:
        """Read the whole array once on one SM, so that it is in L2 for the cold passes."""
        n, stride = self.layout  # type: ignore[misc]
        self.chase(0, n)
