"""Runs benchmarks in child processes and stores each one as soon as it ends.

A kernel that faults poisons its CUDA context, and one that hangs never returns: child processes contain
both. One worker process runs benchmarks one after another until one of them ends other than ok or skipped
(or imports torch), and the next gets a fresh one (worker.py says why). The parent holds no CUDA context;
it samples NVML and writes the store.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from . import trace
from .bench.registry import Benchmark, load_all, resolve_params
from .capability import Target
from .device import telemetry
from .errors import GpuDissectError, NoGpuError
from .models import BenchResult, Figure, RunInfo, Series
from .sass.disasm import build_and_read
from .store import Store, now
from .version import __version__
from .worker import CTX as _CTX
from .worker import KEEPS, Worker

HEAVY_SOURCE = 200_000  # characters of generated source from which the pool compiles a build before the rest
BESIDE_NICE = 19  # a CPU-only benchmark beside the GPU ones yields to them and to the compile pool (nice 10)


# ---- child side ------------------------------------------------------------------------
def _probe_main(conn: Any) -> None:
    try:
        from .device.compiler import nvrtc_version
        from .device.cuda import Device

        dev = Device(0)
        try:
            nv = nvrtc_version()
        except Exception as e:  # noqa: BLE001
            nv = f"unavailable ({e})"
        conn.send(("ok", dict(dev.props, arch=dev.arch, nvrtc=nv)))
    except GpuDissectError as e:
        conn.send(("error", str(e)))
    except Exception as e:  # noqa: BLE001
        conn.send(("error", f"{type(e).__name__}: {e}"))


# ---- parent side -----------------------------------------------------------------------
def probe_device(timeout_s: float = 120.0) -> dict[str, Any]:
    """Device properties, read in a child process (the parent stays CUDA-free)."""
    parent, child = _CTX.Pipe(duplex=False)
    p = _CTX.Process(target=_probe_main, args=(child,), daemon=True)
    p.start()
    child.close()
    if not parent.poll(timeout_s):
        p.kill()
        raise NoGpuError("the GPU did not answer within {timeout_s:.0f} s")
    try:
        status, payload = parent.recv()
    except EOFError:
        raise NoGpuError(f"probing the GPU crashed the probe process (exit code {p.exitcode})") from None
    p.join(5)
    if status != "ok":
        raise NoGpuError(payload)
    return payload


@dataclass
class BenchOutcome:
    result: BenchResult
    series: list[Series] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    skipped_variants: list[tuple[str, str]] = field(default_factory=list)  # (variant, why) this GPU lacks


ProgressFn = Callable[[Benchmark, int, int, str], None]


def run_one(
    run_id: int,
    bench: Benchmark,
    mode: str,
    params: dict[str, Any],
    uuid: str | None,
    on_progress: ProgressFn | None = None,
    hang_s: float = 120.0,
    stop: threading.Event | None = None,
    worker: Worker | None = None,
) -> BenchOutcome:
    """Run one benchmark in `worker` (a process of its own without one); never raises for the benchmark's
    own failures. `stop` (set by the caller on an interrupt) ends it as interrupted, for a benchmark run
    beside another in a thread. A worker the benchmark retires (or kills) is discarded: the next submit
    starts a fresh process."""
    started, t0 = now(), time.monotonic()
    trace.event("bench_start", bench=bench.key)
    out = BenchOutcome(BenchResult(run_id, bench.suite, bench.name, "crashed", "", started, None, None))
    w = worker or Worker()
    status, message, keep = "crashed", "", False
    # a CPU-only benchmark has no GPU telemetry of its own (it runs beside a GPU one)
    with telemetry.Sampler(uuid) if bench.needs_gpu else contextlib.nullcontext() as sampler:
        w.submit(bench.key, mode, params)
        last = time.monotonic()
        try:
            while True:
                if w.conn.poll(0.25):
                    try:
                        kind, payload = w.conn.recv()
                    except EOFError:
                        w.proc.join(5)
                        status, message = "crashed", f"process died (exit code {w.exitcode})"
                        break
                    last = time.monotonic()
                    if kind == "progress":
                        trace.event("progress", bench=bench.key, text=payload[-1])
                        if on_progress:
                            on_progress(bench, *payload)
                    elif kind == "series":
                        out.series.append(payload)
                    elif kind == "figure":
                        out.figures.append(payload)
                    elif kind == "variant_skipped":
                        out.skipped_variants.append(payload)
                    elif kind == "done":
                        status, message = payload[0], payload[1]
                        keep = status in KEEPS and not (payload[2] if len(payload) > 2 else "")
                        break
                elif not w.alive():
                    status, message = "crashed", f"process died (exit code {w.exitcode})"
                    break
                if stop is not None and stop.is_set():
                    raise KeyboardInterrupt
                elapsed = time.monotonic() - t0
                if elapsed > bench.timeout_s or time.monotonic() - last > hang_s:
                    w.discard(kill=True)
                    why = "its time limit" if elapsed > bench.timeout_s else f"{hang_s:.0f} s without progress"
                    status, message = "hung", f"killed after {elapsed:.0f} s ({why}); a kernel may hang"
                    break
        except KeyboardInterrupt:  # returned as 'interrupted': the caller stores it, then stops
            w.discard(kill=True)
            status, message = "interrupted", "interrupted by the user"
        finally:
            if worker is None or not keep:
                w.discard()  # a retiring worker exits by itself; wait for it (its device memory is freed)
            r = out.result
            if out.skipped_variants:  # kept with the result: what of the benchmark this GPU could not run
                what = "; ".join(f"{name}: {why}" for name, why in out.skipped_variants)
                message = f"{message}; " if message else ""
                message += f"skipped variant(s): {what}"
            r.status, r.message = status, message  # type: ignore[assignment]
            r.ended, r.seconds = now(), round(time.monotonic() - t0, 3)
            r.telemetry = sampler.summary() if sampler is not None else None
            trace.event("bench_end", bench=bench.key, status=status, seconds=r.seconds)
    return out


def time_figures(outcome: BenchOutcome) -> list[Figure]:
    """Each cycle figure also in nanoseconds: at the SM clock the benchmark's own kernels measured
    (`clock.<bench>.sm_mhz`, clock64 over %globaltimer) when it reported one, else at NVML's median."""
    measured = next(
        (
            f
            for f in outcome.figures
            if f.key.startswith("clock.")
            and f.key.endswith(".sm_mhz")
            and f.check == "ok"
            and isinstance(f.value, (int, float))
        ),
        None,
    )
    if measured is not None:
        mhz = float(measured.value)
        how = f"cycles / SM clock measured in the benchmark's own kernels ({mhz:.0f} MHz, clock64 over %globaltimer)"
    else:
        tele = outcome.result.telemetry
        mhz = tele.sm_clock_mhz_median if tele else None
        how = (
            f"cycles / median SM clock during the benchmark ({mhz:.0f} MHz, NVML; no in-kernel clock measured)"
            if mhz
            else ""
        )
    if not mhz:
        return []
    out = []
    for f in outcome.figures:
        if f.unit == "cycles" and f.key.endswith("_cycles") and f.check == "ok" and isinstance(f.value, (int, float)):
            out.append(
                Figure(
                    f.suite,
                    f.bench,
                    f.key[: -len("_cycles")] + "_ns",
                    round(float(f.value) / mhz * 1e3, 3),
                    "ns",
                    "derived",
                    how,
                )
            )
    return out


