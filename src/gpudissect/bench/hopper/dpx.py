"""The hopper suite, DPX (Luo et al. 000 §8.1): the dynamic-programming instructions one by one
(latency, per-SM throughput, throughput over the number of blocks; Figs. 13-14).

Every DPX function is built twice from the same source: for the device (its cubin: on sm_90a and sm_100a
hardware DPX, VIMNMX3, VIADDMNMX, VIMNMX.S16x2 with predicate outputs...; before Hopper and on sm_120 the
functions emulated with two-operand min/max, which its SASS shows and its figures say: dpx_sass.py) and as
compute_80 PTX that the driver JIT-compiles for the GPU at hand (the code path of a pre-Hopper virtual
architecture: the functions are emulated with ordinary integer instructions in the PTX; what the JIT makes of
them on Hopper is the comparison the paper draws between compute_80 and compute_90 on the H800).
Every GPU runs the benchmark; the JIT build where the GPU can load compute_80 PTX and is not an sm_80
itself. Every result is checked against the CPU model of the function (dpx_model.py). The two builds
(dual_builds) serve smith_waterman.py as well.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from ...analysis.stats import median_spread
from ...capability import Target
from ...device.compiler import compile_spec
from ...device.cuda import Arg, Module
from ...errors import GpuDissectError
from ...sass.disasm import find_tool
from ..context import BenchContext
from ..registry import KernelSpec, Needs, Param, benchmark, in_range
from .dpx_model import (
    DPX_DEFINES,
    LAT_UNROLL,
    THR_ILP,
    THR_UNROLL,
    Intrinsic,
    chain_latency,
    chain_operands,
    chain_throughput,
    dpx_model,
    eval_inputs,
    intrinsic,
    intrinsics,
)
from .dpx_sass import (  # noqa: F401 - dpx_sass and the labels are used through this module too
    EMULATING_FAMILIES,
    PRE_HOPPER,
    declared_hardware,
    dpx_required,
    dpx_sass,
    has_hardware_dpx,
    native_label,
)

# ---------------------------------------------------------------------------------------
# The kernels: their required SASS per family in dpx_sass.py
# ---------------------------------------------------------------------------------------
DPX_SPEC = KernelSpec(
    "hopper_dpx.cu",
    dpx_required(),
    DPX_DEFINES,
    label="hopper_dpx.cu",
    required_by_family={f: dpx_required(f) for f in EMULATING_FAMILIES},
)

# ---------------------------------------------------------------------------------------
# The builds: this GPU's cubin, and the compute_80 PTX the driver JIT-compiles
# ---------------------------------------------------------------------------------------
JIT = "sm80"  # the build of compute_80 PTX (the pre-Hopper virtual architecture)
JIT_CC = (8, 0)
JIT_PTX = "compute_80"


def native_build(t: Target) -> str:
    """The name of this GPU's own build: sm<major><minor> ('sm90' on Hopper)."""
    return f"sm{t.major}{t.minor}"


def jit_unavailable(t: Target) -> str | None:
    """Why the compute_80 JIT build does not run on `t` (None: it does)."""
    if t.cc < JIT_CC:
        return f"n/a: compute_80 PTX needs compute capability 8.0 or newer, this GPU is {t.major}.{t.minor}"
    if native_build(t) == JIT:
        return "n/a: on compute capability 8.0 this GPU's own build is the sm_80 build (the keys without _sm80)"
    return None


def jit_spec(spec: KernelSpec) -> KernelSpec:
    """The compute_80 PTX variant of `spec` (no SASS of its own: the driver JIT-compiles it at load)."""
    return replace(spec, required={}, required_by_family={}, label=f"{spec.variant} [compute_80 PTX]", virtual=JIT_PTX)


def jit_ptx(spec: KernelSpec) -> bytes:
    """compute_80 PTX of `spec`, kept beside the cubins: NVRTC takes seconds over these sources (5 s for
    hopper_dpx.cu's 2 MB of PTX), which the runner's pool spends ahead (jit_prebuild); the driver's JIT
    cache then keeps what it makes of the PTX."""
    return compile_spec(jit_spec(spec), JIT_PTX)


def jit_prebuild(*specs: KernelSpec) -> Callable[[Target, str], list[KernelSpec]]:
    """A benchmark's prebuild: the compute_80 PTX of `specs` where the GPU runs the JIT build."""
    return lambda t, mode: [jit_spec(s) for s in specs] if jit_unavailable(t) is None else []


