"""Issue 27, the CLI under hostile use: output paths that are not plain files, terminal escapes in imported
text, absurd run ids and store paths, a read-only store, no GPU for --gpus, SIGTERM mid-write."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.models import BenchResult, Figure
from helpers import fill_store, force_terminal, has_gpu, make_run_info, one_line_error

runner = CliRunner()
BIG = str(2**64 + 5)
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "GPUDISSECT_EXTRA_SUITES"}


# ---- item 2: export -o writes through what is not a regular file ---------------------------------------
def test_export_through_a_symlink_keeps_the_link(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    real = tmp_path / "data" / "real.json"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    r = runner.invoke(app, ["export", "1", "-o", str(link), "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    assert link.is_symlink() and json.loads(real.read_text())["run"]["id"] == 1
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "data" / "new.json")
    assert runner.invoke(app, ["export", "1", "-o", str(dangling), "--db", str(db)]).exit_code == 0
    assert dangling.is_symlink() and json.loads((tmp_path / "data" / "new.json").read_text())["run"]["id"] == 1
    assert sorted(p.name for p in real.parent.iterdir()) == ["new.json", "real.json"]  # no temp file left


def test_export_dash_is_stdout(tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["export", "1", "-o", "-", "--db", str(db)])
    assert r.exit_code == 0 and json.loads(r.stdout)["run"]["id"] == 1
    assert not (tmp_path / "-").exists()


def test_export_into_a_fifo_writes_through(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = runner.invoke(app, ["export", "1", "-o", str(fifo), "--db", str(db)])
    reader.join(10)
    if reader.is_alive():  # the export never opened the FIFO: unblock the reader
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert r.exit_code == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and json.loads(got[0])["run"]["id"] == 1


def test_export_into_a_full_device_is_one_line(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    node = tmp_path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # what /dev/full is
        with open(node, "w") as fh:
            fh.write("x")
    except PermissionError:
        pytest.skip("cannot make or open a device node here")
    except OSError as e:
        assert e.errno == errno.ENOSPC
    line = one_line_error(runner.invoke(app, ["export", "1", "-o", str(node), "--db", str(db)]))
    assert "No space left on device" in line and str(node) in line
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_export_to_dev_stdout_goes_down_the_pipe(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    for target in ("/dev/stdout", "/dev/fd/1", "-"):
        p = subprocess.run(
            [sys.executable, "-m", "gpudissect", "export", "1", "-o", target, "--db", str(db)],
            capture_output=True,
            text=True,
            env=_env(),
        )
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["run"]["id"] == 1, target
    assert os.path.islink("/dev/stdout")


# ---- item 5: control characters in imported text are shown, not obeyed --------------------------------
EVIL_GPU = "EVIL\x1b]0;pwned\x07\x1b[2J\u202eGPU\r"
EVIL_NOTE = "line one\nerror: a faked line \x9b31m"


def _evil_store(db: Path) -> None:
    from gpudissect.store import Store

    s = Store(db)
    for v in (1.0, 2.0):
        rid = s.create_run(make_run_info(gpu=EVIL_GPU, started=f"2026-01-0{int(v)}T00:00:00+00:00", mode="q\x1b[1m"))
        s.save_bench(
            BenchResult(rid, "memory", "b\x1b[31m", "ok", EVIL_NOTE, "t0", "t1", 1.0),
            [],
            [Figure("memory", "b\x1b[31m", "mem.k", v, "cy\x07", "measured", EVIL_NOTE, note=EVIL_NOTE)],
        )
        s.finish_run(rid, "ok")
    s.close()


def _clean(text: str) -> None:
    for c in CONTROLS:
        assert c not in text, (c, text)
    assert not any(line.startswith("error: a faked") for line in text.splitlines())


@pytest.mark.parametrize("terminal", [False, True])
def test_terminal_escapes_are_made_visible(tmp_path, monkeypatch, terminal):
    db = tmp_path / "s.sqlite"
    _evil_store(db)
    d = ["--db", str(db)]
    if terminal:  # rich tables and wrapped text show the same escapes (cli_output)
        force_terminal(monkeypatch, 100)
    for args in (
        ["runs"],
        ["show", "mem.k"],
        ["show", "mem.*"],
        ["compare", "1", "2"],
        ["compare", "1", "2", "-t", "0"],
    ):
        r = runner.invoke(app, [*args, *d])
        assert r.exit_code in (0, 1), (args, r.stderr)
        _clean(r.stdout)
        _clean(r.stderr)
        assert "\\x1b" in r.stdout, args
    r = runner.invoke(app, ["runs", "--json", *d])  # JSON stays JSON: the escapes are json's own
    assert json.loads(r.stdout)[0]["gpu_name"] == EVIL_GPU and "\x1b" not in r.stdout
    bad = tmp_path / "x\x1b[2J\x07.json"
    r = runner.invoke(app, ["show", "k", "--from-json", str(bad)])
    one_line_error(r)
    _clean(r.stderr)


def test_list_shows_control_characters_visibly():
    from types import SimpleNamespace

    from gpudissect import listing

    b = SimpleNamespace(
        suite="memory",
        name="evil",
        key="memory/evil",
        title="title\x1b]0;pwned\x07\nerror: faked",
        paper="p\x1b[2J",
        needs_gpu=False,
        min_cc=(9, 0),
        timeout_s=1.0,
        axes={"x\x1b": "y\x9b"},
        params={},
        kernels=[],
    )
    head, rows = listing.table([b])
    for text in (str(rows), listing.footer([b]), listing.long([b], None), listing.long([b], 80)):
        _clean(text)


# ---- item 13: absurd run ids, store paths: one line, exit 2 ------------------------------------------
def test_absurd_run_ids_and_store_paths(tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    d = ["--db", str(db)]
    for args in (
        ["show", "k", BIG, *d],
        ["report", BIG, "--out", str(tmp_path / "r"), *d],
        ["export", BIG, *d],
        ["compare", BIG, "1", *d],
        ["compare", "1", BIG, *d],
        ["compare", "²", "1", *d],
        ["compare", "1", "١", *d],
        ["run", "--resume", BIG, *d],
        ["run", "--resume", str(2**63), *d],
    ):
        one_line_error(runner.invoke(app, args))
    assert not (tmp_path / "r").exists()
    assert runner.invoke(app, ["export", "1", "-o", str(tmp_path / "e.json"), *d]).exit_code == 0
    for args in (
        ["runs", "--db", "~nosuchuser-gd/x.sqlite"],
        ["import", str(tmp_path / "e.json"), "--db", "~nosuchuser-gd/x"],
    ):
        assert "nosuchuser-gd" in one_line_error(runner.invoke(app, args))
    monkeypatch.setenv("GPUDISSECT_DB", "~nosuchuser-gd/x.sqlite")
    for args in (["runs"], ["export"], ["doctor"]):
        r = runner.invoke(app, args)
        assert r.exit_code in (1, 2) and "internal error" not in r.stderr and "Traceback" not in r.stderr, (args, r)
    one_line_error(runner.invoke(app, ["report", "--out", "~nosuchuser-gd/r", *d]))
    one_line_error(runner.invoke(app, ["export", "1", "-o", "~nosuchuser-gd/e.json", *d]))


# ---- item 14: a read-only store says so; --gpus finds the GPUs before creating a store -----------------
def test_import_into_a_read_only_store_says_read_only(tmp_path):
    src = tmp_path / "src.sqlite"
    fill_store(src, (33.0,))
    exp = tmp_path / "e.json"
    assert runner.invoke(app, ["export", "1", "-o", str(exp), "--db", str(src)]).exit_code == 0
    d = tmp_path / "ro"
    d.mkdir()
    db = d / "s.sqlite"
    fill_store(db, (40.0,), first_day=5)
    before = db.read_bytes()
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
            pytest.skip("root, and chattr +i is not possible here")
        undo = ["chattr", "-i", str(db)]
    else:
        db.chmod(0o444)
        undo = ["chmod", "644", str(db)]
    try:
        line = one_line_error(runner.invoke(app, ["import", str(exp), "--db", str(db)]))
        assert "read-only" in line and "not a gpudissect store" not in line
        line = one_line_error(runner.invoke(app, ["run", "--bench", "shared_latency", "--db", str(db)]))
        assert "read-only" in line  # found before the GPU is looked for
    finally:
        subprocess.run(undo, check=True)
    assert db.read_bytes() == before


@pytest.mark.skipif(has_gpu(), reason="needs a machine without a GPU")
def test_run_gpus_without_a_gpu_creates_no_store(tmp_path):
    db = tmp_path / "new" / "s.sqlite"
    r = runner.invoke(app, ["run", "--gpus", "all", "--bench", "shared_latency", "--db", str(db)])
    one_line_error(r)
    assert not db.exists() and not db.parent.exists()


# ---- item 15: SIGTERM mid-write leaves nothing behind --------------------------------------------------
SLOW = """
import json, sys, time
from pathlib import Path

