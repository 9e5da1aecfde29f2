"""Issue 27, the report under hostile use: --out folders that are not ours, a disk that fills mid-report,
raw HTML and links from imported run data, absurd figure names, a broken MPLBACKEND."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.models import BenchResult, Figure, Point, Series
from helpers import fill_store, make_run_info, one_line_error

runner = CliRunner()
MANIFEST = ".gpudissect-report.json"


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def _report(out: Path, db: Path, *more: str):
    return runner.invoke(app, ["report", "--out", str(out), "--db", str(db), *more])


# ---- item 1: a report folder must be recognisably ours -----------------------------------------------
def test_a_folder_of_pictures_is_not_a_report(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    pics = tmp_path / "pictures"
    pics.mkdir()
    (pics / "holiday.png").write_bytes(b"\x89PNG my holiday")
    (pics / "report.md").write_text("my own notes\n")
    before = _snapshot(pics)
    line = one_line_error(_report(pics, db))
    assert "not a gpudissect report" in line and str(pics) in line
    assert _snapshot(pics) == before and sorted(p.name for p in tmp_path.iterdir()) == ["pictures", "s.sqlite"]


def test_report_writes_a_manifest_and_replaces_only_what_it_lists(tmp_path):
    from gpudissect import __version__

    db = tmp_path / "s.sqlite"
    fill_store(db)
    out = tmp_path / "rep"
    assert _report(out, db).exit_code == 0
    manifest = json.loads((out / MANIFEST).read_text())
    ours = sorted(p.name for p in out.iterdir() if p.name != MANIFEST)
    assert sorted(manifest["files"]) == ours and "report.md" in ours and any(n.endswith(".png") for n in ours)
    assert manifest["tool_version"] == __version__
    (out / "notes.txt").write_text("mine\n")  # the user adds a file: it is kept
    r = _report(out, db, "--format", "html")
    assert r.exit_code == 0, r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert "notes.txt" in names and "report.html" in names and "report.md" not in names
    assert (out / "notes.txt").read_text() == "mine\n"
    assert sorted(json.loads((out / MANIFEST).read_text())["files"]) == sorted(
        n for n in names if n not in ("notes.txt", MANIFEST)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "s.sqlite"]  # no staging left
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _report(empty, db).exit_code == 0 and (empty / "report.md").exists()


def test_a_tampered_manifest_deletes_nothing_outside(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    out = tmp_path / "rep"
    assert _report(out, db).exit_code == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    m = json.loads((out / MANIFEST).read_text())
    m["files"] += ["../victim.txt", str(victim), "..", ""]
    (out / MANIFEST).write_text(json.dumps(m))
    r = _report(out, db)
    assert r.exit_code == 2 or r.exit_code == 0, r.stderr
    assert victim.read_text() == "keep me\n"
    (out / MANIFEST).write_text("{not json")
    assert "manifest" in one_line_error(_report(out, db))
    assert victim.read_text() == "keep me\n" and (out / "report.md").exists()


# ---- item 3: a report that cannot be written whole is not written at all -----------------------------
def test_disk_full_mid_report_keeps_the_old_report(tmp_path, monkeypatch):
    from matplotlib.figure import Figure as MplFigure

    db = tmp_path / "s.sqlite"
    fill_store(db)
    out = tmp_path / "rep"
    assert _report(out, db).exit_code == 0
    before = _snapshot(out)
    calls = []

    def full(self, *a, **kw):
        calls.append(1)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(MplFigure, "savefig", full)
    line = one_line_error(_report(out, db, "--format", "html"))
    assert calls and "No space left on device" in line and str(out) in line
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "s.sqlite"]
    assert sorted(p.name for p in out.iterdir()) == sorted(before)  # no staging folder inside either
    monkeypatch.undo()

    real_write_text = Path.write_text

    def fail_report_file(self, *a, **kw):
        if self.name.startswith("report."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write_text(self, *a, **kw)

    monkeypatch.setattr(Path, "write_text", fail_report_file)
    new = tmp_path / "new"
    one_line_error(_report(new, db))
    assert not new.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["rep", "s.sqlite"]


# ---- item 4: run data is text in Markdown, never HTML or links ---------------------------------------
EVIL = {
    "gpu": "<script>alert(1)</script> [gpu](javascript:alert(2))",
    "bench": "b<svg onload=alert(3)>",
    "note": "![i](javascript:alert(4)) & <img src=x onerror=alert(5)> a|b",
    "method": "[m]: javascript:alert(6) \\[esc](javascript:alert(7))",
    "unit": "<b>u|</b>",
}


def _evil_store(db: Path) -> None:
    from gpudissect.store import Store

    s = Store(db)
    rid = s.create_run(make_run_info(gpu=EVIL["gpu"]))
    pts = [Point(float(2**k), 30.0 + k) for k in range(10, 14)]
    s.save_bench(
        BenchResult(rid, "memory", EVIL["bench"], "crashed", EVIL["note"], "t0", "t1", 1.0),
        [Series("memory", EVIL["bench"], "<i>s</i>", "x", "", "y", "cycles", pts, plot="line", figure="f[1](x)")],
        [
            Figure(
                "memory", EVIL["bench"], "mem.k<u>", 1.0, EVIL["unit"], "measured", EVIL["method"], note=EVIL["note"]
            ),
            Figure("memory", EVIL["bench"], "mem.failed", "n/a", "", "measured", EVIL["method"], check="failed"),
        ],
    )
    s.finish_run(rid, "ok")
    s.close()


def test_markdown_report_shows_run_data_as_text(tmp_path):
    markdown_it = pytest.importorskip("markdown_it")
    db = tmp_path / "s.sqlite"
    _evil_store(db)
    out = tmp_path / "rep"
    r = _report(out, db)
    assert r.exit_code == 0, r.stderr
    text = (out / "report.md").read_text()
    md = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table")
    md.validateLink = lambda url: True  # render every link, as a permissive viewer would
    page = md.render(text)
    for bad in ("<script", "<svg", '<img src="x"', "<img src=x", "<b>", "<i>", "<u>"):
        assert bad not in page, bad
    assert 'href="javascript' not in page and 'src="javascript' not in page
    assert re.findall(r'<img src="([^"]+)"', page) and all(
        s.endswith(".png") and (out / s).exists() for s in re.findall(r'<img src="([^"]+)"', page)
    )  # our own images stay images
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, as text
    rows = [line for line in text.splitlines() if line.startswith("| mem.k")]
    assert rows and rows[0].count(" | ") == 5  # six columns: a | in the unit does not add one
    assert "a|b" in page and "&lt;img src=x onerror=alert(5)&gt;" in page  # the note, folded with the method, as text


def test_html_report_stays_escaped(tmp_path):
    db = tmp_path / "s.sqlite"
    _evil_store(db)
    out = tmp_path / "rep"
    assert _report(out, db, "--format", "html").exit_code == 0
    page = (out / "report.html").read_text()
    assert "<script>alert" not in page and "<svg onload" not in page and "&lt;script&gt;" in page


# ---- item 13: an absurd figure name still gets its plot ----------------------------------------------
def test_a_400_character_figure_name_gets_a_plot(tmp_path):
    from gpudissect.store import Store

    db = tmp_path / "s.sqlite"
    s = Store(db)
    rid = s.create_run(make_run_info())
    pts = [Point(float(k), float(k)) for k in range(5)]
    long_a, long_b = "f" * 400, "f" * 399 + "g"
    s.save_bench(
        BenchResult(rid, "memory", "b" * 300, "ok", "", "t0", "t1", 1.0),
        [
            Series("memory", "b" * 300, "s", "x", "", "y", "", pts, figure=long_a),
            Series("memory", "b" * 300, "s", "x", "", "y", "", pts, figure=long_b),
        ],
        [],
    )
    s.close()
    out = tmp_path / "rep"
    r = _report(out, db)
    # no warning (a plot skipped): stderr is the report's final line alone
    assert r.exit_code == 0 and r.stderr == f"report: 0 figures, 2 plots -> {out / 'report.md'}\n", r.stderr
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == 2 and all(len(p.name) <= 128 for p in pngs)
    text = (out / "report.md").read_text()
    assert all(p.name in text for p in pngs)


def test_an_unknown_mplbackend_does_not_stop_the_report(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    out = tmp_path / "rep"
    env = dict(os.environ, MPLBACKEND="nosuch", GPUDISSECT_DB=str(db))
    env.pop("GPUDISSECT_EXTRA_SUITES", None)
    p = subprocess.run(
        [sys.executable, "-m", "gpudissect", "report", "--out", str(out)], capture_output=True, text=True, env=env
    )
    assert p.returncode == 0, p.stderr
    assert list(out.glob("*.png")) and "Traceback" not in p.stderr
