"""The generated tables of the README and the docs (dev/make_results.py): measured values, never typed."""

import json
import re

import dev.make_results as mr


def test_targets_table_says_met_only_for_measured_values_at_the_goal():
    table = mr.targets_table(
        {
            "mem.bw.dram.copy_vs_d2d": 0.9981,
            "tma.bulk_16k_vs_stream": 0.95,
            "tma.tensor2d_vs_stream": "FAILED",
            "mem.bw.l1_bytes_per_clk_sm": 127.0,
        }
    )
    rows = {line.split("`")[1]: line for line in table.splitlines() if line.count("`") >= 2}
    assert rows["mem.bw.dram.copy_vs_d2d"].endswith("| 0.998 | >= 1 | no |")
    assert rows["tma.bulk_16k_vs_stream"].endswith("| yes |")
    assert rows["tma.tensor2d_vs_stream"].endswith("| FAILED | >= 0.95 | no |")
    assert rows["mem.bw.shared_bytes_per_clk_sm"].endswith("| not measured | >= 124.16 | no |")
    assert rows["mem.bw.l1_bytes_per_clk_sm"].endswith("| yes |")
    assert len(rows) == len(mr.TARGETS)


def test_a_full_run_wins_over_a_quick_one_per_benchmark_then_the_newer():
    index = [
        {
            "label": "full-old",
            "mode": "full",
            "started": "2026-01-01",
            "benchmarks": {"a": "ok", "b": "ok", "c": "failed"},
        },
        {
            "label": "quick-new",
            "mode": "quick",
            "started": "2026-02-01",
            "benchmarks": {"a": "ok", "b": "ok", "c": "ok", "d": "ok"},
        },
        {"label": "full-new", "mode": "full", "started": "2026-03-01", "benchmarks": {"b": "ok", "d": "failed"}},
    ]
    src = mr.choose_sources(index)
    assert src == {"a": "full-old", "b": "full-new", "c": "quick-new", "d": "quick-new"}


def test_headline_keys_are_read_per_suite_in_order(tmp_path):
    (tmp_path / "zeta.txt").write_text("# comment\n# ref_gpu: V100\nz.one\n\nz.two\n")
    (tmp_path / "memory.txt").write_text("m.one\n")
    keys = mr.headline_keys(tmp_path)
    assert list(keys) == ["memory", "zeta"]
    assert keys["zeta"] == ("V100", ["z.one", "z.two"]) and keys["memory"] == ("H800", ["m.one"])


def test_targets_table_shows_a_figure_as_the_headline_table_does():
    from gpudissect.report.tables import fmt_value

    table = mr.targets_table({"mem.bw.shared_bytes_per_clk_sm": 127.6})
    row = next(line for line in table.splitlines() if "mem.bw.shared_bytes_per_clk_sm" in line)
    assert f"| {fmt_value(127.6)} |" in row


def test_significant_trailing_zeros_stay():
    from gpudissect.report.tables import fmt_number

    assert fmt_number(1.004) == "1.00" and fmt_number(0.9902) == "0.990" and fmt_number(127.81) == "128"


def test_quick_times_sum_the_newest_quick_run_of_each_benchmark(tmp_path, monkeypatch):
    from types import SimpleNamespace as NS

    exports = {
        "old": [NS(suite="memory", bench="a", seconds=10.0), NS(suite="memory", bench="b", seconds=5.0)],
        "new": [NS(suite="memory", bench="a", seconds=20.0)],
        "full": [NS(suite="memory", bench="a", seconds=99.0)],
    }
    monkeypatch.setattr(mr, "from_export", lambda p: (None, exports[p.parent.name], [], []))
    index = [
        {"label": "old", "mode": "quick", "started": "1"},
        {"label": "new", "mode": "quick", "started": "2"},
        {"label": "full", "mode": "full", "started": "3"},
    ]
    line = mr.quick_times(tmp_path, index)
    assert "memory 25 s (new, old)" in line and "(2 benchmarks)" in line


