"""The runner contains failures: a failed check, a crash and a hang each end only their benchmark."""

import pytest

from gpudissect.bench.registry import GpuDissectError, resolve_params, select
from gpudissect.runner import run_benchmarks
from gpudissect.store import Store


def _facts():
    return {"name": "fake", "uuid": None, "sm_count": 1, "l2_bytes": 1 << 20, "arch": "sm_90a", "free_mem": 1 << 30}


def test_containment(tmp_path):
    from gpudissect.runner import start_run

    store = Store(tmp_path / "r.sqlite")
    benches = select(["fake"], None)
    rid = start_run(store, _facts(), "quick", {})
    status = run_benchmarks(store, rid, benches, "quick", {b.key: {} for b in benches}, None)
    assert status == "partial"
    by = {b.bench: b for b in store.benches(rid)}
    assert by["fake_ok"].status == "ok"
    assert by["fake_check"].status == "failed" and "wrong place" in by["fake_check"].message
    assert by["fake_crash"].status == "crashed" and "exit code 3" in by["fake_crash"].message
    assert by["fake_hang"].status == "hung"
    assert by["fake_skip"].status == "skipped" and "frobnicate" in by["fake_skip"].message
    keys = {f.key for f in store.figures(rid)}
    # results measured before a failure are kept; the ok benchmark's figure is stored
    assert {"fake.latency_cycles", "fake.before_cycles", "fake.partial_cycles"} <= keys
    assert store.run(rid).status == "partial"


def test_unknown_names_are_clear():
    with pytest.raises(GpuDissectError, match="unknown benchmark 'nope'.*pchase_latency"):
        select(None, ["nope"])
    with pytest.raises(GpuDissectError, match="unknown suite"):
        select(["nosuch"], None)


def test_param_validation():
    (b,) = select(None, ["pchase_latency"])
    with pytest.raises(GpuDissectError, match="multiple of 8"):
        resolve_params(b, {"stride": "12"}, {})
    with pytest.raises(GpuDissectError, match="free device memory"):
        resolve_params(b, {"max_footprint": "100G"}, {"free_mem": 80 << 30})
    with pytest.raises(GpuDissectError, match="unknown parameter"):
        resolve_params(b, {"bogus": "1"}, {})
    assert (
        resolve_params(b, {"stride": "64", "max_footprint": "1G"}, {"free_mem": 80 << 30})["max_footprint"] == 1 << 30
    )


def test_resume_plan_picks_what_did_not_finish(tmp_path):
    from gpudissect.models import BenchResult
    from gpudissect.runner import resume_plan, start_run

    store = Store(tmp_path / "r.sqlite")
    benches = select(["fake"], ["fake_ok", "fake_check"])
    rid = start_run(
        store,
        _facts(),
        "full",
        {
            "suites": None,
            "benches": ["fake_ok", "fake_check", "pchase_latency"],
            "overrides": {"pchase_latency.stride": "64", "steps": "99"},
        },
    )
    run_benchmarks(store, rid, benches, "full", {b.key: {} for b in benches}, None)
    mode, todo, overrides = resume_plan(store, rid)
    assert mode == "full" and sorted(b.name for b in todo) == ["fake_check", "pchase_latency"]
    assert overrides == {"pchase_latency.stride": "64", "steps": "99"}
    # once pchase_latency ended ok its overrides no longer apply to what is left (they would be refused)
    store.save_bench(BenchResult(rid, "memory", "pchase_latency", "ok", "", "t", "t", 1.0))
    mode, todo, overrides = resume_plan(store, rid)
    assert [b.name for b in todo] == ["fake_check"] and overrides == {}
    store.finish_run(rid, "ok")
    store.save_bench(BenchResult(rid, "fake", "fake_check", "ok", "", "t", "t", 1.0))
    with pytest.raises(GpuDissectError, match="nothing left"):
        resume_plan(store, rid)


def test_time_figures_prefer_the_clock_measured_in_the_kernels():
    from gpudissect.models import BenchResult, Figure, Telemetry
    from gpudissect.runner import BenchOutcome, time_figures

    tele = Telemetry(3, 1980.0, 1980.0, 1980.0, None, None, None, None)
    res = BenchResult(1, "s", "b", "ok", "", "t", "t", 1.0, tele)
    lat = Figure("s", "b", "x.latency_cycles", 1800.0, "cycles", "measured", "m")
    nvml = time_figures(BenchOutcome(res, [], [lat]))
    assert nvml[0].value == round(1800 / 1980 * 1e3, 3) and "NVML" in nvml[0].method
    clk = Figure("s", "b", "clock.b.sm_mhz", 1800.0, "MHz", "measured", "clock64 / globaltimer")
    own = {f.key: f for f in time_figures(BenchOutcome(res, [], [lat, clk]))}
    assert own["x.latency_ns"].value == 1000.0 and "own kernels" in own["x.latency_ns"].method