def start_run(store: Store, facts: dict[str, Any], mode: str, selection: dict[str, Any], label: str = "") -> int:
    import socket

    static = telemetry.static_facts(facts.get("uuid"))
    info = RunInfo(
        id=0,
        gpu_name=facts.get("name", "?"),
        gpu_uuid=facts.get("uuid", "?"),
        sm_count=int(facts.get("sm_count", 0)),
        l2_bytes=int(facts.get("l2_bytes", 0)),
        sm_clock_max_mhz=float(static.get("sm_clock_max_mhz") or facts.get("sm_clock_khz", 0) / 1000),
        mem_clock_max_mhz=float(static.get("mem_clock_max_mhz") or facts.get("mem_clock_khz", 0) / 1000),
        mem_bus_bits=int(facts.get("mem_bus_bits", 0)),
        driver=str(static.get("driver") or "?"),
        cuda=str(facts.get("cuda_driver", "?")),
        nvrtc=str(facts.get("nvrtc", "?")),
        tool_version=__version__,
        arch=str(facts.get("arch", "?")),
        mode=mode,
        started=now(),
        ended=None,
        status="running",
        selection=selection,
        extra={k: v for k, v in facts.items() if k not in {"name", "uuid"}}
        | {"power_limit_w": static.get("power_limit_w")},
        label=label,
        source=f"gpudissect run on {socket.gethostname()}",
    )
    return store.create_run(info)


