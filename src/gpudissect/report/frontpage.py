"""The report's front page, the GPU at a glance: the memory hierarchy (picture and table), the compute
ceilings, a headline table of our figures beside the published values of this GPU's family, and what is
unusual about the run, with real problems apart from the normal conditions of a run (the power cap a
tensor-core benchmark reaches) and from what was not measured."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from gpudissect.models import BenchResult, Figure, RunInfo
from gpudissect.report import ceilings as ceil
from gpudissect.report import hierarchy as hier
from gpudissect.report.compare import CLOCK_NOTE, PublishedLike, norm_unit, published_rows
from gpudissect.report.document import Block, Bullets, Details, Heading, Image, Para, Table
from gpudissect.report.summary import failed_keys
from gpudissect.report.tables import NONE_CELL, fmt_number, fmt_value, truncate

FAILED_VALUE = "FAILED: no number recorded"
HIERARCHY_PNG = "front_memory-hierarchy.png"

# The reader's order of the suites (bench.SUITES, which the report layer may not import).
SUITE_ORDER = ("memory", "cache", "atomics", "isa", "tensor", "numerics", "hopper", "gemm", "app", "link")

# The figures a GPU engineer looks for first; the ones the run has, with a published value of its family, head
# the table (a run without them gets the first published comparisons of each suite instead).
HEADLINE_KEYS = (
    "mem.latency.l1_hit_cycles",
    "mem.latency.shared_cycles",
    "mem.latency.l2_hit_cycles",
    "mem.latency.l2_far_hit_cycles",
    "mem.latency.dram_cycles",
    "mem.size.l2_bytes",
    "mem.bw.l1_bytes_per_clk_sm",
    "mem.bw.shared_bytes_per_clk_sm",
    "mem.bw.l2_bytes_per_clk",
    "mem.bw.dram_gbps",
    "isa.latency.ffma_cycles",
    "tc.mma.f16_f32.m16n8k16.latency_cycles",
    "tc.mma.f16_f32.m16n8k16.peak_fma_per_clk_sm",
    "tc.wgmma.f16_f32.m64n256k16.ss_zero_tflops",
    "tc.wgmma.e4m3_f32.m64n256k32.ss_zero_tflops",
    "tc.wgmma.s8_s32.m64n256k32.ss_zero_tops",
    "dsm.latency.remote_cs2_cycles",
    "dsm.bw.ring_cs2_peak_tbps",
    "app.llm.7b.bf16.tokens_per_s",
)
_HEADLINE_MIN = 6
_HEADLINE_FILL = 20
_LIST_MAX = 12  # problems listed one by one; beyond, the rest folded

# NVML throttle reasons that are the normal state of a heavy run, not a problem: the power cap (every tensor-core
# or GEMM benchmark reaches it) and reasons that are not a slowdown at all (idle, clocks set on purpose).
_NORMAL_THROTTLE = ("swpowercap",)
_BENIGN_THROTTLE = ("idle", "applicationsclock", "applicationclock", "displayclock", "none")


def _norm(reason: str) -> str:
    return "".join(ch for ch in reason.lower() if ch.isalnum())


def is_benign(reason: str) -> bool:
    return any(b in _norm(reason) for b in _BENIGN_THROTTLE)


def is_normal(reason: str) -> bool:
    return any(b in _norm(reason) for b in _NORMAL_THROTTLE)


def front_page(
    run: RunInfo,
    benches: Sequence[BenchResult],
    figures: Sequence[Figure],
    refs: Iterable[PublishedLike],
    family: list[str],
    out: Path,
) -> list[Block]:
    """The front page's blocks; writes the hierarchy picture into `out`."""
    b: list[Block] = [Heading(2, "At a glance")]
    b += _hierarchy(run, figures, out)
    b += _compute(run, figures)
    b += _headline(figures, refs, family)
    b += unusual(run, benches, figures)
    return b


def _hierarchy(run: RunInfo, figures: Sequence[Figure], out: Path) -> list[Block]:
    levels = hier.levels(run, figures)
    b: list[Block] = [Heading(3, "Memory hierarchy")]
    if not any(lv.measured for lv in levels):
        return [*b, Para("The memory hierarchy was not measured in this run (no memory suite figures).", "muted")]
    if hier.draw(levels, out / HIERARCHY_PNG, f"{run.gpu_name}: memory hierarchy"):
        b.append(Image(HIERARCHY_PNG, "memory hierarchy: size, latency, bandwidth per level", wide=True))
    b.append(Table(hier.HEADERS, [hier.level_cells(lv) for lv in levels], "lrrrrr"))
    b.append(
        Para(
            "From this run's figures (mem.size.*, mem.latency.*, mem.bw.*); sizes marked (driver) are the device "
            "properties the run recorded, * marks a bandwidth derived from the other (x or / the SM count, x the "
            "SM clock the bandwidth benchmark ran at).",
            "muted",
        )
    )
    return b


def _compute(run: RunInfo, figures: Sequence[Figure]) -> list[Block]:
    rows = [ceil.ceiling_cells(c) for c in ceil.ceilings(run, figures)]
    b: list[Block] = [Heading(3, "Compute ceilings")]
    if not rows:
        return [*b, Para("No compute ceiling was measured in this run (isa, tensor or hopper suites).", "muted")]
    b.append(Table(ceil.HEADERS, rows, "lrrrrl"))
    b.append(
        Para(
            "The best rate measured per unit and type (over instructions, shapes and operand sources); the "
            "published peak is the run's own GPU model's (reference/peaks.py), per SM per clock, so the ratio "
            "does not depend on the clock.",
            "muted",
        )
    )
    return b


