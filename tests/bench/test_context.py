"""The shared fake device and run_bench (tests/fakes.py) behave like the runner's child process."""

import numpy as np
import pytest

from fakes import FakeDevice
from gpudissect.bench.registry import REGISTRY, benchmark
from gpudissect.device.cuda import Arg


class Doubler(FakeDevice):
    def k_double(self, launch, src, dst, n):
        self.buf(dst)[: 4 * n].view(np.float32)[:] = 2 * self.buf(src)[: 4 * n].view(np.float32)


@pytest.fixture
def doubling_bench():
    @benchmark(suite="fake", name="fake_double", title="doubles", axes={}, kernels=[])
    def fake_double(ctx):
        x = np.arange(8, dtype=np.float32)
        src, dst = ctx.upload(x), ctx.alloc(32)
        ctx.kernel(None, "double")(1, 8, [Arg.ptr(src), Arg.ptr(dst), Arg.i32(8)])
        y = ctx.device.download(dst, np.float32, 8)
        ctx.check(np.array_equal(y, 2 * x), "not doubled")
        ctx.median_figure("fake.double_ms", [3.0, 1.0, 2.0], "ms", "measured", "median of three")

    yield "fake/fake_double"
    del REGISTRY["fake/fake_double"]


def test_run_bench_runs_and_frees(run_bench, doubling_bench):
    dev = Doubler()
    r = run_bench(doubling_bench, device=dev)
    assert r.status == "ok", r.message
    f = r.figures["fake.double_ms"]
    assert f.value == 2.0 and f.spread == (1.0, 3.0)
    assert [launch.name for launch in dev.launches] == ["double"]
    assert dev.mem == {}  # ctx.alloc / ctx.upload buffers freed when the benchmark ended


def test_an_unsimulated_kernel_is_named(run_bench, doubling_bench):
    with pytest.raises(AssertionError, match="no kernel 'double'"):
        run_bench(doubling_bench, device=FakeDevice())


def test_scratch_frees_on_exit_and_never_masks_the_error(run_bench):
    from gpudissect.bench.context import BenchContext
    from gpudissect.bench.registry import Benchmark

    class Faulted(FakeDevice):
        def free(self, buf):
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")  # what a faulted context answers

    dev = FakeDevice()
    ctx = BenchContext(Benchmark("fake", "x", lambda c: None, "", {}, []), dev, "quick", {}, lambda *a: None)
    keep = ctx.alloc(64)
    with ctx.scratch():
        ctx.alloc(128)
    assert list(dev.mem) == [keep.ptr]  # the block's buffer is gone, the earlier one kept
    bad = BenchContext(Benchmark("fake", "y", lambda c: None, "", {}, []), Faulted(), "quick", {}, lambda *a: None)
    with pytest.raises(ValueError, match="the real error"):
        with bad.scratch():
            bad.alloc(64)
            raise ValueError("the real error")
