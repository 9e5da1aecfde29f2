"""Turn runs' JSON exports into committed results: per run its export and report with figures, one
merged summary.json with the run each key came from, and the tables of the README and the docs (generated,
never typed: the README's GPU support table and run times; docs/results/<machine>.md, docs/suites/<suite>.md).

    python3 dev/make_results.py LABEL=EXPORT.json [LABEL=EXPORT.json ...] [--gpu-dir DIR]
    python3 dev/make_results.py --drop LABEL        # take a superseded run out of the results
    python3 dev/make_results.py --readme-only      # only the README's and docs' generated blocks

Registering a run adds it to (or replaces it in) runs.json beside the runs already committed, and re-merges
summary.json from all of them. Each benchmark's figures come from one run only, so no figure of an old
method survives beside a new one: among the runs in which the benchmark ended ok, a full run wins over a
quick one, then the newer run wins. `summary_sources.json` records, per key, the run it came from.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from collections import defaultdict
from pathlib import Path

from gpudissect.bench import SUITES
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import load_all
from gpudissect.capability import CI_ARCHES, FAMILIES, Target
from gpudissect.exportio import export_text, from_export, gzip_bytes
from gpudissect.report.annotate import annotations_for
from gpudissect.report.compare import default_refs
from gpudissect.report.markdown import render_markdown
from gpudissect.report.readme_table import headline_table
from gpudissect.report.summary import summary_from_figures, write_summary
from gpudissect.report.tables import fmt_value

ROOT = Path(__file__).resolve().parent.parent
KEYS_DIR = ROOT / "dev" / "headline_keys"
# Suites' tables in this order in the docs: the reader's (and run) order of bench.SUITES, the encoding tables
# beside the rest of the instruction level; suites not listed follow alphabetically.
SUITE_ORDER = [s for suite in SUITES for s in ((suite, "isa_encoding") if suite == "isa" else (suite,))]


def headline_keys(keys_dir: Path = KEYS_DIR) -> dict[str, tuple[str, list[str]]]:
    """suite -> (reference GPU, keys) from dev/headline_keys/<suite>.txt (one key a line, `#` comments,
    an optional `# ref_gpu: NAME` line naming the GPU whose published values stand beside ours)."""
    found = {p.stem: p for p in keys_dir.glob("*.txt")}
    order = [s for s in SUITE_ORDER if s in found] + sorted(set(found) - set(SUITE_ORDER))
    out = {}
    for suite in order:
        ref_gpu, keys = "H800", []
        for line in found[suite].read_text().splitlines():
            line = line.strip()
            m = re.match(r"#\s*ref_gpu:\s*(\S+)", line)
            if m:
                ref_gpu = m.group(1)
            elif line and not line.startswith("#"):
                keys.append(line)
        out[suite] = (ref_gpu, keys)
    return out


# The issues' measured targets: (key, what, threshold); shown in the docs as measured, never typed.
TARGETS = [
    ("mem.bw.dram.copy_vs_d2d", "our DRAM copy / cuMemcpyDtoD, timed in alternation", 1.0),
    ("mem.bw.shared_bytes_per_clk_sm", "shared memory, bytes/clk/SM (97% of 128)", 0.97 * 128),
    ("mem.bw.l1_bytes_per_clk_sm", "L1, bytes/clk/SM (95% of 128)", 0.95 * 128),
    ("tma.bulk_16k_vs_stream", "TMA 16 KB bulk copy / streaming read, timed in alternation", 0.95),
    ("tma.tensor2d_vs_stream", "TMA 2D tensor copy / streaming read, timed in alternation", 0.95),
    *[
        (f"gemm.{t}.{n}.vs_cublas", f"our {t} GEMM / cuBLAS at {n}^3, timed in alternation", 1.0)
        for t in ("bf16", "fp16")
        for n in (4096, 8192, 16384)
    ],
    ("gemm.rect.median_vs_cublas", "our GEMM / cuBLAS, median over Yan's rectangular shapes", 1.0),
    ("gemm.llama.median_vs_cublas", "our GEMM / cuBLAS, median over Llama-3 projection shapes", 1.0),
    ("gemm.e4m3.8192.vs_cublas", "our fp8 e4m3 GEMM / torch._scaled_mm at 8192^3", 1.0),
]


def targets_table(summary: dict[str, float | str], units: dict[str, str] | None = None) -> str:
    rows = ["| Target | Key | Measured | Goal | Met |", "| --- | --- | ---: | ---: | --- |"]
    for key, what, goal in TARGETS:
        v = summary.get(key)
        met = "yes" if isinstance(v, (int, float)) and v >= goal else "no"
        # the same rendering as the headline tables, so a figure reads the same everywhere
        shown = (
            fmt_value(v, (units or {}).get(key, ""))
            if isinstance(v, (int, float))
            else str(v if v is not None else "not measured")
        )
        rows.append(f"| {what} | `{key}` | {shown} | >= {goal:g} | {met} |")
    return "\n".join(rows) + "\n"


MODE_RANK = {"quick": 0, "full": 1}


def overridden(bench: str, overrides: dict[str, str]) -> bool:
    """Whether a run's --set overrides change `bench` (NAME=VALUE applies to every benchmark)."""
    return any("." not in k or k.split(".", 1)[0] == bench for k in overrides)


