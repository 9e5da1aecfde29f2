"""The L2 partitions measured as they are (Luo §4.1 Table IV, done per condition and per SM).

One probe set of lines is brought into L2 in three ways (host memcpy, kernel write, read miss
after an L2 flush) and chased from chosen SMs with per-access timing. Each line is tagged with
its home partition from a hash recovered from the miss latencies (analysis.partition); near hit,
far hit, near miss and far miss then each come from the accesses whose condition defines them.
"""

from __future__ import annotations

import numpy as np

from ...analysis import clustering, partition
from ...device.cuda import Arg
from ...models import Point
from ..context import BenchContext
from ..registry import benchmark
from ..shared import PCHASE, ClockMeter

LINES = 4096  # probe lines (random, distinct, 128 B apart at least)
REGION = 16 << 20  # the lines lie in 16 MiB: 8 pages of 2 MiB, each with its own physical frame bits
PAGE_BITS = 21
OPS = {"cg": "ld.global.cg", "ca": "ld.global.ca", "volatile": "ld.volatile.global"}
TOUCHES = ["first read", "second read", "third read", "separate launch"]


class ProbeChaser:
    """A random chain through LINES lines of a 2 MiB-aligned region, chased from a chosen SM. Its buffers
    come from the context: freed when the benchmark ends."""

    def __init__(self, ctx: BenchContext, seed: int = 11):
        self.ctx, self.dev = ctx, ctx.device
        p = ctx.props
        self.sms, l2 = p["sm_count"], p["l2_bytes"]
        self.buf = ctx.alloc(REGION + (2 << 20))
        self.base = -(-self.buf.ptr // (2 << 20)) * (2 << 20)
        rng = np.random.default_rng(seed)
        self.lines = rng.choice(REGION // 128, LINES, replace=False).astype(np.uint32)
        self.offsets = self.lines.astype(np.int64) * 128
        self.dperm = ctx.upload(self.lines)
        self.scratch = ctx.alloc(2 * l2)
        self.host = np.zeros(REGION // 8, np.uint64)
        nxt = np.roll(self.lines, -1).astype(np.uint64)
        self.host[self.lines.astype(np.int64) * 16] = np.uint64(self.base) + nxt * np.uint64(128)
        self.claim, self.out, self.lat = ctx.alloc(4), ctx.alloc(64), ctx.alloc(4 * 3 * LINES)
        self.writers = ctx.alloc(4 * LINES // 256)
        self.clock = ClockMeter()
        # passes over the chain one launch can time: chase_on_sm keeps 8 bytes of shared memory per access
        # (three on most GPUs; two where a block gets 64 KiB, as on Turing)
        self.max_passes = min(3, p["smem_per_block_optin"] // (8 * LINES))

    def kernel_write(self) -> np.ndarray:
        """Write every probe line whole from a kernel; returns the SM that wrote each chain position."""
        init = self.ctx.kernel(PCHASE["cg"], "chain_write_lines")
        blocks = LINES // 256
        init(
            blocks, 256, [Arg.u64(self.base), Arg.ptr(self.dperm), Arg.u64(LINES), Arg.u64(128), Arg.ptr(self.writers)]
        )
        self.dev.sync("chain_write_lines")
        return np.repeat(self.dev.download(self.writers, np.uint32, blocks).astype(np.int64), 256)

    def partial_write(self) -> None:
        """Write only the 8-byte pointer of every probe line (the rest of each 32-byte sector untouched)."""
        init = self.ctx.kernel(PCHASE["cg"], "chain_init")
        init(LINES // 256, 256, [Arg.u64(self.base), Arg.ptr(self.dperm), Arg.u64(LINES), Arg.u64(128)])
        self.dev.sync("chain_init")

    def host_write(self) -> None:
        self.dev.upload(self.host, self.buf, self.base - self.buf.ptr)
        self.dev.sync("host memcpy")

    def flush(self) -> None:
        """Evict L2: write a scratch buffer of twice its size (every 32-byte sector)."""
        init = self.ctx.kernel(PCHASE["cg"], "chain_init_seq")
        n = self.scratch.nbytes // 32
        init(self.sms * 4, 256, [Arg.ptr(self.scratch), Arg.u64(n), Arg.u64(32)])
        self.dev.sync("flush")

    def chase(self, op: str, passes: int, sm: int) -> np.ndarray:
        """Per-access latencies of `passes` passes over the chain from its first line, on SM `sm`."""
        dev, count = self.dev, passes * LINES
        fn = self.ctx.kernel(PCHASE[op], "chase_on_sm")
        dev.memset32(self.claim, 0)
        # one block per SM (the shared memory asked for allows no second), so every SM gets one
        smem = max(8 * count, self.ctx.props["smem_per_block_optin"] // 2 + 1024)
        fn(
            4 * self.sms,
            1,
            [
                Arg.u64(self.base + int(self.offsets[0])),
                Arg.u64(0),
                Arg.u32(count),
                Arg.u32(sm),
                Arg.ptr(self.claim),
                Arg.ptr(self.lat),
                Arg.ptr(self.out),
            ],
            smem=smem,
        )
        dev.sync("chase_on_sm")
        end, got_sm, cyc, ns, _ = (int(v) for v in dev.download(self.out, np.uint64, 5))
        claims = int(dev.download(self.claim, np.uint32, 1)[0])
        self.ctx.check(claims >= 1 and got_sm == sm, f"no chase ran on SM {sm} (claims {claims}, ran on {got_sm})")
        want = self.base + int(self.offsets[count % LINES])
        self.ctx.check(end == want, f"chase on SM {sm} ended at {end:#x}, expected {want:#x}")
        self.clock.add(cyc, ns)
        return dev.download(self.lat, np.uint32, count).astype(np.int64)


def _labels(miss: np.ndarray) -> np.ndarray:
    """Near (0) / far (1) label of each miss: the 2-means split of the trimmed latencies."""
    kept, _ = clustering.trim_outliers(miss, 0.99)
    cl = clustering.kmeans_1d(kept, 2)
    cut = (cl[0].hi + cl[1].lo) / 2
    return (miss > cut).astype(np.int64)


def _med(v: np.ndarray) -> float:
    return float(np.median(v)) if v.size else float("nan")


@benchmark(
    name="l2_fine_pchase",
    title="L2 near/far partitions: per-access latencies by condition, hash and SM",
    axes={
        "condition": "host memcpy, kernel write, read miss after an L2 flush",
        "touch": "first, second, third (same launch), separate launch",
        "load": "cg, ca, volatile",
        "sm": "every SM (host memcpy first touch, flush miss, copy hit); two reference SMs for the matrix",
    },
    kernels=[PCHASE[op] for op in OPS],
    timeout_s=300,
    paper="000 §4.1 Table IV",
)
def l2_fine_pchase(ctx: BenchContext) -> None:
    _run(ctx, ProbeChaser(ctx))


def _run(ctx: BenchContext, pc: ProbeChaser) -> None:
    sms = pc.sms
    # 1. the hash, from the misses of SM 0 after a flush
    pc.kernel_write(), pc.flush()
    ref = pc.chase("cg", 2, 0)
    h = partition.recover_hash(pc.offsets, _labels(ref[:LINES]), 7, PAGE_BITS)
    home = h.partition(pc.offsets)
    # 2. every SM: first touch after a host memcpy (lines at home only), then misses and copy hits
    per: dict[str, list[float]] = {k: [] for k in ("near_hit", "far_hit", "near_miss", "far_miss", "copy_hit", "rehit")}
    iqr: dict[str, list[tuple[float, float]]] = {k: [] for k in per}
    side, agree = [], []
    for sm in range(sms):
        pc.kernel_write(), pc.flush()
        miss = pc.chase("cg", 1, sm)
        # a host memcpy over lines already in L2 leaves them at home only (copies dropped); over lines
        # not in L2 it goes to DRAM, so the lines are written by a kernel first
        pc.kernel_write(), pc.host_write()
        two = pc.chase("cg", 2, sm)
        first, again = two[:LINES], two[LINES:]
        s = partition.side_of(miss, home)
        side.append(s)
        far = home != s
        agree.append(float(np.mean(_labels(miss) == far)))
        for k, v in (
            ("near_hit", first[~far]),
            ("far_hit", first[far]),
            ("near_miss", miss[~far]),
            ("far_miss", miss[far]),
            ("copy_hit", again[far]),
            ("rehit", again[~far]),
        ):
            per[k].append(_med(v))
            iqr[k].append((float(np.percentile(v, 25)), float(np.percentile(v, 75))))
        ctx.progress(sm + 1, sms + 12, f"SM {sm}")
        if sm == 0:
            _per_access_series(ctx, first, miss, far)
    agreement = float(np.mean(agree))
    hash_ok = agreement >= 0.8 and h.agreement - h.runner_up >= 0.15
    check = "ok" if hash_ok else "failed"
    ctx.figure(
        "mem.l2.partition_hash_bits",
        h.describe(),
        "",
        "derived",
        "Walsh-Hadamard search over all XOR masks of in-page address bits 7..20, with one fitted bit per "
        f"2 MiB page, on the 2-means near/far labels of {LINES} read misses of SM 0 (analysis.partition)",
        check=check,
        note=f"best other mask agrees on {h.runner_up:.3f} of SM 0's misses (chance plus fitting)",
    )
    ctx.figure(
        "mem.l2.partition_hash_agreement",
        round(agreement, 4),
        "fraction",
        "derived",
        f"mean over all {sms} SMs of the fraction of read misses whose 2-means near/far label equals the "
        "hash's home partition (flipped for the SMs near the other partition)",
        (min(agree), max(agree)),
        check=check,
        note=f"SM 0 alone: {h.agreement:.4f}",
    )
    cond = {
        "near_hit": "first read of a line after a host memcpy of the probe set over its L2-resident lines "
        "(a copy-engine write leaves the line in its home partition only), "
        "lines whose home partition is near the reading SM",
        "far_hit": "first read of a line after a host memcpy, lines whose home partition is the far one: served across "
        "the partition link",
        "near_miss": "first read after writing the lines and flushing L2 (2 x L2 written), home partition near",
        "far_miss": "first read after writing the lines and flushing L2, home partition far",
        "copy_hit": "second read (same launch) of far-home lines whose first read after the host memcpy was a far hit",
    }
    for k, text in cond.items():
        v = per[k]
        key = "mem.latency.l2_far_copy_hit_cycles" if k == "copy_hit" else f"mem.latency.l2_{k}_cycles"
        ctx.figure(
            key,
            float(np.median(v)) if hash_ok else "n/a",
            "cycles",
            "measured",
            f"{text}; {LINES} lines, per-access clock64 (fine-grained chase, .cg), median per SM, median over all "
            f"{sms} SMs (spread: min..max of the per-SM medians); home partition from mem.l2.partition_hash_bits",
            (min(v), max(v)),
            check=check,
        )
    for k in ("near_hit", "far_hit"):
        v = per[k]
        ctx.figure(
            f"mem.l2.{k}_sm_spread_cycles",
            float(max(v) - min(v)),
            "cycles",
            "derived",
            f"max - min over the {sms} SMs of their median {k.replace('_', ' ')} latency (conditions as "
            f"mem.latency.l2_{k}_cycles)",
            check=check,
            note=f"fastest SM {int(np.argmin(v))}, slowest SM {int(np.argmax(v))}",
        )
    for k, label in (
        ("near_hit", "near hit"),
        ("far_hit", "far hit"),
        ("copy_hit", "far-home line, near copy"),
        ("near_miss", "near miss"),
        ("far_miss", "far miss"),
    ):
        ctx.series(
            label,
            "SM",
            "",
            "latency",
            "cycles",
            [Point(i, per[k][i], iqr[k][i][0], iqr[k][i][1], LINES, {"near_partition": side[i]}) for i in range(sms)],
            plot="line",
            figure="l2_per_sm_miss" if "miss" in k else "l2_per_sm",
            spread="25th..75th percentile of the SM's accesses",
        )
    near0 = [i for i in range(sms) if side[i] == side[0]]
    ctx.figure(
        "mem.l2.sms_near_partition_of_sm0",
        len(near0),
        "SMs",
        "derived",
        "SMs whose read misses are faster on the same home partition as SM 0's",
        note="SMs: " + ",".join(map(str, near0)),
    )
    if hash_ok:
        _matrix(ctx, pc, home, side, per)
    pc.clock.report(ctx, "the fine-grained chases")


def _per_access_series(ctx: BenchContext, first: np.ndarray, miss: np.ndarray, far: np.ndarray) -> None:
    for name, v, f in (
        ("host memcpy, first read, near home", first, ~far),
        ("host memcpy, first read, far home", first, far),
        ("after flush, near home", miss, ~far),
        ("after flush, far home", miss, far),
    ):
        sel = np.flatnonzero(f)
        ctx.series(
            name,
            "access",
            "",
            "latency",
            "cycles",
            [Point(int(i), float(v[i])) for i in sel],
            plot="hist",
            figure="l2_fine_latency" if "memcpy" in name else "l2_fine_miss_latency",
            sm=0,
        )


def _matrix(ctx: BenchContext, pc: ProbeChaser, home: np.ndarray, side: list[int], per: dict[str, list[float]]) -> None:
    """Conditions x touches x load kinds on one SM per side; then who benefits from a copy."""
    refs = [side.index(s) for s in (0, 1) if s in side]
    ctx.series(
        f"home partition far from SM {refs[0]}",
        "access",
        "",
        "far home (1) / near home (0)",
        "",
        [Point(k, float(home[k] != side[refs[0]])) for k in range(LINES)],
        plot="line",
        figure="l2_access_home",
        sm=refs[0],
        note="the chain order of the l2_access_* series: access k reads the same line in every series",
    )
    writer_side: dict[str, np.ndarray] = {}

    def write_lines() -> None:
        pc.flush()
        writer_side["sm"] = np.array([side[w] for w in pc.kernel_write()])

    preps = {
        "host memcpy": lambda: (pc.kernel_write(), pc.host_write()),
        "kernel write": write_lines,
        "8-byte kernel write": lambda: (pc.flush(), pc.partial_write()),
        "read miss after flush": lambda: (pc.kernel_write(), pc.flush()),
    }
    cells: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    step = 0
    for op in OPS:
        for sm in refs:
            far = home != side[sm]
            cut = (per["near_hit"][sm] + per["far_hit"][sm]) / 2
            for cname, prep in preps.items():
                prep()
                three = pc.chase(op, pc.max_passes, sm)
                if pc.max_passes < 3:  # the touches one launch cannot hold are unmeasured (NaN)
                    three = np.concatenate([three, np.full((3 - pc.max_passes) * LINES, np.nan)])
                sep = pc.chase(op, 1, sm)
                touches = [three[:LINES], three[LINES : 2 * LINES], three[2 * LINES :], sep]
                if op == "cg" and sm == refs[0]:  # every access of this SM's cells, in chain order
                    for tn, t in zip(TOUCHES, touches):
                        if np.isnan(t).all():
                            continue
                        ctx.series(
                            tn,
                            "access",
                            "",
                            "latency",
                            "cycles",
                            [Point(k, float(v)) for k, v in enumerate(t)],
                            plot="hist",
                            figure=f"l2_access_{cname.replace(' ', '_').replace('-', '')}",
                            sm=sm,
                            condition=cname,
                            load=OPS[op],
                        )
                cell = {
                    "near": [_med(t[~far]) for t in touches],
                    "far": [_med(t[far]) for t in touches],
                    "far_slow": [float(np.mean(t[far] > cut)) if not np.isnan(t).all() else np.nan for t in touches],
                }
                if cname == "kernel write":  # far-home lines by the side of the SM that wrote them
                    mine = writer_side["sm"] == side[sm]
                    cell["far_mine"] = [_med(t[far & mine]) for t in touches]
                    cell["far_other"] = [_med(t[far & ~mine]) for t in touches]
                cells[(op, cname, sm)] = cell
            step += 1
            ctx.progress(pc.sms + step, pc.sms + 12, f"matrix {op} SM {sm}")
    touch_names = TOUCHES
    for op in OPS:
        for sm in refs:
            pts = []
            for ci, cname in enumerate(preps):
                c = cells[(op, cname, sm)]
                for ti, tn in enumerate(touch_names):
                    for hi, hn in enumerate(("near", "far")):
                        if np.isnan(c[hn][ti]):
                            continue  # a touch this GPU's launch could not hold
                        pts.append(
                            Point(ci * 10 + ti * 2 + hi, c[hn][ti], extra={"label": f"{cname}: {tn}, {hn} home"})
                        )
            ctx.series(
                f"{op} SM {sm}",
                "condition/touch/home",
                "",
                "median latency",
                "cycles",
                pts,
                plot="bar",
                figure="l2_copy_matrix",
                load=OPS[op],
                sm=sm,
            )
    # who benefits: after SM a's read misses, a second SM of a's side and one of the other side read
    a = refs[0]
    same = next((i for i in range(pc.sms) if side[i] == side[a] and i != a), None)
    other = refs[1] if len(refs) > 1 else None
    whom = {}
    for b in (same, other):
        if b is None:
            continue
        pc.kernel_write(), pc.flush()
        pc.chase("cg", 1, a)
        t = pc.chase("cg", 1, b)
        fb = home != side[b]
        whom[b] = (_med(t[~fb]), _med(t[fb]))
    ctx.figure(
        "mem.l2.far_copy_finding",
        _finding(cells, refs, side, whom, a, same, other),
        "",
        "derived",
        "from l2_copy_matrix (4 conditions x 4 touches x 3 load kinds on one SM per side) and a read of the "
        "probe set by a second SM after SM a's read misses; far/near home from mem.l2.partition_hash_bits",
    )


def _finding(
    cells: dict[tuple[str, str, int], dict[str, list[float]]],
    refs: list[int],
    side: list[int],
    whom: dict[int, tuple[float, float]],
    a: int,
    same: int | None,
    other: int | None,
) -> str:
    cg = cells[("cg", "host memcpy", a)]
    near, far, copy, sep = cg["near"][0], cg["far"][0], cg["far"][1], cg["far"][3]
    fl = cells[("cg", "read miss after flush", a)]
    parts = [
        f"SM {a}: a far hit costs {far - near:+.0f} cycles over a near hit ({far:.0f} vs {near:.0f}, first read after "
        "a host memcpy)."
    ]
    copied = copy - near < (far - near) / 2
    parts.append(
        ("It leaves a copy in the reader's near partition: " if copied else "It leaves no near copy: ")
        + f"the second read of far-home lines takes {copy:.0f} cycles, a separate launch {sep:.0f}; "
        f"after a read miss the far-home lines are re-read at {fl['far'][1]:.0f}."
    )
    if same is not None and same in whom:
        parts.append(
            f"SM {same} (same side) then reads SM {a}'s far-home lines at {whom[same][1]:.0f} cycles on its first read"
        )
    if other is not None and other in whom:
        parts.append(
            f"while SM {other} (other side) reads its own far-home lines at {whom[other][1]:.0f}: "
            "the copy serves the reader's side only."
        )
    for sm in refs:
        kw = cells[("cg", "kernel write", sm)]
        own, opp = kw["far_mine"][0], kw["far_other"][0]
        if not (np.isfinite(own) and np.isfinite(opp)):
            continue  # all writing blocks sat on one side for this reader
        fast = [v - near < (far - near) / 2 for v in (own, opp)]
        verdict = {
            (True, False): "a write leaves a copy on the writer's side",
            (False, False): "a write leaves no copy outside the home partition",
            (True, True): "both are served near",
        }.get((fast[0], fast[1]), "the other side's writes are served near")
        parts.append(
            f"After a kernel writes whole lines (L2 flushed before), SM {sm} first reads its far-home lines "
            f"written from its own side at {own:.0f} cycles and those written from the other side at {opp:.0f}: "
            f"{verdict}."
        )
        break
    pw = cells[("cg", "8-byte kernel write", a)]
    if pw["near"][0] > (near + fl["near"][0]) / 2:
        parts.append(
            f"An 8-byte write to a line not in L2 does not make it a hit: the first read misses "
            f"({pw['near'][0]:.0f} / {pw['far'][0]:.0f} cycles near / far home; the rest of the sector comes "
            "from DRAM)."
        )
    diffs = [
        abs(cells[(op, c, sm)][h][t] - cells[("cg", c, sm)][h][t])
        for op in OPS
        for c in ("host memcpy", "kernel write", "8-byte kernel write", "read miss after flush")
        for sm in refs
        for h in ("near", "far")
        for t in range(4)
    ]
    diffs = [d for d in diffs if np.isfinite(d)]  # touches a launch could not hold are NaN
    parts.append(f"Load kind (.cg, .ca, volatile) changes no median by more than {max(diffs):.0f} cycles.")
    return " ".join(parts)
