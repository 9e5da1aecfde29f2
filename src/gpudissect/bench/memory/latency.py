"""The memory suite, latency: the traditional P-chase over footprint with each level's latency and size
derived from the curve (Luo §4.1 Fig. 2 / Table III; Jia §3.1), shared-memory latency, and the index chase
(j = a[j], the papers' shared-memory form) beside our pointer chase and the papers' own L1 chase.

Sizes come from the device (L2 size, shared-memory limits) and from the curve itself, never from
constants about a particular GPU.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from ...analysis import plateaus
from ...device.cuda import Arg
from ...models import Point
from ..context import BenchContext
from ..registry import Param, benchmark, fits_free_memory, in_range, multiple_of, parse_size
from ..shared import (
    PCHASE,
    Chaser,
    ClockMeter,
    capacity_of_level,
    chain_cycle,
    flush_l2,
    log_grid,
    sass_of,
    walk,
)

ALL_OPS = [PCHASE[op] for op in ("ca", "cg", "default")]
_check_stride = multiple_of(8, "each chain element is a 64-bit address")
_check_footprint = fits_free_memory(0.9)


# ---------------------------------------------------------------------------------------
# 1. Traditional P-chase: latency over footprint, with levels and sizes detected
# ---------------------------------------------------------------------------------------
@benchmark(
    name="pchase_latency",
    title="Latency vs footprint (traditional P-chase)",
    axes={
        "cache_op": "ca, cg, default",
        "footprint": "4 KiB .. max_footprint (default 4 x L2), log steps + fine steps at every knee (quick mode: "
        ".ca and default at the L1 knee only)",
    },
    kernels=ALL_OPS,
    params={
        "stride": Param(128, "bytes between chain elements (multiple of 8)", parse_size, _check_stride),
        "max_footprint": Param(None, "largest footprint (default 4 x L2)", parse_size, _check_footprint),
        "steps": Param(4096, "timed loads per launch", int, in_range(64, 1 << 24, "64 .. 16M")),
    },
    timeout_s=400,
    paper="000 §4.1 Fig. 2 / Table III; 002 §3.1",
)
def pchase_latency(ctx: BenchContext) -> None:
    l2 = ctx.props["l2_bytes"]
    stride, steps = ctx.params["stride"], ctx.params["steps"]
    top = ctx.params["max_footprint"] or 4 * l2
    reps = 3 if ctx.quick else 5
    grid = log_grid(4096, top, 2 if ctx.quick else 4)
    curves: dict[str, tuple[list[float], list[Point]]] = {}
    clock = ClockMeter()
    ops = ("ca", "cg", "default")
    for i, op in enumerate(ops):
        ch = Chaser(ctx, op, top + stride)
        pts = {}

        def measure(fp: int) -> None:
            n = ch.build_random(fp, stride)
            # full warm pass while the chain can be cached; beyond that it only costs time
            if fp <= 1.5 * l2:
                pts[fp] = ch.point(fp, n, steps, reps)
            else:  # beyond L2: each repetition chases a part of the chain no earlier one touched,
                flush_l2(ctx, 2 * l2)  # after evicting what building the chain left in L2
                pts[fp] = ch.point(fp, 0, steps, reps, spread_starts=True)

        for j, fp in enumerate(grid):
            measure(fp)
            ctx.progress(i * 100 + j * 70 // len(grid), len(ops) * 100, f"{op} {fp >> 10} KiB")
        # fine steps around every knee; quick mode refines .ca and default only up to their second plateau (L2
        # hits): only .ca's L1 level and size come from them, and each refined point above walks a 20-55 MB chain
        # three times at L2-to-DRAM latency (6.6 s of chases for the two curves on quick-m's)
        for rnd in range(2 if ctx.quick else 3):
            xs = sorted(pts)
            ys = [pts[x].y for x in xs]
            new = plateaus.refine_points(xs, ys, per_gap=3 if ctx.quick else 6)
            upto = plateaus.second_plateau_start(xs, ys) if ctx.quick and op != "cg" else top
            new = [f for f in new if 4096 <= f <= min(top, upto) and f not in pts][:40]
            for fp in new:
                measure(fp)
            ctx.progress(i * 100 + 70 + rnd * 10, len(ops) * 100, f"{op} refining")
        ch.close()  # before the next cache operator's chain buffer
        for c, ns in ch.cycles_ns:
            clock.add(c, ns)
        xs = sorted(pts)
        curves[op] = (xs, [pts[x] for x in xs])
        ctx.series(
            op,
            "footprint",
            "bytes",
            "latency",
            "cycles",
            [pts[x] for x in xs],
            plot="logx",
            figure="latency_vs_footprint",
            stride=stride,
            steps=steps,
            reps=reps,
        )
    _derive_levels(ctx, curves, l2)
    clock.report(ctx, "the timed chases")


def _derive_levels(ctx: BenchContext, curves: dict[str, tuple[list[float], list[Point]]], l2: int) -> None:
    method = "plateaus of the latency-vs-footprint curve (analysis.plateaus)"
    xs, pts = curves["ca"]
    ys = [p.y for p in pts]
    pl = plateaus.find_plateaus(xs, ys)
    ok = bool(pl) and plateaus.first_plateau_is_lowest(pl, 0.05)
    # The L1 plateau must be the lowest one; if the first plateau is not, the chain missed L1.
    check = "ok" if ok else "failed"
    note = "" if ok else "the first plateau of the .ca curve is not the lowest: the chain missed L1"
    if pl:
        low = pl[0]
        on = [y for x, y in zip(xs, ys) if low.x_first <= x <= low.x_last]
        ctx.figure(
            "mem.latency.l1_hit_cycles",
            low.level,
            "cycles",
            "derived",
            f"lowest plateau of the .ca curve; {method}",
            (min(on), max(on)),
            check,
            note,
        )
        cap = capacity_of_level(pts, low.level)
        if cap is not None and cap < xs[-1]:
            ctx.figure(
                "mem.size.l1_bytes",
                cap,
                "bytes",
                "derived",
                "largest .ca footprint within 10% of the L1 hit latency (default carve-out)",
                check=check,
                note=note,
            )
    xs, pts = curves["cg"]
    ys = [p.y for p in pts]
    pl = plateaus.find_plateaus(xs, ys)
    knees = plateaus.find_knees(xs, ys)
    if pl:
        first = pl[0]
        ctx.figure(
            "mem.latency.l2_hit_cycles",
            first.level,
            "cycles",
            "derived",
            f"first plateau of the .cg curve (L1 bypassed); {method}",
        )
        last = pl[-1]
        if len(pl) >= 2:
            ctx.figure(
                "mem.latency.dram_cycles",
                last.level,
                "cycles",
                "derived",
                f"last plateau of the .cg curve (footprint >= {last.x_first / 2**20:.0f} MiB)",
            )
    if len(pl) >= 2:
        # The knee is where the curve crosses halfway between the plateaus on either side of it,
        # interpolated in log(footprint): a grid-independent point, unlike "the last grid point
        # before the rise" (which moved 49.4 -> 42.5 MiB between the quick and the full grid).
        knee_how = (
            "footprint where the .cg curve crosses halfway between the {a} plateau ({lo:.0f} cycles) and the "
            "{b} plateau ({hi:.0f} cycles), interpolated linearly in log2(footprint) between the grid points "
            "around the crossing (analysis.plateaus.capacity_by_midpoint)"
        )
        lo, hi = pl[-2].level, pl[-1].level
        tail = [(x, y) for x, y in zip(xs, ys) if x >= pl[-2].x_first]
        try:
            ctx.figure(
                "mem.size.l2_bytes",
                round(plateaus.capacity_by_midpoint(*zip(*tail), lo, hi)),
                "bytes",
                "derived",
                knee_how.format(a="next-to-last", b="last (DRAM)", lo=lo, hi=hi),
                note=f"device reports {l2} bytes",
            )
        except ValueError as e:
            ctx.figure("mem.size.l2_bytes", "n/a", "bytes", "derived", str(e), check="failed")
        if len(pl) >= 3:
            lo2, hi2 = pl[0].level, pl[1].level
            try:
                head = [(x, y) for x, y in zip(xs, ys) if x <= pl[1].x_last]
                ctx.figure(
                    "mem.size.l2_partition_knee_bytes",
                    round(plateaus.capacity_by_midpoint(*zip(*head), lo2, hi2)),
                    "bytes",
                    "derived",
                    knee_how.format(a="first (L2 hit)", b="second", lo=lo2, hi=hi2),
                )
            except ValueError:
                pass
    del knees
    ctx.figure("mem.size.l2_reported_bytes", l2, "bytes", "assumed", "device attribute L2_CACHE_SIZE")


# ---------------------------------------------------------------------------------------
# 2. Shared-memory latency
# ---------------------------------------------------------------------------------------
@benchmark(
    name="shared_latency",
    title="Shared-memory load latency (chase)",
    axes={"elements": "1024 u32, random single cycle"},
    kernels=[PCHASE["ca"]],
    paper="000 Table III row Shared Memory",
)
def shared_latency(ctx: BenchContext) -> None:
    dev, n, steps = ctx.device, 1024, 8192
    rng = np.random.default_rng(7)
    chain = chain_cycle(n, rng)
    dchain, out = ctx.upload(chain), ctx.alloc(32)
    fn = ctx.kernel(PCHASE["ca"], "smem_pchase")
    clock = ClockMeter()
    vals = []
    for _ in range(7):
        fn(1, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u64(steps), Arg.ptr(out)], smem=n * 4)
        dev.sync("smem_pchase")
        end, cycles, ns = (int(v) for v in dev.download(out, np.uint64, 3))
        ctx.check(end == walk(chain, n + steps), f"shared chase ended at {end}, expected {walk(chain, n + steps)}")
        vals.append(cycles / steps)
        clock.add(cycles, ns)
    _per_launch_series(ctx, "ld.shared.u32", vals, "shared_latency")
    ctx.median_figure(
        "mem.latency.shared_cycles",
        vals,
        "cycles",
        "measured",
        f"median of 7 launches, {steps} dependent ld.shared.u32 each (pointer chase: the loaded value is "
        "the next address)",
    )
    clock.report(ctx, "the shared-memory chases")


def _per_launch_series(ctx: BenchContext, name: str, vals: list[float], figure: str) -> None:
    """Each launch's latency in launch order (drift between launches shows)."""
    ctx.series(
        name,
        "repetition",
        "",
        "latency",
        "cycles",
        [Point(i, v) for i, v in enumerate(vals)],
        plot="line",
        figure=figure,
    )