def choose_sources(index: list[dict]) -> dict[str, str]:
    """benchmark -> label of the run that supplies its figures: among the runs where it ended ok, full
    beats quick, then the newer run wins; a benchmark that never ended ok comes from its newest run.
    A run that changed a benchmark's parameters (--set) is a variant kept beside the others (its
    report, its export), never the source of that benchmark's summary figures."""
    best: dict[str, tuple[tuple, str]] = {}
    for r in index:
        for bench, status in r["benchmarks"].items():
            if overridden(bench, r.get("overrides", {})):
                continue
            rank = (status == "ok", MODE_RANK.get(r["mode"], 0), r["started"])
            if bench not in best or rank > best[bench][0]:
                best[bench] = (rank, r["label"])
    return {bench: label for bench, (_, label) in sorted(best.items())}


def merge(gpu_dir: Path, index: list[dict]) -> tuple[dict[str, float | str], dict[str, str], dict[str, str]]:
    """summary, units and per-key source label from the committed exports of the runs in `index`."""
    sources = choose_sources(index)
    summary: dict[str, float | str] = {}
    units: dict[str, str] = {}
    origin: dict[str, str] = {}
    for r in index:
        _, _, _, figures = from_export(export_file(gpu_dir / "runs" / r["label"]))
        mine = [f for f in figures if sources.get(f.bench) == r["label"]]
        part = summary_from_figures(mine)
        summary.update(part)
        units.update({f.key: f.unit for f in mine})
        origin.update(dict.fromkeys(part, r["label"]))
    return dict(sorted(summary.items())), dict(sorted(units.items())), dict(sorted(origin.items()))


EXPORT_NAME = "export.json.gz"  # committed compressed (about 18x smaller): the tree must stay small enough to travel


read_text = export_text  # the export's JSON text, plain or gzip (checked by from_export first)


def export_file(run_dir: Path) -> Path:
    """A committed run's export: export.json.gz, or the plain export.json of runs registered before."""
    gz = run_dir / EXPORT_NAME
    return gz if gz.exists() else run_dir / "export.json"


def compress_exports(gpu_dir: Path) -> None:
    """Re-encode every committed plain export.json as export.json.gz (lossless; the JSON text is kept
    byte for byte inside)."""
    for plain in sorted((gpu_dir / "runs").glob("*/export.json")):
        (plain.parent / EXPORT_NAME).write_bytes(gzip_bytes(plain.read_text(encoding="utf-8")))
        plain.unlink()


