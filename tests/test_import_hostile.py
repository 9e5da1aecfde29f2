"""Issue 27 items 6-9: an export is checked against one schema when it is read, so whatever `import`
accepts every other command can read; what it refuses is one line naming the first bad field. Numbers,
texts and sizes no reader survives are refused; NaN and infinity survive export -> import -> export as
strict JSON; an export is stored once."""

from __future__ import annotations

import copy
import gzip
import json
import math
import os
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.errors import GpuDissectError
from gpudissect.models import BenchResult, Figure, Point, Series, Telemetry
from helpers import fill_store

runner = CliRunner()
MISSING = object()


def _line(r, code: int = 2) -> str:
    assert r.exit_code == code, (r.exit_code, r.stdout[-500:], r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    return lines[0]


@pytest.fixture
def good(tmp_path) -> dict:
    """An export as `gpudissect export` writes it: two benchmarks (one with telemetry), series, figures."""
    db = tmp_path / "src.sqlite"
    fill_store(db, (33.0,))
    from gpudissect.store import Store

    s = Store(db)
    s.save_bench(
        BenchResult(1, "memory", "tlb", "failed", "boom", "t2", "t3", None),
        [Series("memory", "tlb", "walk", "stride", "bytes", "latency", "cycles", [Point(1.0, 2.0)])],
        [],
    )
    s.close()
    return json.loads(json.dumps(Store(db, read_only=True).export(1)))


def _set(data: dict, path: list, value) -> dict:
    out = copy.deepcopy(data)
    node = out
    for p in path[:-1]:
        node = node[p]
    if value is MISSING:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _write(tmp_path: Path, data, name: str = "e.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


# ---- item 6: one schema, the first bad field by its JSON path -------------------------------------------
BAD_FIELDS = [
    (["figures", 1, "method"], None, "figures[1].method: must be a text, not null"),
    (["figures", 0, "spread"], ["a", "b"], "figures[0].spread: must be a number, not a text"),
    (["figures", 0, "spread"], [1.0], "figures[0].spread: must be a pair [min, max] or null, not a list"),
    (["benches", 0, "seconds"], "long", "benches[0].seconds: must be a number, not a text"),
    (["benches", 0, "telemetry", "sm_clock_mhz_median"], "fast", "telemetry.sm_clock_mhz_median: must be a number"),
    (["benches", 0, "telemetry", "throttle_reasons"], [1], "telemetry.throttle_reasons[0]: must be a text, not 1"),
    (["benches", 0, "telemetry"], [], "benches[0].telemetry: must be an object, not a list"),
    (["figures", 0, "unit"], 5, "figures[0].unit: must be a text, not 5"),
    (["series", 0, "points", 0, "reps"], "five", "series[0].points[0].reps: must be a whole number, not a text"),
    (["series", 0, "points", 0, "reps"], -1, "series[0].points[0].reps: must be a whole number from 0"),
    (["series", 0, "points", 0, "y_min"], "abc", "series[0].points[0].y_min: must be a number, not a text"),
    (["series", 0, "points", 1, "x"], True, "series[0].points[1].x: must be a number, not true"),
    (["series", 0, "points", 0, "extra"], [], "series[0].points[0].extra: must be an object, not a list"),
    (["series", 1, "name"], None, "series[1].name: must be a text, not null"),
    (["series", 0, "params"], [1], "series[0].params: must be an object, not a list"),
    (["series", 0, "points"], {}, "series[0].points: must be a list, not an object"),
    (["run", "sm_count"], True, "run.sm_count: must be a whole number, not true"),
    (["run", "sm_count"], 1.5, "run.sm_count: must be a whole number, not 1.5"),
    (["run", "selection"], "all", "run.selection: must be an object, not a text"),
    (["run", "gpu_name"], MISSING, "run.gpu_name: is missing"),
    (["run", "id"], "1", "run.id: must be a whole number, not a text"),
    (["figures", 0, "kind"], "guessed", "figures[0].kind: must be one of measured, derived, assumed, not a text"),
    (["figures", 0, "check"], None, "figures[0].check: must be one of ok, failed, not null"),
    (["figures", 0, "value"], [1], "figures[0].value: must be a number or a text, not a list"),
    (["figures", 0, "bogus"], 1, "figures[0].bogus: is not a field of this record"),
    (["benches", 0, "status"], "great", "benches[0].status: must be one of ok, failed, crashed"),
    (["benches", 0, "run_id"], None, "benches[0].run_id: must be a whole number, not null"),
    (["benches", 0], "ok", "benches[0]: must be an object, not a text"),
]


@pytest.mark.parametrize(
    ("path", "value", "why"), BAD_FIELDS, ids=[w.split(":")[0] + f"-{i}" for i, (_, _, w) in enumerate(BAD_FIELDS)]
)
def test_a_bad_field_is_refused_by_every_reader(tmp_path, good, path, value, why):
    import gpudissect

    p = _write(tmp_path, _set(good, path, value))
    db = tmp_path / "imp.sqlite"
    line = _line(runner.invoke(app, ["import", str(p), "--db", str(db)]))
    assert line.startswith(f"error: {p} is not a usable gpudissect export: ") and why in line, line
    assert not db.exists()
    fill_store(tmp_path / "other.sqlite", (1.0,))
    for args in (
        ["report", "--from-json", str(p), "--out", str(tmp_path / "rep")],
        ["show", "mem.policy", "--from-json", str(p)],
        ["compare", str(p), "1", "--db", str(tmp_path / "other.sqlite")],
    ):
        assert why in _line(runner.invoke(app, args)), args
    with pytest.raises(GpuDissectError, match="not a usable gpudissect export"):
        gpudissect.open(p)


def test_the_message_names_the_field_exactly(tmp_path, good):
    p = _write(tmp_path, _set(good, ["figures", 1, "method"], None), "h100.json")
    line = _line(runner.invoke(app, ["import", str(p), "--db", str(tmp_path / "s.sqlite")]))
    assert line == f"error: {p} is not a usable gpudissect export: figures[1].method: must be a text, not null"


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=6,
)


def _leaves(v, path=()):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _leaves(x, (*path, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _leaves(x, (*path, i))
    yield path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_what_import_accepts_every_command_reads(tmp_path_factory, good, data):
    """A field of a good export replaced by any JSON value: refused in one line, or imported and then
    read by every command without an internal error (exit 70)."""
    tmp = tmp_path_factory.mktemp("fz")
    paths = [p for p in _leaves(good) if p and p[0] in ("run", "benches", "figures", "series")]
    path = data.draw(st.sampled_from(paths))
    exp = _set(good, list(path), data.draw(JSON_VALUES))
    p = tmp / "e.json"
    p.write_text(json.dumps(exp))  # NaN/Infinity tokens as an older gpudissect wrote them
    db = str(tmp / "s.sqlite")
    r = runner.invoke(app, ["import", str(p), "--db", db])
    if r.exit_code != 0:
        _line(r)
        return
    for args in (
        ["runs", "--db", db],
        ["runs", "--json", "--db", db],
        ["show", "*", "--json", "--db", db],
        ["export", "--db", db],
        ["export", "--format", "csv", "--db", db],
        ["compare", "1", "1", "--db", db],
        ["report", "--out", str(tmp / "rep"), "--db", db],
        ["show", "*", "--from-json", str(p)],
    ):
        r = runner.invoke(app, args)
        if r.exit_code == 2:  # a clean refusal of what was asked (`show '*'` of a run with no figures): one line
            _line(r)
            continue
        assert r.exit_code in (0, 1), (path, args, r.exit_code, r.stderr[-800:])


# ---- item 7: numbers, texts and files no reader survives ------------------------------------------------
@pytest.mark.parametrize(
    ("path", "value", "why"),
    [
        (["run", "sm_count"], 2**63, "run.sm_count: must be a whole number from 0 to 2^63-1, not 9223372036854775808"),
        (["series", 0, "points", 0, "x"], 2**64, "series[0].points[0].x: must be a number within 2^63"),
        (["figures", 0, "spread"], [2**64, 1], "figures[0].spread: must be a number within 2^63"),
        (["figures", 0, "value"], -(2**80), "figures[0].value: must be a number within 2^63"),
        (["series", 0, "params"], {"n": 2**64}, "series[0].params: must be a number within 2^63"),
        (["figures", 0, "method"], "a\ud800b", "figures[0].method: holds a lone surrogate"),
        (["series", 0, "params"], {"\udfff": 1}, "series[0].params: holds a lone surrogate"),
        (["run", "extra"], {"a": ["\ud800"]}, "run.extra: holds a lone surrogate"),
    ],
    ids=lambda v: str(v).encode("ascii", "backslashreplace").decode()[:30],
)
def test_numbers_and_texts_sqlite_cannot_hold(tmp_path, good, path, value, why):
    p = _write(tmp_path, _set(good, path, value))
    line = _line(runner.invoke(app, ["import", str(p), "--db", str(tmp_path / "s.sqlite")]))
    assert why in line, line


def test_an_integer_longer_than_python_reads(tmp_path, good):
    text = json.dumps(good).replace('"sm_count": 132', '"sm_count": 1' + "0" * 5000, 1)
    assert "0" * 5000 in text
    line = _line(runner.invoke(app, ["import", str(_write(tmp_path, text)), "--db", str(tmp_path / "s.sqlite")]))
    assert "a number too long to read" in line and len(line) < 300


def test_a_gzip_bomb_is_stopped_at_the_limit(tmp_path, monkeypatch):
    import gpudissect.exportio as exportio

    monkeypatch.setattr(exportio, "MAX_EXPORT_BYTES", 4 << 20)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    bomb = tmp_path / "bomb.json.gz"
    with bomb.open("wb") as fh:
        fh.write(z.compress(b'{"format": "gpudissect-export", "pad": "'))
        block = b" " * (1 << 20)
        for _ in range(256):  # 256 MiB of JSON text in ~250 KB
            fh.write(z.compress(block))
        fh.write(z.flush())
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        line = _line(runner.invoke(app, ["import", str(bomb), "--db", str(tmp_path / "s.sqlite")]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "larger than 4 MiB uncompressed" in line
    assert peak < 32 << 20  # refused after the limit, not after decompressing 256 MiB


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    from gpudissect.exportio import MAX_EXPORT_BYTES

    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(MAX_EXPORT_BYTES + 1)  # sparse: no disk, and no time if it is never read
    assert "larger than 512 MiB" in _line(runner.invoke(app, ["import", str(big), "--db", str(tmp_path / "s.sqlite")]))


def test_files_that_are_not_regular_files(tmp_path):
    """A FIFO would block a plain read forever and /dev/zero would fill memory: both refused at once, in
    a real process (bounded in memory and time, so a regression fails instead of hanging)."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
        "from gpudissect.cli import app; sys.argv = ['gpudissect'] + sys.argv[1:]; app()"
    )
    for target, why in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"), (tmp_path, "directory")):
        r = subprocess.run(
            [sys.executable, "-c", code, "import", str(target), "--db", str(tmp_path / "s.sqlite")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and why in lines[0], (target, r.returncode, r.stderr[-500:])


# ---- item 8: NaN and infinity, one rule, strict JSON everywhere -------------------------------------------
def _strict(text: str):
    def refuse(token):
        raise AssertionError(f"{token} in JSON output")

    return json.loads(text, parse_constant=refuse)


def _nan_store(path: Path) -> None:
    from gpudissect.store import Store

    nan, inf = math.nan, math.inf
    fill_store(path, (33.0,))
    s = Store(path)
    tele = Telemetry(3, nan, 1.0, inf, None, nan, 2.0, -inf, [])
    s.save_bench(
        BenchResult(1, "memory", "nan", "ok", "", "t0", "t1", inf, tele),
        [
            Series(
                "memory",
                "nan",
                "odd",
                "x",
                "",
                "y",
                "",
                [Point(1.0, nan, inf, nan, 2, {"r": nan}), Point(inf, 5.0, -inf, 6.0), Point(2.0, -inf)],
                params={"scale": inf, "ok": 1.5},
            )
        ],
        [
            Figure("memory", "nan", "mem.nan_value", nan, "cycles", "measured", "m", (nan, 2.0)),
            Figure("memory", "nan", "mem.inf_value", inf, "cycles", "measured", "m", (nan, inf)),
            Figure("memory", "nan", "mem.neg_inf", -inf, "cycles", "derived", "m", (1.0, inf)),
        ],
    )
    s.close()


def test_nan_and_infinity_round_trip_as_strict_json(tmp_path):
    src = tmp_path / "gpu.sqlite"
    _nan_store(src)
    first = tmp_path / "first.json"
    assert runner.invoke(app, ["export", "1", "-o", str(first), "--db", str(src)]).exit_code == 0
    a = _strict(first.read_text())  # no NaN/Infinity token: jq and every strict parser read it
    odd = next(s for s in a["series"] if s["name"] == "odd")
    assert odd["points"][0] == {"x": 1.0, "y": None, "y_min": None, "y_max": None, "reps": 2, "extra": {"r": None}}
    assert odd["points"][1]["x"] is None and odd["params"] == {"scale": None, "ok": 1.5}
    figs = {f["key"]: f for f in a["figures"]}
    assert figs["mem.nan_value"]["value"] is None and figs["mem.nan_value"]["spread"] == [None, 2.0]
    assert figs["mem.inf_value"]["spread"] is None  # a spread needs a finite end
    laptop = tmp_path / "laptop.sqlite"
    r = runner.invoke(app, ["import", str(first), "--db", str(laptop)])
    assert r.exit_code == 0, r.stderr
    again = tmp_path / "again.json"
    assert runner.invoke(app, ["export", "1", "-o", str(again), "--db", str(laptop)]).exit_code == 0
    b = _strict(again.read_text())
    for part in ("figures", "series"):
        assert a[part] == b[part]
    assert [{**x, "run_id": 0} for x in a["benches"]] == [{**x, "run_id": 0} for x in b["benches"]]
    assert {**a["run"], "id": 0, "source": ""} == {**b["run"], "id": 0, "source": ""}  # source: where it came from
    # and the tool reads its own export back, everywhere
    for args in (
        ["show", "mem.nan_value", "--from-json", str(again)],
        ["report", "--from-json", str(again), "--out", str(tmp_path / "r")],
    ):
        assert runner.invoke(app, args).exit_code == 0, args


def test_json_of_the_store_and_exports_is_strict(tmp_path):
    """Every JSON the store writes (telemetry, params, extra) and its exports are strict JSON."""
    import sqlite3

    from gpudissect.store import Store

    db = tmp_path / "s.sqlite"
    _nan_store(db)
    with sqlite3.connect(db) as c:
        for (text,) in c.execute(
            "SELECT telemetry FROM benches UNION ALL SELECT params FROM series UNION ALL SELECT extra FROM samples"
            " UNION ALL SELECT selection FROM runs UNION ALL SELECT extra FROM runs"
        ):
            if text is not None:
                _strict(text)
    exp = Store(db, read_only=True).export(1)
    assert json.dumps(exp, allow_nan=False)
    r = runner.invoke(app, ["export", "1", "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    _strict(r.stdout)


def test_an_older_export_with_nan_tokens_imports(tmp_path, good):
    bad = _set(good, ["series", 0, "points", 0, "y"], math.nan)
    bad = _set(bad, ["figures", 0, "spread"], [math.inf, 2.0])
    p = _write(tmp_path, bad)
    assert "NaN" in p.read_text() and "Infinity" in p.read_text()
    db = tmp_path / "s.sqlite"
    assert runner.invoke(app, ["import", str(p), "--db", str(db)]).exit_code == 0
    out = _strict(runner.invoke(app, ["export", "1", "--db", str(db)]).stdout)
    assert out["series"][0]["points"][0]["y"] is None and out["figures"][0]["spread"] == [None, 2.0]


# ---- item 9: an export is stored once; figure keys are unique --------------------------------------------
def test_repeated_figure_keys_and_benchmarks_are_refused(tmp_path, good):
    twice = _set(good, ["figures"], [*good["figures"], {**good["figures"][2], "value": 1.0}])
    line = _line(runner.invoke(app, ["import", str(_write(tmp_path, twice)), "--db", str(tmp_path / "s.sqlite")]))
    key = good["figures"][2]["key"]
    assert f"figures[{len(good['figures'])}].key: {key!r} is repeated (first at figures[2])" in line
    twice = _set(good, ["benches"], [*good["benches"], good["benches"][0]])
    line = _line(runner.invoke(app, ["import", str(_write(tmp_path, twice)), "--db", str(tmp_path / "s.sqlite")]))
    assert "benches[2].suite/bench: 'memory/pchase_latency' is repeated" in line
    assert not (tmp_path / "s.sqlite").exists()


def test_an_export_without_a_gpu_uuid_imports_once(tmp_path, good):
    p = _write(tmp_path, _set(good, ["run", "gpu_uuid"], None))
    db = tmp_path / "s.sqlite"
    assert runner.invoke(app, ["import", str(p), "--db", str(db)]).exit_code == 0
    line = _line(runner.invoke(app, ["import", str(p), "--db", str(db)]))
    assert "already in" in line and "already imported as run 1" in line
    r = runner.invoke(app, ["runs", "--json", "--db", str(db)])
    assert [x["id"] for x in json.loads(r.stdout)] == [1] and json.loads(r.stdout)[0]["gpu_uuid"] is None


def test_a_re_export_is_the_same_export(tmp_path, good):
    """The identity is the content, not the run id: the export of an imported run is the export it came
    from, wherever it is imported."""
    first = _write(tmp_path, good, "first.json")
    mid = tmp_path / "mid.sqlite"
    fill_store(mid, (1.0, 2.0), first_day=10)
    assert runner.invoke(app, ["import", str(first), "--db", str(mid)]).exit_code == 0
    second = tmp_path / "second.json"
    assert runner.invoke(app, ["export", "3", "-o", str(second), "--db", str(mid)]).exit_code == 0
    assert json.loads(second.read_text())["run"]["id"] == 3
    from gpudissect.exportio import from_export
    from gpudissect.exportschema import identity

    assert identity(*from_export(first)) == identity(*from_export(second))
    last = tmp_path / "last.sqlite"
    assert runner.invoke(app, ["import", str(second), "--db", str(last)]).exit_code == 0
    assert "already imported as run 1" in _line(runner.invoke(app, ["import", str(first), "--db", str(last)]))
    with gzip.open(tmp_path / "g.json.gz", "wt") as fh:
        fh.write(first.read_text())
    assert "already imported as run 1" in _line(
        runner.invoke(app, ["import", str(tmp_path / "g.json.gz"), "--db", str(last)])
    )


def test_the_schema_mirrors_the_records():
    """One schema, field for field the records of models.py: a field added there must be added here."""
    from dataclasses import fields

    from gpudissect import exportschema as es
    from gpudissect import models

    for model, record in (
        (es.RunModel, models.RunInfo),
        (es.BenchModel, models.BenchResult),
        (es.TelemetryModel, models.Telemetry),
        (es.SeriesModel, models.Series),
        (es.PointModel, models.Point),
        (es.FigureModel, models.Figure),
    ):
        assert list(model.model_fields) == [f.name for f in fields(record)], record.__name__