def test_a_run_with_parameter_overrides_never_supplies_the_summary():
    index = [
        {"label": "default", "mode": "full", "started": "2026-01-01", "benchmarks": {"a": "ok", "b": "ok"}},
        {
            "label": "variant",
            "mode": "full",
            "started": "2026-02-01",
            "benchmarks": {"a": "ok", "b": "ok"},
            "overrides": {"a.rung": "6"},
        },
        {
            "label": "global",
            "mode": "full",
            "started": "2026-03-01",
            "benchmarks": {"b": "ok"},
            "overrides": {"seed": "3"},
        },
    ]
    assert mr.choose_sources(index) == {"a": "default", "b": "variant"}


def test_committed_exports_are_compressed_losslessly(tmp_path):
    import gzip

    run = tmp_path / "runs" / "old"
    run.mkdir(parents=True)
    text = '{"format": "gpudissect-export", "run": {}}\n'
    (run / "export.json").write_text(text)
    assert mr.export_file(run) == run / "export.json"
    mr.compress_exports(tmp_path)
    assert not (run / "export.json").exists() and mr.export_file(run) == run / "export.json.gz"
    assert (
        gzip.decompress((run / "export.json.gz").read_bytes()).decode() == text == mr.read_text(run / "export.json.gz")
    )


def _group_export(tmp_path, uuid, value, group="gfleet"):
    import json

    from gpudissect.models import BenchResult, Figure, RunInfo
    from gpudissect.store import Store

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
            {"group": group},
            {},
        )
    )
    st.save_bench(
        BenchResult(rid, "memory", "bandwidth", "ok", "", "s", "e", 1.0),
        [],
        [Figure("memory", "bandwidth", "mem.bw.dram_gbps", value, "GB/s", "measured", "m", (value - 1, value + 1))],
    )
    st.finish_run(rid, "ok")
    data = st.export(rid)
    st.close()
    return json.dumps(data)


def test_fleet_tables_are_recomputed_from_committed_exports(tmp_path):
    for label, uuid, v in (("gpu0", "GPU-aaaa", 4000.0), ("gpu1", "GPU-bbbb", 3000.0), ("solo", "GPU-cccc", 1.0)):
        (tmp_path / "runs" / label).mkdir(parents=True)
        (tmp_path / "runs" / label / "export.json").write_text(
            _group_export(tmp_path, uuid, v, "gfleet" if label != "solo" else "alone")
        )
    (tmp_path / "fleet-stale.md").write_text("from a group no longer committed")
    index = [
        {"label": "gpu0", "group": "gfleet"},
        {"label": "gpu1", "group": "gfleet"},
        {"label": "solo", "group": "alone"},
    ]
    lines = mr.fleet_tables(tmp_path, index)
    assert set(lines) == {"gfleet"}  # a group of one run has nothing to compare
    text = (tmp_path / "fleet-gfleet.md").read_text()
    assert "Runs gpu0, gpu1" in text and "GPU-aaaa" in text and "GPU-bbbb" in text
    assert "flagged" in lines["gfleet"] and "none" not in lines["gfleet"]  # 4000 against 3000: both flagged
    assert not (tmp_path / "fleet-stale.md").exists() and not (tmp_path / "fleet-alone.md").exists()


def test_readme_blocks_are_placed_or_refused():
    import pytest

    text = "a <!-- headline:x:start -->\nold<!-- headline:x:end --> b"
    assert mr._place(text, "headline:x", "new\n") == "a <!-- headline:x:start -->\nnew\n<!-- headline:x:end --> b"
    with pytest.raises(SystemExit, match="headline:y"):
        mr._place(text, "headline:y", "new\n")
    with pytest.raises(SystemExit, match="docs/x.md has no"):
        mr._place(text, "headline:y", "new\n", "docs/x.md")


