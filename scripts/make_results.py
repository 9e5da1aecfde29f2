"""Turn a run's JSON export into committed results: export, report with figures, summary.json,
and the README's headline table (generated, never typed).

    python3 scripts/make_results.py EXPORT.json [--gpu-dir results/h100-sxm5-80gb]
    python3 scripts/make_results.py --readme-only
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

from gpudissect.exportio import from_export
from gpudissect.report.annotate import annotations_for
from gpudissect.report.markdown import render_markdown
from gpudissect.report.readme_table import headline_table
from gpudissect.report.summary import summary_from_figures, write_summary
from gpudissect.reference.memory import MEMORY

ROOT = Path(__file__).resolve().parent.parent
HEADLINE = [
    "mem.latency.l1_hit_cycles", "mem.latency.shared_cycles", "mem.latency.l2_hit_cycles",
    "mem.latency.l2_near_hit_cycles", "mem.latency.l2_far_hit_cycles", "mem.latency.l2_near_miss_cycles",
    "mem.latency.l2_far_miss_cycles", "mem.latency.dram_cycles", "mem.size.l1_bytes", "mem.size.l2_bytes",
    "mem.line.l1_bytes", "mem.line.l2_bytes", "mem.bw.l1_bytes_per_clk_sm", "mem.bw.shared_bytes_per_clk_sm",
    "mem.bw.l2_bytes_per_clk", "mem.bw.dram_gbps", "mem.tlb.l1_coverage_bytes", "mem.tlb.l2_coverage_bytes",
    "mem.bank.latency_32way_cycles",
]


def slug(gpu_name: str, total_mem: int | None) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower().replace("nvidia", "")).strip("-")
    return s


def build(export: Path, gpu_dir: Path) -> None:
    run, benches, series, figures = from_export(export)
    gpu_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(export, gpu_dir / "export.json")
    report_dir = gpu_dir / "report"
    if report_dir.exists():
        shutil.rmtree(report_dir)
    render_markdown(run, benches, series, figures, None, report_dir, annotations=annotations_for(series, figures))
    write_summary(gpu_dir / "summary.json", summary_from_figures(figures))


def readme(gpu_dir: Path) -> None:
    summary = json.loads((gpu_dir / "summary.json").read_text())
    units = {}
    export = json.loads((gpu_dir / "export.json").read_text())
    for f in export["figures"]:
        units[f["key"]] = f["unit"]
    table = headline_table(summary, MEMORY, HEADLINE, "H800", units=units)
    run = export["run"]
    head = (f"Run {run['id']} on {run['gpu_name']} ({run['mode']} mode, driver {run['driver']}, "
            f"NVRTC {run['nvrtc']}, {run['started']}), from `{gpu_dir.relative_to(ROOT)}/summary.json`; "
            "H800 values from Luo et al. (`000`).\n\n")
    text = (ROOT / "README.md").read_text()
    text = re.sub(r"<!-- headline:start -->.*<!-- headline:end -->",
                  "<!-- headline:start -->\n" + head + table.strip() + "\n<!-- headline:end -->", text, flags=re.S)
    (ROOT / "README.md").write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("export", nargs="?", type=Path)
    ap.add_argument("--gpu-dir", type=Path, default=ROOT / "results" / "h100-sxm5-80gb")
    ap.add_argument("--readme-only", action="store_true")
    ap.add_argument("--no-readme", action="store_true", help="results only (a secondary run)")
    a = ap.parse_args()
    a.gpu_dir = a.gpu_dir.resolve()
    if not a.readme_only:
        if a.export is None:
            ap.error("EXPORT is required unless --readme-only")
        build(a.export, a.gpu_dir)
    if not a.no_readme:
        readme(a.gpu_dir)


if __name__ == "__main__":
    main()