INDEX_VS_POINTER = (
    "a pointer chase loads the next address itself, so nothing sits between dependent loads; the "
    "papers' index chase (j = a[j]) adds the scaled-index address arithmetic (one IMAD/LEA) to every hop"
)
INDEX_FOLDED = (
    "a pointer chase loads the next address itself, so nothing sits between dependent loads; in the papers' "
    "index chase (j = s[j]) ptxas folds the scaling into the load's own address (LDS [R.X4]) on this GPU, so "
    "no instruction sits between its hops either"
)
_LDS_X4 = r"LDS(\.U)? R\d+, \[R\d+\.X4\]"


def shared_index_hop(ctx: BenchContext) -> str:
    """What the shared index chase adds to a hop on this GPU, from the SASS it runs (the SASS its family
    declares where no disassembler is installed): address arithmetic, or nothing (the scaling folded)."""
    sass = sass_of(ctx, PCHASE["ca"], "smem_ichase")
    if sass is None:
        folded = any(".X4" in p for p in PCHASE["ca"].required_for(ctx.target)["smem_ichase"])
    else:
        folded = re.search(_LDS_X4, sass) is not None
    return INDEX_FOLDED if folded else INDEX_VS_POINTER


# ---- the papers' L1 chase --------------------------------------------------------------------------------
# The L1 row of the conference paper (003 Table IV: 40.7 cycles on the H800) comes from the l1_lat benchmark
# of its released code (HPMLL/NVIDIA-Hopper-Benchmark, RegularUnits/l1_lat/l1_lat.cu, adapted from Jia et
# al.'s): a u64 pointer chase, not an index chase. One thread writes 4096 addresses 8 B apart (element i ->
# i + 1) inside the kernel, loads element 0, and times 32768 dependent ld.global.ca.u64 between two 32-bit
# %clock reads (cycles / 32768), with no pass before the first clock read. The journal's 32.0 (000 Table
# III) comes from its random_latency benchmark, a warm random pointer chase like ours. memory_pchase.cu's
# paper_l1_lat has that form; PAPER_L1_N / PAPER_L1_ITERS are its constants.
PAPER_L1_N, PAPER_L1_ITERS = 4096, 32768
PAPER_L1_CODE = "HPMLL/NVIDIA-Hopper-Benchmark RegularUnits/l1_lat/l1_lat.cu"
REPRODUCTION = (
    "41.1 cycles on an H100 SXM by the reproduction of that code (Johnsonms/NVIDIA-Hopper-Benchmark, "
    "reproduction/H100-dapperdingo/raw/l1_lat.log)"
)
SECTOR = 32  # bytes an L1 miss fills (one sector of the 128 B line)

