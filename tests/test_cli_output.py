"""Issue 10, reading the output: list at 80 columns, compare for CI, show, runs --json, version, -m, completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from gpudissect.bench.registry import load_all
from gpudissect.cli import app
from helpers import fill_store, force_terminal, table_cells

runner = CliRunner()


# ---- item 8: list ------------------------------------------------------------------------------
def test_list_fits_80_columns_and_names_every_benchmark(monkeypatch):
    force_terminal(monkeypatch, 80)
    r = runner.invoke(app, ["list"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(x) for x in lines) <= 80
    rows = [table_cells(x) for x in lines]
    for b in load_all().values():  # suite and name are never cut
        assert any(c[:2] == [b.suite, b.name] for c in rows), b.key
    assert "axes" not in r.stdout.lower().split("shows")[0]  # compact: no axes or parameters


def test_list_redirected_is_not_cut_and_long_forms(monkeypatch):
    longest = max(load_all().values(), key=lambda b: len(b.title))
    for env in ({"COLUMNS": ""}, {"COLUMNS": "80"}):  # redirected: never cut, whatever $COLUMNS says
        r = runner.invoke(app, ["list"], env=env)
        assert longest.title in r.stdout
    force_terminal(monkeypatch, 80)
    r = runner.invoke(app, ["list", "pchase_latency"])
    assert r.exit_code == 0 and "--set pchase_latency.stride=" in r.stdout and "footprint" in r.stdout
    assert max(len(x) for x in r.stdout.splitlines()) <= 80
    r = runner.invoke(app, ["list", "--long"])
    assert r.exit_code == 0 and r.stdout.count("parameters:") == len(load_all())
    for x in r.stdout.splitlines():  # only a word longer than the line itself (--set x.types=a,b,...) exceeds it
        assert len(x) <= 80 or len(x.split()) == 1, x
    assert "--set wgmma_throughput.types=f16_f16,f16_f32,bf16_f32" in " ".join(r.stdout.split())  # never broken
    r = runner.invoke(app, ["list", "fake"])  # a suite name lists its benchmarks
    assert "fake/fake_ok" in r.stdout and "pchase_latency" not in r.stdout


def test_list_json():
    r = runner.invoke(app, ["list", "--json"])
    data = json.loads(r.stdout)
    assert {d["name"] for d in data} == {b.name for b in load_all().values()}
    pc = next(d for d in data if d["name"] == "pchase_latency")
    assert "stride" in pc["params"] and pc["kernels"] and pc["axes"]


# ---- item 9: compare ---------------------------------------------------------------------------
def test_compare_summary_threshold_only_changed_and_exit_code(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db, (33.0, 34.0), extra_keys_in_first=40)  # +3.0% on one figure, 40 keys only in A
    d = ["--db", str(db), "--format", "md"]  # Markdown: what a CI job keeps (the default text: test_cli_tty)
    r = runner.invoke(app, ["compare", "1", "2", *d], env={"COLUMNS": "40"})
    assert r.exit_code == 0, r.stderr  # 3% is within the default 5%
    out = r.stdout
    head = out.split("## ")[0]
    assert "figures in both runs: 5" in head and "changed beyond the threshold: **0**" in head
    assert "only in A: 40" in head
    assert "| memory/tlb | 40 |" in out and out.count("mem.extra") <= 3  # one-sided keys grouped, not 40 rows
    for line in out.splitlines():  # a Markdown table row stays one line whatever the width
        if line.startswith("|"):
            assert line.endswith("|") and line.count(" | ") >= 2
    r = runner.invoke(app, ["compare", "1", "2", "--threshold", "2", *d])
    assert r.exit_code == 1 and "changed beyond the threshold: **1**" in r.stdout
    assert r.stdout.index("## Largest changes") < r.stdout.index("## Figures in both runs")
    r = runner.invoke(app, ["compare", "1", "2", "--threshold", "2%", "--only-changed", *d])
    assert r.exit_code == 1 and "mem.latency.l2_hit_cycles" not in r.stdout and "Only in A" not in r.stdout
    assert "mem.latency.l1_hit_cycles" in r.stdout
    r = runner.invoke(app, ["compare", "1", "2", "--threshold", "2", "--db", str(db), "--format", "json"])
    data = json.loads(r.stdout)
    assert r.exit_code == 1 and data["summary"]["changed"] == 1 and data["summary"]["only_in_a"] == 40
    assert data["largest_changes"][0]["key"] == "mem.latency.l1_hit_cycles"
    assert abs(data["largest_changes"][0]["rel_change"] - 1 / 33) < 1e-9


def test_compare_export_against_run(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    exp = tmp_path / "a.json"
    runner.invoke(app, ["export", "1", "-o", str(exp), "--db", str(db)])
    r = runner.invoke(app, ["compare", str(exp), "1", "--db", str(db), "--format", "md"])
    assert r.exit_code == 0 and "changed beyond the threshold: **0**" in r.stdout and "a.json" in r.stdout


# ---- item 10: show, runs --json ----------------------------------------------------------------
def test_show_one_figure_with_everything(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    r = runner.invoke(app, ["show", "mem.latency.l1_hit_cycles", "1", "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert out.startswith("mem.latency.l1_hit_cycles = 33 cycles")
    for part in (
        "32.5 – 33.5",
        "median of the first plateau",
        "memory/pchase_latency",
        "1755 MHz",
        "median 1980 MHz",
        "sw_power_cap",
        "H800: 32 (000, Table III; ratio 1.03)",
        "run:",
        "2026-01-01",
    ):
        assert part in out, part
    r = runner.invoke(app, ["show", "mem.latency.l1_hit_cycles", "--json", "--db", str(db)])
    d = json.loads(r.stdout)
    assert d["value"] == 40.0 and d["run"]["id"] == 2 and d["spread"] == [39.5, 40.5]
    r = runner.invoke(app, ["show", "mem.latency.*", "--json", "--db", str(db)])
    assert [x["key"] for x in json.loads(r.stdout)] == ["mem.latency.l1_hit_cycles", "mem.latency.l2_hit_cycles"]
    r = runner.invoke(app, ["show", "mem.broken_cycles", "--db", str(db)])
    assert "FAILED: no number recorded" in r.stdout and "n/a" not in r.stdout.split("\n")[0]
    r = runner.invoke(app, ["show", "mem.latncy.l1_hit_cycles", "--db", str(db)])
    assert r.exit_code == 2 and "nearest: mem.latency.l1_hit_cycles" in r.stderr


def test_runs_json(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    r = runner.invoke(app, ["runs", "--json", "--db", str(db)])
    data = json.loads(r.stdout)
    assert (
        [x["id"] for x in data] == [1, 2] and data[0]["benchmarks_ok"] == 1 and data[0]["gpu_name"].startswith("NVIDIA")
    )


# ---- item 11: --version, python -m gpudissect, completion ---------------------------------------
def test_version_module_and_completion(monkeypatch):
    import typer.completion

    from gpudissect import __version__

    # typer finds the shell by walking up the process tree (shellingham), which a detached pytest may not have
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "bash")

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"gpudissect {__version__}"
    env = {k: v for k, v in os.environ.items() if k != "GPUDISSECT_EXTRA_SUITES"}
    p = subprocess.run([sys.executable, "-m", "gpudissect", "--version"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.strip() == f"gpudissect {__version__}"
    r = runner.invoke(app, ["--help"])
    assert "--install-completion" in r.stdout and "--show-completion" in r.stdout
    r = runner.invoke(app, ["--show-completion", "bash"])
    assert r.exit_code == 0 and "complete" in r.stdout
