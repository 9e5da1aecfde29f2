"""Report generation on synthetic data; no GPU and no real reference module needed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpudissect.models import BenchResult, Figure, Point, RunInfo, Series, Telemetry
from gpudissect.report.compare import (
    CLOCK_NOTE,
    compare_runs,
    diffs_markdown,
    published_rows,
    unit_class,
)
from gpudissect.report.figures import group_id, plot_series
from gpudissect.report.html import render_html
from gpudissect.report.markdown import render_markdown
from gpudissect.report.readme_table import headline_table
from gpudissect.report.summary import failed_keys, read_summary, summary_from_figures, write_summary
from gpudissect.report.tables import escape_cell, fmt_bytes, fmt_number, fmt_value, md_table

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class FakePublished:
    key: str
    gpu: str
    value: float
    unit: str
    paper: str
    table: str
    note: str = ""


REFS = (
    FakePublished("mem.latency.l1_hit_cycles", "H800", 32.0, "cycles", "PaperX 2024", "Table 3"),
    FakePublished("mem.latency.l1_hit_cycles", "A100", 33.0, "cycles", "PaperX 2024", "Table 3"),
    FakePublished("mem.bw.dram_gbps", "H800", 2000.0, "GB/s", "PaperY 2023", "Fig. 5"),
    FakePublished("mem.latency.l2_hit_cycles", "H800", 260.0, "cycles", "PaperX 2024", "Table 3"),
    FakePublished("not.ours", "V100", 1.0, "cycles", "PaperZ", "T1"),
)


def fig(
    key: str, value, unit: str = "cycles", check: str = "ok", suite: str = "memory", bench: str = "latency", **kw
) -> Figure:
    return Figure(
        suite,
        bench,
        key,
        value,
        unit,
        kw.pop("kind", "measured"),
        kw.pop("method", "median of plateau"),
        check=check,
        **kw,
    )


def make_run() -> RunInfo:
    return RunInfo(
        id=7,
        gpu_name="NVIDIA H800 PCIe",
        gpu_uuid="GPU-1234",
        sm_count=114,
        l2_bytes=52428800,
        sm_clock_max_mhz=1755.0,
        mem_clock_max_mhz=1593.0,
        mem_bus_bits=5120,
        driver="560.35",
        cuda="12.6",
        nvrtc="12.6",
        tool_version="0.1.0",
        arch="sm_90",
        mode="quick",
        started="2025-01-01T00:00:00Z",
        ended=None,
        status="partial",
    )


def make_data():
    benches = [
        BenchResult(
            7,
            "memory",
            "latency",
            "ok",
            "",
            "t0",
            "t1",
            12.5,
            Telemetry(40, 1755, 1740, 1755, 1593, 180.0, 210.0, 55.0, ["SwPowerCap"]),
        ),
        BenchResult(7, "memory", "bandwidth", "crashed", "illegal memory access | kaboom", "t1", None, None, None),
    ]
    pts = [Point(float(2**k), 30.0 + k, y_min=29.0 + k, y_max=31.5 + k, reps=5) for k in range(10, 26)]
    series = [
        Series("memory", "latency", "ca", "footprint", "bytes", "latency", "cycles", pts, plot="logx", figure="chase"),
        Series(
            "memory",
            "latency",
            "cg",
            "footprint",
            "bytes",
            "latency",
            "cycles",
            [Point(p.x, p.y * 2) for p in pts],
            plot="logx",
            figure="chase",
        ),
        Series(
            "memory",
            "latency",
            "samples",
            "access",
            "",
            "latency",
            "cycles",
            [Point(i, 30 + (i % 7)) for i in range(300)],
            plot="hist",
        ),
        Series("memory", "latency", "empty", "x", "", "y", "", [], plot="line"),
    ]
    figures = [
        fig("mem.latency.l1_hit_cycles", 33.0, spread=(32.5, 34.0)),
        fig("mem.latency.l2_hit_cycles", float("nan"), check="failed", note="no plateau found"),
        fig("mem.bw.dram_gbps", 1900.0, unit="GB/s", bench="bandwidth"),
        fig("mem.l1.size_bytes", 262144, unit="bytes"),
    ]
    return benches, series, figures


# --------------------------------------------------------------------------- summary


def test_summary_excludes_failed_and_keeps_last(tmp_path: Path) -> None:
    figs = [
        fig("a.cycles", 1.0),
        fig("b.cycles", 2.0, check="failed"),
        fig("a.cycles", 3.0),  # later duplicate wins
        fig("c.name", "LRU", unit=""),
        fig("d.nan", float("nan")),
    ]
    s = summary_from_figures(figs)
    assert s == {"a.cycles": 3.0, "c.name": "LRU"}
    assert list(s) == sorted(s)
    assert "b.cycles" not in s
    assert failed_keys(figs) == ["b.cycles", "d.nan"]
    p = write_summary(tmp_path / "sub" / "s.json", s)
    assert json.loads(p.read_text()) == s
    assert read_summary(p) == s


def test_later_failure_overrides_earlier_number() -> None:
    figs = [fig("a", 1.0), fig("a", 5.0, check="failed")]
    assert summary_from_figures(figs) == {}
    assert failed_keys(figs) == ["a"]


# --------------------------------------------------------------------------- compare


def test_unit_class() -> None:
    assert unit_class("cycles") == "cycles"
    assert unit_class("bytes/clk/SM") == "cycles"
    for u in ("GB/s", "ns", "TFLOPS", "TOPS"):
        assert unit_class(u) == "clock"
    assert unit_class("bytes") == "other"


def test_published_rows_ratio_for_cycles_only() -> None:
    _, _, figures = make_data()
    rows = {r.key: r for r in published_rows(figures, REFS, None)}
    assert set(rows) == {"mem.latency.l1_hit_cycles", "mem.bw.dram_gbps", "mem.latency.l2_hit_cycles"}
    l1 = rows["mem.latency.l1_hit_cycles"]
    assert l1.gpus == ["H800", "A100"]
    assert l1.published["H800"][0].ratio == pytest.approx(33 / 32)
    assert l1.published["A100"][0].ratio == pytest.approx(33 / 33)
    assert l1.spread == (32.5, 34.0) and l1.kind == "measured"
    bw = rows["mem.bw.dram_gbps"]
    assert bw.published["H800"][0].ratio is None
    assert bw.published["A100"] == []
    assert CLOCK_NOTE in bw.note
    l2 = rows["mem.latency.l2_hit_cycles"]  # failed check: no number, no ratio
    assert l2.value is None and l2.published["H800"][0].ratio is None
    # GPU filter and no refs
    only = published_rows(figures, REFS, ["A100"])
    assert [r.key for r in only] == ["mem.latency.l1_hit_cycles"] and only[0].gpus == ["A100"]
    assert published_rows(figures, (), None) == []


def test_compare_runs_flags() -> None:
    a = [
        fig("same", 100.0),
        fig("up", 100.0),
        fig("small", 100.0),
        fig("gone", 1.0),
        fig("broke", 10.0),
        fig("zero", 0.0),
    ]
    b = [
        fig("same", 100.0),
        fig("up", 110.0),
        fig("small", 104.0),
        fig("new", 2.0),
        fig("broke", 10.0, check="failed"),
        fig("zero", 0.0),
    ]
    d = {x.key: x for x in compare_runs(a, b)}
    assert [x.key for x in compare_runs(a, b)] == sorted(d)
    assert not d["same"].flagged and d["same"].rel_change == 0
    assert d["up"].flagged and d["up"].rel_change == pytest.approx(0.10)
    assert not d["small"].flagged and d["small"].rel_change == pytest.approx(0.04)
    assert d["gone"].flagged and d["gone"].b is None and "only in A" in d["gone"].reason
    assert d["new"].flagged and d["new"].a is None and "only in B" in d["new"].reason
    assert d["broke"].flagged and d["broke"].b is None and "failed" in d["broke"].reason
    assert not d["zero"].flagged
    md = diffs_markdown(list(d.values()))
    assert "+10.0%" in md and "FAILED" in md


# --------------------------------------------------------------------------- tables


def test_formatting() -> None:
    assert fmt_bytes(49152) == "48.0 KiB"
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(2**30, compact=True) == "1 GiB"
    assert fmt_value(52428800, "bytes") == "50.0 MiB (52428800)"
    assert fmt_value(49152, "B") == "48.0 KiB (49152)"
    assert fmt_number(28.46) == "28.5"
    assert fmt_number(0.12345) == "0.123"
    assert fmt_number(32.0) == "32"
    assert fmt_number(3352.7) == "3353"
    assert fmt_value("LRU", "") == "LRU"
    assert fmt_value(None) == "—"
    assert escape_cell("a|b\nc") == "a\\|b<br>c"
    t = md_table(["k", "v"], [["x|y", 1], ["short"]], "lr")
    assert "x\\|y" in t and "---:" in t and t.count("\n") == 3


# --------------------------------------------------------------------------- renderers


def test_plot_series_pngs(tmp_path: Path) -> None:
    _, series, _ = make_data()
    gid = group_id(series[0])
    paths = plot_series(series, tmp_path, annotations={gid: [("L1", 33.0), ("L2", 260.0)]})
    names = sorted(p.name for p in paths)
    # the empty series gives no file; the two "chase" series share one
    assert names == ["memory_latency_chase.png", "memory_latency_samples.png"]
    for p in paths:
        assert p.read_bytes()[:8] == PNG_MAGIC


def test_plot_bar_and_loglog(tmp_path: Path) -> None:
    s = [
        Series(
            "t",
            "b",
            "u32",
            "op",
            "",
            "throughput",
            "ops/clk/SM",
            [Point(0, 64, 60, 66, extra={"label": "iadd"}), Point(1, 16)],
            plot="bar",
            figure="ops",
        ),
        Series(
            "t",
            "b",
            "f32",
            "op",
            "",
            "throughput",
            "ops/clk/SM",
            [Point(0, 128, extra={"label": "iadd"}), Point(2, 32)],
            plot="bar",
            figure="ops",
        ),
        Series(
            "t",
            "ll",
            "x",
            "size",
            "bytes",
            "time",
            "ns",
            [Point(2.0**k, 10.0 * k) for k in range(1, 12)] + [Point(0, 0)],
            plot="loglog",
        ),
    ]
    paths = plot_series(s, tmp_path)
    assert len(paths) == 2 and all(p.read_bytes()[:8] == PNG_MAGIC for p in paths)


def test_render_markdown(tmp_path: Path) -> None:
    benches, series, figures = make_data()
    path = render_markdown(make_run(), benches, series, figures, REFS, tmp_path)
    assert path == tmp_path / "report.md"
    text = path.read_text()
    assert "NVIDIA H800 PCIe" in text
    assert "illegal memory access \\| kaboom" in text  # crashed bench message, pipe escaped
    assert "FAILED: no number recorded" in text
    assert "CRASHED" in text
    assert "SwPowerCap" in text  # throttling visible
    assert "50.0 MiB (52428800)" in text
    assert "## Published values" in text and "PaperX 2024" in text and "ratio 1.03" in text
    assert CLOCK_NOTE in text
    for name in ("memory_latency_chase.png", "memory_latency_samples.png"):
        assert f"]({name})" in text
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
    # a failed check never shows its (NaN) value
    assert "nan" not in text.lower().replace("nanosec", "")


def test_render_markdown_handles_missing_everything(tmp_path: Path) -> None:
    path = render_markdown(make_run(), [], [], [], (), tmp_path)
    text = path.read_text()
    assert "No benchmark status recorded" in text
    assert "No recorded figure has a published value" in text


def test_render_html(tmp_path: Path) -> None:
    benches, series, figures = make_data()
    path = render_html(make_run(), benches, series, figures, REFS, tmp_path)
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "NVIDIA H800 PCIe" in text and "FAILED" in text
    assert "illegal memory access | kaboom" in text
    assert 'src="memory_latency_chase.png"' in text
    assert "<style>" in text


def test_both_formats_render_one_document(tmp_path: Path) -> None:
    """Markdown and HTML format the same blocks: every heading, cell and image of the document is in both."""
    import html as htmllib

    from gpudissect.report.document import Heading, Image, Table
    from gpudissect.report.html import to_html
    from gpudissect.report.markdown import to_markdown
    from gpudissect.report.sections import build_document
    from gpudissect.report.tables import md_text

    benches, series, figures = make_data()
    doc = build_document(make_run(), benches, series, figures, REFS, tmp_path)
    md, page = to_markdown(doc), htmllib.unescape(to_html(doc))
    kinds = {type(b) for b in doc.blocks}
    assert {Heading, Table, Image} <= kinds
    for b in doc.blocks:
        texts = [b.text] if isinstance(b, Heading) else [b.src] if isinstance(b, Image) else []
        if isinstance(b, Table):
            texts = b.headers + [c for row in b.rows for c in row]
        for t in texts:
            assert t in page, t
            # Markdown shows run data as typed: escaped (brackets, |, <, &), our image paths as they are
            shown = md_text(t) if isinstance(b, Heading) else t if isinstance(b, Image) else escape_cell(t)
            assert shown in md, t
    assert page.count('class="r"') > 0 and "---:" in md  # number columns right-aligned in both


def test_headline_table() -> None:
    summary = {"mem.latency.l1_hit_cycles": 33.0, "mem.bw.dram_gbps": 1900.0}
    keys = ["mem.latency.l1_hit_cycles", "mem.bw.dram_gbps", "mem.latency.l2_hit_cycles"]
    t = headline_table(summary, REFS, keys)
    lines = t.splitlines()
    assert "H800 (paper, table)" in lines[0]
    l1 = next(line for line in lines if "l1_hit" in line)
    assert "32 (PaperX 2024, Table 3)" in l1 and "1.03" in l1
    bw = next(line for line in lines if "dram_gbps" in line)
    assert "2000 (PaperY 2023, Fig. 5)" in bw and CLOCK_NOTE in bw and "GB/s" in bw
    l2 = next(line for line in lines if "l2_hit" in line)
    assert "not measured" in l2 and "260" in l2
    a100 = headline_table(summary, REFS, keys[:1], ref_gpu="A100")
    assert "A100 (paper, table)" in a100 and "33 (PaperX 2024" in a100


def test_heatmap_series_render(tmp_path):
    from gpudissect.models import Point, Series
    from gpudissect.report.figures import plot_groups

    pts = [Point(w, w * i, extra={"ilp": i}) for w in (1, 2, 4) for i in (1, 2, 3)]
    s = [
        Series("tensor", "mma", f"t{k}", "warps", "", "throughput", "FMA/clk/SM", pts, plot="heatmap", figure="grid")
        for k in range(2)
    ]
    paths = plot_groups(s, tmp_path)
    (p,) = paths.values()
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pair_matrix_heatmap_reads_as_a_matrix():
    from matplotlib.figure import Figure as MplFigure

    from gpudissect.models import Point, Series
    from gpudissect.report.figures import _draw_heatmaps

    pts = [Point(j, 100.0 * i + j, extra={"row": i}) for i in range(2) for j in range(2) if i != j]
    s = Series(
        "link",
        "p2p_matrix",
        "ce_read",
        "destination GPU",
        "",
        "ce_read",
        "GB/s",
        pts,
        plot="heatmap",
        figure="p2p_ce_read",
        params={"rows": "source GPU"},
    )
    fig = MplFigure()
    assert _draw_heatmaps(fig, [s]) == 1
    ax = fig.axes[0]
    assert ax.get_ylabel() == "source GPU" and ax.images[0].origin == "upper"  # row 0 on top, named
    grid = Series("tensor", "mma", "t", "warps", "", "y", "", [Point(1, 1.0, extra={"ilp": 1})], plot="heatmap")
    fig = MplFigure()
    _draw_heatmaps(fig, [grid])
    assert fig.axes[0].get_ylabel() == "ilp" and fig.axes[0].images[0].origin == "lower"


# --------------------------------------------------------------------------- issue 10 item 13


def test_published_values_beside_each_figure(tmp_path: Path) -> None:
    benches, series, figures = make_data()
    text = render_markdown(make_run(), benches, series, figures, REFS, tmp_path).read_text()
    bench_part = text.split("### memory / latency")[1].split("###")[0]
    header = next(line for line in bench_part.splitlines() if line.startswith("| Key"))
    assert "Published" in header
    lines = bench_part.splitlines()
    l1 = next(line for line in lines if line.startswith("| mem.latency.l1_hit_cycles"))
    # the run's family (an H800 run: H800) inline; another family's values folded below the table
    assert "H800: 32 (PaperX 2024, Table 3; ratio 1.03)" in l1 and "A100" not in l1
    folded = bench_part.split("<details><summary>Published for other GPUs</summary>")[1].split("</details>")[0]
    assert "A100: 33 (PaperX 2024, Table 3; ratio 1.00)" in folded
    # the closing table has one row per published value, not one column per GPU
    closing = text.split("## Published values")[1]
    head = next(line for line in closing.splitlines() if line.startswith("| Key"))
    assert head.count("|") == 9 and "H800" not in head
    assert sum(1 for line in closing.splitlines() if line.startswith("| mem.latency.l1_hit_cycles")) == 2


def test_run_facts_without_repeated_rows(tmp_path: Path) -> None:
    run = make_run()
    run.extra = {
        "cc_major": 9,
        "cc_minor": 0,
        "sm_count": 114,
        "l2_bytes": 52428800,
        "arch": "sm_90",
        "nvrtc": "12.6",
        "cuda_driver": "12.6",
        "sm_clock_khz": 1755000,
        "mem_bus_bits": 5120,
        "smem_per_sm": 233472,
        "warp_size": 32,
    }
    text = render_markdown(run, [], [], [], (), tmp_path).read_text()
    facts = text.split("## Run")[1].split("## ")[0]
    rows = [line for line in facts.splitlines() if line.startswith("| ") and "---" not in line]
    values = [line.split("|")[2].strip() for line in rows[1:]]
    for v in ("114", "52428800", "sm_90", "5120"):
        assert sum(v in x for x in values) == 1, (v, values)
    assert sum(x == "12.6" for x in values) == 2  # the CUDA and NVRTC rows, not again as cuda_driver/nvrtc
    assert "| Compute capability | 9.0 |" in facts and "sm_clock_khz" not in facts
    assert "228.0 KiB" in facts and "| warp_size | 32 |" in facts


def test_reused_out_directory_loses_stale_pngs(tmp_path: Path) -> None:
    from gpudissect.report.output import MANIFEST, write_report_dir

    benches, series, figures = make_data()
    out = tmp_path / "rep"
    write_report_dir(out, lambda d: render_markdown(make_run(), benches, series, figures, REFS, d))
    assert (out / "memory_latency_samples.png").exists()
    only_chase = [s for s in series if s.figure == "chase"]
    path = write_report_dir(out, lambda d: render_markdown(make_run(), benches, only_chase, figures, REFS, d))
    assert path == out / "report.md"
    kept = [MANIFEST, "front_memory-hierarchy.png", "memory_latency_chase.png", "report.md"]
    assert sorted(p.name for p in out.iterdir()) == kept
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]  # the temporary directory is gone

    def broken(d: Path) -> Path:
        (d / "half.png").write_bytes(b"x")
        raise RuntimeError("renderer failed")

    with pytest.raises(RuntimeError):
        write_report_dir(out, broken)
    assert sorted(p.name for p in out.iterdir()) == kept  # the old report whole
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]


def test_byte_bounds_read_as_sizes() -> None:
    assert fmt_value(">= 71793901568", "bytes") == ">= 66.9 GiB (71793901568)"
    assert fmt_value("<2097152", "bytes") == "<2.0 MiB (2097152)"
    assert fmt_value(">= 12", "cycles") == ">= 12" and fmt_value("LRU", "bytes") == "LRU"


def test_compare_says_when_spreads_overlap() -> None:
    a = [fig("k", 100.0, spread=(90.0, 110.0)), fig("m", 100.0, spread=(99.0, 101.0))]
    b = [fig("k", 108.0, spread=(101.0, 115.0)), fig("m", 108.0, spread=(107.0, 109.0))]
    d = {x.key: x for x in compare_runs(a, b)}
    assert d["k"].flagged and "spreads overlap" in d["k"].reason
    assert d["m"].flagged and "overlap" not in d["m"].reason


def test_a_ratio_of_exactly_one_keeps_its_decimals():
    assert (
        fmt_value(1.0, "ratio") == "1.00" and fmt_value(1.0, "cycles") == "1" and fmt_value(0.997, "ratio") == "0.997"
    )