def _headline(figures: Sequence[Figure], refs: Iterable[PublishedLike], family: list[str]) -> list[Block]:
    b: list[Block] = [Heading(3, "Headline figures beside the published values")]
    if not family:
        return [*b, Para("No published values for this GPU's family: see the published values section.", "muted")]
    rows = {r.key: r for r in published_rows(figures, refs, family)}
    keys = [k for k in HEADLINE_KEYS if k in rows and any(rows[k].published.values())]
    if len(keys) < _HEADLINE_MIN:  # another GPU's run: the first comparisons of each suite
        by_suite: dict[str, list[str]] = {}
        for k, r in rows.items():
            if any(r.published.values()) and k not in keys:
                by_suite.setdefault(r.suite, []).append(k)
        order = [*SUITE_ORDER, *sorted(set(by_suite) - set(SUITE_ORDER))]
        extra = [k for s in order for k in by_suite.get(s, [])[:3]]
        keys += extra[: _HEADLINE_FILL - len(keys)]
    if not keys:
        return [*b, Para("No headline figure has a published value for this GPU's family.", "muted")]
    table = []
    for k in keys:
        r = rows[k]
        gpu, cell = next((g, cs[0]) for g, cs in r.published.items() if cs)
        ours = FAILED_VALUE if r.value is None else fmt_value(r.value, r.unit)
        same = norm_unit(cell.unit) == norm_unit(r.unit)
        ratio = NONE_CELL
        if same and isinstance(r.value, int | float) and cell.value:
            ratio = f"{r.value / cell.value:.2f}"
        pub = fmt_value(cell.value, cell.unit) + ("" if same else f" {cell.unit}")
        src = ", ".join(x for x in (gpu, cell.paper, cell.table) if x)
        note = CLOCK_NOTE if r.unit_class == "clock" else ""
        table.append([k, ours, r.unit, pub, src, ratio, note])
    b.append(Table(["Figure", "Ours", "Unit", "Published", "GPU, paper, table", "Ratio", "Note"], table, "lrlrlrl"))
    return b


def unusual(run: RunInfo, benches: Sequence[BenchResult], figures: Sequence[Figure]) -> list[Block]:
    """What is unusual about the run, in three parts: real problems (failed checks, benchmarks that did not end
    ok, throttling other than the power cap), normal conditions (the power cap), and what was not measured."""
    b: list[Block] = [Heading(3, "Attention")]
    problems = _problems(run, benches, figures)
    if problems:
        shown, rest = problems[:_LIST_MAX], problems[_LIST_MAX:]
        b.append(Bullets(shown, "alert"))
        if rest:
            b.append(Details(f"{len(rest)} more", [Bullets(rest, "alert")]))
    else:
        b.append(Para("No failed checks, failed benchmarks or throttling beyond the power cap.", "muted"))
    normal = _normal_conditions(benches)
    if normal:
        b += [Heading(3, "Normal conditions of this run"), *normal]
    missing = _not_measured(benches, figures)
    if missing:
        b += [Heading(3, "Not measured"), Bullets(missing)]
    return b


def _problems(run: RunInfo, benches: Sequence[BenchResult], figures: Sequence[Figure]) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    last = {f.key: f for f in figures}
    for key in failed_keys(figures):
        f = last[key]
        why = f.note or f.method
        items.append((FAILED_VALUE, f"— {key} ({f.suite}/{f.bench})" + (f": {truncate(why)}" if why else "")))
    for x in benches:
        if x.status not in ("ok", "skipped"):
            msg = truncate(x.message, 500) if x.message else "no message"
            items.append((f"Bench {x.status.upper()}", f"— {x.suite}/{x.bench}: {msg}"))
    for x in benches:
        t = x.telemetry
        bad = [r for r in (t.throttle_reasons if t else []) if not is_benign(r) and not is_normal(r)]
        if bad and x.status == "ok":
            clock = ""
            if t and t.sm_clock_mhz_median and run.sm_clock_max_mhz:
                clock = (
                    f" (SM clock median {fmt_number(t.sm_clock_mhz_median)} of {fmt_number(run.sm_clock_max_mhz)} MHz)"
                )
            items.append(
                (
                    "Throttled",
                    f"— {x.suite}/{x.bench}: {', '.join(bad)}{clock}; its ns, GB/s and TFLOPS figures may have moved",
                )
            )
    return items


def _normal_conditions(benches: Sequence[BenchResult]) -> list[Block]:
    capped = [x for x in benches if x.telemetry and any(is_normal(r) for r in x.telemetry.throttle_reasons)]
    if not capped:
        return []
    reasons = sorted({r for x in capped for r in x.telemetry.throttle_reasons if is_normal(r)})  # type: ignore[union-attr]
    clocks = [x.telemetry.sm_clock_mhz_median for x in capped if x.telemetry and x.telemetry.sm_clock_mhz_median]
    span = f", SM clock median {fmt_number(min(clocks))}–{fmt_number(max(clocks))} MHz" if clocks else ""
    names = ", ".join(f"{x.suite}/{x.bench}" for x in capped)
    return [
        Para(
            f"{len(capped)} benchmarks reached the power cap ({', '.join(reasons)}{span}): the normal state of a "
            f"tensor-core or GEMM run, not a fault. Their per-clock figures stand; their TFLOPS are at the clock "
            f"the cap left. {names}."
        )
    ]


def _not_measured(benches: Sequence[BenchResult], figures: Sequence[Figure]) -> list[tuple[str, str]]:
    items = [
        ("Skipped", f"— {x.suite}/{x.bench}: {truncate(x.message, 300) if x.message else 'no reason recorded'}")
        for x in benches
        if x.status == "skipped"
    ]
    present = {x.suite for x in benches} | {f.suite for f in figures}
    absent = [s for s in SUITE_ORDER if s not in present]
    if absent and present:
        items.append(("Not in this run", f"— suites {', '.join(absent)}"))
    return items