def test_set_names_its_benchmark_and_parameter_or_is_refused():
    from gpudissect.runner import prepare

    benches = select(None, ["pchase_latency", "fake_ok"])
    # a misspelt benchmark prefix used to be dropped without a word
    with pytest.raises(GpuDissectError, match=r"'pchase_latnecy' is no benchmark; selected: pchase_latency, fake_ok"):
        prepare(benches, {"pchase_latnecy.steps": "abc"}, {})
    with pytest.raises(GpuDissectError, match="'tlb' is not among the selected"):
        prepare(benches, {"tlb.max_footprint": "1G"}, {})
    with pytest.raises(GpuDissectError, match=r"pchase_latency has no parameter 'step'; valid: .*pchase_latency.steps"):
        prepare(benches, {"pchase_latency.step": "5"}, {})
    with pytest.raises(GpuDissectError, match=r"no selected benchmark has a parameter 'bogus'; valid: .*stride"):
        prepare(benches, {"bogus": "1"}, {})
    with pytest.raises(GpuDissectError, match="bad value for steps"):
        prepare(benches, {"pchase_latency.steps": "abc"}, {})
    p = prepare(benches, {"steps": "100", "pchase_latency.steps": "200", "stride": "64"}, {})
    assert p["memory/pchase_latency"]["steps"] == 200 and p["memory/pchase_latency"]["stride"] == 64
    assert p["fake/fake_ok"] == {}


def test_run_refuses_conflicting_arguments():
    from typer.testing import CliRunner

    from gpudissect.cli import app

    runner = CliRunner()
    for extra in (["--suite", "memory"], ["--full"], ["--quick"], ["--bench", "tlb"]):
        r = runner.invoke(app, ["run", "--resume", "1", *extra])
        assert r.exit_code == 2 and "drop" in r.stderr and extra[0] in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_a_skipped_benchmark_leaves_the_run_ok(tmp_path):
    from gpudissect.runner import start_run

    store = Store(tmp_path / "r.sqlite")
    benches = select(["fake"], ["fake_ok", "fake_skip"])
    rid = start_run(store, _facts(), "quick", {})
    assert run_benchmarks(store, rid, benches, "quick", {b.key: {} for b in benches}, None) == "ok"
    assert {b.bench: b.status for b in store.benches(rid)} == {"fake_ok": "ok", "fake_skip": "skipped"}


def test_a_cpu_only_benchmark_runs_beside_at_low_priority(tmp_path):
    from gpudissect.runner import BESIDE_NICE, start_run

    store = Store(tmp_path / "r.sqlite")
    benches = select(["fake"], ["fake_pid"])
    rid = start_run(store, _facts(), "quick", {})
    assert run_benchmarks(store, rid, benches, "quick", {b.key: {} for b in benches}, None) == "ok"
    nice = {f.key: f.value for f in store.figures(rid)}["fake.nice"]
    assert nice == BESIDE_NICE  # it yields the CPU to the GPU benchmarks and the compile pool (nice 10)


def test_a_cpu_only_benchmark_that_ended_early_is_not_run_again(tmp_path, monkeypatch):
    """A benchmark beside that ended before the GPU loop reached it used to be run again in the GPU worker
    (isa_encoding twice, 49 s of a quick run, seen in a run's trace)."""
    import dataclasses

    from gpudissect.runner import BESIDE_NICE, start_run

    store = Store(tmp_path / "r.sqlite")
    by_name = {b.name: b for b in select(["fake"], ["fake_slow", "fake_pid"])}
    slow, pid = by_name["fake_slow"], by_name["fake_pid"]
    # fake_slow (in the GPU loop) ends only after fake_pid (beside) has ended and left its mark
    monkeypatch.setenv("FAKE_PID_DONE", str(tmp_path / "pid-done"))
    monkeypatch.setenv("FAKE_SLOW_AFTER", str(tmp_path / "pid-done"))
    slow = dataclasses.replace(slow, needs_gpu=True)  # the parent runs it in the GPU loop; the child needs no GPU
    rid = start_run(store, _facts(), "quick", {})
    assert run_benchmarks(store, rid, [slow, pid], "quick", {slow.key: {}, pid.key: {}}, None) == "ok"
    assert sorted(b.bench for b in store.benches(rid)) == ["fake_pid", "fake_slow"]
    nice = [f.value for f in store.figures(rid) if f.key == "fake.nice"]
    assert nice == [BESIDE_NICE]  # once, beside, not again in the GPU worker (nice 0)


