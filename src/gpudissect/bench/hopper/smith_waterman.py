"""The hopper suite, Smith-Waterman protein database search (Luo et al. 000 §8.2, Fig. 15): GCUPS of
hopper_smith_waterman.cu by score type (s16 and s32 on DPX, half2 and float without), each built for the GPU
(sm_90a on Hopper; the DPX functions in hardware or emulated, as the build's SASS shows) and as compute_80
PTX the driver JIT-compiles (dpx.dual_builds). The host side here packs the
query profile and gap scores per score type, decodes the scores and plants homologs in the generated
database; sw_reference.py (BLOSUM62, the generator, the CPU scores every checked sequence must equal)
is the CPU side.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...capability import Target
from ...device.cuda import Arg
from ...models import Point
from ..context import BenchContext
from ..registry import Facts, KernelSpec, Needs, Param, benchmark, in_range
from . import sw_reference as swr
from .dpx import jit_prebuild, jit_unavailable, load_builds, native_sass
from .dpx_sass import EMULATING_FAMILIES, declared_hardware, has_hardware_dpx, relu_max

SW_KINDS = ("s16", "s32", "half2", "float")
SW_T = 32  # query rows per pass (SW_T in hopper_smith_waterman.cu)
SW_SASS = {
    "sw_s16": [r"VIADDMNMX\.S16x2 ", r"VIMNMX3\.S16x2\.RELU ", r"VIMNMX\.S16x2\.RELU ", r"LDS "],
    "sw_s32": [r"VIADDMNMX ", r"VIMNMX3\.RELU ", r"LDS "],
    "sw_half2": [r"HMNMX2 ", r"HADD2 ", r"LDS "],
    "sw_float": [r"FMNMX ", r"FADD ", r"LDS "],
}
DPX_KINDS = ("s16", "s32")  # the score kinds written with DPX functions


def _sw_sass(family: str) -> dict[str, list[str]]:
    """The SASS where the DPX functions are emulated: before Hopper a max with zero beside the adds (16-bit
    lanes taken apart and put back; on Volta the max is ISETP.LT + SEL), and before sm_80 the half2 max from
    HSET2 masks (max.f16x2 is sm_80+); on sm_120 the two-operand VIMNMX (its 16x2 and .RELU forms) with a
    separate add."""
    if family == "blackwell-consumer":
        return SW_SASS | {
            "sw_s16": [r"VIMNMX\.S16x2\.RELU ", r"VIADD\.16x2 ", r"LDS "],
            "sw_s32": [r"VIMNMX\.S32\.RELU ", r"IADD R\d+, ", r"LDS "],
        }
    lds = r"LDS(?:\.U)? "  # Volta's and Turing's shared load is LDS.U
    out = {
        "sw_s16": [relu_max(family), r"LOP3\.LUT ", lds],
        "sw_s32": [relu_max(family), r"(?:IMAD\.IADD|IADD3) ", lds],
        "sw_half2": [r"HMNMX2 ", r"HADD2 ", lds],
        "sw_float": [r"FMNMX ", r"FADD ", lds],
    }
    if family in ("volta", "turing"):
        out["sw_half2"] = [r"HSET2\.GT\.AND ", r"LOP3\.LUT ", r"HADD2 ", lds]
    return out


def sw_spec(rows: int = SW_T) -> KernelSpec:
    return KernelSpec(
        "hopper_smith_waterman.cu",
        SW_SASS,
        {"SW_T": rows},
        label=f"hopper_smith_waterman.cu[T={rows}]",
        required_by_family={f: _sw_sass(f) for f in EMULATING_FAMILIES},
    )


SW_SPEC = sw_spec()

QUICK_QUERIES = [144, 729, 2005, 5478]


def _parse_lengths(text: str) -> list[int]:
    return [int(v) for v in text.replace(" ", "").split(",") if v]


def _check_lengths(v: list[int], facts: Facts) -> str | None:
    return None if v and all(8 <= x <= 65536 for x in v) else "query lengths must be 8 .. 65536"


def _check_db(v: int, facts: Facts) -> str | None:
    return None if 2 <= v <= 1 << 26 and v % 2 == 0 else "an even number of sequences, 2 .. 64M"


def _check_rows(v: int, facts: Facts) -> str | None:
    return None if v in (8, 16, 32, 64) else "8, 16, 32 or 64"


def profile_words(prof: np.ndarray, kind: str) -> np.ndarray:
    """(20, rows) integer profile -> the kernel's (20, words) uint32 profile for a score kind."""
    if kind == "s32":
        return prof.astype(np.int32).view(np.uint32)
    if kind == "float":
        return prof.astype(np.float32).view(np.uint32)
    half = prof.astype(np.int16).view(np.uint16) if kind == "s16" else prof.astype(np.float16).view(np.uint16)
    return (half[:, 0::2].astype(np.uint32) | (half[:, 1::2].astype(np.uint32) << 16)).copy()


