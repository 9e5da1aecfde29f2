"""The run's compile pool: every benchmark's cold kernels queued at the start, a kernel two benchmarks share
compiled once, a benchmark waiting only for its own, a kernel that fails left for its benchmark to report."""

import pytest

from gpudissect.device.compiler import CompilePool, KernelSpec
from helpers import fake_compile

pytestmark = pytest.mark.sass  # asks the cubin cache what is cold


def _spec(i: int, **extra) -> KernelSpec:
    return KernelSpec("memory_pchase.cu", {}, {"GPUDISSECT_TEST_POOL": i, **extra}, label=f"pool-test-{i}")


def test_queued_once_waited_per_benchmark():
    pool = CompilePool("sm_90a", workers=2, fn=fake_compile)
    try:
        a, b, c = _spec(1), _spec(2), _spec(3, FAIL=1)
        assert pool.queue("suite/first", [a, b]) == 2
        assert pool.queue("suite/second", [b, c, c]) == 2
        assert len(pool._queued) == 3  # b once, c once
        seen = []
        pool.wait("suite/second", lambda done, total, what: seen.append((done, total)))
        assert seen == [(1, 2), (2, 2)]  # c failed to compile: waited for, not raised
        pool.wait("suite/first")
        pool.wait("suite/unknown")  # nothing queued: returns at once
    finally:
        pool.close()
