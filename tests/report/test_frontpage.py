"""The front page and the side-by-side comparison on small runs: partial runs, failures, throttling, another
GPU; what a run did not measure is said, never filled in."""

from __future__ import annotations

from pathlib import Path

from gpudissect.models import BenchResult, Figure, Telemetry
from gpudissect.report.document import Bullets, Details, Image, Para, Table
from gpudissect.report.frontpage import front_page, unusual
from gpudissect.report.hierarchy import NOT_MEASURED, levels
from gpudissect.report.html import to_html
from gpudissect.report.markdown import to_markdown
from gpudissect.report.multirun import RunFigures, build_comparison
from helpers import make_run_info


def _fig(key: str, value, unit: str = "cycles", suite: str = "memory", bench: str = "pchase_latency", **kw) -> Figure:
    return Figure(suite, bench, key, value, unit, "measured", "m", **kw)


def _tele(*reasons: str, clock: float = 1980.0) -> Telemetry:
    return Telemetry(10, clock, clock - 10, clock, 2619.0, 300.0, 350.0, 50.0, list(reasons))


def _texts(blocks) -> str:
    out = []
    for b in blocks:
        if isinstance(b, Table):
            out += b.headers + [c for r in b.rows for c in r]
        elif isinstance(b, Bullets):
            out += [f"{lead} {rest}" for lead, rest in b.items]
        elif isinstance(b, Details):
            out.append(b.summary + " " + _texts(b.blocks))
        elif hasattr(b, "text"):
            out.append(b.text)
    return "\n".join(out)


def test_a_memory_only_run_shows_its_levels_and_says_what_is_missing(tmp_path: Path) -> None:
    run = make_run_info()
    figs = [
        _fig("mem.latency.l1_hit_cycles", 32.0),
        _fig("mem.latency.l1_hit_ns", 16.2, "ns"),
        _fig("mem.size.l1_bytes", 219136.0, "bytes"),
        _fig("mem.bw.dram_gbps", 3000.0, "GB/s", bench="bandwidth"),
    ]
    benches = [BenchResult(run.id, "memory", "pchase_latency", "ok", "", "t0", "t1", 1.0, _tele())]
    by = {lv.name: lv for lv in levels(run, figs)}
    assert by["L1"].latency_cycles == 32.0 and by["L1"].size_bytes == 219136.0 and by["L1"].measured
    assert by["L2"].latency_cycles is None and by["Shared memory"].latency_cycles is None
    assert by["DRAM"].bw_gpu_gbps == 3000.0 and by["DRAM"].bw_sm_gbps == 3000.0 / run.sm_count  # derived, marked
    blocks = front_page(run, benches, figs, (), [], tmp_path)
    text = _texts(blocks)
    assert NOT_MEASURED in text and "3000 GB/s" in text and "3000 GB/s *" not in text
    assert "No compute ceiling was measured" in text
    assert "Not in this run" in text and "tensor" in text  # the suites the run lacks, said
    assert any(isinstance(b, Image) for b in blocks) and (tmp_path / "front_memory-hierarchy.png").exists()


def test_a_run_without_memory_figures_draws_no_hierarchy(tmp_path: Path) -> None:
    run = make_run_info()
    figs = [_fig("isa.throughput.ffma_per_clk_sm", 120.0, "instr/clk/SM", suite="isa", bench="native_instructions")]
    blocks = front_page(run, [], figs, (), [], tmp_path)
    text = _texts(blocks)
    assert "memory hierarchy was not measured" in text and "FP32 FMA" in text
    assert not (tmp_path / "front_memory-hierarchy.png").exists()