def skipped(run_id: int, bench: Benchmark, why: str) -> BenchOutcome:
    """The stored result of a benchmark this GPU cannot run: no process started, the reason kept."""
    t = now()
    return BenchOutcome(BenchResult(run_id, bench.suite, bench.name, "skipped", why, t, t, 0.0, None))


def precompile(bench: Benchmark, target: Target, on_progress: ProgressFn | None = None) -> None:
    """Compile the benchmark's declared kernels this GPU can run into the cubin cache (a pool for the cold
    ones), so its child process starts timing instead of compiling one kernel after another. A kernel that
    does not compile is left for the benchmark itself to report."""
    from .device.compiler import CompilePool

    pool = CompilePool(target.arch, fn=build_and_read)
    try:
        pool.queue(bench.key, bench.variants(target)[0])
        pool.wait(bench.key, _compile_progress(bench, on_progress))
    finally:
        pool.close()


def _compile_progress(bench: Benchmark, on_progress: ProgressFn | None) -> Callable[[int, int, str], None] | None:
    if on_progress is None:
        return None
    return lambda done, total, what: on_progress(bench, done, total, f"compiled {what}")


def run_benchmarks(
    store: Store,
    run_id: int,
    benches: list[Benchmark],
    mode: str,
    params: dict[str, dict[str, Any]],
    uuid: str | None,
    on_progress: ProgressFn | None = None,
    on_done: Callable[[BenchOutcome], None] | None = None,
    target: Target | None = None,
) -> str:
    """Run and store each benchmark; returns the run's final status. With `target` (the GPU's architecture),
    a benchmark it cannot run is stored as skipped with the reason, and each other one's declared kernels that
    it can run are compiled first, in a process pool of this (CUDA-free) process."""
    from .device.compiler import CompilePool

    statuses = []
    runnable = [b for b in benches if not (target and b.why_not(target))]
    pool = CompilePool(target.arch, fn=build_and_read) if target else None
    stop = threading.Event()
    # the GPU benchmarks' process, kept from one benchmark to the next while they end ok; GPUDISSECT_FRESH_PROCESS=1
    # gives every benchmark a process of its own, as before the worker (for A/B checks of what sharing changes)
    worker = None if os.environ.get("GPUDISSECT_FRESH_PROCESS") == "1" else Worker()
    side = ThreadPoolExecutor(1, thread_name_prefix="cpu-bench")
    if pool:  # every kernel of the run queued now, compiled while the benchmarks before it time the GPU
        pre = {b.key: b.prebuild(target, mode) if b.prebuild else [] for b in runnable}
        # the longest builds early, after the first benchmark's kernels and on all workers but two (a 1 MiB
        # straight-line icache build takes ~40 s of NVRTC: in run order it was still compiling when icache came
        # up, 9.5 s waited; on all eight workers they kept the first benchmark waiting 16 s)
        heavy = [s for b in runnable if b.needs_gpu for s in pre[b.key] if len(s.source) >= HEAVY_SOURCE]
        first = next((b for b in runnable if b.needs_gpu), None)
        if first is not None:
            pool.queue(None, first.variants(target)[0])
        pool.queue(None, sorted(heavy, key=lambda s: -len(s.source))[: max(1, pool.workers - 2)])
        for b in runnable:
            pool.queue(b.key, b.variants(target)[0] + pre[b.key])

    # CPU work a benchmark declares as `prepare`, done ahead in a thread of its own while the benchmarks before
    # it run (what it leaves in the caches the benchmark reads); a failure is the benchmark's to meet and report
    prep = ThreadPoolExecutor(1, thread_name_prefix="prepare")

    def prepare_job(b: Benchmark) -> None:
        if stop.is_set() or target is None or b.prepare is None:
            return
        trace.event("prepare_start", bench=b.key)
        try:
            b.prepare(target, mode, params[b.key])
        except Exception as e:  # noqa: BLE001 - never into the run: the benchmark does the work itself
            trace.event("prepare_failed", bench=b.key, error=f"{type(e).__name__}: {e}"[:200])
        else:
            trace.event("prepare_end", bench=b.key)

    gpu_first = next((b for b in runnable if b.needs_gpu), None)
    for b in runnable:  # not for the first: nothing runs before it, it would only do the work twice at once
        if b.prepare is not None and b.needs_gpu and b is not gpu_first:
            prep.submit(prepare_job, b)

    def beside_job(b: Benchmark) -> BenchOutcome:
        """A CPU-only benchmark in the side thread: its builds from the pool first (isa_encoding reads every
        cubin of the run: compiled once, by the pool, not again by the benchmark on all cores at normal
        priority, which starved the pool the GPU benchmarks wait on), then the benchmark at low priority."""
        if pool:
            trace.event("pool_wait", bench=b.key)
            pool.wait(b.key, _compile_progress(b, on_progress))
            trace.event("pool_waited", bench=b.key)
        w = Worker(nice=BESIDE_NICE)
        try:
            return run_one(run_id, b, mode, params[b.key], uuid, on_progress, stop=stop, worker=w)
        finally:
            w.discard()

    # CPU-only benchmarks (no GPU, e.g. isa_encoding against the disassembler) run beside the GPU ones
    beside = {b.key: side.submit(beside_job, b) for b in runnable if not b.needs_gpu}
    # kept apart from `beside`, which loses a benchmark once it is stored: one that ended before the loop
    # reached it was run a second time in the GPU worker (isa_encoding, 49 s of a quick run)
    run_beside = set(beside)

    def store_outcome(outcome: BenchOutcome) -> None:
        outcome.figures += time_figures(outcome)
        store.save_bench(outcome.result, outcome.series, outcome.figures)
        statuses.append(outcome.result.status)
        if outcome.result.status == "interrupted":
            raise KeyboardInterrupt
        if on_done:
            on_done(outcome)

    def store_finished(block: bool) -> None:
        for key in [k for k, f in beside.items() if block or f.done()]:
            store_outcome(beside.pop(key).result())

    # each benchmark that imports torch runs in a process of its own, started ahead: it imports torch (3-5 s) and
    # its `preload` beside the two benchmarks before it that time the GPU. Never beside one that times the host
    # (profiles/spare-ab: the import raised the host cost per call from 12 to 17 us): such a benchmark starts
    # nothing and waits until every process started ahead has imported.
    # GPUDISSECT_NO_SPARE=1: no process started ahead (for an A/B of what the concurrent import changes)
    ahead = os.environ.get("GPUDISSECT_NO_SPARE") != "1"
    order = [b for b in benches if b.key not in run_beside]
    spares: dict[str, Worker] = {}

    def start_ahead(i: int) -> None:
        if not ahead or order[i].host_timed:
            return
        timing_gpu = 0
        for nb in order[i + 1 :]:
            if nb.torch and nb.needs_gpu and nb.key not in spares and not (target and nb.why_not(target)):
                spares[nb.key] = Worker(preload=("torch", *nb.preload)).start()
            timing_gpu += not nb.host_timed
            if timing_gpu == 2:
                return

    try:
        for i, b in enumerate(order):
            why = b.why_not(target) if target else None
            if why:
                outcome = skipped(run_id, b, why)
            else:
                if pool and b.needs_gpu:
                    trace.event("pool_wait", bench=b.key)
                    pool.wait(b.key, _compile_progress(b, on_progress))
                    trace.event("pool_waited", bench=b.key)
                if b.host_timed:
                    for w in spares.values():
                        w.wait_ready()
                start_ahead(i)
                mine = worker
                if b.torch and b.needs_gpu:
                    # no process started ahead: a fresh one that imports torch only if the benchmark does (one
                    # that skips first, nccl_collectives on one GPU, took 5.8 s for an import it never used)
                    mine = spares.pop(b.key, None) or Worker()
                outcome = run_one(run_id, b, mode, params[b.key], uuid, on_progress, worker=mine)
            store_outcome(outcome)
            store_finished(block=False)
        store_finished(block=True)
    except KeyboardInterrupt:
        stop.set()  # a CPU-only benchmark beside is stopped and stored as interrupted too
        if pool:
            pool.close()  # one waiting for its builds stops waiting
        for f in beside.values():
            with contextlib.suppress(Exception):
                o = f.result()
                o.figures += time_figures(o)
                store.save_bench(o.result, o.series, o.figures)
        store.finish_run(run_id, "interrupted")
        raise
    finally:
        if worker is not None:
            worker.discard()
        for w in spares.values():
            w.discard(kill=True)
        side.shutdown(wait=True)
        prep.shutdown(wait=False, cancel_futures=True)  # one under way ends by itself; an interrupt never waits
        if pool:
            pool.close()
    # a benchmark skipped for a reason that is no fault (a missing optional package, too few GPUs)
    # does not make the run partial; its reason is stored beside it
    final = "ok" if all(s in ("ok", "skipped") for s in statuses) else "partial"
    store.finish_run(run_id, final)
    return final