marker = Path(sys.argv[1])
real_dumps, real_write_text = json.dumps, Path.write_text


def slow_dumps(*a, **kw):
    text = real_dumps(*a, **kw)
    if kw.get("indent") == 1:  # the export's own text, written into its temporary file
        real_write_text(marker, "x")
        time.sleep(60)
    return text


def slow_write_text(self, data, *a, **kw):
    n = real_write_text(self, data, *a, **kw)
    if self.name.startswith("report."):  # the report file, written after its plots
        real_write_text(marker, "x")
        time.sleep(60)
    return n


json.dumps, Path.write_text = slow_dumps, slow_write_text
from gpudissect.cli import main

sys.argv = ["gpudissect", *sys.argv[2:]]
main()
"""


def _terminate_mid_write(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess:
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    marker = tmp_path / "marker"
    p = subprocess.Popen(
        [sys.executable, str(script), str(marker), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), p.communicate(timeout=10)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    marker.unlink()
    script.unlink()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_the_sigterm_handler_is_restored(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    before = signal.getsignal(signal.SIGTERM)
    assert runner.invoke(app, ["report", "--out", str(tmp_path / "r"), "--db", str(db)]).exit_code == 0
    assert runner.invoke(app, ["export", "1", "-o", str(tmp_path / "e.json"), "--db", str(db)]).exit_code == 0
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_during_export_and_report_leaves_nothing(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    db = tmp_path / "s.sqlite"
    fill_store(db)
    exp = work / "e.json"
    exp.write_text("old\n")
    r = _terminate_mid_write(tmp_path, ["export", "1", "-o", str(exp), "--db", str(db)])
    assert r.returncode == 143 and "Traceback" not in r.stderr, r.stderr
    assert sorted(p.name for p in work.iterdir()) == ["e.json"] and exp.read_text() == "old\n"
    out = work / "rep"
    assert runner.invoke(app, ["report", "--out", str(out), "--db", str(db)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = _terminate_mid_write(tmp_path, ["report", "--out", str(out), "--format", "html", "--db", str(db)])
    assert r.returncode == 143 and "Traceback" not in r.stderr, r.stderr
    assert sorted(p.name for p in work.iterdir()) == ["e.json", "rep"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    fresh = work / "fresh"
    r = _terminate_mid_write(tmp_path, ["report", "--out", str(fresh), "--db", str(db)])
    assert r.returncode == 143 and sorted(p.name for p in work.iterdir()) == ["e.json", "rep"]