def gap_bits(kind: str, value: int) -> int:
    """A (negative) gap score as the kernel's bit pattern (both lanes for the packed kinds)."""
    if kind == "s32":
        return int(np.int32(value).view(np.uint32))
    if kind == "float":
        return int(np.float32(value).view(np.uint32))
    h = int(np.int16(value).view(np.uint16)) if kind == "s16" else int(np.float16(value).view(np.uint16))
    return h | (h << 16)


def db_words(db: np.ndarray, block: int = 2048) -> np.ndarray:
    """(nseq, n) residues -> the kernel's (n/4, nseq) words, word (j4, s): the transpose by blocks of sequences
    that stay in cache (4x faster than one strided copy of the whole database)."""
    w = db.view(np.uint32)
    out = np.empty((w.shape[1], w.shape[0]), np.uint32)
    for s in range(0, w.shape[0], block):
        out[:, s : s + block] = w[s : s + block].T
    return out


def decode_scores(raw: np.ndarray, kind: str) -> np.ndarray:
    r = np.asarray(raw, np.int32)
    if kind == "s32":
        return r.astype(np.int64)
    if kind == "float":
        return r.view(np.float32).astype(np.float64).astype(np.int64)
    h = r.astype(np.uint16)
    return (
        h.view(np.int16).astype(np.int64) if kind == "s16" else h.view(np.float16).astype(np.float64).astype(np.int64)
    )


