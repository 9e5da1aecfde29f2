"""One worker process runs benchmarks one after another, and containment stays: a benchmark that fails,
crashes, hangs or imports torch retires its worker and the next benchmark gets a fresh process."""

from gpudissect.bench.registry import select
from gpudissect.runner import run_one
from gpudissect.worker import Worker


def _benches():
    return {b.name: b for b in select(["fake"], None)}


def _pid(outcome):
    assert outcome.result.status == "ok", outcome.result.message
    return next(f.value for f in outcome.figures if f.key == "fake.pid")


def test_a_worker_runs_benchmarks_in_a_row_and_is_replaced_after_each_that_does_not_end_ok():
    b = _benches()
    w = Worker()
    try:
        first = _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w))
        assert _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w)) == first  # no new process
        assert run_one(1, b["fake_skip"], "quick", {}, None, worker=w).result.status == "skipped"
        assert _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w)) == first  # a skip keeps it
        assert run_one(1, b["fake_check"], "quick", {}, None, worker=w).result.status == "failed"
        assert w.proc is None  # a failure retires the worker
        after_fail = _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w))
        assert after_fail != first
        crash = run_one(1, b["fake_crash"], "quick", {}, None, worker=w)
        assert crash.result.status == "crashed" and "exit code 3" in crash.result.message
        after_crash = _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w))
        assert after_crash not in (first, after_fail)
        hang = run_one(1, b["fake_hang"], "quick", {}, None, worker=w)
        assert hang.result.status == "hung"
        assert _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w)) != after_crash
    finally:
        w.discard()


def test_a_benchmark_that_imports_torch_retires_its_worker():
    b = _benches()
    w = Worker()
    try:
        first = _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w))
        assert _pid(run_one(1, b["fake_torch"], "quick", {}, None, worker=w)) == first  # it ran in the worker
        assert w.proc is None  # and retired it: torch's global state stays out of the next benchmark
        assert _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w)) != first
    finally:
        w.discard()
