"""`export --format accelsim`: a GPGPU-Sim config fragment read back the way GPGPU-Sim's option parser reads a
config file, its values traced to the run's figures, nothing invented, nothing from the run outside a comment."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.exportio import from_export
from gpudissect.report.accelsim import HEADER, config_text, parse

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "results" / "h100-sxm5-80gb" / "runs" / "quick-refactor-a" / "export.json.gz"
runner = CliRunner()


@pytest.fixture(scope="module")
def h100():
    return from_export(RUN)


def test_the_committed_h100_run_as_a_config(h100):
    info, _, _, figures = h100
    text = config_text(info, figures)
    opts = parse(text)
    figs = {f.key: float(f.value) for f in figures if f.check == "ok" and isinstance(f.value, int | float)}
    assert opts["gpgpu_l1_latency"] == str(round(figs["mem.latency.l1_hit_cycles"]))
    assert opts["gpgpu_smem_latency"] == str(round(figs["mem.latency.shared_cycles"]))
    l2_minus_l1 = figs["mem.latency.l2_hit_cycles"] - figs["mem.latency.l1_hit_cycles"]
    assert opts["gpgpu_l2_rop_latency"] == str(round(l2_minus_l1))
    dram_minus_l2 = figs["mem.latency.dram_cycles"] - figs["mem.latency.l2_hit_cycles"]
    assert opts["dram_latency"] == str(round(dram_minus_l2))
    assert opts["gpgpu_n_clusters"] == "132" and opts["gpgpu_shader_core_pipeline"] == "2048:32"
    assert opts["gpgpu_compute_capability_major"] == "9"
    assert "gpgpu_clock_domains" not in opts and "-gpgpu_clock_domains: the interconnect" in text  # listed
    for line in text.splitlines():  # every option says where it came from
        if line and not line.startswith("#"):
            assert "#" in line, line


def test_a_run_without_latencies_lists_them_and_a_hostile_name_stays_in_its_comment(h100):
    from dataclasses import replace

    info, _, _, figures = h100
    evil = replace(info, gpu_name="x\n-gpgpu_n_clusters 1\n")
    text = config_text(evil, [f for f in figures if not f.key.startswith("mem.latency.")])
    opts = parse(text)
    assert opts["gpgpu_n_clusters"] == "132"
    assert "gpgpu_l1_latency" not in opts and "-gpgpu_l1_latency: its figures are not in this run" in text


def test_the_parser_refuses_what_gpgpusim_would(h100):
    with pytest.raises(ValueError):
        parse("-a 1\n-a 2\n")
    with pytest.raises(ValueError):
        parse("-a\n")


def test_export_accelsim_writes_dir_and_never_replaces_a_users_config(tmp_path):
    db = tmp_path / "s.sqlite"
    assert runner.invoke(app, ["import", str(RUN), "--db", str(db)]).exit_code == 0
    out = tmp_path / "sim"
    r = runner.invoke(app, ["export", "--format", "accelsim", "-o", str(out), "--db", str(db)])
    assert r.exit_code == 0, r.stderr
    cfg = out / "gpgpusim.config"
    assert cfg.read_text().startswith(HEADER) and "gpgpu_l1_latency" in parse(cfg.read_text())
    assert runner.invoke(app, ["export", "--format", "accelsim", "-o", str(out), "--db", str(db)]).exit_code == 0
    cfg.write_text("-gpgpu_n_clusters 80\n")  # the user's own config
    r = runner.invoke(app, ["export", "--format", "accelsim", "-o", str(out), "--db", str(db)])
    assert r.exit_code == 2 and "not written by gpudissect" in r.stderr
    assert cfg.read_text() == "-gpgpu_n_clusters 80\n"
    r = runner.invoke(app, ["export", "--format", "accelsim", "--db", str(db)])
    assert r.exit_code == 2 and "-o DIR" in r.stderr
