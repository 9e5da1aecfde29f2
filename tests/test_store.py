import json

import pytest

from gpudissect.errors import GpuDissectError
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


# ---- issue 27: schema versions, identity, non-finite numbers ---------------------------------------------
_V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  gpu_name TEXT, gpu_uuid TEXT, sm_count INTEGER, l2_bytes INTEGER,
  sm_clock_max_mhz REAL, mem_clock_max_mhz REAL, mem_bus_bits INTEGER,
  driver TEXT, cuda TEXT, nvrtc TEXT, tool_version TEXT, arch TEXT, mode TEXT,
  started TEXT NOT NULL, ended TEXT, status TEXT NOT NULL,
  selection TEXT NOT NULL DEFAULT '{}', extra TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE benches (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
  started TEXT, ended TEXT, seconds REAL, telemetry TEXT, PRIMARY KEY (run_id, suite, bench)
);
CREATE TABLE series (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, name TEXT NOT NULL,
  x_label TEXT, x_unit TEXT, y_label TEXT, y_unit TEXT, plot TEXT, figure TEXT, params TEXT
);
CREATE TABLE samples (
  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL, x REAL, y REAL, y_min REAL, y_max REAL, reps INTEGER, extra TEXT,
  PRIMARY KEY (series_id, idx)
);
CREATE TABLE figures (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, key TEXT NOT NULL,
  value TEXT NOT NULL, unit TEXT, kind TEXT NOT NULL, method TEXT,
  spread_min REAL, spread_max REAL, checked TEXT NOT NULL, note TEXT, PRIMARY KEY (run_id, key)
);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO runs (gpu_name, gpu_uuid, sm_count, l2_bytes, sm_clock_max_mhz, mem_clock_max_mhz, mem_bus_bits,
  driver, cuda, nvrtc, tool_version, arch, mode, started, ended, status)
  VALUES ('NVIDIA H100', 'GPU-old', 132, 1, 1980, 2619, 5120, '5', '13', '13', '0.1', 'sm_90a', 'full',
  '2025-01-01T00:00:00+00:00', NULL, 'ok');