def test_real_problems_apart_from_the_power_cap() -> None:
    run = make_run_info()
    benches = [
        BenchResult(run.id, "tensor", "wgmma_power", "ok", "", "t0", "t1", 1.0, _tele("sw_power_cap", clock=1600)),
        BenchResult(run.id, "gemm", "ladder", "ok", "", "t0", "t1", 1.0, _tele("sw_power_cap", clock=1700)),
        BenchResult(run.id, "memory", "tlb", "ok", "", "t0", "t1", 1.0, _tele("hw_thermal_slowdown", clock=1400)),
        BenchResult(run.id, "memory", "bandwidth", "crashed", "illegal address", "t0", "t1", 1.0, None),
        BenchResult(run.id, "link", "p2p_matrix", "skipped", "needs >= 2 GPUs", "t0", "t1", 0.0, None),
    ]
    figs = [_fig("mem.latency.l2_hit_cycles", float("nan"), check="failed", note="no plateau")]
    blocks = unusual(run, benches, figs)
    alert = next(b for b in blocks if isinstance(b, Bullets) and b.style == "alert")
    problems = _texts([alert])
    assert "mem.latency.l2_hit_cycles" in problems and "no plateau" in problems
    assert "memory/bandwidth: illegal address" in problems and "CRASHED" in problems
    assert "hw_thermal_slowdown" in problems and "1400 of 1980 MHz" in problems
    assert "sw_power_cap" not in problems and "wgmma_power" not in problems
    normal = next(b for b in blocks if isinstance(b, Para) and "power cap" in b.text)
    assert "2 benchmarks" in normal.text and "1600–1700 MHz" in normal.text and "tensor/wgmma_power" in normal.text
    assert "link/p2p_matrix: needs >= 2 GPUs" in _texts(blocks)


def test_comparison_puts_runs_in_columns_with_ratios() -> None:
    a, b, c = make_run_info(), make_run_info(gpu="NVIDIA H200"), make_run_info(gpu="NVIDIA A100-SXM4-80GB")
    a.id, b.id, c.id = 1, 2, 3
    a.label = "h100"
    runs = [
        RunFigures(a, [_fig("mem.latency.l2_hit_cycles", 280.0), _fig("mem.only_a_cycles", 1.0)]),
        RunFigures(b, [_fig("mem.latency.l2_hit_cycles", 300.0), _fig("mem.x_cycles", 5.0, check="failed")]),
        RunFigures(c, [_fig("mem.x_cycles", 7.0), _fig("mem.latency.l2_hit_cycles", "<b>n/a</b>", "")]),
    ]
    doc = build_comparison(runs)
    table = next(t for t in doc.blocks if isinstance(t, Table) and t.headers[0] == "Key")
    assert table.headers[2:5] == ["H100 80GB HBM3 (h100)", "H200 (run 2)", "A100-SXM4-80GB (run 3)"]
    rows = {r[0]: r for r in table.rows}
    assert set(rows) == {"mem.latency.l2_hit_cycles", "mem.x_cycles"}  # keys of one run only are left out
    assert rows["mem.latency.l2_hit_cycles"][2:] == ["280", "300", "<b>n/a</b> ", "1.07", "—"]
    assert rows["mem.x_cycles"][2:] == ["—", "FAILED", "7", "—", "—"]
    page, md = to_html(doc), to_markdown(doc)
    assert "&lt;b&gt;n/a&lt;/b&gt;" in page and "<b>n/a" not in page and "&lt;b&gt;n/a&lt;/b&gt;" in md
    assert 'bad">FAILED</td>' in page


def test_cli_report_of_two_runs(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gpudissect.cli import app
    from helpers import fill_store

    db = tmp_path / "s.sqlite"
    ids = fill_store(db)
    runner = CliRunner()
    d = ["--db", str(db)]
    r = runner.invoke(app, ["report", str(ids[0]), str(ids[1]), "--format", "html", "--out", str(tmp_path / "c"), *d])
    assert r.exit_code == 0, r.stderr
    page = (tmp_path / "c" / "comparison.html").read_text()
    assert "mem.latency.l1_hit_cycles" in page and "1.21" in page  # 40 / 33
    r = runner.invoke(app, ["report", str(ids[0]), str(ids[0]), "--out", str(tmp_path / "d"), *d])
    assert r.exit_code == 2 and "two different runs" in r.stderr