def dual_builds(ctx: BenchContext, spec: KernelSpec) -> dict[str, Module]:
    """This GPU's build first (its cubin, named by native_build: 'sm90' on Hopper), then 'sm80': compute_80
    PTX JIT-compiled by the driver, where the GPU can load it and it is another build than the first."""
    out: dict[str, Module] = {native_build(ctx.target): ctx.module(spec)}
    if jit_unavailable(ctx.target) is None:
        out[JIT] = ctx.device.load(jit_ptx(spec))
    return out


def load_builds(ctx: BenchContext, spec: KernelSpec) -> dict[str, Module]:
    """dual_builds from a thread of its own (the GPU's context made current there), while the benchmark's host
    work goes on: the driver's JIT of the PTX holds no GIL."""
    ctx.device.make_current()
    return dual_builds(ctx, spec)


def native_sass(ctx: BenchContext, spec: KernelSpec) -> dict[str, str] | None:
    """The SASS of this GPU's build of `spec`, or None where it cannot be read (no disassembler)."""
    if find_tool("cuobjdump") is None:
        return None
    try:
        return ctx.sass(spec)
    except GpuDissectError:  # a cuobjdump too new for this architecture: `gpudissect doctor` says so
        return None


# ---------------------------------------------------------------------------------------
# The benchmark: latency, per-SM throughput, throughput over blocks (Figs. 13-14)
# ---------------------------------------------------------------------------------------
def per_sm_rate(spans: np.ndarray, calls_per_block: float) -> np.ndarray:
    """Calls per SM clock of each SM (in SM order): its blocks' calls over the span of their clock intervals."""
    r = spans.reshape(-1, 3).astype(np.int64)
    order = np.argsort(r[:, 2], kind="stable")
    sm = r[order, 2]
    first = np.flatnonzero(np.r_[True, sm[1:] != sm[:-1]])  # each SM's run of blocks
    start = np.minimum.reduceat(r[order, 0], first)
    end = np.maximum.reduceat(r[order, 1], first)
    return np.diff(np.r_[first, len(sm)]) * calls_per_block / np.maximum(1, end - start)


