"""`gpudissect export --format accelsim`: a GPGPU-Sim / Accel-Sim configuration fragment for the GPU a run
measured. Each option carries, in a comment, the figure key (or device property) it came from; the latency
options follow Accel-Sim's own tuner (its microbenchmarks print `-gpgpu_l2_rop_latency` as L2 hit minus L1
hit, `-dram_latency` as DRAM minus L2 hit). What a simulator needs and the run did not measure is listed at
the end, never invented. Measured facts with no option of their own (sizes, lines, sectors, bandwidths,
TLB) are given as comments for whoever writes the cache geometry strings.

GPGPU-Sim's option parser reads `-name value` pairs separated by whitespace and skips `#` to the end of a
line: every option here is one line of exactly two tokens, and nothing from the run (a GPU name, say) can
reach a line outside a comment.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gpudissect.models import Figure, RunInfo
from gpudissect.textsafe import visible

HEADER = "# gpudissect accelsim fragment"


@dataclass(frozen=True)
class Option:
    name: str  # without the leading dash
    value: str
    source: str  # the figure key(s) or device property it came from


def _num(figs: dict[str, Figure], key: str) -> float | None:
    f = figs.get(key)
    if f is None or f.check != "ok" or isinstance(f.value, bool) or not isinstance(f.value, int | float):
        return None
    v = float(f.value)
    return v if math.isfinite(v) else None


def _prop(run: RunInfo, name: str) -> int | None:
    v = run.extra.get(name)
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else None


def _latency_options(figs: dict[str, Figure]) -> list[Option]:
    out = []
    l1, l2, dram = (_num(figs, f"mem.latency.{k}_cycles") for k in ("l1_hit", "l2_hit", "dram"))
    smem = _num(figs, "mem.latency.shared_cycles")
    if l1 is not None:
        out.append(Option("gpgpu_l1_latency", str(round(l1)), "mem.latency.l1_hit_cycles"))
    if smem is not None:
        out.append(Option("gpgpu_smem_latency", str(round(smem)), "mem.latency.shared_cycles"))
    if l1 is not None and l2 is not None and l2 > l1:
        out.append(
            Option(
                "gpgpu_l2_rop_latency",
                str(round(l2 - l1)),
                "mem.latency.l2_hit_cycles - mem.latency.l1_hit_cycles",
            )
        )
    if l2 is not None and dram is not None and dram > l2:
        out.append(Option("dram_latency", str(round(dram - l2)), "mem.latency.dram_cycles - mem.latency.l2_hit_cycles"))
    return out


def _device_options(run: RunInfo) -> list[Option]:
    out = []
    if run.sm_count > 0:
        out.append(Option("gpgpu_n_clusters", str(run.sm_count), "device property: SM count"))
        out.append(Option("gpgpu_n_cores_per_cluster", "1", "one SM per cluster, as Accel-Sim's Volta-on configs"))
    cc = (_prop(run, "cc_major"), run.extra.get("cc_minor"))
    if cc[0] is not None and isinstance(cc[1], int) and not isinstance(cc[1], bool) and 0 <= cc[1] < 10:
        out.append(Option("gpgpu_compute_capability_major", str(cc[0]), "device property: compute capability"))
        out.append(Option("gpgpu_compute_capability_minor", str(cc[1]), "device property: compute capability"))
    threads, warp = _prop(run, "max_threads_per_sm"), _prop(run, "warp_size")
    if threads and warp:
        out.append(
            Option("gpgpu_shader_core_pipeline", f"{threads}:{warp}", "device properties: threads per SM, warp size")
        )
    for name, prop in (
        ("gpgpu_shader_registers", "regs_per_sm"),
        ("gpgpu_shmem_size", "smem_per_sm"),
        ("gpgpu_shmem_per_block", "smem_per_block_optin"),
    ):
        if (v := _prop(run, prop)) is not None:
            out.append(Option(name, str(v), f"device property: {prop}"))
    return out


# measured facts a simulator's cache strings and bandwidth settings are written from: (key, what)
FACTS = (
    ("mem.size.l1_bytes", "L1 data capacity (bytes)"),
    ("mem.line.l1_bytes", "L1 line (bytes)"),
    ("mem.sector.l1_bytes", "L1 sector (bytes)"),
    ("mem.size.l2_bytes", "L2 capacity measured (bytes)"),
    ("mem.line.l2_bytes", "L2 line (bytes)"),
    ("mem.sector.l2_bytes", "L2 sector (bytes)"),
    ("mem.latency.l2_near_hit_cycles", "L2 hit in the near partition (cycles)"),
    ("mem.latency.l2_far_hit_cycles", "L2 hit in the far partition (cycles)"),
    ("mem.bw.l1_bytes_per_clk_sm", "L1 bandwidth (bytes/clk/SM)"),
    ("mem.bw.shared_bytes_per_clk_sm", "shared memory bandwidth (bytes/clk/SM)"),
    ("mem.bw.l2_bytes_per_clk", "L2 bandwidth (bytes/clk, whole GPU)"),
    ("mem.bw.dram_gbps", "DRAM read bandwidth (GB/s)"),
    ("mem.tlb.l1_entries", "first-level TLB entries"),
    ("mem.tlb.entry_reach_bytes", "TLB entry reach (bytes)"),
    ("cache.const.l1_bytes", "constant L1 capacity (bytes)"),
    ("cache.icache.l0_bytes", "instruction L0 capacity (bytes)"),
)

# what the configs need that no benchmark of this tool measures
NOT_MEASURED = (
    "-gpgpu_clock_domains: the interconnect and L2 clocks (the SM clock measured is given above)",
    "-gpgpu_cache:dl1 / -gpgpu_cache:dl2: sets and associativity (capacity, line and sector are above)",
    "-gpgpu_n_mem, -gpgpu_n_sub_partition_per_mchannel: memory channels and L2 slices",
    "-gpgpu_dram_timing_opt, -dram_data_command_freq_ratio: DRAM timing",
    "-gpgpu_num_sched_per_core, -gpgpu_pipeline_widths, -gpgpu_num_*_units: issue and unit counts",
    "-gpgpu_icnt_* / interconnect configuration",
)


def sm_clock_mhz(figs: dict[str, Figure]) -> float | None:
    """The median of the SM clocks the benchmarks measured in their own kernels."""
    vals = [v for k in figs if k.startswith("clock.") and k.endswith(".sm_mhz") if (v := _num(figs, k)) is not None]
    return statistics.median(vals) if vals else None


def config_text(run: RunInfo, figures: Sequence[Figure]) -> str:
    figs = {f.key: f for f in figures}
    opts = _latency_options(figs) + _device_options(run)
    lines = [
        HEADER,
        visible(f"# run {run.id}: {run.gpu_name} ({run.arch}), {run.mode} mode, started {run.started}"),
        "# latencies in SM cycles; each option's source follows it",
        "",
    ]
    width = max((len(o.name) + len(o.value) for o in opts), default=0) + 3
    lines += [f"{f'-{o.name} {o.value}':<{width}}# {o.source}" for o in opts]
    lines += ["", "# measured, for the cache and bandwidth settings (no option of their own):"]
    clk = sm_clock_mhz(figs)
    if clk is not None:
        lines.append(f"#   SM clock during the run: {clk:.0f} MHz (median of clock.*.sm_mhz)")
    if run.mem_clock_max_mhz and math.isfinite(run.mem_clock_max_mhz):
        lines.append(f"#   memory clock (driver): {run.mem_clock_max_mhz:.0f} MHz, bus {run.mem_bus_bits} bits")
    for key, what in FACTS:
        v = _num(figs, key)
        if v is not None:
            shown = str(int(v)) if v.is_integer() else f"{v:.6g}"
            lines.append(f"#   {what}: {shown} ({key})")
    have = {o.name for o in opts}
    latencies = ("gpgpu_l1_latency", "gpgpu_smem_latency", "gpgpu_l2_rop_latency", "dram_latency")
    missing = [f"-{m}: its figures are not in this run" for m in latencies if m not in have]
    lines += ["", "# not measured by this run (set them from elsewhere):"]
    lines += [f"#   {m}" for m in [*missing, *NOT_MEASURED]]
    return "\n".join(lines) + "\n"


def parse(text: str) -> dict[str, str]:
    """The options as GPGPU-Sim's option parser reads a config file: `#` to the end of a line is a comment,
    the rest is whitespace-separated `-name value` pairs. Raises ValueError on anything else."""
    tokens = [t for line in text.splitlines() for t in line.split("#", 1)[0].split()]
    if len(tokens) % 2:
        raise ValueError(f"an option without a value: {tokens[-1]!r}")
    out: dict[str, str] = {}
    for name, value in zip(tokens[::2], tokens[1::2]):
        if not name.startswith("-") or value.startswith("-"):
            raise ValueError(f"not a -name value pair: {name!r} {value!r}")
        if name[1:] in out:
            raise ValueError(f"option {name} given twice")
        out[name[1:]] = value
    return out


def write_dir(directory: str, text: str) -> str:
    """DIR/gpgpusim.config, written atomically; DIR is made if its parent exists. A gpgpusim.config there that
    we did not write is never replaced. Returns the file's path; OSError / ValueError with the reason."""
    import os
    import tempfile

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "gpgpusim.config")
    if os.path.lexists(path):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                ours = fh.readline().rstrip("\n") == HEADER
        except OSError:
            ours = False
        if not ours or not os.path.isfile(path) or os.path.islink(path):
            raise ValueError(f"{path} exists and was not written by gpudissect: not replaced")
    fd, tmp = tempfile.mkstemp(prefix=".gpgpusim.config.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path