def plant_homologs(db: np.ndarray, queries: list[np.ndarray], rng: np.random.Generator, window: int = 120) -> list[int]:
    """Overwrite one database sequence per query with a mutated window of that query (30% substitutions,
    a deletion and an insertion of 3-6 residues), so that the checked subset has real alignments with
    gaps. A window of 120 keeps every score below 2^11, where fp16 is still exact. Returns the indices."""
    n, count = db.shape[1], db.shape[0]
    idx = [int(v) for v in np.linspace(0, count - 1, len(queries) + 2)[1:-1]]
    for q, i in zip(queries, idx):
        w = min(window, len(q))
        s0 = int(rng.integers(0, len(q) - w + 1))
        seg = q[s0 : s0 + w].copy()
        sub = rng.random(w) < 0.3
        seg[sub] = swr.generate_sequences(1, int(sub.sum()), int(rng.integers(1 << 30)))[0]
        cut = int(rng.integers(w // 4, w // 2))
        seg = np.concatenate([seg[:cut], seg[cut + int(rng.integers(3, 7)) :]])  # deletion
        ins = int(rng.integers(w // 2, max(w // 2 + 1, len(seg))))
        seg = np.concatenate([seg[:ins], swr.generate_sequences(1, int(rng.integers(3, 7)), i)[0], seg[ins:]])
        seg = seg[:n]
        at = int(rng.integers(0, n - len(seg) + 1))
        db[i, at : at + len(seg)] = seg
    return idx


METHOD_SW = (
    "BLOSUM62, gap open 11 / extend 1 (CUDASW++ 4.0 defaults, used by 000 §8.2); one thread per database "
    "sequence (two for s16/half2, one per halfword lane), query swept in passes of {T} rows held in "
    "registers, boundary row through global memory, query-profile slice in shared memory; GCUPS = "
    "query length x subject length x sequences / CUDA-event time, mean over the queries"
)


@benchmark(
    name="smith_waterman",
    title="Smith-Waterman protein database search (BLOSUM62, affine gaps): GCUPS by score type, sm_90a vs compute_80",
    axes={
        "kind": ", ".join(SW_KINDS),
        "build": "this GPU's cubin (sm90 on Hopper: DPX), sm80 (compute_80 PTX JIT, where the GPU runs it and "
        "is not itself compute capability 8.0)",
        "query length": "the 20 lengths 144..5478 of the CUDASW++ benchmark (quick: 144, 729, 2005, 5478)",
    },
    kernels=[SW_SPEC],
    prebuild=jit_prebuild(SW_SPEC),  # the default rows' (another --set rows builds its PTX itself)
    params={
        "db_size": Param(None, "database sequences (default 1,000,000 full, 131072 quick)", int, _check_db),
        "subject_len": Param(
            1024,
            "length of every database sequence (multiple of 4)",
            int,
            lambda v, f: None if 4 <= v <= 1 << 16 and v % 4 == 0 else "a multiple of 4, 4 .. 65536",
        ),
        "queries": Param(
            None, "comma-separated query lengths (default: the paper's 20; quick: 4)", _parse_lengths, _check_lengths
        ),
        "check_seqs": Param(
            None,
            "database sequences scored on the CPU per query (default 12 quick, 24 full)",
            int,
            in_range(1, 4096),
        ),
        "rows": Param(SW_T, "query rows per pass held in registers (8, 16, 32, 64)", int, _check_rows),
    },
    timeout_s=1800,
    needs=Needs(),  # every GPU: the s16/s32 kinds' DPX functions in hardware or emulated
    paper="000 §8.2 Fig. 15",
)
def smith_waterman(ctx: BenchContext) -> None:
    dev = ctx.device
    nseq = ctx.params["db_size"] or (131072 if ctx.quick else 1_000_000)
    n = ctx.params["subject_len"]
    lengths = ctx.params["queries"] or (QUICK_QUERIES if ctx.quick else swr.QUERY_LENGTHS)
    kcheck = ctx.params["check_seqs"] or (12 if ctx.quick else 24)
    rows = ctx.params["rows"]
    spec = SW_SPEC if rows == SW_T else sw_spec(rows)
    # the builds load in a thread (the driver JIT-compiles the compute_80 PTX: seconds on a fresh machine, the
    # GIL released) while the host generates the database and scores the checked sequences; nothing is timed yet
    with ThreadPoolExecutor(1) as pool:
        loading = pool.submit(load_builds, ctx, spec)
        t0 = time.perf_counter()
        queries = [swr.generate_query(m, 1000 + i) for i, m in enumerate(lengths)]
        db = swr.generate_sequences(nseq, n, seed=1)
        planted = plant_homologs(db, queries, np.random.default_rng(2))
        rng = np.random.default_rng(3)
        check_idx = np.unique(
            np.concatenate([planted, [0, nseq - 1], rng.choice(nseq, max(0, kcheck - len(planted) - 2), replace=False)])
        )
        cpu = [swr.sw_scores(q, db[check_idx]) for q in queries]
        words = db_words(db)
        del db
        prep_s = time.perf_counter() - t0
        builds = loading.result()
    ddb = ctx.upload(words)
    del words

    # boundary buffer: (H, E) per thread and column; one launch covers as many threads as fit
    max_threads = nseq  # the one-lane kinds
    budget = int(0.45 * dev.free_memory())
    batch_threads = max(256, min(max_threads, budget // (n * 8)) // 256 * 256)
    dbound = ctx.alloc(min(max_threads, batch_threads) * n * 8)
    dscores = ctx.alloc(nseq * 4)
    total, done = len(SW_KINDS) * len(builds) * len(lengths), 0
    gcups: dict[tuple[str, str], list[float]] = {}
    ref_scores: list[np.ndarray | None] = [None] * len(lengths)
    failed: set[tuple[str, str]] = set()
    for bname, mod in builds.items():  # this GPU's build first
        for kind in SW_KINDS:
            fn = mod.function(f"sw_{kind}")
            lanes = 2 if kind in ("s16", "half2") else 1
            stride = (rows // lanes) | 1
            smem = len(swr.AMINO) * stride * 4
            nthreads = nseq // lanes
            per_launch = min(nthreads, batch_threads)
            pts = []
            for qi, (m, q) in enumerate(zip(lengths, queries)):
                npass = -(-m // rows)
                pw = profile_words(swr.query_profile(q, npass * rows), kind)
                dprof = ctx.upload(np.ascontiguousarray(pw))
                open_b, ext_b = gap_bits(kind, -swr.GAP_OPEN), gap_bits(kind, -swr.GAP_EXTEND)
                elem = 4 * lanes  # bytes of a db element (one word per lane)

                def launch() -> None:
                    for s in range(0, nthreads, per_launch):
                        cnt = min(per_launch, nthreads - s)
                        fn(
                            (cnt + 255) // 256,
                            256,
                            [
                                Arg.ptr(ddb.ptr + s * elem),
                                Arg.i32(nthreads),
                                Arg.i32(cnt),
                                Arg.i32(n),
                                Arg.ptr(dprof),
                                Arg.i32(pw.shape[1]),
                                Arg.i32(npass),
                                Arg.ptr(dbound),
                                Arg.ptr(dscores.ptr + s * lanes * 4),
                                Arg.u32(open_b),
                                Arg.u32(ext_b),
                            ],
                            smem=smem,
                        )

                dev.memset32(dscores, 0x7FFF7FFF)
                if qi == 0:  # warm-up: module load and first-launch costs stay out of the timing
                    launch()
                    dev.sync(f"sw_{kind} ({bname}) warm-up")
                ms = dev.time_ms(launch, reps=1)[0]
                ctx.free(dprof)  # one query's profile at a time
                got = decode_scores(dev.download(dscores, np.int32, nseq), kind)
                ok = ctx.soft_check(
                    np.array_equal(got[check_idx], cpu[qi]),
                    f"sw_{kind} ({bname}) query {m}: scores {got[check_idx].tolist()} != CPU "
                    f"{cpu[qi].tolist()} at sequences {check_idx.tolist()}",
                )
                if ref_scores[qi] is None:
                    ref_scores[qi] = got
                else:
                    diff = int((got != ref_scores[qi]).sum())
                    ok &= ctx.soft_check(
                        diff == 0,
                        f"sw_{kind} ({bname}) query {m}: {diff} of {nseq} scores differ from the first variant's",
                    )
                if not ok:
                    failed.add((kind, bname))
                g = m * n * nseq / (ms * 1e6)
                pts.append(Point(m, g, extra={"ms": ms, "max_score": int(got.max())}))
                done += 1
                ctx.progress(done, total, f"{kind} {bname} query {m}")
            gcups[(kind, bname)] = [p.y for p in pts]
            ctx.series(
                f"{kind} {bname}",
                "query length",
                "residues",
                "GCUPS",
                "GCUPS",
                pts,
                plot="line",
                figure="sw_gcups",
                db_size=nseq,
                subject_len=n,
                rows=rows,
            )

    mode = ("quick mode: " if ctx.quick else "") + (
        f"{len(lengths)} queries ({', '.join(map(str, lengths))}) against {nseq} generated sequences of length {n}"
        + ("" if (nseq, len(lengths)) == (1_000_000, 20) else " (the paper: 20 queries, 1M sequences)")
        + f"; {len(check_idx)} sequences per query scored on the CPU (incl. {len(planted)} planted homologs), "
        f"every score equal across all variants; host preparation {prep_s:.1f} s"
    )
    method = METHOD_SW.format(T=rows)
    native, arch, jit_na = next(iter(builds)), ctx.target.arch, jit_unavailable(ctx.target)
    sass = native_sass(ctx, spec)
    for kind in SW_KINDS:
        for bname in builds:
            v = gcups[(kind, bname)]
            how = "compute_80 PTX JIT" if bname != native else f"{arch} cubin{_dpx_note(kind, sass, ctx.target)}"
            ctx.figure(
                f"sw.gcups.{kind}_{bname}",
                float(np.mean(v)),
                "GCUPS",
                "measured",
                f"{how}; {method}",
                (min(v), max(v)),
                "failed" if (kind, bname) in failed else "ok",
                note=mode,
            )
        if jit_na is not None:
            if native != "sm80":  # (an sm_80's own build holds the sm80 figures)
                ctx.figure(f"sw.gcups.{kind}_sm80", jit_na, "GCUPS", "measured", "skipped")
            continue
        a, b = gcups[(kind, native)], gcups[(kind, "sm80")]
        ok = (kind, native) not in failed and (kind, "sm80") not in failed
        ctx.figure(
            f"sw.{kind}.speedup_vs_sm80",
            float(np.mean(a)) / float(np.mean(b)),
            "x",
            "derived",
            f"mean GCUPS of the {arch} build / the compute_80 JIT build",
            check="ok" if ok else "failed",
        )


def _dpx_note(kind: str, sass: dict[str, str] | None, t: Target) -> str:
    """What the SASS of this GPU's build says of a DPX kind's functions: nothing where they are the hardware
    instructions, else that they are emulated; without a disassembler, what its declared SASS says."""
    if kind not in DPX_KINDS:
        return ""
    hardware = has_hardware_dpx(sass, [f"sw_{kind}"])
    if hardware is None:
        if declared_hardware(t):
            return ""
        return " (DPX functions emulated by its declared SASS: not disassembled here)"
    return "" if hardware else " (DPX functions emulated: no VIADDMNMX/VIMNMX3 in its SASS)"
