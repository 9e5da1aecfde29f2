"""The child process the runner runs benchmarks in: one benchmark per request, several in a row.

A fresh process per benchmark pays Python's start, the imports of every suite and a CUDA context each time:
about 1.8 s on an H100 (p2p_matrix, which only finds one GPU and skips, took 1.8-2.1 s in the committed quick
runs; 49 benchmarks pay it). A worker keeps all three between benchmarks. Containment stays: a benchmark that
does not end ok or skipped (a fault poisons the context, a hang never returns, a crash ends the process)
retires its worker and the next benchmark gets a fresh one, and so does one that imported torch (its global
switches such as TF32 and its cached device memory would reach the next benchmark) or one that left more than
HELD_LIMIT of device memory allocated.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import sys
import time
import traceback
from typing import Any

from .errors import BenchSkipped, CheckFailed, GpuDissectError

CTX = mp.get_context("spawn")  # fork after CUDA init is unsafe; spawn always is
KEEPS = ("ok", "skipped")  # statuses after which the worker runs the next benchmark
RETIRING_MODULES = ("torch",)
# device memory a benchmark may leave allocated (its loaded code, driver bookkeeping) before it retires the worker
# (a mapping it did not free would shrink what the next benchmark can allocate)
HELD_LIMIT = 256 << 20  # libraries with process-wide state: the benchmark that imported one retires


# ---- child side ------------------------------------------------------------------------
def run_bench(key: str, mode: str, params: dict[str, Any], conn: Any) -> tuple[str, str, int]:
    """Run benchmark `key`, sending its progress, series and figures through `conn`; its (status, message) and
    the device memory it still holds after it ended (bytes; 0 without a device)."""
    from .bench.context import BenchContext
    from .bench.registry import load_all
    from .device.cuda import Device

    def emit(kind: str, payload: Any) -> None:
        conn.send((kind, payload))

    dev, free0 = None, 0
    try:
        bench = load_all()[key]
        dev = Device(0) if bench.needs_gpu else None
        free0 = dev.free_memory() if dev is not None else 0
        ctx = BenchContext(bench, dev, mode, params, emit)  # type: ignore[arg-type]
        try:
            bench.func(ctx)
            if dev is not None:
                dev.sync(bench.name)
        finally:
            if dev is not None:
                ctx.release()
        if ctx.failures:
            raise CheckFailed("; ".join(ctx.failures))
        done = ("ok", "")
    except CheckFailed as e:
        done = ("failed", f"check failed: {e}")
    except BenchSkipped as e:
        done = ("skipped", str(e))
    except GpuDissectError as e:
        done = ("failed", str(e))
    except Exception as e:  # noqa: BLE001 - report any bug as this benchmark's failure
        tb = traceback.format_exc(limit=4).strip().splitlines()
        done = ("failed", f"{type(e).__name__}: {e} [{' | '.join(tb[-3:])}]")
    held = 0
    if dev is not None and done[0] in KEEPS:
        try:
            dev.unload_modules()  # the next benchmark in this worker starts without this one's code loaded
            held = max(0, free0 - dev.free_memory())
        except Exception:  # noqa: BLE001 - a device that no longer answers: the next benchmark gets a fresh one
            held = HELD_LIMIT + 1
    return done[0], done[1], held


def bench_main(key: str, mode: str, params: dict[str, Any], conn: Any) -> None:
    """One benchmark, ending with ("done", (status, message)) (dev/phase_times.py runs it in its process)."""
    conn.send(("done", run_bench(key, mode, params, conn)[:2]))


def worker_main(conn: Any, nice: int = 0, preload: tuple[str, ...] = ()) -> None:
    """Serve (key, mode, params) requests until None or a closed pipe. Each ends with ("done", (status, message,
    why)): `why` is empty when the worker stays for the next one, else why it retires (it then exits). `nice`:
    the process's niceness (a CPU-only benchmark beside the GPU ones yields the CPU to them). The suites, and
    the modules in `preload` (torch), are imported before the first request: a spare worker started while an
    earlier benchmark runs has paid its imports (torch takes 3-5 s) when its benchmark starts. A preloaded
    retiring module counts as imported by the benchmark: such a worker serves one benchmark."""
    if nice:
        try:
            os.nice(nice)
        except OSError:  # not permitted: normal priority
            pass
    from . import trace
    from .bench.registry import load_all

    load_all()
    preloaded = set()
    for mod in preload:
        try:
            __import__(mod)
            preloaded.add(mod)
        except Exception:  # noqa: BLE001 - not installed or broken: the benchmark reports it when it imports it
            pass
    trace.event("worker_ready", pid=os.getpid(), preloaded=sorted(preloaded))
    if preload:
        conn.send(("ready", os.getpid()))  # the runner holds a host-timed benchmark until no import runs beside it
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        key, mode, params = job
        before = {m for m in RETIRING_MODULES if m in sys.modules and m not in preloaded}
        status, message, held = run_bench(key, mode, params, conn)
        new = [m for m in RETIRING_MODULES if m in sys.modules and m not in before]
        why = (
            f"ended {status}"
            if status not in KEEPS
            else f"imported {', '.join(new)}"
            if new
            else f"holds {held >> 20} MiB of device memory after it ended"
            if held > HELD_LIMIT
            else ""
        )
        conn.send(("done", (status, message, why)))
        if why:
            # a normal exit, through torch's and libcuda's own teardown: an exit without them (os._exit, ~1 s
            # sooner) was a suspect, both A/B runs with it reading the next host-timed benchmark's cost per call
            # high (results/h100-sxm5-80gb/profiles/host-cost-ab); not proven, kept as the conservative choice
            return
        gc.collect()


# ---- parent side -----------------------------------------------------------------------
class Worker:
    """The runner's handle on one worker process, started on first use and replaced after it retires."""

    def __init__(self, nice: int = 0, preload: tuple[str, ...] = ()) -> None:
        self.proc: Any = None
        self.conn: Any = None
        self.nice = nice
        self.preload = preload
        self.ready = not preload  # a preloading worker is ready once it says so

    def start(self) -> Worker:
        """Start the process now (it imports while the caller goes on); submit starts it otherwise."""
        if self.proc is None or not self.proc.is_alive():
            self.discard()
            parent, child = CTX.Pipe()
            # not a daemon: a benchmark may start processes of its own (icache compiles its scans in a pool);
            # every way out of the runner discards its workers, and an idle one ends when the pipe closes
            self.ready = not self.preload
            self.proc = CTX.Process(target=worker_main, args=(child, self.nice, self.preload), daemon=False)
            self.proc.start()
            child.close()
            self.conn = parent
        return self

    def wait_ready(self, timeout_s: float = 120.0) -> bool:
        """Wait until a started preloading worker has imported its modules (or died, or `timeout_s` passed);
        whether it is ready. Its only message before a request is ("ready", pid)."""
        if self.ready or self.proc is None:
            return self.ready
        deadline = time.monotonic() + timeout_s
        while self.proc.is_alive() and time.monotonic() < deadline:
            if self.conn.poll(0.1):
                try:
                    kind, _ = self.conn.recv()
                except EOFError:
                    break
                self.ready = kind == "ready"
                break
        return self.ready

    def submit(self, key: str, mode: str, params: dict[str, Any]) -> None:
        self.start()
        self.conn.send((key, mode, params))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    @property
    def exitcode(self) -> int | None:
        return None if self.proc is None else self.proc.exitcode

    def discard(self, kill: bool = False, wait_s: float = 10.0) -> None:
        """End the process (killed with `kill`, else asked to stop) and wait for it: a retired benchmark's
        device memory is free before the next one starts."""
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
        self.proc.join(wait_s)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()
        self.proc, self.conn = None, None
