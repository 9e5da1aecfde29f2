"""Sub-commands of other modules are reachable from the main CLI."""

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.sass.disasm import find_tool

runner = CliRunner()


def test_isa_group_is_wired():
    r = runner.invoke(app, ["isa", "--help"])
    assert r.exit_code == 0 and "encoding" in r.output


@pytest.mark.skipif(find_tool("cuobjdump") is None or find_tool("nvdisasm") is None, reason="no disassembler")
@pytest.mark.sass
def test_sass_control_lists_decoded_fields_per_instruction():
    r = runner.invoke(app, ["sass", "shared_latency", "--control"])
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if line.startswith("/*")]
    assert rows and all(" S:" in line and " W:" in line for line in rows)
    assert any("LDS" in line for line in rows)


def test_sass_control_refuses_full():
    r = runner.invoke(app, ["sass", "shared_latency", "--control", "--full"])
    assert r.exit_code == 2 and "--control" in r.output


def _group_store(path, values):
    from gpudissect.models import BenchResult, Figure, RunInfo
    from gpudissect.store import Store

    st = Store(path)
    for uuid, v in values.items():
        rid = st.create_run(
            RunInfo(
                0,
                "Fake H100",
                uuid,
                132,
                50 << 20,
                1980,
                2619,
                5120,
                "d",
                "c",
                "n",
                "t",
                "sm_90a",
                "quick",
                "2026-01-01T00:00:00",
                None,
                "running",
                {"group": "g1"},
                {},
            )
        )
        st.save_bench(
            BenchResult(rid, "memory", "bandwidth", "ok", "", "s", "e", 1.0),
            [],
            [Figure("memory", "bandwidth", "mem.bw.dram_gbps", v, "GB/s", "measured", "m", (v - 2, v + 2))],
        )
        st.finish_run(rid, "ok")
    st.close()


def test_compare_gpus_flags_the_deviating_gpu(tmp_path):
    db = tmp_path / "g.sqlite"
    _group_store(db, {"GPU-a": 3000.0, "GPU-b": 3001.0, "GPU-c": 2700.0, "GPU-d": 2999.0})
    r = runner.invoke(app, ["compare", "--gpus", "g1", "--db", str(db)])
    assert r.exit_code == 1, r.output
    first = r.output.splitlines()[0]
    assert "4 GPU(s)" in first and "GPU-c" in first and "GPU-a" not in first.split("flagged")[-1]


def test_compare_gpus_quiet_group_exits_0_and_bad_use_is_one_line(tmp_path):
    db = tmp_path / "g.sqlite"
    _group_store(db, {"GPU-a": 3000.0, "GPU-b": 3001.0, "GPU-c": 2999.5})
    r = runner.invoke(app, ["compare", "--gpus", "g1", "--db", str(db)])
    assert r.exit_code == 0 and "none" in r.output.splitlines()[0]
    for args in (
        ["compare", "--gpus", "nope", "--db", str(db)],
        ["compare", "1", "--gpus", "g1", "--db", str(db)],
        ["compare", "1"],
        ["run", "--gpus", "all", "--resume", "1"],
        ["run", "--one-at-a-time"],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2 and "Traceback" not in r.output, (args, r.output)


def test_gemm_command_is_wired_and_refuses_bad_shapes():
    r = runner.invoke(app, ["gemm", "--m", "64", "--n", "100", "--k", "64"])
    assert r.exit_code == 2 and "multiple of 8" in r.output


def test_cluster_command_is_wired_and_needs_a_rank(tmp_path, monkeypatch):
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0 and "cluster" in r.output
    r = runner.invoke(app, ["cluster", "--help"])
    assert r.exit_code == 0 and all(o in r.output for o in ("--suite", "--bench", "--full", "--set", "--db", "--group"))
    for k in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(k, raising=False)
    db = tmp_path / "cluster.sqlite"
    r = runner.invoke(app, ["cluster", "--db", str(db)])  # outside torchrun/srun: one line, no store
    assert r.exit_code == 2 and "no rank found" in r.output and "Traceback" not in r.output, r.output
    assert not db.exists()
    r = runner.invoke(app, ["cluster"])
    assert r.exit_code == 2 and "--db" in r.output


def test_cluster_module_runs_alone_as_torchrun_starts_it(tmp_path):
    p = subprocess.run([sys.executable, "-m", "gpudissect.cluster", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--db" in p.stdout and "--group" in p.stdout, p.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS")}
    p = subprocess.run(
        [sys.executable, "-m", "gpudissect.cluster", "--db", str(tmp_path / "c.sqlite")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode == 2 and p.stderr.startswith("error: no rank found") and "Traceback" not in p.stderr