_INSTR = re.compile(r"/\*[0-9a-f]+\*/\s+(?:@!?U?P[T\d]\s+)?(\S+)\s*(.*)")
_NO_DEST = ("ST", "RED", "BRA", "BAR", "EXIT", "CALL", "RET", "JMP", "BSYNC", "BSSY", "WARPSYNC", "NOP")


def _regs(text: str, wide: bool = False) -> set[int]:
    """The registers an operand names (R6.64 and a wide operand: the pair)."""
    out = set()
    for m in re.finditer(r"\bR(\d+)(\.64)?\b", text):
        out |= {int(m.group(1)), int(m.group(1)) + 1} if (wide or m.group(2)) else {int(m.group(1))}
    return out


def _dest(op: str, operands: list[str]) -> set[int]:
    """Registers an instruction writes: its first operand where that is a register (a pair for .64/.WIDE)."""
    if op.startswith(_NO_DEST) or not operands or not re.fullmatch(r"R\d+", operands[0]):
        return set()
    return _regs(operands[0], wide=".64" in op or ".WIDE" in op)


def _parse(sass: str) -> list[tuple[str, set[int], set[int], set[int]]]:
    """Each instruction: opcode, registers written, registers read, registers in its address ([...])."""
    out = []
    for line in sass.splitlines():
        m = _INSTR.match(line.strip())
        if m:
            op, operands = m.group(1), [o.strip() for o in m.group(2).split(",")] if m.group(2) else []
            dest = _dest(op, operands)
            src = _regs(", ".join(operands[1:] if dest else operands))
            out.append((op, dest, src, _regs(" ".join(o for o in operands if "[" in o))))
    return out