def read_index(gpu_dir: Path) -> list[dict]:
    p = gpu_dir / "runs.json"
    return json.loads(p.read_text()) if p.exists() else []


def build(runs: list[tuple[str, Path]], gpu_dir: Path, drop: list[str] | None = None) -> None:
    gpu_dir.mkdir(parents=True, exist_ok=True)
    index = {r["label"]: r for r in read_index(gpu_dir)}
    for label in drop or []:
        if label not in index:
            raise SystemExit(f"--drop {label}: no such run in {gpu_dir / 'runs.json'}")
        index.pop(label)
        shutil.rmtree(gpu_dir / "runs" / label, ignore_errors=True)
    compress_exports(gpu_dir)
    for label, export in runs:
        run, benches, series, figures = from_export(export)
        out = gpu_dir / "runs" / label
        tmp = gpu_dir / "runs" / f".{label}.new"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        (tmp / EXPORT_NAME).write_bytes(gzip_bytes(read_text(export)))
        log = Path(export).with_suffix(".log")
        if log.exists():
            shutil.copyfile(log, tmp / "run.log")
        render_markdown(
            run, benches, series, figures, None, tmp / "report", annotations=annotations_for(series, figures)
        )
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
        index[label] = {
            "label": label,
            "run": run.id,
            "mode": run.mode,
            "started": run.started,
            "gpu": run.gpu_name,
            "benchmarks": {b.bench: b.status for b in benches},
            "overrides": dict(run.selection.get("overrides") or {}),
        }
        if run.selection.get("group"):  # a `run --gpus` / cluster group: its GPUs are compared in fleet-<group>.md
            index[label]["group"] = run.selection["group"]
    ordered = sorted(index.values(), key=lambda r: r["started"])
    summary, units, origin = merge(gpu_dir, ordered)
    write_summary(gpu_dir / "summary.json", summary)
    (gpu_dir / "units.json").write_text(json.dumps(units, indent=1) + "\n")
    (gpu_dir / "summary_sources.json").write_text(json.dumps(origin, indent=1) + "\n")
    (gpu_dir / "runs.json").write_text(json.dumps(ordered, indent=1) + "\n")
    fleet_tables(gpu_dir, ordered)


FLEET_K, FLEET_MIN_REL = 3.0, 0.05  # `gpudissect compare --gpus`'s defaults (3 x noise, 5 %)


def fleet_tables(gpu_dir: Path, index: list[dict]) -> dict[str, str]:
    """For every group of two or more committed runs, fleet-<group>.md: `gpudissect compare --gpus`'s
    table, recomputed from the committed exports (imported into a scratch store). Returns group ->
    the table's summary line."""
    import tempfile

    from gpudissect.multigpu import compare_gpus, import_export
    from gpudissect.store import Store

    groups: dict[str, list[str]] = {}
    for r in index:
        if r.get("group"):
            groups.setdefault(r["group"], []).append(r["label"])
    for old in gpu_dir.glob("fleet-*.md"):
        if old.stem.removeprefix("fleet-") not in groups or len(groups[old.stem.removeprefix("fleet-")]) < 2:
            old.unlink()
    lines = {}
    for group, labels in sorted(groups.items()):
        if len(labels) < 2:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "fleet.sqlite"
            store = Store(db)
            try:
                for label in labels:
                    import_export(store, json.loads(read_text(export_file(gpu_dir / "runs" / label))))
            finally:
                store.close()
            text = compare_gpus(group, db, FLEET_K, FLEET_MIN_REL)
        (gpu_dir / f"fleet-{group}.md").write_text(
            f"Runs {', '.join(labels)} (generated by dev/make_results.py)\n\n" + text
        )
        lines[group] = text.splitlines()[0]
    return lines


