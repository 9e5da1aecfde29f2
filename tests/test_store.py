import json

from gpudissect.models import BenchResult, Figure, Point, RunInfo, Series, Telemetry
from gpudissect.store import Store


def _run(store):
    info = RunInfo(
        0,
        "NVIDIA H100 80GB HBM3",
        "GPU-x",
        132,
        52428800,
        1980,
        2619,
        5120,
        "580",
        "13.0",
        "13.0",
        "0.1.0",
        "sm_90a",
        "quick",
        "2026-01-01T00:00:00",
        None,
        "running",
        {"suites": ["memory"]},
    )
    return store.create_run(info)


def test_roundtrip(tmp_path):
    s = Store(tmp_path / "a.sqlite")
    rid = _run(s)
    tele = Telemetry(10, 1980.0, 1900.0, 1980.0, 2619.0, 300.0, 350.0, 50.0, ["sw_power_cap"])
    r = BenchResult(rid, "memory", "pchase_latency", "ok", "", "t0", "t1", 1.5, tele)
    ser = Series(
        "memory",
        "pchase_latency",
        "ca",
        "footprint",
        "bytes",
        "latency",
        "cycles",
        [Point(4096, 33.0, 32.0, 34.0, 3), Point(8192, 33.5)],
        plot="logx",
        params={"stride": 128},
    )
    fig = Figure("memory", "pchase_latency", "mem.latency.l1_hit_cycles", 33.0, "cycles", "derived", "m", (32.0, 34.0))
    s.save_bench(r, [ser], [fig])
    s.finish_run(rid, "ok")
    s2 = Store(tmp_path / "a.sqlite")
    assert s2.run().status == "ok" and s2.run().selection == {"suites": ["memory"]}
    (b,) = s2.benches(rid)
    assert b.telemetry.throttle_reasons == ["sw_power_cap"]
    (ser2,) = s2.series(rid)
    assert ser2.points[0].y_min == 32.0 and ser2.params == {"stride": 128}
    (f2,) = s2.figures(rid)
    assert f2.value == 33.0 and f2.spread == (32.0, 34.0)
    exp = s2.export(rid)
    json.dumps(exp)
    assert exp["figures"][0]["key"] == "mem.latency.l1_hit_cycles"


def test_resave_replaces(tmp_path):
    s = Store(tmp_path / "b.sqlite")
    rid = _run(s)
    r = BenchResult(rid, "memory", "x", "crashed", "died", "t0", "t1", 1.0)
    s.save_bench(r, [], [Figure("memory", "x", "k", 1.0, "cycles", "measured", "m")])
    r.status = "ok"
    s.save_bench(r, [], [Figure("memory", "x", "k2", 2.0, "cycles", "measured", "m")])
    assert [f.key for f in s.figures(rid)] == ["k2"]
    assert s.benches(rid)[0].status == "ok"


def test_export_roundtrip_to_records(tmp_path):
    from gpudissect.exportio import from_export

    s = Store(tmp_path / "c.sqlite")
    rid = _run(s)
    s.save_bench(
        BenchResult(rid, "memory", "x", "ok", "", "t0", "t1", 1.0),
        [Series("memory", "x", "n", "a", "", "b", "", [Point(1, 2)])],
        [Figure("memory", "x", "k", "n/a", "bytes", "derived", "m", check="failed")],
    )
    p = tmp_path / "e.json"
    p.write_text(json.dumps(s.export(rid)))
    run, benches, series, figures = from_export(p)
    assert run.gpu_name.startswith("NVIDIA") and series[0].points[0].y == 2 and figures[0].check == "failed"
