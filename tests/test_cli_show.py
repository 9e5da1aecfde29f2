"""`show` finds the newest run with the key and says which; a glob is one table with the run and clock once;
`report` without --out writes under the user's data directory, never into the current directory."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.models import Figure
from gpudissect.store import Store
from helpers import fill_store, make_run_info

runner = CliRunner()


def _store(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db, (33.0, 40.0))
    s = Store(db)  # a newer run without memory figures: an isa run imported last, say
    rid = s.create_run(make_run_info(started="2026-02-01T00:00:00+00:00"))
    from gpudissect.models import BenchResult

    s.save_bench(
        BenchResult(rid, "isa", "isa_encoding", "ok", "", "2026-02-01T00:00:00+00:00", None, 1.0),
        [],
        [Figure("isa", "isa_encoding", "isa.encoding.opcode_bits_min", 9, "bits", "derived", "m")],
    )
    s.finish_run(rid, "ok")
    return db, rid


def test_show_without_a_run_uses_the_newest_that_has_the_key_and_says_so(tmp_path):
    db, newest = _store(tmp_path)
    r = runner.invoke(app, ["show", "mem.latency.l1_hit_cycles", "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    assert "from run 2 " in r.stderr and "the newest with mem.latency.l1_hit_cycles" in r.stderr
    assert r.stdout.startswith("mem.latency.l1_hit_cycles = 40")
    r = runner.invoke(app, ["show", "isa.encoding.opcode_bits_min", "--db", str(db), "--json"])
    assert json.loads(r.stdout)["run"]["id"] == newest
    r = runner.invoke(app, ["show", "mem.latency.nope_cycles", "--db", str(db)])
    assert r.exit_code == 2 and "nor in any of the 3 stored runs" in r.stderr


def test_a_glob_is_one_table_with_the_run_once(tmp_path):
    db, _ = _store(tmp_path)
    r = runner.invoke(app, ["show", "mem.latency.*", "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["KEY", "VALUE", "UNIT", "SPREAD", "(MIN-MAX)", "CHECK"]
    assert sum(line.startswith("mem.latency.") for line in lines) == 2
    assert sum(line.startswith("run 2:") for line in lines) == 1
    assert sum("memory/pchase_latency (status" in line for line in lines) == 1


def test_report_without_out_goes_to_the_data_directory(tmp_path, monkeypatch):
    db, _ = _store(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    r = runner.invoke(app, ["report", "1", "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    out = tmp_path / "data" / "gpudissect" / "reports" / "run-1-md"
    assert (out / "report.md").exists() and str(out) in r.stderr
    assert set(tmp_path.iterdir()) - before == {tmp_path / "data"}
    assert runner.invoke(app, ["report", "1", "--db", str(db)]).exit_code == 0  # the same run again: replaced


def test_runs_tell_runs_apart_by_label_suites_and_source(tmp_path):
    db, _ = _store(tmp_path)
    exp = tmp_path / "isa-run.json"
    assert runner.invoke(app, ["export", "3", "-o", str(exp), "--db", str(db)]).exit_code == 0
    laptop = tmp_path / "laptop.sqlite"
    r = runner.invoke(app, ["import", str(exp), "--db", str(laptop), "--label", "h100 isa"])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["runs", "--db", str(laptop)])
    header, row = r.stdout.splitlines()
    assert header.split() == ["ID", "LABEL", "GPU", "MODE", "STARTED", "STATUS", "BENCHMARKS", "SUITES", "SOURCE"]
    assert "h100 isa" in row and " isa " in row and "imported from isa-run.json (run 3 there)" in row
    (d,) = json.loads(runner.invoke(app, ["runs", "--db", str(laptop), "--json"]).stdout)
    assert d["label"] == "h100 isa" and d["suites"] == ["isa"]
    # exported again and imported elsewhere: the label stays, the source says both hops; the same run is refused
    again = tmp_path / "again.json"
    assert runner.invoke(app, ["export", "1", "-o", str(again), "--db", str(laptop)]).exit_code == 0
    third = tmp_path / "third.sqlite"
    assert runner.invoke(app, ["import", str(again), "--db", str(third)]).exit_code == 0
    (d,) = json.loads(runner.invoke(app, ["runs", "--db", str(third), "--json"]).stdout)
    assert d["label"] == "h100 isa" and d["source"].startswith("imported from again.json (run 1 there; imported")
    r = runner.invoke(app, ["import", str(exp), "--db", str(third), "--label", "other name"])
    assert r.exit_code == 2 and "already" in r.stderr  # a relabelled export is the same run
    r = runner.invoke(app, ["import", str(exp), "--db", str(third), "--label", "two\nlines"])
    assert r.exit_code == 2 and "--label takes one line" in r.stderr


def test_a_store_of_schema_2_gains_labels_when_written(tmp_path):
    import sqlite3

    db, _ = _store(tmp_path)
    con = sqlite3.connect(db)  # as gpudissect before schema 3 left it
    con.execute("ALTER TABLE runs DROP COLUMN label")
    con.execute("ALTER TABLE runs DROP COLUMN source")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    r = runner.invoke(app, ["runs", "--db", str(db), "--json"])  # read-only: an old store reads as it is
    assert r.exit_code == 0 and {x["label"] for x in json.loads(r.stdout)} == {""}
    s = Store(db)  # a writer upgrades it
    assert {"label", "source"} <= {row[1] for row in s.db.execute("PRAGMA table_info(runs)")}
