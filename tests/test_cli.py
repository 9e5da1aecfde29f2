import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpudissect.cli import app

runner = CliRunner()


def test_list_shows_memory_suite():
    r = runner.invoke(app, ["list"])
    assert r.exit_code == 0
    for name in ("pchase_latency", "l2_fine_pchase", "bank_conflicts", "tlb", "bandwidth"):
        assert name in r.stdout


@pytest.mark.sass
def test_sass_command_highlights_required():
    r = runner.invoke(app, ["sass", "bank_conflicts"])
    assert r.exit_code == 0, r.stdout
    assert "LDS.64" in r.stdout and "MISSING" not in r.stdout


def _cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "GPUDISSECT_EXTRA_SUITES"}
    return subprocess.run([sys.executable, "-m", "gpudissect.cli", *args], capture_output=True, text=True, env=env)


def test_bad_input_is_one_line_error():
    r = _cli("run", "--bench", "nope")
    assert r.returncode == 2 and "unknown benchmark" in r.stderr and "Traceback" not in r.stderr
    r = _cli("run", "--bench", "pchase_latency", "--set", "stride=12")
    assert r.returncode == 2 and "multiple of 8" in r.stderr


def test_run_without_gpu_says_so():
    from helpers import has_gpu

    if has_gpu():
        return
    r = _cli("run", "--bench", "shared_latency")
    assert r.returncode == 2 and ("GPU" in r.stderr or "driver" in r.stderr) and "Traceback" not in r.stderr


def test_report_export_compare_from_store(tmp_path):
    from gpudissect.models import BenchResult, Figure, Point, RunInfo, Series
    from gpudissect.store import Store

    s = Store()
    ids = []
    for v in (33.0, 40.0):
        rid = s.create_run(
            RunInfo(
                0,
                "NVIDIA H100",
                "GPU-1",
                132,
                50 << 20,
                1980,
                2619,
                5120,
                "580",
                "13.0",
                "13.0",
                "0.1.0",
                "sm_90a",
                "quick",
                "t",
                None,
                "running",
            )
        )
        s.save_bench(
            BenchResult(rid, "memory", "pchase_latency", "ok", "", "t", "t", 1.0),
            [
                Series(
                    "memory",
                    "pchase_latency",
                    "ca",
                    "footprint",
                    "bytes",
                    "latency",
                    "cycles",
                    [Point(4096, v), Point(1 << 20, 300.0)],
                    plot="logx",
                    figure="latency_vs_footprint",
                )
            ],
            [Figure("memory", "pchase_latency", "mem.latency.l1_hit_cycles", v, "cycles", "derived", "m")],
        )
        s.finish_run(rid, "ok")
        ids.append(rid)
    out = tmp_path / "rep"
    r = runner.invoke(app, ["report", "--out", str(out)])
    assert r.exit_code == 0, r.stdout
    # the plot counter is for a terminal: redirected, stderr holds only the final line (figures, plots, where),
    # as a failure there is one line
    assert r.stdout == "" and r.stderr == f"report: 1 figure, 2 plots -> {out / 'report.md'}\n"
    text = (out / "report.md").read_text()
    assert "H100" in text and "l1_hit" in text and list(out.glob("*.png"))
    r = runner.invoke(app, ["report", str(ids[0]), "--format", "html", "--out", str(out)])
    assert r.exit_code == 0 and (out / "report.html").exists()
    exp = tmp_path / "e.json"
    r = runner.invoke(app, ["export", str(ids[0]), "--out", str(exp)])
    assert r.exit_code == 0 and json.loads(exp.read_text())["figures"][0]["value"] == 33.0
    r = runner.invoke(app, ["export", "--format", "csv"])
    assert r.exit_code == 0 and "mem.latency.l1_hit_cycles" in r.stdout
    r = runner.invoke(app, ["compare", str(ids[0]), str(ids[1])])  # 33 -> 40 cycles: beyond 5%, exit 1
    assert r.exit_code == 1 and "mem.latency.l1_hit_cycles" in r.stdout
    r = runner.invoke(app, ["report", "--from-json", str(exp), "--out", str(tmp_path / "rep2")])
    assert r.exit_code == 0 and (tmp_path / "rep2" / "report.md").exists()


@pytest.mark.sass
def test_doctor_runs_without_gpu():
    from helpers import has_gpu

    r = runner.invoke(app, ["doctor"])
    assert "NVRTC" in r.stdout and "cuobjdump" in r.stdout
    if not has_gpu():  # a run needs a GPU: doctor says which part is missing and exits nonzero
        assert r.exit_code == 1 and "missing" in r.stderr and "GPU" in r.stderr


@pytest.mark.sass
def test_doctor_checks_the_store_for_real(tmp_path):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("these are my notes, not a database\n" * 50)
    r = runner.invoke(app, ["doctor", "--db", str(bad)])
    assert r.exit_code == 1, r.stdout
    line = next(x for x in r.stdout.splitlines() if "store" in x)
    assert "missing" in line and "not a gpudissect store" in r.stdout.replace("\n", " ")
    assert "store" in r.stderr
    assert bad.read_text().startswith("these are my notes")  # doctor wrote nothing into it


def test_report_plot_counter_on_a_terminal(monkeypatch):
    """On a terminal the report counts its plots on one line and clears it when done."""
    import io

    from gpudissect import cli

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    for i in (1, 2, 3):
        cli._plot_progress(i, 3)
    assert tty.getvalue() == "\r\033[Kdrawing plots 1/3\r\033[Kdrawing plots 2/3\r\033[K"
