"""Issue 10 item 16: gpudissect.open() for notebooks, DataFrames, and export --format parquet."""

from __future__ import annotations

import builtins
import json
import math

import pytest
from typer.testing import CliRunner

import gpudissect
from gpudissect.cli import app
from gpudissect.errors import GpuDissectError
from helpers import fill_store

pd = pytest.importorskip("pandas")
runner = CliRunner()


def test_open_runs_figures_series(tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    monkeypatch.setenv("GPUDISSECT_DB", str(db))
    runs = gpudissect.open()  # the default store
    assert len(runs) == 2 and runs.ids() == [1, 2] and [r.id for r in runs] == [1, 2]
    run = runs.latest()
    assert run.id == 2 and "NVIDIA H100" in repr(run)
    figs = run.figures()
    assert isinstance(figs, pd.DataFrame)
    row = figs.set_index("key").loc["mem.latency.l1_hit_cycles"]
    assert row["value"] == 40.0 and row["spread_min"] == 39.5 and row["unit"] == "cycles"
    failed = figs.set_index("key").loc["mem.broken_cycles"]
    assert math.isnan(failed["value"]) and failed["check"] == "failed"  # no number from a failed check
    assert figs.set_index("key").loc["mem.policy", "text"] == "LRU"
    s = run.series("latency_vs_footprint")  # a figure name: both series drawn together
    assert set(s["series"]) == {"ca", "cg"} and len(s) == 4
    ca = run.series("ca")
    assert list(ca["x"]) == [4096, 1 << 20] and list(ca["y"]) == [40.0, 300.0] and ca["y_min"].iloc[0] == 39.0
    with pytest.raises(KeyError, match="series: ca, cg, latency_vs_footprint"):
        run.series("nope")
    assert gpudissect.open(db)[1].figures().set_index("key").loc["mem.latency.l1_hit_cycles", "value"] == 33.0
    assert list(runs.table()["id"]) == [1, 2] and run.benches()["status"].tolist() == ["ok"]


def test_open_export_and_missing_store(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    exp = tmp_path / "e.json"
    runner.invoke(app, ["export", "1", "-o", str(exp), "--db", str(db)])
    run = gpudissect.open(exp).latest()
    assert run.figures().set_index("key").loc["mem.latency.l1_hit_cycles", "value"] == 33.0
    with pytest.raises(GpuDissectError, match="no store at"):
        gpudissect.open(tmp_path / "none.sqlite")
    assert not (tmp_path / "none.sqlite").exists()


def test_without_pandas_a_clear_error(tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    real = builtins.__import__

    def no_pandas(name, *a, **k):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    run = gpudissect.open(db).latest()
    assert run.figure_records()[0].key  # records work without pandas
    with pytest.raises(GpuDissectError, match=r"pip install 'gpudissect\[api\]'"):
        run.figures()


def test_export_parquet(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    db = tmp_path / "s.sqlite"
    fill_store(db)
    out = tmp_path / "r.parquet"
    r = runner.invoke(app, ["export", "1", "--format", "parquet", "-o", str(out), "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    t = pq.read_table(out)
    df = t.to_pandas()
    figs = df[df.record == "figure"].set_index("name")
    assert figs.loc["mem.latency.l1_hit_cycles", "value"] == 33.0 and figs.loc["mem.policy", "text"] == "LRU"
    samples = df[df.record == "sample"]
    assert len(samples) == 4 and set(samples.name) == {"ca", "cg"}
    assert json.loads(t.schema.metadata[b"gpudissect.run"])["id"] == 1
    r = runner.invoke(app, ["export", "1", "--format", "parquet", "--db", str(db)])
    assert r.exit_code == 2 and "-o" in r.stderr
    real = builtins.__import__

    def no_arrow(name, *a, **k):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("no pyarrow")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_arrow)
    other = tmp_path / "x.parquet"
    r = runner.invoke(app, ["export", "1", "--format", "parquet", "-o", str(other), "--db", str(db)])
    assert (
        r.exit_code == 2
        and r.stderr.strip()
        == "error: --format parquet needs pyarrow: pip install 'gpudissect[api]' (or pip install pyarrow)"
    )
    assert not other.exists()


def test_open_and_parquet_read_missing_numbers_as_nan(tmp_path):
    """Issue 27 item 8: an export's nulls (NaN and infinities on the GPU host) open as NaN, and parquet
    carries them as nulls of float columns."""
    from gpudissect.store import Store

    db = tmp_path / "s.sqlite"
    fill_store(db, (33.0,))
    exp = Store(db, read_only=True).export(1)
    exp["series"][0]["points"][0]["y"] = None
    exp["figures"][2]["value"] = None
    exp["figures"][2]["spread"] = [None, 1.0]
    p = tmp_path / "e.json"
    p.write_text(json.dumps(exp, allow_nan=False))
    run = gpudissect.open(p).latest()
    key = exp["figures"][2]["key"]
    row = run.figures().set_index("key").loc[key]
    assert math.isnan(row["value"]) and math.isnan(row["spread_min"]) and row["spread_max"] == 1.0
    assert math.isnan(run.series(exp["series"][0]["name"])["y"].iloc[0])
    pytest.importorskip("pyarrow")
    from gpudissect.api import parquet_table

    t = parquet_table(exp).to_pandas()
    assert t[(t.record == "sample")]["value"].isna().sum() == 1
    meta = parquet_table(exp).schema.metadata
    json.loads(meta[b"gpudissect.run"], parse_constant=lambda c: pytest.fail(f"{c} in metadata"))