def chase_hop(sass: str, load: str = "LDG") -> tuple[list[str], str] | None:
    """The instructions a chase executes per hop: those between one load and the next that both depend on the
    first load's result and feed the second load's address, and that load's opcode; the most frequent such hop
    of the function (its unrolled timed loop). None when no load's address depends on the load before it."""
    ins = _parse(sass)
    loads = [i for i, x in enumerate(ins) if x[0].startswith(load)]
    hops: Counter[tuple[tuple[str, ...], str]] = Counter()
    for a, b in zip(loads, loads[1:]):
        live, tainted = set(ins[a][1]), []
        for _op, dest, src, _ in ins[a + 1 : b]:  # forward: what carries the loaded value
            tainted.append(bool(live & src))
            live = live | dest if tainted[-1] else live - dest
        if not live & ins[b][3]:
            continue
        need, path = set(ins[b][3]), []
        for (op, dest, src, _), t in reversed(list(zip(ins[a + 1 : b], tainted))):  # backward: what feeds b
            if dest & need:
                need -= dest
                if t:
                    need |= src
                    path.insert(0, op)
        hops[(tuple(path), ins[b][0])] += 1
    if not hops:
        return None
    (path, op), _ = hops.most_common(1)[0]
    return list(path), op


# What the L1 chases declare per hop, where no disassembler reads the SASS they run (shared.py's patterns):
# the index chase one IMAD.WIDE.U32 (the 128 B scale and the base), the pointer chases nothing.
DECLARED_HOPS = {
    "pchase": ([], "the u64 load"),
    "ichase": (["IMAD.WIDE.U32"], "the u32 load"),
    "paper_l1_lat": ([], "the u64 load"),
}