def sweep_counts(sms: int, k: int) -> list[int]:
    """Blocks for the throughput-vs-blocks curve: powers of two below the SM count, then around
    every multiple of it (just below, at, just above, and quarter steps) up to k x SMs."""
    xs = {1 << e for e in range(int(math.log2(max(1, sms))) + 1) if 1 << e < sms}
    for m in range(1, k + 1):
        base = m * sms
        xs |= {base - 1, base, base + 1}
        if m < k:
            xs |= {base + sms // 4, base + sms // 2, base + 3 * sms // 4}
    return sorted(x for x in xs if 1 <= x <= k * sms)


SWEEP_FUNCS = ("vimax3_s16x2_relu", "viaddmax_s32")
METHOD_DPX = (
    "operands from a runtime array, 32 distinct (b,c) pairs in registers (step k uses pair k mod 32), "
    "the chain loop-carried through the result only; __vib* predicates counted off the chain; every result and "
    "count equals a CPU model replaying the chain; CPU tests count one DPX instruction per step"
)


@benchmark(
    name="dpx_latency_throughput",
    title="DPX functions: latency, per-SM throughput and throughput over blocks, sm_90a vs compute_80",
    axes={
        "function": "the 36 __vimax*/__vimin*/__viaddmax*/__viaddmin*/__vibmax*/__vibmin* (+relu)",
        "build": "this GPU's cubin (sm90 on Hopper: hardware DPX; elsewhere hardware or emulated as its SASS "
        "shows), sm80 (compute_80 PTX JIT, where the GPU can run it and is not itself compute capability 8.0)",
        "blocks": "1 .. k x SM count (k = 3 quick, 4 full) for " + ", ".join(SWEEP_FUNCS),
    },
    kernels=[DPX_SPEC],
    prebuild=jit_prebuild(DPX_SPEC),
    params={
        "iters": Param(
            None,
            "throughput-loop iterations (default 128 quick, 256 full)",
            int,
            in_range(1, 1 << 16),
        )
    },
    timeout_s=600,
    needs=Needs(),  # every GPU runs the functions: in hardware where it has DPX, emulated elsewhere
    paper="000 §8.1 Figs. 13-14",
)
def dpx_latency_throughput(ctx: BenchContext) -> None:
    dev, sms = ctx.device, ctx.props["sm_count"]
    funcs = intrinsics()
    ops = chain_operands(11)
    lat_iters = 8 if ctx.quick else 16
    thr_iters = ctx.params["iters"] or (128 if ctx.quick else 256)
    # the builds load in a thread (the driver JIT-compiles 2 MB of compute_80 PTX on a fresh machine) while the
    # host replays every function's chains, what each kernel must store
    with ThreadPoolExecutor(1) as pool:
        loading = pool.submit(load_builds, ctx, DPX_SPEC)
        wants = {
            it.name: (chain_latency(it.name, ops, lat_iters), chain_throughput(it.name, ops, thr_iters)) for it in funcs
        }
        builds = loading.result()
    label = native_label(ctx.target, has_hardware_dpx(native_sass(ctx, DPX_SPEC)))
    reps = 3
    total, done = len(funcs) * len(builds) + 1, 0
    bad: set[tuple[str, str]] = set()  # (function, build) whose output disagreed with the model

    # semantics on edge and random words, every function, every build
    a, b, c = eval_inputs()
    n = a.size
    with ctx.scratch():
        da, db, dc = ctx.upload(a), ctx.upload(b), ctx.upload(c)
        dout, dpred = ctx.alloc(len(funcs) * n * 4), ctx.alloc(len(funcs) * n * 4)
        for bname, mod in builds.items():
            dev.memset32(dout, 0xDEADBEEF)
            mod.function("dpx_eval")(
                (n + 255) // 256,
                256,
                [Arg.ptr(da), Arg.ptr(db), Arg.ptr(dc), Arg.i32(n), Arg.ptr(dout), Arg.ptr(dpred)],
            )
            dev.sync("dpx_eval")
            got = dev.download(dout, np.uint32, len(funcs) * n).reshape(len(funcs), n)
            gotp = dev.download(dpred, np.uint32, len(funcs) * n).reshape(len(funcs), n)
            for f, it in enumerate(funcs):
                want, wantp = dpx_model(it.name, a, b, c)
                ok = np.array_equal(got[f], want) and np.array_equal(gotp[f], wantp)
                if not ctx.soft_check(ok, f"{bname} __{it.name}: {_first_diff(got[f], want, gotp[f], wantp, a, b, c)}"):
                    bad.add((it.name, bname))
    done += 1

    dops = ctx.upload(ops)  # the chains' operands, for the sweep as well
    lat_out, lat_cyc = ctx.alloc(16), ctx.alloc(8)
    block = 256
    res: dict[tuple[str, str], dict[str, Any]] = {}
    for it in funcs:
        want_lat, want_thr = wants[it.name]
        for bname, mod in builds.items():
            r: dict[str, Any] = {}
            # latency: one thread
            fn = mod.function(f"dpx_lat_{it.name}")
            cyc = []
            for _ in range(reps):
                dev.memset32(lat_out, 0xDEADBEEF)
                fn(1, 1, [Arg.ptr(dops), Arg.i32(lat_iters), Arg.ptr(lat_out), Arg.ptr(lat_cyc)])
                dev.sync(f"dpx_lat_{it.name} ({bname})")
                got = tuple(int(v) for v in dev.download(lat_out, np.uint32, 3))
                if not ctx.soft_check(got == want_lat, f"{bname} dpx_lat_{it.name}: got {got}, model {want_lat}"):
                    bad.add((it.name, bname))
                cyc.append(int(dev.download(lat_cyc, np.uint64, 1)[0]) / (lat_iters * LAT_UNROLL * it.calls))
            r["lat"] = cyc
            # throughput: all SMs, full occupancy, per-SM clock spans
            fn = mod.function(f"dpx_thr_{it.name}")
            per_sm_blocks = max(1, dev.occupancy(fn, block))
            grid = per_sm_blocks * sms
            calls_per_block = block * THR_ILP * THR_UNROLL * thr_iters * it.calls
            rates = []
            with ctx.scratch():  # this function's outputs and spans
                out = ctx.alloc(grid * block * (THR_ILP + 2) * 4)
                spans = ctx.alloc(grid * 3 * 8)
                for _ in range(reps):
                    dev.memset32(out, 0xDEADBEEF)
                    fn(grid, block, [Arg.ptr(dops), Arg.i32(thr_iters), Arg.ptr(out), Arg.ptr(spans)])
                    dev.sync(f"dpx_thr_{it.name} ({bname})")
                    got_t = dev.download(out, np.uint32, grid * block * (THR_ILP + 2)).reshape(-1, THR_ILP + 2)
                    ok = bool((got_t == want_thr).all())
                    if not ctx.soft_check(
                        ok,
                        f"{bname} dpx_thr_{it.name}: {int((got_t != want_thr).any(axis=1).sum())} "
                        f"threads differ from the model",
                    ):
                        bad.add((it.name, bname))
                    rates.append(
                        float(np.median(per_sm_rate(dev.download(spans, np.uint64, grid * 3), calls_per_block)))
                    )
            r["thr"], r["blocks_per_sm"] = rates, per_sm_blocks
            res[(it.name, bname)] = r
            done += 1
            ctx.progress(done, total + len(SWEEP_FUNCS) * len(builds), f"{it.name} ({bname})")

    _dpx_figures(ctx, funcs, builds, res, bad, label, lat_iters, thr_iters)
    _dpx_sweep(ctx, builds, dops, ops, thr_iters, bad, done, total + len(SWEEP_FUNCS) * len(builds))


def _first_diff(
    got: np.ndarray, want: np.ndarray, gotp: np.ndarray, wantp: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> str:
    diff = np.flatnonzero((got != want) | (gotp != wantp))
    if diff.size == 0:
        return "ok"
    i = int(diff[0])
    return (
        f"{diff.size} of {got.size} differ, first at a={a[i]:#010x} b={b[i]:#010x} c={c[i]:#010x}: "
        f"got {got[i]:#010x} (pred {gotp[i]}), model {want[i]:#010x} (pred {wantp[i]})"
    )


def _build_figures(
    ctx: BenchContext, key: str, suffix: str, r: dict[str, list[float]], ok: bool, build: str, lat_m: str, thr_m: str
) -> tuple[float, float]:
    """Latency and throughput figures of one build of a DPX function; returns their medians."""
    check = "ok" if ok else "failed"
    ctx.median_figure(f"{key}.latency_cycles{suffix}", r["lat"], "cycles", "measured", build + lat_m, check)
    ctx.median_figure(f"{key}.ops_per_clk_sm{suffix}", r["thr"], "calls/clk/SM", "measured", build + thr_m, check)
    # the medians themselves (a failed figure holds no number), for the speedups
    return median_spread(r["lat"])[0], median_spread(r["thr"])[0]


def _dpx_figures(
    ctx: BenchContext,
    funcs: tuple[Intrinsic, ...],
    builds: dict[str, Module],
    res: dict[tuple[str, str], dict[str, Any]],
    bad: set[tuple[str, str]],
    label: str,
    lat_iters: int,
    thr_iters: int,
) -> None:
    """The figures and series of both builds; `label` introduces those of this GPU's build (native_label)."""
    native, jit_na, arch = native_build(ctx.target), jit_unavailable(ctx.target), ctx.target.arch
    lat_m = (
        f"1 thread, one dependent chain, two passes of {lat_iters} x {LAT_UNROLL} unrolled steps, the 2nd "
        f"timed: clock64 around the loop / calls; median of 3 launches. {METHOD_DPX}"
    )
    thr_m = (
        f"all SMs at full occupancy (256-thread blocks), {THR_ILP} independent chains per thread, "
        f"{thr_iters}x{THR_UNROLL} calls each; per SM: its blocks' calls / (last end - first start) "
        f"in clock64 cycles, median over SMs, median of 3 launches. {METHOD_DPX}"
    )
    for bname in builds:
        lat_pts, thr_pts = [], []
        for it in funcs:
            r = res[(it.name, bname)]
            lat_pts.append(ctx.point(len(lat_pts), r["lat"], label=it.name))
            thr_pts.append(ctx.point(len(thr_pts), r["thr"], label=it.name, blocks_per_sm=r["blocks_per_sm"]))
        ctx.series(bname, "function", "", "latency", "cycles", lat_pts, plot="bar", figure="dpx_latency", build=bname)
        ctx.series(
            bname,
            "function",
            "",
            "throughput",
            "calls/clk/SM",
            thr_pts,
            plot="bar",
            figure="dpx_throughput",
            build=bname,
        )
    for it in funcs:
        key = f"dpx.{it.name}"
        extra = (
            " (timed as a max/min pair: ptxas fuses two dependent same-direction relu calls)" if it.form == "A2" else ""
        )
        extra += " (includes the instructions that count the predicates)" if it.form in ("B1", "B2") else ""
        if jit_na is None:
            r80, ok80 = res[(it.name, JIT)], (it.name, JIT) not in bad
            lat80, thr80 = _build_figures(
                ctx, key, "_sm80", r80, ok80, "compute_80 PTX JIT build; ", lat_m + extra, thr_m + extra
            )
        else:
            for k, u in (("latency_cycles_sm80", "cycles"), ("ops_per_clk_sm_sm80", "calls/clk/SM")):
                ctx.figure(f"{key}.{k}", jit_na, u, "measured", "skipped")
        r90, ok90 = res[(it.name, native)], (it.name, native) not in bad
        lat90, thr90 = _build_figures(ctx, key, "", r90, ok90, label, lat_m + extra, thr_m + extra)
        if jit_na is not None:
            for k in ("speedup_vs_sm80", "latency_speedup_vs_sm80"):
                ctx.figure(f"{key}.{k}", jit_na, "x", "derived", "skipped")
            continue
        both = "ok" if ok90 and ok80 else "failed"
        ctx.figure(
            f"{key}.speedup_vs_sm80",
            thr90 / thr80,
            "x",
            "derived",
            f"per-SM throughput of the {arch} build / the compute_80 JIT build (same source, same GPU; the "
            "compute_80 PTX holds the emulation, but the driver JIT compiles it for this GPU and may fuse its "
            "plain 32-bit max/add sequences into DPX instructions itself, as 000 saw for __viaddmax_s32)",
            (min(r90["thr"]) / max(r80["thr"]), max(r90["thr"]) / min(r80["thr"])),
            both,
        )
        ctx.figure(
            f"{key}.latency_speedup_vs_sm80",
            lat80 / lat90,
            "x",
            "derived",
            f"latency of the compute_80 JIT build / the {arch} build",
            check=both,
        )


def _dpx_sweep(
    ctx: BenchContext,
    builds: dict[str, Module],
    dops: Any,
    ops: np.ndarray,
    thr_iters: int,
    bad: set[tuple[str, str]],
    done: int,
    total: int,
) -> None:
    """Throughput over the number of 1024-thread blocks (000 §8.1: proportional below the SM count,
    a drop just past every multiple of it). Event-timed; every thread's result checked."""
    dev, sms, native = ctx.device, ctx.props["sm_count"], native_build(ctx.target)
    k = 3 if ctx.quick else 4
    counts = sweep_counts(sms, k)
    block, iters = 1024, 2 * thr_iters
    out = ctx.alloc(counts[-1] * block * (THR_ILP + 2) * 4)
    spans = ctx.alloc(counts[-1] * 3 * 8)
    for name in SWEEP_FUNCS:
        it = intrinsic(name)
        want = chain_throughput(name, ops, iters)
        for bname, mod in builds.items():
            fn = mod.function(f"dpx_thr_{name}")
            resident = dev.occupancy(fn, block)
            pts, ok = [], True
            for nb in counts:
                calls = nb * block * THR_ILP * THR_UNROLL * iters * it.calls
                dev.memset32(out, 0xDEADBEEF)
                args = [Arg.ptr(dops), Arg.i32(iters), Arg.ptr(out), Arg.ptr(spans)]
                ms = dev.time_ms(lambda: fn(nb, block, args), reps=3)
                got = dev.download(out, np.uint32, nb * block * (THR_ILP + 2)).reshape(-1, THR_ILP + 2)
                ok &= bool((got == want).all())
                rate = [calls / (t * 1e6) for t in ms]
                pts.append(ctx.point(nb, rate, waves=math.ceil(nb / (sms * max(1, resident)))))
            if not ctx.soft_check(ok, f"{bname} dpx_thr_{name} (blocks sweep): results differ from the model"):
                bad.add((name, bname))
            ctx.series(
                f"{name} {bname}",
                "blocks",
                "",
                "throughput",
                "Gcalls/s",
                pts,
                plot="line",
                figure="dpx_blocks_sweep",
                sm_count=sms,
                block=block,
                resident_blocks_per_sm=resident,
            )
            by = {p.x: p.y for p in pts}
            check = "ok" if ok else "failed"
            ctx.figure(
                f"dpx.{name}.sweep_peak_gcalls_per_s{'' if bname == native else '_sm80'}",
                max(by.values()),
                "Gcalls/s",
                "measured",
                f"best of the blocks sweep (1024-thread blocks, {resident} resident per SM), CUDA events, median of 3",
                check=check,
            )
            ctx.figure(
                f"dpx.{name}.sweep_drop_past_sm_count{'' if bname == native else '_sm80'}",
                by[sms + 1] / by[sms],
                "x",
                "derived",
                f"throughput at SM count + 1 blocks / at SM count ({sms}) blocks: the one extra block "
                f"runs in a second wave when {resident} block(s) of 1024 fit per SM",
                check=check,
            )
            done += 1
            ctx.progress(done, total, f"blocks sweep {name} ({bname})")