INSERT INTO figures VALUES (1, 'memory', 'x', 'mem.k', '1.5', 'cycles', 'measured', 'm', 1.0, NULL, 'ok', '');
"""


def _v1_store(path):
    import sqlite3

    c = sqlite3.connect(path)
    c.executescript(_V1_SCHEMA)
    c.close()


def test_a_store_of_schema_1_is_read_as_is_and_upgraded_when_written(tmp_path):
    import sqlite3

    from gpudissect.store import SCHEMA_VERSION

    db = tmp_path / "old.sqlite"
    _v1_store(db)
    before = db.read_bytes()
    ro = Store(db, read_only=True)
    assert ro.run(1).gpu_uuid == "GPU-old" and ro.figures(1)[0].spread[1] != ro.figures(1)[0].spread[1]  # NaN end
    ro.close()
    assert db.read_bytes() == before  # reading upgrades nothing
    s = Store(db)
    cols = {r[1] for r in s.db.execute("PRAGMA table_info(runs)")}
    assert "import_key" in cols and s.run(1).mode == "full"
    assert s.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    exp = s.export(1)
    s.close()
    assert json.dumps(exp, allow_nan=False)
    newer = tmp_path / "newer.sqlite"
    _v1_store(newer)
    with sqlite3.connect(newer) as c:
        c.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    c.close()
    for ro in (True, False):
        with pytest.raises(GpuDissectError, match="newer gpudissect"):
            Store(newer, read_only=ro)


def test_import_identity_and_already_imported(tmp_path):
    from dataclasses import replace

    from gpudissect.store import AlreadyImported

    s = Store(tmp_path / "a.sqlite")
    rid = _run(s)
    s.save_bench(
        BenchResult(rid, "memory", "x", "ok", "", "t0", "t1", 1.0),
        [],
        [Figure("memory", "x", "k", 1.0, "c", "measured", "m")],
    )
    recs = (s.run(rid), s.benches(rid), s.series(rid), s.figures(rid))
    t = Store(tmp_path / "b.sqlite")
    assert t.import_run(*recs) == 1
    with pytest.raises(AlreadyImported, match="already imported as run 1") as e:
        t.import_run(*recs)
    assert e.value.run_id == 1
    # a run with no GPU UUID is recognised all the same
    nouuid = (replace(recs[0], gpu_uuid=None, started="2026-02-01"), *recs[1:])
    assert t.import_run(*nouuid) == 2
    with pytest.raises(AlreadyImported):
        t.import_run(*nouuid)
    # the origin store knows its own run (same GPU, start and mode), though it has no import identity
    with pytest.raises(AlreadyImported, match=f"as run {rid}"):
        s.import_run(*recs)
    assert [r.id for r in t.runs()] == [1, 2] and len(s.runs()) == 1


def test_non_finite_numbers_in_the_store(tmp_path):
    import math

    s = Store(tmp_path / "n.sqlite")
    rid = _run(s)
    nan, inf = math.nan, math.inf
    s.save_bench(
        BenchResult(rid, "memory", "x", "ok", "", "t0", "t1", nan, Telemetry(1, nan, inf, None, 1.0, None, None, None)),
        [Series("memory", "x", "n", "a", "", "b", "", [Point(nan, nan, nan, inf), Point(1.0, inf)], params={"p": nan})],
        [
            Figure("memory", "x", "k", nan, "c", "measured", "m", (nan, nan)),
            Figure("memory", "x", "k2", inf, "c", "derived", "m", (nan, 3.0)),
        ],
    )
    (ser,) = s.series(rid)
    p0, p1 = ser.points
    assert math.isnan(p0.x) and math.isnan(p0.y) and p0.y_min is None and p0.y_max == inf and p1.y == inf
    assert ser.params == {"p": None}
    (b,) = s.benches(rid)
    assert b.seconds is None and b.telemetry.sm_clock_mhz_median is None and b.telemetry.sm_clock_mhz_min is None
    f, f2 = s.figures(rid)
    assert (
        math.isnan(f.value)
        and f.spread is None
        and f2.value == inf
        and math.isnan(f2.spread[0])
        and f2.spread[1] == 3.0
    )
    text = json.dumps(s.export(rid), allow_nan=False)  # the export is strict JSON already
    assert "NaN" not in text and "Infinity" not in text


def test_a_read_only_store_leaves_nothing_behind(tmp_path):
    """A WAL store with no writer is read through SQLite's WAL locking (not immutable), and the files that
    needs are gone once the read ends, also after a read that failed."""
    db = tmp_path / "s.sqlite"
    s = Store(db)
    _run(s)
    s.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
    ro = Store(db, read_only=True)
    assert ro.run().id == 1
    with pytest.raises(GpuDissectError, match="no run 5"):
        ro.run(5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
    with ro.snapshot():
        assert ro.runs()[0].gpu_uuid == "GPU-x"
        with pytest.raises(Exception, match="readonly"):
            ro.db.execute("CREATE TABLE x (a)")
    ro.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]


def test_a_store_only_readable_immutable_is_checked_after_the_read(tmp_path):
    """Where SQLite cannot create the -shm a WAL reader needs (read-only media, a directory this process
    may not write, permissions that shut out every writer), the store is opened immutable, and a read
    the file changed under is refused instead of returned."""
    import os

    d = tmp_path / "ro"
    d.mkdir()
    db = d / "s.sqlite"
    s = Store(db)
    _run(s)
    s.close()
    db.chmod(0o444)
    d.chmod(0o555)
    try:
        ro = Store(db, read_only=True)
        assert ro.run().gpu_uuid == "GPU-x"
        with pytest.raises(GpuDissectError, match="changed while it was read"):
            with ro.snapshot():
                ro.runs()
                st = db.stat()
                os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # as a writer's checkpoint would
        assert len(ro.runs()) == 1  # the next read is a new one
        assert sorted(p.name for p in d.iterdir()) == ["s.sqlite"]
    finally:
        d.chmod(0o755)
        db.chmod(0o644)


def test_writing_a_read_only_store_says_read_only(tmp_path):
    import os
    import stat

    from gpudissect.errors import GpuDissectError
    from gpudissect.store import Store
    from helpers import make_run_info

    path = tmp_path / "s.sqlite"
    Store(path).close()
    path.chmod(stat.S_IRUSR | stat.S_IRGRP)
    if os.access(path, os.W_OK):
        pytest.skip("this user writes read-only files (root): tests/test_cli_hostile.py covers it with chattr")
    with pytest.raises(GpuDissectError, match="is read-only"):
        s = Store(path)
        s.create_run(make_run_info())


def test_an_unknown_users_home_is_one_clear_error(monkeypatch):
    from gpudissect.errors import GpuDissectError
    from gpudissect.store import Store, default_db_path

    monkeypatch.setenv("GPUDISSECT_DB", "~nosuchuser_gpudissect/x.sqlite")
    with pytest.raises(GpuDissectError, match="no such user"):
        default_db_path()
    with pytest.raises(GpuDissectError, match="no such user"):
        Store("~nosuchuser_gpudissect/y.sqlite")
