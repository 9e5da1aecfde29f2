"""CPU-only benchmarks that exercise the runner's containment: ok, failed check, crash, hang."""

import os
import time

from gpudissect.bench.registry import benchmark
from gpudissect.models import Point


@benchmark(suite="fake", name="fake_ok", title="ok", axes={}, kernels=[], needs_gpu=False)
def fake_ok(ctx):
    ctx.progress(1, 2, "half")
    ctx.series("s", "x", "bytes", "y", "cycles", [Point(1, 2.0), Point(2, 3.0)], plot="logx")
    ctx.figure("fake.latency_cycles", 42.0, "cycles", "measured", "constant", (41.0, 43.0))


@benchmark(suite="fake", name="fake_check", title="check fails", axes={}, kernels=[], needs_gpu=False)
def fake_check(ctx):
    ctx.figure("fake.before_cycles", 1.0, "cycles", "measured", "kept")
    ctx.check(False, "the chase ended in the wrong place")


@benchmark(suite="fake", name="fake_crash", title="process dies", axes={}, kernels=[], needs_gpu=False)
def fake_crash(ctx):
    ctx.figure("fake.partial_cycles", 7.0, "cycles", "measured", "sent before the crash")
    time.sleep(0.2)
    os._exit(3)


@benchmark(suite="fake", name="fake_hang", title="never returns", axes={}, kernels=[], needs_gpu=False, timeout_s=3)
def fake_hang(ctx):
    while True:
        time.sleep(0.1)


@benchmark(suite="fake", name="fake_skip", title="an optional package is missing", axes={}, kernels=[], needs_gpu=False)
def fake_skip(ctx):
    ctx.skip("needs the optional package frobnicate (pip install gpudissect[frob])")


@benchmark(suite="fake", name="fake_pid", title="which process", axes={}, kernels=[], needs_gpu=False)
def fake_pid(ctx):
    ctx.figure("fake.pid", os.getpid(), "", "measured", "the process that ran it")
    ctx.figure("fake.nice", os.nice(0), "", "measured", "its niceness")
    if os.environ.get("FAKE_PID_DONE"):  # a sign for fake_slow that this one has ended
        open(os.environ["FAKE_PID_DONE"], "w").close()


@benchmark(suite="fake", name="fake_slow", title="takes a second", axes={}, kernels=[], needs_gpu=False)
def fake_slow(ctx):
    """Ends 2 s after the file $FAKE_SLOW_AFTER exists (at most 20 s), or after a second without it."""
    mark, t0 = os.environ.get("FAKE_SLOW_AFTER"), time.monotonic()
    while time.monotonic() - t0 < (20.0 if mark else 1.0) and not (mark and os.path.exists(mark)):
        time.sleep(0.05)
    if mark:
        time.sleep(2.0)  # the benchmark beside that left the mark is stored meanwhile
    ctx.figure("fake.slept_s", round(time.monotonic() - t0, 2), "s", "measured", "slept")


@benchmark(
    suite="fake",
    name="fake_torch",
    title="imports a library with global state",
    axes={},
    kernels=[],
    needs_gpu=False,
    torch=True,
)
def fake_torch(ctx):
    import sys
    import types

    sys.modules.setdefault("torch", types.ModuleType("torch"))  # what the worker watches for; no real torch
    ctx.figure("fake.pid", os.getpid(), "", "measured", "the process that ran it")


@benchmark(suite="fake", name="fake_pool", title="starts processes of its own", axes={}, kernels=[], needs_gpu=False)
def fake_pool(ctx):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as ex:
        child = ex.submit(os.getpid).result()
    ctx.figure("fake.child_pid", child, "", "measured", "a process of the benchmark's own pool")