def quick_times(gpu_dir: Path, index: list[dict]) -> str:
    """One line: how long each suite's quick mode took, from the newest committed quick run of every benchmark."""
    newest: dict[tuple[str, str], tuple[str, float, str]] = {}
    for r in index:
        if r["mode"] != "quick":
            continue
        _, benches, _, _ = from_export(export_file(gpu_dir / "runs" / r["label"]))
        for b in benches:
            k = (b.suite, b.bench)
            if b.seconds is not None and (k not in newest or r["started"] > newest[k][0]):
                newest[k] = (r["started"], float(b.seconds), r["label"])
    per: dict[str, float] = {}
    labels: dict[str, list[str]] = {}
    for (suite, _), (_, sec, label) in newest.items():
        per[suite] = per.get(suite, 0.0) + sec
        labels.setdefault(suite, [])
        if label not in labels[suite]:
            labels[suite].append(label)
    order = [x for x in SUITE_ORDER if x in per] + sorted(set(per) - set(SUITE_ORDER))
    total = sum(per.values())
    return (
        f"Quick mode of every suite took about {total / 60:.0f} min on the H100, summed over the newest committed "
        f"quick run of each benchmark ({len(newest)} benchmarks): "
        + ", ".join(f"{x} {per[x]:.0f} s ({', '.join(labels[x])})" for x in order)
        + ". Full mode runs finer sweeps and takes longer.\n"
    )


DEFAULT_GPU_DIR = ROOT / "results" / "h100-sxm5-80gb"  # owns the headline, targets and quick-times blocks


def _suite_tables(gpu_dir: Path, measured_only: bool = False) -> tuple[dict, dict, list[dict], dict[str, str]]:
    """(summary, units, runs, suite -> its headline table, for each suite that has keys in this summary, in
    the headline order; with measured_only, its rows are only the keys measured there)."""
    summary = json.loads((gpu_dir / "summary.json").read_text())
    units = json.loads((gpu_dir / "units.json").read_text())
    runs = read_index(gpu_dir)
    sources_path = gpu_dir / "summary_sources.json"
    origin = json.loads(sources_path.read_text()) if sources_path.exists() else {}
    refs = default_refs()
    parts = {}
    for suite, (ref_gpu, keys) in headline_keys().items():
        have = [k for k in keys if k in summary]
        if have:
            labels = list(dict.fromkeys(origin[k] for k in have if k in origin))
            parts[suite] = (
                f"\n**{suite}** (runs: {', '.join(f'`{x}`' for x in labels)}; published: {ref_gpu})\n\n"
                + headline_table(summary, refs, have if measured_only else keys, ref_gpu, units=units).strip()
                + "\n"
            )
    return summary, units, runs, parts


def _runs_line(gpu_dir: Path, runs: list[dict]) -> str:
    return (
        "From `"
        + str(gpu_dir.relative_to(ROOT))
        + "/summary.json`, merged from the runs "
        + ", ".join(f"`{r['label']}` ({r['mode']}, {r['started']})" for r in runs)
        + f" on {runs[0]['gpu']}."
    )


def other_gpu_block(gpu_dir: Path, page: Path | None = None) -> str:
    """The docs block of a further machine (a multi-GPU one, say): its headline tables and, per
    group of GPUs dissected together, the deviation summary with a link to its table (relative to the
    page the block goes to, docs/results/<machine>.md by default)."""
    page = page or results_page(gpu_dir)
    _, _, runs, parts = _suite_tables(gpu_dir, measured_only=True)
    text = (
        _runs_line(gpu_dir, runs) + " Each benchmark's figures come from one run (full beats quick, then newer);"
        " `summary_sources.json` names the run of every key.\n" + "".join(parts.values())
    )
    for md in sorted(gpu_dir.glob("fleet-*.md")):
        first = next((ln for ln in md.read_text().splitlines() if ln.startswith("group ")), "")
        text += f"\nEvery GPU dissected at once ([`{md.relative_to(ROOT)}`]({_rel(md, page)})): {first}\n"
    return text


