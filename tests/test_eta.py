"""The run's ETA: per-benchmark seconds of earlier runs of the same GPU and mode (the store first, then the
committed runs), the benchmark now running counted down."""

from gpudissect import eta
from gpudissect.models import BenchResult
from gpudissect.runner import start_run
from gpudissect.store import Store


def _facts(name="fake GPU"):
    return {"name": name, "uuid": None, "sm_count": 1, "l2_bytes": 1 << 20, "arch": "sm_90a"}


def test_the_newest_run_of_the_same_gpu_and_mode_gives_each_benchmarks_seconds(tmp_path):
    store = Store(tmp_path / "r.sqlite")
    for mode, name, secs in (("quick", "fake GPU", 10.0), ("quick", "fake GPU", 20.0), ("full", "fake GPU", 99.0)):
        rid = start_run(store, _facts(name), mode, {})
        store.save_bench(BenchResult(rid, "s", "a", "ok", "", "t", "t", secs))
        store.save_bench(BenchResult(rid, "s", "b", "hung", "", "t", "t", 500.0))  # says nothing of the next run
    other = start_run(store, _facts("another GPU"), "quick", {})
    store.save_bench(BenchResult(other, "s", "b", "ok", "", "t", "t", 7.0))
    assert eta.stored_seconds(store, "fake GPU", "quick") == {"s/a": 20.0}


def test_the_estimate_counts_down_the_running_benchmark_and_drops_the_finished_ones():
    now = [0.0]
    e = eta.Eta(["s/a", "s/b", "s/c"], {"s/a": 10.0, "s/b": 30.0}, clock=lambda: now[0])
    assert e.remaining() == 10 + 30 + 20  # c never timed: the median of the others
    now[0] = 4.0
    assert e.remaining() == 56.0
    now[0] = 15.0  # a ran over its time: it counts as nearly done, never negative
    assert e.remaining() == 50.0
    e.done("s/a")
    assert e.remaining() == 50.0 and e.text() == "ETA 0m50s"
    e.done("s/b")
    e.done("s/c")
    assert e.remaining() == 0.0


def test_no_earlier_run_means_no_estimate():
    assert eta.Eta(["s/a"], {}).remaining() is None
    assert "unknown" in eta.Eta(["s/a"], {}).text()


def test_the_committed_h100_quick_run_gives_every_quick_benchmark_a_time():
    from gpudissect.bench.registry import select

    keys = {b.key for b in select(None, None) if b.suite not in ("fake", "gpufake")}
    got = eta.committed_seconds("NVIDIA H100 80GB HBM3", "quick", keys)
    assert keys <= set(got), sorted(keys - set(got))
    assert got["app/llm"] > 30  # the newest committed quick run's, not a made-up figure
