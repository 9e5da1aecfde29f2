"""The instruction-cache probe machinery (no benchmark here): the generated builds of
kernels/cache_icache.cu (icache_seq alone per measured length for the staircase and the fine scans, the
whole file per pair of sequence lengths for the privacy experiments), their compilation and SASS checks
(Builder), and the launches that time them (Runner).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import TypeVar

import numpy as np

from ...analysis import icache_privacy as priv
from ...device.compiler import CompilePool, compile_spec, is_cached
from ...device.cuda import Arg, Function
from ...device.stream import Stream
from ...sass.disasm import build_and_read, disassemble_cached, find_tool
from ..context import BenchContext
from ..registry import KernelSpec, Needs
from ..shared import one_block_per_sm_smem
from .sources import CLOCK_READ, icache_prelude, icache_seq_prelude, straight_line_problems, thrash_problems

ICACHE = KernelSpec(
    "cache_icache.cu",
    {
        "icache_seq": [r"\bFFMA\b", CLOCK_READ],
        "icache_observe": [r"\bFFMA\b", CLOCK_READ, r"ATOMG\.E\.EXCH", r"SR_VIRTID"],
        "icache_thrash": [r"\bFFMA\b", r"ATOMG\.E\.CAS", r"ATOMG\.E\.EXCH", r"SR_VIRTID"],
        "block_smid": [r"SR_VIRTUALSMID"],
        "cluster_smid": [r"SR_VIRTUALSMID"],
    },
)
SEQ_ONLY = {"icache_seq": ICACHE.required["icache_seq"]}  # the required SASS of a seq_spec build
PASSES = 8  # passes per launch; the first fetches the code, the others are timed warm
CLUSTERS = Needs(features=("clusters",))  # what linking SMs into GPCs (gpc_groups) takes
K = TypeVar("K", bound=Hashable)
Progress = Callable[[int, int], None]  # (done, total)


def icache_spec(n_measure: int, n_thrash: int = 8) -> KernelSpec:
    """cache_icache.cu with a measured sequence of n_measure FFMAs and a thrash sequence of n_thrash
    (the generated #defines before the file): every kernel, as the privacy experiments launch them."""
    return KernelSpec(
        ICACHE.file,
        ICACHE.required,
        prelude=icache_prelude(n_measure, n_thrash),
        label=f"cache_icache.cu[{n_measure}+{n_thrash}]",
    )


def seq_spec(n_measure: int) -> KernelSpec:
    """cache_icache.cu reduced to icache_seq over n_measure FFMAs: what the staircase and the fine scans launch.
    Its icache_seq compiles to the same SASS as in icache_spec (a CPU test compares them on every CI arch), at
    the same 128 B alignment; without icache_observe's second copy of the sequence, NVRTC, cuobjdump and the
    straight-line check do about half the work (ptxas more than half: its time grows faster than the code)."""
    return KernelSpec(
        ICACHE.file, SEQ_ONLY, prelude=icache_seq_prelude(n_measure), label=f"cache_icache.cu[seq{n_measure}]"
    )


Check = Callable[[dict[str, str]], list[str]]  # a build's SASS by function -> what is wrong with it


class Builder:
    """Compiles generated icache variants into the cubin cache (a process pool) and checks their SASS where
    cuobjdump exists on the machine; the CPU tests check the generator on every CI run. Builds a later step needs
    can be queued ahead (prefetch): the pool compiles them while the benchmark measures, and the step then
    waits only for what is still compiling."""

    def __init__(self, ctx: BenchContext):
        self.ctx, self.arch = ctx, ctx.device.arch
        self.can_check = find_tool("cuobjdump") is not None
        self._checked: set[str] = set()  # the builds checked (a fine scan asks again for sizes measured before)
        self._pool: CompilePool | None = None

    @property
    def checked(self) -> int:
        return len(self._checked)

    def _check(self, spec: KernelSpec, check: Check) -> None:
        if spec.name in self._checked:
            return
        cubin = compile_spec(spec, self.arch)  # the Runner's loads of it are cache hits
        if self.can_check:
            bad = check(disassemble_cached(cubin))  # a warm run reads it back instead of disassembling again
            self.ctx.check(not bad, f"{spec.variant} is not straight-line: {'; '.join(bad)}")
            self._checked.add(spec.name)

    def prefetch(self, specs: list[KernelSpec]) -> None:
        """Queue the cold ones of `specs` in the pool (in this order, behind what is queued) without waiting."""
        cold = [s for s in specs if not is_cached(s, self.arch)]
        if cold:
            self._queue(None, cold)

    def seqs(self, ns: list[int], progress: Progress | None = None) -> dict[int, KernelSpec]:
        """seq_spec of every FFMA count, built and checked (see many)."""
        return self._build({n: (seq_spec(n), _seq_check(n)) for n in ns}, progress)

    def many(self, pairs: list[tuple[int, int]], progress: Progress | None = None) -> dict[tuple[int, int], KernelSpec]:
        """icache_spec of every (n_measure, n_thrash) pair, built and checked."""
        return self._build({p: (icache_spec(*p), _full_check(*p)) for p in pairs}, progress)

    def _build(self, todo: dict[K, tuple[KernelSpec, Check]], progress: Progress | None) -> dict[K, KernelSpec]:
        """Build every spec, the cold ones in a process pool (compile, cuobjdump and the parse of its listing in
        parallel: in threads the parse held the GIL, ~0.6 s a build, and serialised a cold quick run's fine scans),
        and check each one's SASS from the cache, a cold one as soon as it is built (the checks of the first
        overlap the compiles of the last); `progress` after each (a cold build of 1 MiB of code takes seconds)."""
        cold = [s for s, _ in todo.values() if not is_cached(s, self.arch)]
        by_variant = {s.variant: k for k, (s, _) in todo.items()}
        checked: set[K] = set()

        def check(k: K) -> None:
            self._check(*todo[k])
            checked.add(k)
            if progress:
                progress(len(checked), len(todo))

        if len(cold) > 1 or (cold and self._pool is not None):  # one cold build and no pool: in this process
            self._queue("icache", cold)  # a spec queued before (prefetch) keeps its place and its future
            self._pool.wait("icache", lambda _done, _total, what: check(by_variant[what]))  # type: ignore[union-attr]
        for k in todo:
            if k not in checked:
                check(k)  # a cache hit (or the one cold build)
        return {k: s for k, (s, _) in todo.items()}

    def _queue(self, key: str | None, specs: list[KernelSpec]) -> None:
        if self._pool is None:  # one pool for the benchmark: its processes start once
            self._pool = CompilePool(self.arch, workers=os.cpu_count() or 2, fn=build_and_read, low_priority=False)
        self._pool.queue(key, specs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @property
    def sass_note(self) -> str:
        return (
            f"SASS of all {self.checked} builds checked on this machine: "
            "exactly the FFMA count between two clock reads, no branch"
            if self.can_check
            else "SASS checked by the CPU tests (no cuobjdump on this machine)"
        )


def _seq_check(n: int) -> Check:
    return lambda funcs: straight_line_problems(funcs["icache_seq"], n)


def _full_check(n: int, t: int) -> Check:
    def check(funcs: dict[str, str]) -> list[str]:
        bad = [f"{fn}: {b}" for fn in ("icache_seq", "icache_observe") for b in straight_line_problems(funcs[fn], n)]
        return bad + [f"icache_thrash: {b}" for b in thrash_problems(funcs["icache_thrash"], t)]

    return check


class Runner:
    """Launches of the icache builds and the checks of what they wrote (buffers freed with the benchmark;
    close() ends the two streams of the concurrent method)."""

    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.cyc = ctx.alloc(8 * (PASSES + 2))
        self.out = ctx.alloc(4 * 16)
        self.res = ctx.alloc(8 * 32)  # icache_observe: 16 passes, SM, %warpid, wait flag
        self.flag = ctx.alloc(16)  # [0] observer/thrasher handshake, [2] thrasher claim (concurrent mode)
        self.tres = ctx.alloc(8 * 4)
        self._streams: tuple[Stream, ...] | None = None
        self.clock_pairs: list[tuple[int, int]] = []
        self._fns: dict[tuple[str, str], Function] = {}
        self._cubins: dict[str, bytes] = {}

    def fn(self, spec: KernelSpec, name: str) -> Function:
        """A function of the build's module (ctx.module: one load per build, kept for the benchmark)."""
        key = (spec.name, name)
        if key not in self._fns:
            self._fns[key] = self.ctx.kernel(spec, name)
        return self._fns[key]

    def close(self) -> None:
        for st in self._streams or ():
            st.close()

    def seq(self, spec: KernelSpec, n: int) -> float:
        """Cycles per FFMA: median over the warm passes of one launch of one warp."""
        fn = self.fn(spec, "icache_seq")
        fn(1, 32, [Arg.f32(1.0), Arg.f32(1.0), Arg.i32(PASSES), Arg.ptr(self.cyc), Arg.ptr(self.out)])
        self.dev.sync("icache_seq")
        cyc = self.dev.download(self.cyc, np.int64, PASSES + 2)
        out = self.dev.download(self.out, np.float32, 8)
        want = np.arange(8) + PASSES * n / 8
        self.ctx.check(
            bool(np.all(out == want)), f"icache_seq({n}): chains hold {out.tolist()}, expected {want.tolist()}"
        )
        self.clock_pairs.append((int(cyc[PASSES]), int(cyc[PASSES + 1])))
        return float(np.median(cyc[1:PASSES])) / n

    def smids(self, spec: KernelSpec) -> list[int]:
        """SM of each block of a one-block-per-SM launch (as the observer and thrasher are launched)."""
        n = self.ctx.props["sm_count"]
        with self.ctx.scratch():
            buf = self.ctx.alloc(4 * n)
            self.fn(spec, "block_smid")(n, 32, [Arg.ptr(buf)], smem=self._smem())
            self.dev.sync("block_smid")
            return [int(v) for v in self.dev.download(buf, np.uint32, n)]

    def _smem(self) -> int:
        return one_block_per_sm_smem(self.ctx.props)

    def fresh(self, spec: KernelSpec, name: str) -> Function:
        """The function from a new load of the build: its code at new addresses, in no cache yet."""
        if spec.name not in self._cubins:
            self._cubins[spec.name] = compile_spec(spec, self.dev.arch)
        return self.dev.load(self._cubins[spec.name]).function(name)

    def observe(
        self, fn: Function, n: int, o_sm: int, o_warp: int, passes: int, flag: bool = False
    ) -> tuple[list[float], int, int]:
        """Cycles per FFMA of each pass of one observer launch (one block per SM); its SM and %warpid."""
        self.dev.memset32(self.res, 0, 2 * 32)
        fn(self.ctx.props["sm_count"], 256, self._observe_args(n, o_sm, o_warp, passes, flag), smem=self._smem())
        self.dev.sync("icache_observe")
        return self._observed(n, o_sm, passes)

    def _observe_args(self, n: int, o_sm: int, o_warp: int, passes: int, flag: bool) -> list[Arg]:
        return [
            Arg.f32(1.0),
            Arg.f32(1.0),
            Arg.u32(o_sm),
            Arg.i32(o_warp),
            Arg.i32(passes),
            Arg.ptr(self.flag.ptr if flag else 0),
            Arg.ptr(self.res),
            Arg.ptr(self.out),
        ]

    def _observed(self, n: int, o_sm: int, passes: int) -> tuple[list[float], int, int]:
        res = self.dev.download(self.res, np.int64, 32)
        out = self.dev.download(self.out, np.float32, 8)
        self.ctx.check(int(res[16]) == o_sm, f"observer ran on SM {int(res[16])}, asked {o_sm}")
        want = np.arange(8) + passes * n / 8
        self.ctx.check(
            bool(np.all(out == want)), f"icache_observe({n}): chains hold {out.tolist()}, expected {want.tolist()}"
        )
        return [float(res[k]) / n for k in range(passes)], int(res[16]), int(res[17])

    def _thrash_args(self, t_sm: int, claim: bool) -> list[Arg]:
        return [
            Arg.f32(1.0),
            Arg.f32(1.0),
            Arg.u32(t_sm),
            Arg.i32(0),
            Arg.ptr(self.flag.ptr + 8 if claim else 0),
            Arg.ptr(self.flag.ptr if claim else 0),
            Arg.ptr(self.tres),
            Arg.ptr(self.out),
        ]

    def _thrashed(self, t: int, t_sm: int) -> int:
        res = self.dev.download(self.tres, np.int64, 4)
        out = self.dev.download(self.out, np.float32, 16)[8:]
        self.ctx.check(
            int(res[3]) == 1 and int(res[0]) == t_sm,
            f"no thrasher ran on SM {t_sm} (ran: {int(res[3])}, SM {int(res[0])})",
        )
        want = np.arange(8) + t / 8
        self.ctx.check(
            bool(np.all(out == want)), f"icache_thrash({t}): chains hold {out.tolist()}, expected {want.tolist()}"
        )
        return int(res[1])

    def thrash(self, spec: KernelSpec, t: int, t_sm: int) -> int:
        """Warp 0 of the block on t_sm runs t FFMAs (one block per SM, launched alone); its %warpid."""
        self.dev.memset32(self.tres, 0, 8)
        self.fn(spec, "icache_thrash")(
            self.ctx.props["sm_count"], 256, self._thrash_args(t_sm, False), smem=self._smem()
        )
        self.dev.sync("icache_thrash")
        return self._thrashed(t, t_sm)

    def concurrent(
        self, o_fn: Function, n: int, o_sm: int, o_warp: int, thr: KernelSpec, t: int, t_sm: int
    ) -> tuple[list[float], int, int, int] | None:
        """Observer kernel (3 passes; waits after pass 0) and thrasher kernel (many small blocks, the first
        on t_sm thrashes) on two streams at once: cycles per FFMA of each pass, observer SM and %warpid,
        thrasher %warpid; None when the handshake failed (the kernels did not overlap)."""
        self.dev.memset32(self.flag, 0, 4)
        self.dev.memset32(self.res, 0, 2 * 32)
        self.dev.memset32(self.tres, 0, 8)
        self.dev.sync("reset of the privacy flags")
        t_fn = self.fn(thr, "icache_thrash")
        for f in (o_fn, t_fn):  # one L1/shared split for both, or the thrasher's blocks cannot join the observer's SM
            f.set_carveout(100)
        # on two streams: Device.launch uses the legacy stream 0, which would serialise the two kernels
        self.streams[0].launch(
            o_fn, self.ctx.props["sm_count"], 256, self._observe_args(n, o_sm, o_warp, 3, True), self._smem()
        )
        self.streams[1].launch(t_fn, 4 * self.ctx.props["sm_count"], 32, self._thrash_args(t_sm, True))
        self.dev.sync("icache_observe + icache_thrash on two streams")
        waits = self.dev.download(self.res, np.int64, 32)[18], self.dev.download(self.tres, np.int64, 4)
        if int(waits[0]) or int(waits[1][2]) or not int(waits[1][3]):
            return None  # the two kernels did not run at the same time (or no thrasher block landed on t_sm)
        passes, sm, warp = self._observed(n, o_sm, 3)
        return passes, sm, warp, self._thrashed(t, t_sm)

    @property
    def streams(self) -> tuple[Stream, ...]:
        if self._streams is None:
            self._streams = (Stream(self.dev), Stream(self.dev))
        return self._streams

    def gpc_groups(self, spec: KernelSpec) -> list[list[int]]:
        """SMs linked by hosting blocks of one cluster (a cluster never leaves its GPC): GPCs, or parts
        of them where too few clusters landed. One block per SM, 16 waves of clusters of 8, then of 16. A GPU
        without clusters (before sm_90) links none: no groups."""
        if CLUSTERS.why_not(self.ctx.target):
            return []
        linked: list[list[int]] = []
        for cs in (8, 16):
            n = (16 * self.ctx.props["sm_count"]) // cs * cs
            with self.ctx.scratch():
                buf = self.ctx.alloc(4 * n)
                try:
                    self.fn(spec, "cluster_smid")(
                        n, 32, [Arg.ptr(buf)], smem=self._smem(), cluster=(cs, 1, 1), non_portable_cluster=cs > 8
                    )
                    self.dev.sync("cluster_smid")
                    sm = [int(v) for v in self.dev.download(buf, np.uint32, n)]
                except Exception:  # noqa: BLE001 - a cluster size the GPU cannot place: the other size's groups stand
                    continue
            linked += [sm[i : i + cs] for i in range(0, n, cs)]
        return priv.merge_groups(linked)
