"""Multi-GPU mode without GPUs: GPU selection, the per-GPU orchestration with a fake child, the
deviation analysis, export import, rank discovery, and the cluster gather over gloo (torch only)."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from gpudissect import multigpu
from gpudissect.errors import GpuDissectError
from gpudissect.models import BenchResult, Figure, RunInfo
from gpudissect.store import Store

GPUS = [{"index": i, "uuid": f"GPU-{c}", "name": "Fake H100"} for i, c in enumerate("abcd")]

# A stand-in for the per-GPU child: writes one run into the store the way dissect_local would,
# with the GPU it was given through CUDA_VISIBLE_DEVICES; GPU-c has a slow "DRAM".
FAKE_CHILD = r"""
import json, os, sys
from gpudissect.models import BenchResult, Figure, RunInfo
from gpudissect.store import Store
spec = json.load(open(sys.argv[1]))
uuid = os.environ["CUDA_VISIBLE_DEVICES"]
if uuid == "GPU-x":
    print("error: no usable GPU"); sys.exit(2)
assert os.environ["NCCL_NVLS_ENABLE"] == "0" and os.environ["NVSHMEM_DISABLE_NVLS"] == "1"
st = Store(spec["db"])
sel = {"suites": spec["suites"], "group": spec["group"], **spec["tags"]}
rid = st.create_run(RunInfo(0, "Fake H100", uuid, 132, 50 << 20, 1980, 2619, 5120, "d", "c", "n", "t", "sm_90a",
                            spec["mode"], "2026-01-01T00:00:00", None, "running", sel, {"group": spec["group"]}))
bw = 3000.0 * (0.9 if uuid == "GPU-c" else 1.0) + {"GPU-a": 3, "GPU-b": -2, "GPU-c": 0, "GPU-d": 1}[uuid]
figs = [Figure("memory", "dram", "mem.bw.dram_gbps", bw, "GB/s", "measured", "fake", (bw - 5, bw + 5)),
        Figure("memory", "dram", "mem.latency.l2_hit_cycles", 262.0, "cycles", "measured", "fake", (261.0, 263.0))]