def l1_hop(ctx: BenchContext, function: str) -> str:
    """`function: A -> B -> LOAD` per hop, from the SASS this GPU runs (the declared SASS without one)."""
    sass = sass_of(ctx, PCHASE["ca"], function)
    hop = chase_hop(sass) if sass else None
    if hop is None:
        path, load = DECLARED_HOPS[function]
        how = " (declared SASS: no disassembler here)" if sass is None else " (declared SASS: no hop found)"
    else:
        (path, load), how = hop, ""
    return f"{function} {' -> '.join([*path, load])}{how}"


@benchmark(
    name="index_chase",
    title="Index chase (j = a[j]) beside the pointer chase and the papers' L1 code",
    axes={
        "level": "shared memory (1024 u32), L1 hit (.ca, 128 elements 128 B apart)",
        "form": "pointer, index, the papers' L1 code (cold and warm)",
    },
    kernels=[PCHASE["ca"]],
    paper="000 Table III rows L1 Cache / Shared Memory; 003 Table IV",
)
def index_chase(ctx: BenchContext) -> None:
    dev, steps, reps = ctx.device, 8192, 7
    clock = ClockMeter()
    rng = np.random.default_rng(7)
    # shared memory: the same random single cycle through 1024 u32, as indices and as addresses
    n = 1024
    chain = chain_cycle(n, rng)
    dchain, out = ctx.upload(chain), ctx.alloc(64)
    res: dict[str, list[float]] = {"shared pointer": [], "shared index": [], "l1 pointer": [], "l1 index": []}
    res |= {"l1 paper code": [], "l1 paper code warm": []}
    want = walk(chain, n + steps)
    for _ in range(reps):  # alternate the two forms so clock drift cannot favour one
        for form, fname in (("pointer", "smem_pchase"), ("index", "smem_ichase")):
            ctx.kernel(PCHASE["ca"], fname)(
                1, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u64(steps), Arg.ptr(out)], smem=n * 4
            )
            dev.sync(fname)
            end, cycles = (int(v) for v in dev.download(out, np.uint64, 2))
            ctx.check(end == want, f"{fname} ended at {end}, expected {want}")
            res[f"shared {form}"].append(cycles / steps)
    # L1: 128 elements 128 B apart (16 KiB, far inside L1), random single cycle
    m = 128
    idx = chain_cycle(m, rng)
    arr = np.zeros(m * 32, np.uint32)
    arr[np.arange(m) * 32] = idx
    darr = ctx.upload(arr)
    ch = Chaser(ctx, "ca", m * 128)
    ch.build_random(m * 128, 128)
    iwant = walk(idx, 2 * m + steps)
    papers = ctx.alloc(PAPER_L1_N * 8)  # the papers' kernel writes its own chain, every launch
    # element 0, then the timed hops (a warm pass of N hops ends where it began)
    pwant = papers.ptr + (1 + PAPER_L1_ITERS) % PAPER_L1_N * 8
    for _ in range(reps):
        res["l1 pointer"].append(ch.run(2 * m, steps)[0])
        ctx.kernel(PCHASE["ca"], "ichase")(1, 1, [Arg.ptr(darr), Arg.u32(2 * m), Arg.u32(steps), Arg.ptr(out)])
        dev.sync("ichase")
        end, cycles, _, ns = (int(v) for v in dev.download(out, np.uint64, 4))
        ctx.check(end == iwant, f"ichase ended at {end}, expected {iwant}")
        res["l1 index"].append(cycles / steps)
        clock.add(cycles, ns)
        for k, warm in (("l1 paper code", 0), ("l1 paper code warm", PAPER_L1_N)):
            ctx.kernel(PCHASE["ca"], "paper_l1_lat")(1, 1, [Arg.ptr(papers), Arg.u32(warm), Arg.ptr(out)])
            dev.sync("paper_l1_lat")
            end, cycles = (int(v) for v in dev.download(out, np.uint64, 2))
            ctx.check(end == pwant, f"paper_l1_lat (warm {warm}) ended at {end:#x}, expected {pwant:#x}")
            res[k].append(cycles / PAPER_L1_ITERS)
    for c, ns in ch.cycles_ns:
        clock.add(c, ns)
    for k, v in res.items():
        _per_launch_series(ctx, k, v, "index_vs_pointer_chase")
    med = {k: float(np.median(v)) for k, v in res.items()}
    hop = {f: l1_hop(ctx, f) for f in ("pchase", "ichase", "paper_l1_lat")}
    per_hop = f"per hop on this GPU: {hop['ichase']}; {hop['pchase']}; {hop['paper_l1_lat']}"
    ctx.median_figure(
        "mem.latency.shared_index_chase_cycles",
        res["shared index"],
        "cycles",
        "measured",
        f"ld.shared.u32 j = s[j] over 1024 u32, {steps} dependent hops per launch, median of {reps} launches "
        f"alternated with the pointer chase of the same data ({med['shared pointer']:.1f} cycles): "
        f"{shared_index_hop(ctx)}",
        note=f"index - pointer = {med['shared index'] - med['shared pointer']:+.1f} cycles per hop",
    )
    ctx.median_figure(
        "mem.latency.l1_hit_index_chase_cycles",
        res["l1 index"],
        "cycles",
        "measured",
        f"ld.global.ca.u32 j = a[32 j] over 128 lines (16 KiB), {steps} dependent hops per launch, median of {reps} "
        f"launches alternated with the pointer chase of the same data ({med['l1 pointer']:.1f} cycles) and the "
        f"papers' L1 code: {per_hop}. The index form adds the scaled-index address arithmetic to every hop; the "
        "papers' L1 figures are pointer chases (003 Table IV: l1_lat, see mem.latency.l1_papers_code_cycles; "
        "000 Table III: random_latency, see mem.latency.l1_hit_cycles)",
        note=f"index - pointer = {med['l1 index'] - med['l1 pointer']:+.1f} cycles per hop",
    )
    ctx.median_figure(
        "mem.latency.l1_hit_pointer_chase_cycles",
        res["l1 pointer"],
        "cycles",
        "measured",
        f"ld.global.ca.u64 pointer chase over the same 128 lines, median of {reps} launches",
    )
    _papers_code_figures(ctx, res, med, hop["paper_l1_lat"], reps)
    clock.report(ctx, "the L1 chases")


