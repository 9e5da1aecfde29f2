"""What several suites share: the pointer-chase machinery (building chains on the device or the host,
timing them, the SM clock of the timed windows) and the shared memory that spreads one block per SM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import capability
from ..capability import Needs, Target
from ..device.cuda import Arg, Buffer
from ..errors import GpuDissectError
from ..models import Point
from ..sass.disasm import find_tool
from .context import BenchContext
from .registry import KernelSpec

# ---- SASS by architecture family ---------------------------------------------------------------------
FAMILIES = tuple(dict.fromkeys(fam for fam, _ in capability.FAMILIES.values()))  # volta .. blackwell-consumer
PRE_AMPERE = ("volta", "turing")  # load scopes print as .CTA (sm_80+: .SM), shared loads as LDS.U
PRE_HOPPER = (*PRE_AMPERE, "ampere", "ada")  # reductions print as RED (sm_90+: REDG)
Required = dict[str, list[str]]


def family_has(needs: Needs, family: str) -> bool:
    """Whether the GPUs of `family` meet `needs`. The kernel files guard code by compute capability, so a
    need that splits a family cannot say which functions its builds hold: that is an error."""
    ok = {needs.why_not(Target(*cc)) is None for cc, (fam, _) in capability.FAMILIES.items() if fam == family}
    if len(ok) != 1:
        raise ValueError(f"{needs} holds for some GPUs of the {family} family only")
    return ok.pop()


def by_family(build: Callable[[str], Required]) -> dict[str, Required]:
    """KernelSpec.required_by_family from `build(family)`, the required SASS on each family: the families
    whose patterns differ from Hopper's (build("hopper"), the spec's `required`)."""
    hopper = build("hopper")
    return {fam: req for fam in FAMILIES if fam != "hopper" and (req := build(fam)) != hopper}


def sass_of(ctx: BenchContext, spec: KernelSpec, function: str) -> str | None:
    """The SASS of one function of a variant as built for this GPU (what a figure's label comes from), or
    None where no disassembler is installed (the label then falls back to the SASS the variant declares)."""
    if find_tool("cuobjdump") is None:
        return None
    return ctx.sass(spec).get(function, "")


CACHE_OPS = {"ca": 0, "cg": 1, "default": 2, "volatile": 3}
# ld.global.ca -> LDG...STRONG.SM, .cg -> STRONG.GPU, plain -> LDG.E.64 without a scope,
# ld.volatile -> STRONG.SYS. Volta and Turing print the .ca scope as .CTA and the plain load as .SYS.
_LDG = {
    "ca": r"LDG\.E\.64\.STRONG\.SM",
    "cg": r"LDG\.E\.64\.STRONG\.GPU",
    "default": r"LDG\.E\.64(?!\.STRONG)\s",
    "volatile": r"LDG\.E\.64\.STRONG\.SYS",
}
_LDG32 = {
    "ca": r"LDG\.E\.STRONG\.SM",
    "cg": r"LDG\.E\.STRONG\.GPU",
    "default": r"LDG\.E\s",
    "volatile": r"LDG\.E\.STRONG\.SYS",
}
_LDG_PRE_AMPERE = {"ca": r"LDG\.E\.64\.STRONG\.CTA", "default": r"LDG\.E\.64\.SYS\s"}
_LDG32_PRE_AMPERE = {"ca": r"LDG\.E\.STRONG\.CTA", "default": r"LDG\.E\.SYS\s"}
_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
_CLOCK32 = r"(S2UR UR\d+|S2R R\d+|CS2U?R\.32 U?R\d+), SR_CLOCKLO"  # mov.u32 %clock: the papers' 32-bit reads
_GTIME = r"SR_GLOBALTIMERLO"


def _pchase_required(op: str, family: str) -> Required:
    old = family in PRE_AMPERE
    ldg = _LDG_PRE_AMPERE.get(op, _LDG[op]) if old else _LDG[op]
    ldg32 = _LDG32_PRE_AMPERE.get(op, _LDG32[op]) if old else _LDG32[op]
    if family in PRE_HOPPER:
        # before sm_90 the index hop compiles to one IMAD.WIDE.U32 with the 128 B scale in a register and the
        # base from the parameter bank; Turing to Ada fold the shared hop's scaling into the load (LDS [R.X4]),
        # Volta shifts the index by its own instruction before each LDS.U: the index form's arithmetic, as
        # these GPUs run it
        index = r"IMAD\.WIDE\.U32 R\d+, R\d+, R\d+, c\[0x0\]\["
        smem_index = {
            "volta": r"(IMAD\.SHL\.U32 R\d+, R\d+, 0x4, RZ|SHF\.L\.U32 R\d+, R\d+, 0x2, RZ)",
            "turing": r"LDS\.U R\d+, \[R\d+\.X4\]",
        }.get(family, r"LDS R\d+, \[R\d+\.X4\]")
    else:
        index = r"IMAD\.WIDE\.U32 R\d+, R\d+, 0x80"
        smem_index = r"(LEA R\d+, R\d+, U?R\d+, 0x2|IMAD R\d+, R\d+, 0x4, U?R\d+)"
    return {
        "pchase": [ldg, _CLOCK, _GTIME],
        "fine_pchase": [ldg, r"STS", _CLOCK],
        "chase_on_sm": [ldg, r"STS", _CLOCK, _GTIME, r"SR_VIRTUALSMID", r"ATOMG\.E\.ADD"],
        "chain_init": [r"ST\.E\.64"],
        "chain_init_alias": [r"ST\.E\.64"],
        "chain_write_lines": [r"ST\.E\.64", r"SR_VIRTUALSMID"],
        "smem_pchase": [r"LDS\b", _CLOCK],
        # index chases: the scaled-index address arithmetic sits between the dependent loads
        "ichase": [ldg32, index, _CLOCK],
        "smem_ichase": [r"LDS\b", smem_index, _CLOCK],
        # the papers' L1 chase (l1_lat): the chain written in the kernel, a u64 pointer chase (ld.global.ca in
        # every variant, as in their code), 32-bit clock reads
        "paper_l1_lat": [_LDG_PRE_AMPERE["ca"] if old else _LDG["ca"], r"STG\.E\.64", r"BAR\.SYNC", _CLOCK32],
    }


def pchase_spec(op: str) -> KernelSpec:
    return KernelSpec(
        "memory_pchase.cu",
        _pchase_required(op, "hopper"),
        {"CACHE_OP": CACHE_OPS[op]},
        label=f"memory_pchase.cu[{op}]",
        required_by_family=by_family(lambda fam: _pchase_required(op, fam)),
    )


PCHASE = {op: pchase_spec(op) for op in CACHE_OPS}


def one_block_per_sm_smem(props: dict[str, Any], static: int = 0, at_least: int = 0) -> int:
    """Dynamic shared memory that keeps a second block off an SM (more than half of it): a launch of one
    block per SM then reaches every SM. `static`: the kernel's own static shared memory, which the opt-in
    limit must also hold; `at_least`: what the kernel needs in any case."""
    return min(max(props["smem_per_sm"] // 2 + 1024, at_least), props["smem_per_block_optin"] - static)


def random_cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    """A single cycle through all n elements in random order (no short sub-cycles). Shuffling a u32 range is
    rng.permutation(n).astype(np.uint32) (the same swaps, so the same order and generator state after) without
    the int64 copy: a quarter less host time per chain."""
    return rng.permutation(np.arange(n, dtype=np.uint32))


def chain_cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    """next[i] for a single random cycle through all n elements (a host-built chase: element i holds the
    index of the next)."""
    perm = rng.permutation(n)
    nxt = np.empty(n, np.uint32)
    nxt[perm] = np.roll(perm, -1)
    return nxt


def walk(nxt: np.ndarray, steps: int, start: int = 0) -> int:
    """Where a chase of `steps` hops through chain_cycle's `nxt` ends."""
    i = start
    for _ in range(steps % len(nxt)):  # the chain is one cycle of len(nxt) elements
        i = int(nxt[i])
    return i


class Chaser:
    """Builds chains in one device buffer and runs timed chases over them. Its buffers come from the
    context, which frees them when the benchmark ends; close() frees them before then."""

    def __init__(self, ctx: BenchContext, op: str, capacity: int, seed: int = 1, scattered: bool = False):
        """scattered: the buffer is built from map-granularity pages in shuffled physical order
        (Device.alloc_scattered), so that each page needs its own TLB entry."""
        self.ctx, self.dev, self.op = ctx, ctx.device, op
        self.spec = PCHASE[op]
        free = self.dev.free_memory()
        if capacity > free * 0.9:
            raise GpuDissectError(f"chase buffer of {capacity} bytes exceeds free device memory ({free} bytes)")
        # a scattered buffer is a mapping of the device's own, which the context does not track: close() frees it
        self.buf = self.dev.alloc_scattered(capacity, seed) if scattered else ctx.alloc(capacity)
        self.out = ctx.alloc(64)
        self.rng = np.random.default_rng(seed)
        self.chain_len = 0
        self.stride = 0
        self.order: np.ndarray | None = None
        self.cycles_ns: list[tuple[int, int]] = []  # clock64 cycles and %globaltimer ns of each timed chase

    def close(self) -> None:
        """Free the buffers now: before a caller's next large allocation."""
        self.ctx.free(self.buf, self.out)

    def build_random(self, footprint: int, stride: int) -> int:
        """Random single-cycle chain of footprint // stride elements; returns the element count."""
        n = max(int(footprint) // int(stride), 2)
        if n * stride > self.buf.nbytes:
            raise GpuDissectError(f"footprint {n * stride} exceeds the chase buffer ({self.buf.nbytes})")
        perm = random_cycle(n, self.rng)
        with self.ctx.scratch():
            dperm = self.ctx.upload(perm)
            init = self.ctx.kernel(self.spec, "chain_init")
            init(min((n + 255) // 256, 65535), 256, [Arg.ptr(self.buf), Arg.ptr(dperm), Arg.u64(n), Arg.u64(stride)])
            self.dev.sync("chain_init")
        self.chain_len, self.stride, self.order = n, stride, perm
        return n

    def build_sequential(self, n: int, stride: int) -> int:
        if n * stride > self.buf.nbytes:
            raise GpuDissectError(f"footprint {n * stride} exceeds the chase buffer ({self.buf.nbytes})")
        init = self.ctx.kernel(self.spec, "chain_init_seq")
        init(min((n + 255) // 256, 65535), 256, [Arg.ptr(self.buf), Arg.u64(n), Arg.u64(stride)])
        self.dev.sync("chain_init_seq")
        self.chain_len, self.stride, self.order = n, stride, None
        return n

    def address(self, k: int) -> int:
        """Address of the k-th element along the chain from its first."""
        k %= self.chain_len
        idx = k if self.order is None else int(self.order[k])
        return self.buf.ptr + idx * self.stride

    def expected_end(self, steps: int, first: int = 0) -> int:
        """Address the chase must end on after `steps` loads from element `first` of the chain."""
        k = (first + steps) % self.chain_len
        idx = k if self.order is None else int(self.order[k])
        return self.buf.ptr + idx * self.stride

    def run(self, warm: int, steps: int, smem: int = 0, first: int = 0) -> tuple[float, int]:
        """One launch from chain element `first`: mean cycles per timed load and the SM it ran on;
        checks where the chase ended."""
        fn = self.ctx.kernel(self.spec, "pchase")
        fn(1, 1, [Arg.u64(self.address(first)), Arg.u64(warm), Arg.u64(steps), Arg.ptr(self.out)], smem=smem)
        self.dev.sync("pchase")
        end, cycles, sm, ns = (int(v) for v in self.dev.download(self.out, np.uint64, 4))
        self.cycles_ns.append((cycles, ns))
        want = self.expected_end(warm + steps, first)
        self.ctx.check(
            end == want, f"chase ended at {end:#x}, expected {want:#x} (footprint {self.chain_len * self.stride})"
        )
        return cycles / steps, sm

    def point(self, x: float, warm: int, steps: int, reps: int, smem: int = 0, spread_starts: bool = False) -> Point:
        """Median of `reps` launches; with spread_starts each starts where no earlier one went,
        so a chain larger than the cache is never re-read from cache by a later repetition."""
        gap = self.chain_len // reps if spread_starts else 0
        if spread_starts and gap < warm + steps:
            raise GpuDissectError(f"chain of {self.chain_len} elements too short for {reps} disjoint repetitions")
        return Point.of(x, [self.run(warm, steps, smem, first=r * gap)[0] for r in range(reps)])

    def fine(self, warm: int, n: int, lat_buf: Buffer) -> np.ndarray:
        """Per-access latencies of n consecutive loads after `warm` untimed ones."""
        fn = self.ctx.kernel(self.spec, "fine_pchase")
        fn(1, 1, [Arg.u64(self.address(0)), Arg.u64(warm), Arg.u32(n), Arg.ptr(lat_buf), Arg.ptr(self.out)])
        self.dev.sync("fine_pchase")
        end = int(self.dev.download(self.out, np.uint64, 1)[0])
        want = self.expected_end(warm + n)
        self.ctx.check(end == want, f"fine chase ended at {end:#x}, expected {want:#x}")
        return self.dev.download(lat_buf, np.uint32, n).astype(np.int64)


MIN_CLOCK_WINDOW_NS = 1_000_000  # %globaltimer advances in steps: over >= 1 ms a step of up to 1 us costs < 0.1%


class ClockMeter:
    """Sums clock64 cycles and %globaltimer ns of the same timed windows: the SM clock the
    benchmark's kernels really ran at. Only windows of at least 1 ms count (the timer's update step
    then costs < 0.1%); a benchmark whose own windows are all shorter times one long launch of the
    chase kernel for it (calibration_chase)."""

    def __init__(self) -> None:
        self.cycles: list[int] = []
        self.ns: list[int] = []

    def add(self, cycles: int, ns: int) -> None:
        if ns > 0:
            self.cycles.append(int(cycles))
            self.ns.append(int(ns))

    def report(self, ctx: BenchContext, what: str) -> None:
        long = [(c, n) for c, n in zip(self.cycles, self.ns) if n >= MIN_CLOCK_WINDOW_NS]
        how = f"clock64 cycles / %globaltimer ns summed over {len(long)} timed windows (>= 1 ms) of {what}"
        if not long:
            long = [calibration_chase(ctx)]
            how = (
                f"clock64 cycles / %globaltimer ns of one 2M-step chase launch of the same pchase kernel, timed "
                f"right after {what} (whose own windows are shorter than 1 ms)"
            )
        mhz = [c / n * 1e3 for c, n in long]
        total = sum(c for c, _ in long) / sum(n for _, n in long) * 1e3
        ctx.sm_clock(total, how, (min(mhz), max(mhz)))


def calibration_chase(ctx: BenchContext, steps: int = 1 << 21) -> tuple[int, int]:
    """(cycles, ns) of one long pchase launch on a one-element .ca chain (an L1 hit every step)."""
    dev = ctx.device
    with ctx.scratch():
        buf, out = ctx.alloc(4096), ctx.alloc(64)
        ctx.kernel(PCHASE["ca"], "chain_init_seq")(1, 32, [Arg.ptr(buf), Arg.u64(1), Arg.u64(128)])
        ctx.kernel(PCHASE["ca"], "pchase")(1, 1, [Arg.ptr(buf), Arg.u64(16), Arg.u64(steps), Arg.ptr(out)])
        dev.sync("clock calibration chase")
        end, cycles, _, ns = (int(v) for v in dev.download(out, np.uint64, 4))
        ctx.check(end == buf.ptr, f"calibration chase ended at {end:#x}, expected {buf.ptr:#x}")
    return cycles, ns


def flush_l2(ctx: BenchContext, nbytes: int) -> None:
    """Evict the L2 by writing a scratch buffer larger than it (sequential chain init writes every line)."""
    with ctx.scratch():
        scratch = ctx.alloc(nbytes)
        init = ctx.kernel(PCHASE["cg"], "chain_init_seq")
        n = nbytes // 32
        init(min((n + 255) // 256, 65535), 256, [Arg.ptr(scratch), Arg.u64(n), Arg.u64(32)])
        ctx.device.sync("flush_l2")


def capacity_search(
    measure: Callable[[int], Point],
    start: int,
    limit: int,
    *,
    factor: float = 1.25,
    fine: int = 6,
    align: int = 1,
    rise: float = 1.25,
    confirm: int = 2,
    bisect: bool = False,
) -> tuple[list[Point], int | None]:
    """Grow x geometrically until the latency has clearly left its first level, then fill the gap.

    Returns every point measured (sorted) and the capacity: the largest x whose latency is still
    within 10% of the base level with no higher point before it; None if the level never ends.
    confirm: how many points in a row above rise x base end the growth (2: one spike does not).
    bisect: of the `fine` points between the last low and the first high point, measure only those a
    bisection for the first one above 10% of the base needs (about log2(fine + 1) instead of all): the
    same capacity wherever the latency, once it has left the level there, does not come back within 10%.
    """
    pts: list[Point] = []
    x, high = start, 0
    while x <= limit and high < confirm:
        pts.append(measure(x))
        base = min(p.y for p in pts[:3])
        high = high + 1 if pts[-1].y > rise * base else 0
        x = max(int(round(x * factor / align)) * align, x + align)
    base = min(p.y for p in pts[:3])
    last_low = max((p.x for p in pts if all(q.y <= 1.1 * base for q in pts if q.x <= p.x)), default=None)
    if last_low is None or last_low == pts[-1].x:
        return sorted(pts, key=lambda p: p.x), None
    first_high = min(p.x for p in pts if p.x > last_low)
    seen = {p.x for p in pts}
    cand: list[int] = []
    for v in np.linspace(last_low, first_high, fine + 2)[1:-1]:
        xi = int(round(v / align)) * align
        if xi not in seen:
            seen.add(xi)
            cand.append(xi)
    if not bisect:
        pts += [measure(xi) for xi in cand]
    else:  # cand[lo] is low (or last_low, lo = -1), cand[hi] high (or first_high, hi = len(cand))
        lo, hi = -1, len(cand)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            pts.append(measure(cand[mid]))
            lo, hi = (mid, hi) if pts[-1].y <= 1.1 * base else (lo, mid)
    pts.sort(key=lambda p: p.x)
    return pts, capacity_of_level(pts, base)


def capacity_of_level(pts: list[Point], base: float, tol: float = 0.10) -> int | None:
    """Largest x still within `tol` of the base latency, scanning upwards to the first departure."""
    cap = None
    for p in sorted(pts, key=lambda p: p.x):
        if p.y > (1 + tol) * base:
            break
        cap = int(p.x)
    return cap


def log_grid(lo: int, hi: int, per_octave: int, align: int = 1024) -> list[int]:
    """Geometric footprints from lo to hi, rounded to `align`, unique and sorted."""
    if lo <= 0 or hi < lo:
        raise ValueError("need 0 < lo <= hi")
    n = int(np.ceil(np.log2(hi / lo) * per_octave)) + 1
    vals = np.unique((np.round(np.geomspace(lo, hi, n) / align) * align).astype(np.int64))
    return [int(v) for v in vals if v > 0]


def fastest_launch_shape(dev: Any, sms: int, launch: Any, max_block: int = 1024) -> tuple[int, int]:
    """The (blocks per SM, threads per block) at which `launch(grid, block)` runs fastest;
    `max_block` is the kernel's own limit (its register use may forbid 1024 threads)."""
    timed = []
    for per_sm in (1, 2, 4, 8):
        for block in (256, 512, 1024):
            if per_sm * block > 2048 or block > max_block:
                continue
            launch(sms * per_sm, block)
            timed.append((min(dev.time_ms(lambda: launch(sms * per_sm, block), 2)), per_sm, block))
    _, per_sm, block = min(timed)
    return per_sm, block