st.save_bench(BenchResult(rid, "memory", "dram", "ok", "", "s", "e", 1.0), [], figs)
st.finish_run(rid, "ok")
print(f"run {rid}")
"""


def fake_cmd(spec: Path) -> list[str]:
    return [sys.executable, "-c", FAKE_CHILD, str(spec)]


def test_parse_gpus():
    assert [g["index"] for g in multigpu.parse_gpus("all", GPUS)] == [0, 1, 2, 3]
    assert [g["uuid"] for g in multigpu.parse_gpus("2, 0", GPUS)] == ["GPU-c", "GPU-a"]
    for bad in ("0,9", "x", "1,1", ""):
        with pytest.raises(GpuDissectError):
            multigpu.parse_gpus(bad, GPUS)
    with pytest.raises(GpuDissectError):
        multigpu.parse_gpus("all", [])


def test_run_gpus_with_fake_children_and_compare(tmp_path):
    db = tmp_path / "fleet.sqlite"
    lines: list[str] = []
    group, outs = multigpu.run_gpus(
        "all", ["memory"], None, True, {}, db, gpus=GPUS, child_cmd=fake_cmd, log=lines.append
    )
    assert [o.returncode for o in outs] == [0, 0, 0, 0], [o.log_tail for o in outs]
    st = Store(db)
    runs = multigpu.group_runs(st, group)
    assert sorted(r.gpu_uuid for r in runs) == ["GPU-a", "GPU-b", "GPU-c", "GPU-d"]
    assert all(r.selection["gpus"] == [0, 1, 2, 3] for r in runs)
    labels, rows = multigpu.compare_group(st, group)
    st.close()
    by_key = {r.key: r for r in rows}
    dram = by_key["mem.bw.dram_gbps"]
    assert dram.flagged == [lab for lab in labels if "GPU-c" in lab]  # the slow one, and only it
    assert by_key["mem.latency.l2_hit_cycles"].flagged == []
    text = multigpu.compare_gpus(group, db)
    assert "GPU-c" in text.splitlines()[0] and "(-10.0%) !" in text
    with pytest.raises(GpuDissectError, match="no runs of group"):
        multigpu.compare_gpus("nope", db)


def test_run_gpus_serial_reports_a_failing_child(tmp_path):
    gpus = GPUS[:2] + [{"index": 2, "uuid": "GPU-x"}]
    _, outs = multigpu.run_gpus(
        "all",
        None,
        None,
        True,
        {},
        tmp_path / "s.sqlite",
        parallel=False,
        gpus=gpus,
        child_cmd=fake_cmd,
        log=lambda s: None,
    )
    assert [o.returncode for o in outs] == [0, 0, 2]
    assert "no usable GPU" in outs[2].log_tail


def _per(vals, half=1.0):
    return {f"g{i}": (v, (v - half, v + half)) for i, v in enumerate(vals)}


def test_deviations_against_spread_not_a_fixed_percentage():
    # 0.3% off, but the repetitions are tight (+-0.1): flagged
    d = multigpu.deviations("k", "GB/s", _per([1000, 1000.2, 999.9, 1003, 1000.1], half=0.1))
    assert d.flagged == ["g3"]
    # 5% off, but each GPU's own repetitions spread +-80: not flagged
    d = multigpu.deviations("k", "GB/s", _per([1000, 1010, 990, 1050], half=80))
    assert d.flagged == []
    # min_rel hides small deviations on request
    assert multigpu.deviations("k", "", _per([1000, 1000.2, 999.9, 1003], half=0.1), min_rel=0.01).flagged == []


def test_deviations_edge_cases():
    two = multigpu.deviations("k", "", _per([100, 120], half=1))
    assert two.flagged == ["g0", "g1"] and "two GPUs" in two.note
    assert multigpu.deviations("k", "", _per([100, 100.5], half=1)).flagged == []
    miss = multigpu.deviations("k", "", {"a": (1.0, None), "b": (None, None), "c": (1.0, None)})
    assert miss.flagged == ["b"]
    txt = multigpu.deviations("k", "", {"a": ("gen5", None), "b": ("gen5", None), "c": ("gen4", None)})
    assert txt.flagged == ["c"] and txt.median == "gen5"
    # two GPUs whose text differs (a PCIe generation, say): no majority, so both are flagged, as a
    # numeric difference between two GPUs is
    tie = multigpu.deviations("k", "", {"a": ("sw_power_cap", None), "b": ("none", None)})
    assert tie.flagged == ["a", "b"] and tie.median == "no majority"
    diag = multigpu.deviations(
        "tc.x.zero_throttle_reasons", "", {"a": ("sw_power_cap", None), "b": ("none", None), "c": (None, None)}
    )
    assert diag.flagged == ["c"] and "not flagged" in diag.note  # shown, never flagged; a missing value still is
    tie3 = multigpu.deviations("k", "", {"a": ("x", None), "b": ("y", None), "c": ("x", None), "d": ("y", None)})
    assert tie3.flagged == ["a", "b", "c", "d"]
    same = multigpu.deviations("k", "", {"a": (5.0, None), "b": (5.0, None), "c": (5.0, None)})
    assert same.flagged == [] and same.rel_dev == {"a": 0.0, "b": 0.0, "c": 0.0}


def _export(tmp_path, uuid="GPU-z"):
    st = Store(tmp_path / f"{uuid}.sqlite")
    rid = st.create_run(
        RunInfo(
            0,
            "Fake",
            uuid,
            1,
            1,
            1,
            1,
            1,
            "d",
            "c",
            "n",
            "t",
            "sm_90a",
            "quick",
            "2026-01-01T00:00:00",
            None,
            "running",
            {"group": "g"},
            {},
        )
    )
    st.save_bench(
        BenchResult(rid, "link", "host_device_ce", "ok", "", "s", "e", 1.0),
        [],
        [Figure("link", "host_device_ce", "link.h2d_pinned_gbps", 52.5, "GB/s", "measured", "m", (52.0, 53.0))],
    )
    st.finish_run(rid, "ok")
    data = st.export(rid)
    st.close()
    return json.loads(json.dumps(data))  # as it travels between ranks


def test_import_export_roundtrip(tmp_path):
    st = Store(tmp_path / "one.sqlite")
    rid = multigpu.import_export(st, _export(tmp_path), {"host": "n1", "rank": 3})
    info = st.run(rid)
    assert info.gpu_uuid == "GPU-z" and info.selection["host"] == "n1" and info.status == "ok"
    f = st.figures(rid)[0]
    assert f.key == "link.h2d_pinned_gbps" and f.value == 52.5 and f.spread == (52.0, 53.0)
    assert multigpu.gpu_label(info) == "n1:3 GPU-z"
    with pytest.raises(GpuDissectError):
        multigpu.import_export(st, {"format": "x"})
    st.close()


def test_rank_env_and_local_gpu(monkeypatch):
    for k in (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "SLURM_PROCID",
        "SLURM_NTASKS",
        "SLURM_LOCALID",
        "CUDA_VISIBLE_DEVICES",
    ):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(GpuDissectError):
        multigpu.rank_env()
    monkeypatch.setenv("SLURM_PROCID", "5")
    monkeypatch.setenv("SLURM_NTASKS", "16")
    monkeypatch.setenv("SLURM_LOCALID", "1")
    assert multigpu.rank_env() == (5, 16, 1)
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert multigpu.rank_env() == (2, 4, 2)  # torchrun's names win
    multigpu.pin_local_gpu(2)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    multigpu.pin_local_gpu(1)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"
    multigpu.pin_local_gpu(0)  # one GPU already given by the launcher: kept
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"


# ---- the cluster path: 2 ranks on CPU, gloo, a fake dissection --------------------------------
def _cluster_rank(rank, port, db, tmp):
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank)
    )

    def dissect(mine, group, tags):
        st = Store(mine)
        rid = st.create_run(
            RunInfo(
                0,
                "Fake",
                f"GPU-r{rank}",
                1,
                1,
                1,
                1,
                1,
                "d",
                "c",
                "n",
                "t",
                "sm_90a",
                "quick",
                "2026-01-01T00:00:00",
                None,
                "running",
                {"group": group, **tags},
                {},
            )
        )
        st.save_bench(
            BenchResult(rid, "memory", "dram", "ok", "", "s", "e", 1.0),
            [],
            [Figure("memory", "dram", "mem.bw.dram_gbps", 3000.0 + rank, "GB/s", "measured", "fake")],
        )
        st.finish_run(rid, "ok")
        st.close()
        return rid

    n = multigpu.cluster_rank(dissect, db, "job42")
    Path(tmp, f"rank{rank}.done").write_text(str(n))


def test_cluster_gather_over_gloo(tmp_path):
    pytest.importorskip("torch")
    import multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = tmp_path / "cluster.sqlite"
    ctx = mp.get_context("spawn")
    ps = [ctx.Process(target=_cluster_rank, args=(r, port, str(db), str(tmp_path))) for r in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(120)
    assert [p.exitcode for p in ps] == [0, 0]
    assert (tmp_path / "rank0.done").read_text() == "2" and (tmp_path / "rank1.done").read_text() == "None"
    st = Store(db)
    runs = multigpu.group_runs(st, "job42")
    assert sorted(r.gpu_uuid for r in runs) == ["GPU-r0", "GPU-r1"]
    assert sorted(r.selection["rank"] for r in runs) == [0, 1]
    st.close()
