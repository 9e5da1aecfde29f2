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


def test_a_spare_worker_imports_ahead_and_serves_one_benchmark(tmp_path, monkeypatch):
    """A worker started with preload=("torch",) has imported it before its first request; the preloaded module
    counts as the benchmark's import, so the worker retires after that one benchmark."""
    (tmp_path / "torch.py").write_text("LOADED = True\n")  # a stand-in torch: CI has none
    monkeypatch.syspath_prepend(str(tmp_path))
    b = _benches()
    w = Worker(preload=("torch",)).start()
    try:
        first = _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w))
        assert w.proc is None  # retired: the next benchmark never sees what torch's import left behind
        assert _pid(run_one(1, b["fake_pid"], "quick", {}, None, worker=w)) != first
    finally:
        w.discard()


def _torch_pair_trace(tmp_path, monkeypatch, host_timed):
    """fake_slow declared a torch benchmark (timing the GPU, or the host), then fake_torch: when fake_torch's
    worker was ready, and when fake_slow ended, on one clock."""
    import dataclasses
    import json

    from gpudissect import trace
    from gpudissect.runner import run_benchmarks, start_run
    from gpudissect.store import Store

    log = tmp_path / "trace.jsonl"
    monkeypatch.setenv("GPUDISSECT_TRACE", str(log))  # the children's trace
    monkeypatch.setattr(trace, "_PATH", str(log))  # this process's
    b = _benches()
    slow = dataclasses.replace(b["fake_slow"], needs_gpu=True, torch=True, host_timed=host_timed)
    tor = dataclasses.replace(b["fake_torch"], needs_gpu=True)
    store = Store(tmp_path / "r.sqlite")
    facts = {"name": "fake", "uuid": None, "sm_count": 1, "l2_bytes": 1 << 20, "arch": "sm_90a"}
    rid = start_run(store, facts, "quick", {})
    assert run_benchmarks(store, rid, [slow, tor], "quick", {slow.key: {}, tor.key: {}}, None) == "ok"
    ev = [json.loads(line) for line in log.read_text().splitlines()]
    torch_pid = next(f.value for f in store.figures(rid) if f.key == "fake.pid")
    ready = next(e["wall"] for e in ev if e["kind"] == "worker_ready" and e["pid"] == torch_pid)
    slow_end = next(e["wall"] for e in ev if e["kind"] == "bench_end" and e["bench"] == slow.key)
    return ready, slow_end


def test_the_runner_starts_the_next_torch_benchmarks_process_beside_one_that_times_the_gpu(tmp_path, monkeypatch):
    """The process of a benchmark that imports torch is started (and imports) while the torch benchmark before
    it runs: its worker is ready before that one ends."""
    ready, slow_end = _torch_pair_trace(tmp_path, monkeypatch, host_timed=False)
    assert ready < slow_end


def test_nothing_is_started_beside_a_benchmark_that_times_the_host(tmp_path, monkeypatch):
    """A concurrent torch import raised the host cost per call by ~40 % (profiles/spare-ab): beside a
    benchmark that times the host, no process is started."""
    ready, slow_end = _torch_pair_trace(tmp_path, monkeypatch, host_timed=True)
    assert ready > slow_end


def test_processes_are_started_two_gpu_benchmarks_ahead_and_a_host_timed_one_waits_for_their_imports(
    tmp_path, monkeypatch
):
    """[GPU-timed, host-timed torch, torch with a preload]: both torch processes start beside the first benchmark
    (through the host-timed one, which starts nothing), import their modules there, and the host-timed benchmark
    starts only once no import runs beside it (a stand-in torch takes 1.5 s to import)."""
    import dataclasses
    import json

    from gpudissect import trace
    from gpudissect.runner import run_benchmarks, start_run
    from gpudissect.store import Store

    (tmp_path / "torch.py").write_text("import time\ntime.sleep(1.5)\n")
    (tmp_path / "fake_extra_mod.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    log = tmp_path / "trace.jsonl"
    monkeypatch.setenv("GPUDISSECT_TRACE", str(log))
    monkeypatch.setattr(trace, "_PATH", str(log))
    b = _benches()
    first = dataclasses.replace(b["fake_slow"], needs_gpu=True)  # a second, timing the GPU
    host = dataclasses.replace(b["fake_pid"], needs_gpu=True, torch=True, host_timed=True)
    tor = dataclasses.replace(b["fake_torch"], needs_gpu=True, preload=("fake_extra_mod",))
    store = Store(tmp_path / "r.sqlite")
    facts = {"name": "fake", "uuid": None, "sm_count": 1, "l2_bytes": 1 << 20, "arch": "sm_90a"}
    rid = start_run(store, facts, "quick", {})
    benches = [first, host, tor]
    assert run_benchmarks(store, rid, benches, "quick", {x.key: {} for x in benches}, None) == "ok"
    ev = [json.loads(line) for line in log.read_text().splitlines()]
    ready = [e for e in ev if e["kind"] == "worker_ready" and e["preloaded"]]
    assert len(ready) == 2
    assert sorted(ready[1]["preloaded"] + ready[0]["preloaded"]) == ["fake_extra_mod", "torch", "torch"]
    first_start = next(e["wall"] for e in ev if e["kind"] == "bench_start" and e["bench"] == first.key)
    first_end = next(e["wall"] for e in ev if e["kind"] == "bench_end" and e["bench"] == first.key)
    host_start = next(e["wall"] for e in ev if e["kind"] == "bench_start" and e["bench"] == host.key)
    assert all(first_start < e["wall"] for e in ready)
    assert host_start >= max(e["wall"] for e in ready) > first_end  # it waited for the 1.5 s imports
    ran = {f.value for f in store.figures(rid) if f.key == "fake.pid"}  # one key: the run keeps the last one's
    assert ran and ran <= {e["pid"] for e in ready}  # the torch benchmark ran in a process started ahead
