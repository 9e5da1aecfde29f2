"""Issue 10, data and files: no lost files, a read-only store, reading creates nothing, import round trip."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.errors import GpuDissectError
from helpers import SESSION_TMP, fill_store, one_line_error

runner = CliRunner()


# ---- item 1: validate first, write atomically ---------------------------------------------------
def test_export_bad_format_keeps_the_file(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    keep = tmp_path / "keep.json"
    keep.write_text('{"mine": 1}\n')
    line = one_line_error(runner.invoke(app, ["export", "1", "--format", "xml", "-o", str(keep), "--db", str(db)]))
    assert "xml" in line and keep.read_text() == '{"mine": 1}\n'
    # an unknown run is found out before the output is opened
    one_line_error(runner.invoke(app, ["export", "9", "-o", str(keep), "--db", str(db)]))
    assert keep.read_text() == '{"mine": 1}\n'
    r = runner.invoke(app, ["export", "1", "-o", str(keep), "--db", str(db)])
    assert r.exit_code == 0 and json.loads(keep.read_text())["run"]["id"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.json", "s.sqlite"]  # no temp file left


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    from gpudissect.exportio import atomic_write

    p = tmp_path / "out.csv"
    p.write_text("old\n")

    def half(fh):
        fh.write("partial")
        raise GpuDissectError("disk full")

    with pytest.raises(GpuDissectError):
        atomic_write(p, half)
    assert p.read_text() == "old\n" and [x.name for x in tmp_path.iterdir()] == ["out.csv"]


# ---- item 2: reading commands open the store read-only --------------------------------------------
def test_reading_opens_read_only_and_changes_nothing(tmp_path):
    from gpudissect.store import Store

    db = tmp_path / "s.sqlite"
    fill_store(db)
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode = DELETE")  # a store copied elsewhere: reading must not turn WAL on
    c.close()
    before = db.read_bytes()
    s = Store(db, read_only=True)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        s.db.execute("CREATE TABLE x (a)")
    s.close()
    out = tmp_path / "rep"
    for args in (
        ["runs"],
        ["runs", "--json"],
        ["show", "mem.policy"],
        ["export", "1"],
        ["compare", "1", "2"],
        ["report", "--out", str(out)],
    ):
        r = runner.invoke(app, [*args, "--db", str(db)])
        assert r.exit_code in (0, 1), (args, r.stderr)
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "s.sqlite"]  # no -wal, -shm or journal


def test_read_only_file_in_read_only_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    db = d / "s.sqlite"
    fill_store(db)
    db.chmod(0o444)
    d.chmod(0o555)
    try:
        r = runner.invoke(app, ["runs", "--db", str(db)])
        assert r.exit_code == 0 and "NVIDIA H100" in r.stdout, r.stderr
        r = runner.invoke(app, ["show", "mem.latency.l1_hit_cycles", "--db", str(db)])
        assert r.exit_code == 0 and "40 cycles" in r.stdout
        assert sorted(p.name for p in d.iterdir()) == ["s.sqlite"]
    finally:
        d.chmod(0o755)
        db.chmod(0o644)


# ---- item 3: reading creates nothing; ~ expands ------------------------------------------------------
def test_read_commands_create_nothing(tmp_path, monkeypatch):
    typo = tmp_path / "typo" / "dir" / "x.sqlite"
    for args in (["runs"], ["report", "--out", str(tmp_path / "r")], ["export"], ["show", "k"], ["compare", "1", "2"]):
        line = one_line_error(runner.invoke(app, [*args, "--db", str(typo)]))
        assert "no store at" in line
    assert not (tmp_path / "typo").exists() and not (tmp_path / "r").exists()
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert "empty file" in one_line_error(runner.invoke(app, ["runs", "--db", str(empty)]))
    assert empty.stat().st_size == 0


def test_tilde_in_the_store_path_expands(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    fill_store(home / "x.sqlite")
    monkeypatch.setenv("GPUDISSECT_DB", "~/x.sqlite")
    r = runner.invoke(app, ["runs"])
    assert r.exit_code == 0 and "NVIDIA" in r.stdout, r.stderr
    r = runner.invoke(app, ["runs", "--db", "~/x.sqlite"])
    assert r.exit_code == 0
    assert not (tmp_path / "~").exists()


# ---- item 4: tests keep their caches in temporary directories ---------------------------------------
@pytest.fixture(scope="module")
def _cache_seen_by_a_module_fixture():
    from gpudissect.device.compiler import cache_dir

    return cache_dir(), os.environ.get("MPLCONFIGDIR", "")


def test_module_fixtures_compile_into_a_temp_dir(_cache_seen_by_a_module_fixture):
    cache, mpl = _cache_seen_by_a_module_fixture
    home = Path("~").expanduser()
    assert Path(SESSION_TMP) in cache.parents and home / ".cache" not in cache.parents
    assert str(cache).startswith(tempfile.gettempdir()) and mpl.startswith(SESSION_TMP)


# ---- item 5: broken stores and output paths: one line, exit 2 ---------------------------------------
def test_broken_stores_are_one_clear_line(tmp_path):
    notes = tmp_path / "notes.sqlite"
    notes.write_text("not a database at all\n" * 100)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (a)").connection.commit()
    cases = {
        str(tmp_path): "is a directory",
        str(notes): "not a gpudissect store",
        str(other): "not a gpudissect store",
    }
    for db, why in cases.items():
        for args in (
            ["runs"],
            ["export"],
            ["show", "k"],
            ["report", "--out", str(tmp_path / "r")],
            ["import", str(notes)],
            ["compare", "1", "2"],
        ):
            line = one_line_error(runner.invoke(app, [*args, "--db", db]))
            assert why in line or "not a usable gpudissect export" in line, (args, db, line)
    assert notes.read_text().startswith("not a database") and not (tmp_path / "r").exists()


def test_output_paths_are_checked(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "otherdir").mkdir()
    (tmp_path / "otherdir" / "thesis.tex").write_text("x")
    for out, why in (
        (tmp_path / "afile", "not a directory"),
        (tmp_path / "afile" / "sub", "not an existing directory"),
        (tmp_path / "otherdir", "not a gpudissect report"),
    ):
        assert why in one_line_error(runner.invoke(app, ["report", "--out", str(out), "--db", str(db)]))
    for out, why in ((tmp_path, "is a directory"), (tmp_path / "missing" / "e.json", "does not exist")):
        assert why in one_line_error(runner.invoke(app, ["export", "-o", str(out), "--db", str(db)]))
    assert not (tmp_path / "missing").exists()
    line = one_line_error(runner.invoke(app, ["report", "1", "--from-json", str(tmp_path / "afile"), "--db", str(db)]))
    assert "not both" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_unwritable_report_directory(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert "not writable" in one_line_error(runner.invoke(app, ["report", "--out", str(ro / "r"), "--db", str(db)]))
    finally:
        ro.chmod(0o755)


# ---- item 15: import, and export after import gives everything back -----------------------------------
def test_import_roundtrip(tmp_path):
    src = tmp_path / "gpu.sqlite"
    fill_store(src, (33.0, 40.0), extra_keys_in_first=2)
    exp = tmp_path / "e.json"
    assert runner.invoke(app, ["export", "1", "-o", str(exp), "--db", str(src)]).exit_code == 0
    laptop = tmp_path / "laptop" / "l.sqlite"
    fill_store(laptop, (50.0,), first_day=20)  # the laptop already has a run: the import gets the next id
    r = runner.invoke(app, ["import", str(exp), "--db", str(laptop)])
    assert r.exit_code == 0 and "as run 2" in r.stdout, r.stderr
    again = tmp_path / "again.json"
    assert runner.invoke(app, ["export", "2", "-o", str(again), "--db", str(laptop)]).exit_code == 0
    a, b = json.loads(exp.read_text()), json.loads(again.read_text())
    for part in ("figures", "series"):
        assert a[part] == b[part] and a[part]
    assert [{**x, "run_id": 0} for x in a["benches"]] == [{**x, "run_id": 0} for x in b["benches"]]
    assert {**a["run"], "id": 0, "source": ""} == {**b["run"], "id": 0, "source": ""}
    assert b["run"]["source"] == "imported from e.json (run 1 there)"  # where the laptop's copy came from
    # importing the same run twice is refused, and nothing is added
    assert "already in" in one_line_error(runner.invoke(app, ["import", str(exp), "--db", str(laptop)]))
    r = runner.invoke(app, ["runs", "--json", "--db", str(laptop)])
    assert [x["id"] for x in json.loads(r.stdout)] == [1, 2]


def test_import_refuses_a_broken_export_before_touching_the_store(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "gpudissect-export", "run": {"id": 1}}')
    db = tmp_path / "new" / "s.sqlite"
    assert "not a usable gpudissect export" in one_line_error(runner.invoke(app, ["import", str(bad), "--db", str(db)]))
    assert not db.parent.exists()


def test_run_refuses_a_foreign_store_before_probing_the_gpu(tmp_path, monkeypatch):
    import gpudissect.runner as runner_mod

    notes = tmp_path / "notes.sqlite"
    notes.write_text("my notes\n")
    monkeypatch.setattr(runner_mod, "probe_device", lambda: pytest.fail("the GPU was probed"))
    line = one_line_error(runner.invoke(app, ["run", "--bench", "fake_ok", "--db", str(notes)]))
    assert "not a gpudissect store" in line and notes.read_text() == "my notes\n"


def test_gzip_export_reads_back_everywhere_and_a_damaged_one_is_one_line(tmp_path):
    """`export -o x.json.gz` writes the same JSON compressed (the committed results are stored so);
    import, compare and gpudissect.open read it; a truncated one is refused in one line."""
    import gzip

    import gpudissect

    src = tmp_path / "gpu.sqlite"
    fill_store(src, (33.0, 40.0))
    plain, packed = tmp_path / "e.json", tmp_path / "e.json.gz"
    for out in (plain, packed):
        assert runner.invoke(app, ["export", "1", "-o", str(out), "--db", str(src)]).exit_code == 0
    assert packed.read_bytes()[:2] == b"\x1f\x8b" and gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    assert runner.invoke(app, ["export", "1", "-o", str(tmp_path / "again.json.gz"), "--db", str(src)]).exit_code == 0
    assert (tmp_path / "again.json.gz").read_bytes() == packed.read_bytes()  # no timestamp inside: reproducible
    r = runner.invoke(app, ["compare", str(plain), str(packed)])
    assert r.exit_code == 0, r.stderr
    assert len(gpudissect.open(packed).latest().figures()) == len(gpudissect.open(plain).latest().figures()) > 0
    db = tmp_path / "l.sqlite"
    assert runner.invoke(app, ["import", str(packed), "--db", str(db)]).exit_code == 0
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed.read_bytes()[: len(packed.read_bytes()) // 2])
    assert "damaged or truncated gzip" in one_line_error(
        runner.invoke(app, ["import", str(cut), "--db", str(tmp_path / "x.sqlite")])
    )