def test_the_pool_gets_each_benchmarks_kernels_and_what_it_will_generate(tmp_path, monkeypatch):
    """The icache staircase builds are generated at run time but known before: queued with the declared ones."""
    import dataclasses

    from gpudissect import runner as rn
    from gpudissect.bench.cache.icache import staircase_sizes
    from gpudissect.capability import Target
    from gpudissect.device import compiler

    queued: dict[str, list[str]] = {}
    order: list[str | None] = []
    sizes: dict[str | None, list[list[int]]] = {}

    class Recorder:
        workers = 8

        def __init__(self, arch, *a, **k):
            self.arch = arch

        def queue(self, key, specs):
            queued[key] = [s.name for s in specs]
            order.append(key)
            sizes.setdefault(key, []).append([len(s.source) for s in specs])
            return len(specs)

        def wait(self, key, progress=None):
            raise KeyboardInterrupt  # stop before any benchmark starts: only the queue is under test

        def close(self):
            pass

    monkeypatch.setattr(compiler, "CompilePool", Recorder)
    store = Store(tmp_path / "r.sqlite")
    benches = [dataclasses.replace(b, prepare=None) for b in select(["cache", "isa"], None)]  # no NVRTC here
    rid = rn.start_run(store, _facts(), "quick", {})
    with pytest.raises(KeyboardInterrupt):
        rn.run_benchmarks(store, rid, benches, "quick", {b.key: {} for b in benches}, None, target=Target(9, 0))
    # the first benchmark's kernels, then the longest builds (icache's and const_cache's largest generated ones)
    # on all workers but two, go to the pool before the rest in run order
    assert order[:2] == [None, None]
    heavy = sizes[None][1]
    assert heavy == sorted(heavy, reverse=True) and len(heavy) == Recorder.workers - 2
    assert max(heavy) == max(sizes["cache/icache"][0])
    icache = queued["cache/icache"]
    assert len(icache) >= len(staircase_sizes(True)) and any("cache_icache.cu[" in n for n in icache)
    assert "cache/const_cache" in queued
    # the CPU-only isa_encoding reads every build of the run: queued too (the pool makes each once)
    from gpudissect.bench.isa.corpus import project_specs

    assert queued["isa/isa_encoding"] == [s.name for s in project_specs(Target(9, 0))]
    assert set(queued["cache/const_cache"]) & set(queued["isa/isa_encoding"])


def test_a_trace_path_that_cannot_be_written_costs_one_line_not_the_run(tmp_path, monkeypatch, capsys):
    from gpudissect import trace

    monkeypatch.setattr(trace, "_PATH", str(tmp_path / "no-such-dir" / "t.jsonl"))
    trace.event("bench_start", bench="x")
    trace.event("bench_end", bench="x")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GPUDISSECT_TRACE=" in err[0] and "no trace is written" in err[0]
    assert not trace.on()


def test_a_benchmarks_prepare_runs_ahead_beside_the_ones_before_it_and_never_fails_the_run(tmp_path):
    """`prepare` (CPU work whose results the benchmark reads from a cache) runs in a thread of the runner while
    the benchmarks before it run; one that raises leaves the benchmark to do the work, and the run ends ok."""
    import dataclasses
    import time

    from gpudissect.bench.registry import select
    from gpudissect.capability import Target
    from gpudissect.runner import run_benchmarks, start_run
    from gpudissect.store import Store

    seen: dict[str, float] = {}

    def prep(target, mode, params):
        seen["prepared"] = time.monotonic()
        seen["mode"] = mode

    def broken(target, mode, params):
        raise RuntimeError("nvdisasm is gone")

    b = {x.name: x for x in select(["fake"], None)}
    slow = dataclasses.replace(b["fake_slow"], needs_gpu=True)  # a second, before it on the GPU
    pid = dataclasses.replace(b["fake_pid"], prepare=prep, needs_gpu=True)
    other = dataclasses.replace(b["fake_skip"], prepare=broken, needs_gpu=True)
    store = Store(tmp_path / "r.sqlite")
    facts = {"name": "fake", "uuid": None, "sm_count": 1, "l2_bytes": 1 << 20, "arch": "sm_90a"}
    rid = start_run(store, facts, "quick", {})
    benches = [slow, pid, other]
    t0 = time.monotonic()

    def done(outcome):
        seen.setdefault(f"end {outcome.result.bench}", time.monotonic())

    final = run_benchmarks(store, rid, benches, "quick", {x.key: {} for x in benches}, None, on_done=done,
                           target=Target(9, 0))  # fmt: skip
    assert final == "ok"
    assert seen["mode"] == "quick"
    assert t0 < seen["prepared"] < seen["end fake_slow"]  # ahead, while fake_slow ran