def test_run_times_sum_the_newest_run_of_each_benchmark_per_machine_and_mode(tmp_path, monkeypatch):
    from types import SimpleNamespace as NS

    exports = {
        "q-old": [NS(suite="memory", bench="a", seconds=10.0), NS(suite="link", bench="b", seconds=5.0)],
        "q-new": [NS(suite="memory", bench="a", seconds=20.0)],
        "full": [NS(suite="memory", bench="a", seconds=99.0), NS(suite="memory", bench="c", seconds=None)],
    }
    monkeypatch.setattr(mr, "from_export", lambda p: (None, exports[p.parent.name], [], []))
    monkeypatch.setattr(mr, "ROOT", tmp_path)
    machine = tmp_path / "results" / "gpu-a"
    machine.mkdir(parents=True)
    runs = [
        {"label": "q-old", "mode": "quick", "started": "1", "gpu": "G"},
        {"label": "q-new", "mode": "quick", "started": "2", "gpu": "G"},
        {"label": "full", "mode": "full", "started": "3", "gpu": "G"},
    ]
    (machine / "runs.json").write_text(json.dumps(runs))
    (tmp_path / "results" / "no-runs").mkdir()
    rows = mr.run_times_table(tmp_path / "results").splitlines()[2:]
    assert len(rows) == 2
    assert (
        rows[0].startswith("| `results/gpu-a` | G | quick | 2 / ") and "| 0.4 min | memory 20 s, link 5 s |" in rows[0]
    )
    assert rows[0].endswith("| — |")  # no run of these ran every benchmark: no whole-run wall time
    assert "| full | 1 / " in rows[1] and "memory 99 s" in rows[1]


def test_every_suite_page_gets_the_plots_of_the_run_that_supplies_each_benchmark():
    blocks = mr.plots_blocks()
    assert set(blocks) == {"memory", "cache", "atomics", "isa", "tensor", "numerics", "hopper", "gemm", "app", "link"}
    assert "**`pchase_latency`** (run `memory-full`)" in blocks["memory"]
    assert "](../../results/h100-sxm5-80gb/runs/memory-full/report/memory_pchase-latency_" in blocks["memory"]
    for body in blocks.values():
        for target in re.findall(r"\]\(([^)]+)\)", body):
            assert (mr.DOCS / "suites" / target).resolve().is_file(), target


def test_every_generated_block_of_the_readme_and_the_docs_is_current():
    """`python3 dev/make_results.py --readme-only` would change nothing: every block is where it belongs and
    holds what the committed results give today."""
    for path, blocks in mr.generated_blocks().items():
        text = path.read_text()
        for marker, body in blocks.items():
            found = re.search(rf"<!-- {re.escape(marker)}:start -->\n(.*?)<!-- {re.escape(marker)}:end -->", text, re.S)
            assert found, f"{path.relative_to(mr.ROOT)} lost its {marker} block"
            assert found.group(1) == body, (
                f"{path.relative_to(mr.ROOT)}: {marker}: run python3 dev/make_results.py --readme-only"
            )
    assert set(mr.generated_blocks()[mr.ROOT / "README.md"]) == {"support", "run-times"}


def test_the_readme_support_table_is_the_plan_of_today():
    """The README's GPU table is generated from the plan: a gate that changes without `--readme-only` fails here."""
    import re

    text = (mr.ROOT / "README.md").read_text()
    block = re.search(r"<!-- support:start -->\n(.*)<!-- support:end -->", text, flags=re.S)
    assert block, "README.md lost its support block"
    assert block.group(1) == mr.support_block(), "run: python3 dev/make_results.py --readme-only"
    rows = {line.split("`")[1]: line for line in block.group(1).splitlines() if line.startswith("| `")}
    assert set(rows) == {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120a"}
    from gpudissect.bench.registry import load_all

    n = len([b for b in load_all().values() if b.suite not in ("fake", "fake_suite")])
    assert f"| {n} / {n} |" in rows["sm_90a"] and "H100" in rows["sm_90a"]  # Hopper runs every benchmark
    assert all("CPU only" in r for a, r in rows.items() if a != "sm_90a")