def resume_plan(store: Store, run_id: int) -> tuple[str, list[Benchmark], dict[str, str]]:
    """What `run --resume RUN` still has to do: the run's mode, the benchmarks of its selection that
    did not end ok, and the parameter overrides it was started with."""
    from .bench.registry import select

    info = store.run(run_id)
    sel = info.selection
    done = {(b.suite, b.bench) for b in store.benches(run_id) if b.status == "ok"}
    todo = [b for b in select(sel.get("suites"), sel.get("benches")) if (b.suite, b.name) not in done]
    if not todo:
        raise GpuDissectError(f"run {run_id} has nothing left to do: every benchmark ended ok")
    names = {b.name for b in todo}
    params = {n for b in todo for n in b.params}
    # the overrides it was started with, less those of benchmarks that already ended ok
    stored = {
        k: v
        for k, v in dict(sel.get("overrides") or {}).items()
        if (k.split(".", 1)[0] in names if "." in k else k in params)
    }
    return info.mode, todo, stored


def split_overrides(benches: list[Benchmark], overrides: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each `--set` assigned to the benchmarks it addresses, by name: `BENCH.NAME=V` to that benchmark
    (which must be selected and have NAME), `NAME=V` to every selected benchmark that has NAME (at
    least one must). A misspelt benchmark or parameter is an error that lists the valid ones."""
    by_name = {b.name: b for b in benches}
    out: dict[str, dict[str, str]] = {b.key: {} for b in benches}
    for key, value in overrides.items():
        if "." in key:
            prefix, name = key.split(".", 1)
            b = by_name.get(prefix)
            if b is None:
                known = load_all()
                why = (
                    "is not among the selected benchmarks"
                    if any(x.name == prefix for x in known.values())
                    else "is no benchmark"
                )
                raise GpuDissectError(f"--set {key}: {prefix!r} {why}; selected: {', '.join(by_name) or 'none'}")
            if name not in b.params:
                valid = ", ".join(f"{b.name}.{n}" for n in sorted(b.params)) or "none"
                raise GpuDissectError(f"--set {key}: {b.name} has no parameter {name!r}; valid: {valid}")
            out[b.key][name] = value
        else:
            takers = [b for b in benches if key in b.params]
            if not takers:
                valid = ", ".join(sorted({n for b in benches for n in b.params})) or "none"
                raise GpuDissectError(f"--set {key}: no selected benchmark has a parameter {key!r}; valid: {valid}")
            for b in takers:
                out[b.key].setdefault(key, value)  # BENCH.NAME given as well wins
    # BENCH.NAME wins over NAME whatever the order on the command line
    for key, value in overrides.items():
        if "." in key:
            prefix, name = key.split(".", 1)
            out[by_name[prefix].key][name] = value
    return out


def prepare(benches: list[Benchmark], overrides: dict[str, str], facts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Validate every benchmark's parameters against the device before anything launches. A benchmark this
    GPU cannot run is no error: run_benchmarks stores it as skipped, with the reason."""
    mine = split_overrides(benches, overrides)
    return {b.key: resolve_params(b, mine[b.key], facts) for b in benches}


def target_of(facts: dict[str, Any]) -> Target | None:
    """The GPU's architecture from its probed facts (None when they do not say)."""
    if "cc_major" not in facts:
        return None
    return Target(int(facts["cc_major"]), int(facts.get("cc_minor", 0)))