def _papers_code_figures(
    ctx: BenchContext, res: dict[str, list[float]], med: dict[str, float], hop: str, reps: int
) -> None:
    """The papers' L1 code as it runs (the first pass over its freshly written chain inside the timed window)
    and after one untimed pass, with what the difference costs per 32 B sector of that first pass."""
    cold, warm = med["l1 paper code"], med["l1 paper code warm"]
    sectors = PAPER_L1_N * 8 // SECTOR
    bare = ", no address arithmetic (a pointer chase, like mem.latency.l1_hit_pointer_chase_cycles)"
    form = (
        f"the L1 chase of the papers' released code ({PAPER_L1_CODE}) in its own form (paper_l1_lat): one thread "
        f"writes {PAPER_L1_N} u64 addresses 8 B apart (element i -> i + 1) in the kernel, loads element 0, then "
        f"times {PAPER_L1_ITERS} dependent ld.global.ca.u64 between two 32-bit %clock reads (cycles / "
        f"{PAPER_L1_ITERS}); per hop on this GPU: {hop}" + ("" if "->" in hop else bare)
    )
    ctx.median_figure(
        "mem.latency.l1_papers_code_cycles",
        res["l1 paper code"],
        "cycles",
        "measured",
        f"{form}; as the papers run it, the first pass over the just-written chain is timed with the other "
        f"{PAPER_L1_ITERS // PAPER_L1_N - 1}; median of {reps} launches alternated with the other L1 chases",
        note=(
            f"003 Table IV prints 40.7 on the H800; {REPRODUCTION}; the same code after one untimed pass: "
            f"{warm:.1f} cycles (mem.latency.l1_papers_code_warm_cycles), so the first pass costs "
            f"{cold - warm:+.1f} cycles per timed hop, {(cold - warm) * PAPER_L1_ITERS / sectors:.0f} cycles for "
            f"each of its {sectors} {SECTOR} B sectors if each misses L1 once"
        ),
    )
    ctx.median_figure(
        "mem.latency.l1_papers_code_warm_cycles",
        res["l1 paper code warm"],
        "cycles",
        "measured",
        f"{form}; here after {PAPER_L1_N} untimed hops (one pass over the chain), so no first pass is timed; "
        f"median of {reps} launches alternated with the other L1 chases",
        note=f"pointer chase of 128 random lines: {med['l1 pointer']:.1f} cycles",
    )