# the README's GPU support table, from the plan (the capability model the runner obeys): per architecture,
# what `gpudissect plan --arch` says would run and what it skips
MEASURED = {"sm_90a": "H100 SXM5, H200 (results/)"}  # the only GPUs the committed figures come from


def _gpus(t: Target) -> str:
    return FAMILIES[t.cc][1]


def support_block() -> str:
    benches = [b for b in load_all().values() if b.suite not in ("fake", "fake_suite")]
    rows = [
        "| arch (family) | GPUs | benchmarks that run | skipped, by suite | variants skipped | measured by us |",
        "| --- | --- | ---: | --- | ---: | --- |",
    ]
    for arch in CI_ARCHES:
        t = Target.parse(arch)
        entries = plan(benches, t)
        skipped: dict[str, list[str]] = defaultdict(list)
        size: dict[str, int] = defaultdict(int)
        for e in entries:
            size[e.suite] += 1
            if e.status == "skip":
                skipped[e.suite].append(e.bench)
        runs = sum(e.status == "run" for e in entries)
        nvar = sum(len(e.skipped_variants) for e in entries if e.status == "run")
        skip_text = (
            "; ".join(f"{s} (all)" if len(b) == size[s] else f"{s}: {', '.join(b)}" for s, b in skipped.items())
            or "none"
        )
        rows.append(
            f"| `{t.arch}` ({t.family}) | {_gpus(t)} | {runs} / {len(entries)} | {skip_text} | {nvar} "
            f"| {MEASURED.get(t.arch, 'no: compiled and SASS-checked on the CPU only')} |"
        )
    return "\n".join(rows) + "\n"


def _place(text: str, marker: str, body: str, where: str = "README.md") -> str:
    pat = rf"<!-- {re.escape(marker)}:start -->.*<!-- {re.escape(marker)}:end -->"
    if not re.search(pat, text, flags=re.S):
        raise SystemExit(f"{where} has no <!-- {marker}:start --> ... <!-- {marker}:end --> block to fill")
    return re.sub(pat, lambda _: f"<!-- {marker}:start -->\n{body}<!-- {marker}:end -->", text, flags=re.S)


# ---- where the generated blocks go: the README keeps the GPU table and the run times; the rest is in docs/ ----
DOCS = ROOT / "docs"
RESULTS = ROOT / "results"


def results_page(gpu_dir: Path) -> Path:
    """The docs page of one results/<machine>/ directory."""
    return DOCS / "results" / f"{gpu_dir.name}.md"


def _rel(target: Path, page: Path) -> str:
    """A link from a docs page to a file of the repository, relative (so it works on GitHub; the docs
    build maps links into results/ onto the site, dev/mkdocs_hooks.py)."""
    return Path(os.path.relpath(target, page.parent)).as_posix()


def _mode_times(gpu_dir: Path, index: list[dict], mode: str) -> tuple[dict[str, float], int]:
    """suite -> seconds of `mode` summed over the newest committed run of each benchmark in that mode, and
    how many benchmarks were timed."""
    newest: dict[tuple[str, str], tuple[str, float]] = {}
    for r in index:
        if r["mode"] != mode:
            continue
        _, benches, _, _ = from_export(export_file(gpu_dir / "runs" / r["label"]))
        for b in benches:
            k = (b.suite, b.bench)
            if b.seconds is not None and (k not in newest or r["started"] > newest[k][0]):
                newest[k] = (r["started"], float(b.seconds))
    per: dict[str, float] = {}
    for (suite, _), (_, sec) in newest.items():
        per[suite] = per.get(suite, 0.0) + sec
    return per, len(newest)


