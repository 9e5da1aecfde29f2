"""Turn runs' JSON exports into committed results: per run its export and report with figures, one
merged summary.json, and the README's headline tables (generated, never typed).

    python3 scripts/make_results.py LABEL=EXPORT.json [LABEL=EXPORT.json ...] [--gpu-dir DIR]
    python3 scripts/make_results.py --readme-only

Runs are merged into summary.json in the order given: a key measured in a later run replaces it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

from gpudissect.exportio import from_export
from gpudissect.report.annotate import annotations_for
from gpudissect.report.compare import default_refs
from gpudissect.report.markdown import render_markdown
from gpudissect.report.readme_table import headline_table
from gpudissect.report.summary import summary_from_figures, write_summary

ROOT = Path(__file__).resolve().parent.parent
TABLES = {
    "memory": [
        "mem.latency.l1_hit_cycles", "mem.latency.shared_cycles", "mem.latency.l2_hit_cycles",
        "mem.latency.l2_near_hit_cycles", "mem.latency.l2_far_hit_cycles", "mem.latency.l2_near_miss_cycles",
        "mem.latency.l2_far_miss_cycles", "mem.latency.dram_cycles", "mem.size.l1_bytes", "mem.size.l2_bytes",
        "mem.line.l1_bytes", "mem.line.l2_bytes", "mem.bw.l1_bytes_per_clk_sm", "mem.bw.shared_bytes_per_clk_sm",
        "mem.bw.l2_bytes_per_clk", "mem.bw.dram_gbps", "mem.tlb.l1_coverage_bytes", "mem.tlb.l2_coverage_bytes",
        "mem.bank.latency_32way_cycles",
    ],
    "tensor": [
        "tc.mma.f16_f32.m16n8k16.latency_cycles", "tc.mma.f16_f32.m16n8k16.peak_tflops",
        "tc.mma.s8_s32.m16n8k32.peak_tops", "tc.mma_sp.f16_f32.m16n8k32.peak_tflops", "tc.ldmatrix.x4.latency_cycles",
        "tc.wgmma.f16_f32.m64n256k16.latency_cycles", "tc.wgmma.f16_f32.m64n256k16.ss_zero_tflops",
        "tc.wgmma.f16_f32.m64n256k16.ss_rand_tflops", "tc.wgmma.bf16_f32.m64n256k16.ss_rand_tflops",
        "tc.wgmma.tf32_f32.m64n256k8.ss_rand_tflops", "tc.wgmma.e4m3_f32.m64n256k32.ss_rand_tflops",
        "tc.wgmma.s8_s32.m64n256k32.ss_rand_tops", "tc.wgmma_sp.f16_f32.m64n256k32.rs_zero_tflops",
        "tc.wgmma.f16_f32.m64n256k16.rand_tflops_per_watt", "tc.cublas.bf16.8192.tflops", "tc.cublas.e4m3.8192.tflops",
    ],
    "hopper": [
        "tma.latency_offset_cycles", "tma.bulk_16k_peak_gbps", "tma.tensor2d_peak_gbps", "tma.tensor3d_peak_gbps",
        "async_copy.asyncpipe_speedup_8x8", "dsm.latency.local_direct_cycles", "dsm.latency.local_via_cluster_cycles",
        "dsm.latency.remote_cs2_cycles", "dsm.latency.remote_cs16_max_cycles", "dsm.bw.ring_cs2_peak_tbps",
        "dsm.bw.ring_cs4_peak_tbps", "dsm.histogram.best_elems_per_s", "dpx.vimax3_s16x2_relu.latency_cycles",
        "dpx.vimax3_s16x2_relu.speedup_vs_sm80", "dpx.viaddmax_s32.speedup_vs_sm80", "sw.gcups.s16_sm90",
        "sw.gcups.s16_sm80", "sw.gcups.s32_sm90",
    ],
    "numerics": [
        "num.mma.f16_f32.block_size", "num.mma.f16_f32.align_frac_bits", "num.mma.f16_f32.out_rounding",
        "num.wgmma.f16_f32.block_size", "num.wgmma.f16_f32.align_frac_bits", "num.wgmma.f16_f32.out_rounding",
        "num.wgmma.f16_f16.out_rounding", "num.wgmma.bf16_f32.align_frac_bits", "num.wgmma.tf32_f32.align_frac_bits",
        "num.wgmma.e4m3_f32.block_size", "num.wgmma.e4m3_f32.align_frac_bits", "num.wgmma.e4m3_f32.out_rounding",
        "num.subnormal_inputs", "num.model.agreement_rate", "num.model.samples",
    ],
}

# The issues' measured targets: (key, what, threshold); shown in the README as measured, never typed.
TARGETS = [
    ("mem.bw.dram.copy_vs_d2d", "our DRAM copy / cuMemcpyDtoD, timed in alternation", 1.0),
    ("mem.bw.shared_bytes_per_clk_sm", "shared memory, bytes/clk/SM (97% of 128)", 0.97 * 128),
    ("mem.bw.l1_bytes_per_clk_sm", "L1, bytes/clk/SM (95% of 128)", 0.95 * 128),
    ("tma.bulk_16k_vs_stream", "TMA 16 KB bulk copy / streaming read, timed in alternation", 0.95),
    ("tma.tensor2d_vs_stream", "TMA 2D tensor copy / streaming read, timed in alternation", 0.95),
]


def targets_table(summary: dict[str, float | str]) -> str:
    rows = ["| Target | Key | Measured | Goal | Met |", "| --- | --- | ---: | ---: | --- |"]
    for key, what, goal in TARGETS:
        v = summary.get(key)
        met = "yes" if isinstance(v, (int, float)) and v >= goal else "no"
        shown = f"{v:.4g}" if isinstance(v, (int, float)) else str(v if v is not None else "not measured")
        rows.append(f"| {what} | `{key}` | {shown} | >= {goal:.4g} | {met} |")
    return "\n".join(rows) + "\n"


def build(runs: list[tuple[str, Path]], gpu_dir: Path) -> None:
    gpu_dir.mkdir(parents=True, exist_ok=True)
    merged: dict[str, float | str] = {}
    units: dict[str, str] = {}
    index = []
    for label, export in runs:
        run, benches, series, figures = from_export(export)
        out = gpu_dir / "runs" / label
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        shutil.copyfile(export, out / "export.json")
        render_markdown(run, benches, series, figures, None, out / "report", annotations=annotations_for(series, figures))
        merged.update(summary_from_figures(figures))
        units.update({f.key: f.unit for f in figures})
        index.append({"label": label, "run": run.id, "mode": run.mode, "started": run.started, "gpu": run.gpu_name,
                      "benchmarks": {b.bench: b.status for b in benches}})
    write_summary(gpu_dir / "summary.json", merged)
    (gpu_dir / "units.json").write_text(json.dumps(dict(sorted(units.items())), indent=1) + "\n")
    (gpu_dir / "runs.json").write_text(json.dumps(index, indent=1) + "\n")


def readme(gpu_dir: Path) -> None:
    summary = json.loads((gpu_dir / "summary.json").read_text())
    units = json.loads((gpu_dir / "units.json").read_text())
    runs = json.loads((gpu_dir / "runs.json").read_text())
    refs = default_refs()
    parts = ["From `" + str(gpu_dir.relative_to(ROOT)) + "/summary.json`, merged from the runs "
             + ", ".join(f"`{r['label']}` ({r['mode']}, {r['started']})" for r in runs)
             + f" on {runs[0]['gpu']}; published H800 values from Luo et al. (`000`/`003`).\n"]
    for suite, keys in TABLES.items():
        have = [k for k in keys if k in summary]
        if have:
            parts.append(f"\n**{suite}**\n\n" + headline_table(summary, refs, keys, "H800", units=units).strip() + "\n")
    text = (ROOT / "README.md").read_text()
    text = re.sub(r"<!-- headline:start -->.*<!-- headline:end -->",
                  "<!-- headline:start -->\n" + "".join(parts) + "<!-- headline:end -->", text, flags=re.S)
    text = re.sub(r"<!-- targets:start -->.*<!-- targets:end -->",
                  "<!-- targets:start -->\n" + targets_table(summary) + "<!-- targets:end -->", text, flags=re.S)
    (ROOT / "README.md").write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*", help="LABEL=EXPORT.json, merged in this order")
    ap.add_argument("--gpu-dir", type=Path, default=ROOT / "results" / "h100-sxm5-80gb")
    ap.add_argument("--readme-only", action="store_true")
    a = ap.parse_args()
    gpu_dir = a.gpu_dir.resolve()
    if not a.readme_only:
        if not a.runs:
            ap.error("give at least one LABEL=EXPORT.json, or --readme-only")
        runs = []
        for item in a.runs:
            label, _, path = item.partition("=")
            if not path or not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
                ap.error(f"{item!r}: expected LABEL=EXPORT.json with a plain label")
            runs.append((label, Path(path)))
        build(runs, gpu_dir)
    readme(gpu_dir)


if __name__ == "__main__":
    main()