def _whole_run(gpu_dir: Path, index: list[dict], mode: str, n_all: int) -> str:
    """Wall time (end minus start) of the newest committed run in `mode` that ran every benchmark, as one run
    takes it (benchmarks beside the others overlap; a sum over benchmarks does not show that); "—" if none."""
    from datetime import datetime

    for r in sorted((r for r in index if r["mode"] == mode), key=lambda r: r["started"], reverse=True):
        run, benches, _, _ = from_export(gpu_dir / "runs" / r["label"] / "export.json.gz")
        if run is None or not run.ended or len({(b.suite, b.bench) for b in benches}) < n_all:
            continue
        wall = (datetime.fromisoformat(run.ended) - datetime.fromisoformat(run.started)).total_seconds()
        return f"{wall / 60:.1f} min (`{r['label']}`)"
    return "—"


def run_times_table(results: Path = RESULTS) -> str:
    """How long the committed runs took, per machine and mode: each benchmark's newest committed run in that
    mode, summed, and the wall time of the newest whole run (measured, never typed)."""
    n_all = len([b for b in load_all().values() if b.suite not in ("fake", "fake_suite")])
    rows = [
        "| results | GPU | mode | benchmarks timed | time (sum) | per suite | one whole run (wall) |",
        "| --- | --- | --- | ---: | ---: | --- | ---: |",
    ]
    for gpu_dir in sorted(p for p in results.iterdir() if (p / "runs.json").exists()):
        index = read_index(gpu_dir)
        gpus = sorted({r["gpu"] for r in index})
        for mode in ("quick", "full"):
            per, n = _mode_times(gpu_dir, index, mode)
            if not n:
                continue
            order = [x for x in SUITE_ORDER if x in per] + sorted(set(per) - set(SUITE_ORDER))
            total = sum(per.values())
            rows.append(
                f"| `{gpu_dir.relative_to(ROOT).as_posix()}` | {', '.join(gpus)} | {mode} | {n} / {n_all} "
                f"| {total / 60:.1f} min | "
                + ", ".join(f"{x} {per[x]:.0f} s" for x in order)
                + f" | {_whole_run(gpu_dir, index, mode, n_all)} |"
            )
    return "\n".join(rows) + "\n"


HEADLINE_PAGE = {"isa_encoding": "isa"}  # headline tables (dev/headline_keys/) shown on another suite's page
PLOTS_PER_BENCH = 4  # plots shown per benchmark on a suite's page; the run's report has them all


def plots_blocks(gpu_dir: Path = DEFAULT_GPU_DIR) -> dict[str, str]:
    """suite -> the plots of its benchmarks, from the committed run that supplies each benchmark's figures
    (its report's PNGs), as Markdown images with links relative to docs/suites/<suite>.md."""
    benches = [b for b in load_all().values() if b.suite not in ("fake", "fake_suite")]
    sources = choose_sources(read_index(gpu_dir))
    out: dict[str, str] = {}
    for b in benches:
        page = DOCS / "suites" / f"{b.suite}.md"
        text = out.setdefault(b.suite, "")
        label = sources.get(b.name)
        report = gpu_dir / "runs" / label / "report" if label else None
        pngs = sorted(report.glob(f"{b.suite}_{b.name.replace('_', '-')}_*.png")) if report else []
        if not pngs:
            text += f"\n**`{b.name}`**: no plot in the committed runs.\n"
        else:
            shown = pngs[:PLOTS_PER_BENCH]
            more = (
                f"; {len(pngs) - len(shown)} more in `{report.relative_to(ROOT).as_posix()}/`"
                if len(pngs) > len(shown)
                else ""
            )
            prefix = f"{b.suite}_{b.name.replace('_', '-')}_"
            text += (
                f"\n**`{b.name}`** (run `{label}`{more})\n\n"
                + "\n".join(f"![{b.name}: {p.stem.removeprefix(prefix)}]({_rel(p, page)})" for p in shown)
                + "\n"
            )
        out[b.suite] = text
    return out


def generated_blocks(gpu_dir: Path = DEFAULT_GPU_DIR) -> dict[Path, dict[str, str]]:
    """file -> {block marker: body} for every generated block of the README and the docs."""
    summary, units, runs, parts = _suite_tables(gpu_dir)
    intro = (
        _runs_line(gpu_dir, runs) + " Each benchmark's figures come from one run (full beats quick, then newer;"
        " a run with --set overrides is a variant that supplies none);"
        " `summary_sources.json` names the run of every key. The ratio column divides ours by the published"
        " value for figures in cycles; throughput figures depend on the clock and the SKU (the papers' H800"
        ' runs at other clocks and power than this H100), so they get no ratio ("clock/SKU dependent").\n'
    )
    support = support_block()
    times = run_times_table()
    blocks: dict[Path, dict[str, str]] = {
        ROOT / "README.md": {"support": support, "run-times": times},
        DOCS / "gpus.md": {"support": support, "run-times": times},
        results_page(gpu_dir): {
            "headline": intro + "".join(parts.values()),
            "targets": targets_table(summary, units),
            "quick-times": quick_times(gpu_dir, runs),
        },
    }
    for other in sorted(RESULTS.iterdir()):
        if other != gpu_dir and (other / "summary.json").exists():
            blocks[results_page(other)] = {f"headline:{other.name}": other_gpu_block(other, results_page(other))}
    for suite, body in plots_blocks(gpu_dir).items():
        page = blocks.setdefault(DOCS / "suites" / f"{suite}.md", {})
        tables = "".join(t for s, t in parts.items() if HEADLINE_PAGE.get(s, s) == suite)
        link = _rel(results_page(gpu_dir), DOCS / "suites" / f"{suite}.md")
        page[f"figures:{suite}"] = (
            f"From `{gpu_dir.relative_to(ROOT).as_posix()}/summary.json`, beside the published values of the"
            f" paper's GPU (how the ratio is formed: [the results page]({link})).\n" + tables
            if tables
            else "No headline figure of this suite in the committed results.\n"
        )
        page[f"plots:{suite}"] = body
    return blocks


def readme(gpu_dir: Path = DEFAULT_GPU_DIR) -> None:
    """Regenerate every generated block: the README's GPU support table and run times; in docs/, the main
    GPU's headline tables, targets and quick-mode times (docs/results/<machine>.md), one headline block per
    further results/<machine>/ directory, and the plots of each suite (docs/suites/<suite>.md)."""
    for path, blocks in generated_blocks(gpu_dir).items():
        if not path.exists():
            raise SystemExit(f"{path.relative_to(ROOT)} is missing: create it with the blocks {', '.join(blocks)}")
        old = text = path.read_text()
        for marker, body in blocks.items():
            text = _place(text, marker, body, str(path.relative_to(ROOT)))
        if text != old:
            path.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*", help="LABEL=EXPORT.json: add or replace these runs")
    ap.add_argument("--gpu-dir", type=Path, default=DEFAULT_GPU_DIR, help="results/<machine>/ to add runs to")
    ap.add_argument("--drop", action="append", default=[], help="take the run LABEL out of the results")
    ap.add_argument(
        "--readme-only", action="store_true", help="only regenerate the generated blocks of README.md and docs/"
    )
    a = ap.parse_args()
    gpu_dir = a.gpu_dir.resolve()
    if not a.readme_only:
        runs = []
        for item in a.runs:
            label, _, path = item.partition("=")
            if not path or not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
                ap.error(f"{item!r}: expected LABEL=EXPORT.json with a plain label")
            if not Path(path).is_file():
                ap.error(f"{path}: no such export file")
            runs.append((label, Path(path)))
        build(runs, gpu_dir, a.drop)
    readme()
    # the page of independent measurements sets the summary beside them: it changes with the summary
    import runpy

    runpy.run_path(str(ROOT / "dev" / "docs_independent.py"), run_name="__main__")


if __name__ == "__main__":
    main()
