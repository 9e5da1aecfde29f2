"""The isa suite, tensor-core register mapping (Jia et al. 002 §4.3 Figs. 4.2-4.7; Yan et al. 004 §IV-B
Fig. 1): which thread (lane) and register holds which element of A, B and C/D, found on the GPU.

wmma m16n16k16 (f16, f32 accumulate): memory with a distinct code per element, loaded by wmma.load; the
fragment registers are read back, so every (lane, register, half) names its element directly, as Jia
did for wmma.load_matrix_sync. The accumulator store goes the other way (registers hold codes of
(lane, register), wmma.store writes them: Jia Fig. 4.7).

mma.sync m16n8k16 (f16, f32 accumulate) has no load of its own, so its layout comes from products
(kernels/isa_fragments.cu): one-hot A slots against distinct B codes give which D slots share a row
with an A slot and which B slots share its k; one-hot C slots give D = C. Products fix the layout up
to a renaming of rows, columns and k (any consistent renaming computes the same product); we name the
classes by the PTX ISA's layout and store whether every class agrees with it exactly.

Each of the three is a kernel variant with its own needs (wmma sm_70+, mma.sync m16n8k16 sm_80+, wgmma
sm_90a): a GPU maps the layouts it has, and the others are recorded as skipped.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...device.cuda import Arg, Module
from ...models import Point
from ..context import BenchContext
from ..registry import KernelSpec, Needs, benchmark

# One build of isa_fragments.cu, three variants: each needs its own instruction and holds its own function
# (the kernel file leaves out the functions a target lacks). wmma m16n16k16 is two HMMA.16816 from sm_80 on,
# four HMMA.1688 on Turing and HMMA.884 steps on Volta (NVRTC 13 cannot build sm_70: not checked there).
WMMA_SPEC = KernelSpec(
    "isa_fragments.cu",
    {"frag_wmma": [r"HMMA\.16816\.F32 ", r"LD\.E"]},
    label="isa_fragments.cu[wmma]",
    needs=Needs(features=("wmma",)),
    required_by_family={
        "turing": {"frag_wmma": [r"HMMA\.1688\.F32 ", r"LD\.E"]},
        "volta": {"frag_wmma": [r"HMMA\.884\.F32\.F32", r"LD\.E"]},
    },
)
MMA_SPEC = KernelSpec(
    "isa_fragments.cu",
    {"frag_mma_probe": [r"HMMA\.16816\.F32 "]},
    label="isa_fragments.cu[mma_m16n8k16]",
    needs=Needs(features=("mma_m16n8k16",)),
)
WGMMA_SPEC = KernelSpec(
    "isa_fragments.cu",
    {"frag_wgmma_probe": [r"HGMMA\.64x8x16\.F32 R\d+, R\d+, gdesc", r"WARPGROUP\.ARRIVE"]},
    label="isa_fragments.cu[wgmma_m64n8k16]",
    needs=Needs(features=("wgmma",)),
)
SPECS = [WMMA_SPEC, MMA_SPEC, WGMMA_SPEC]

Slot = tuple[int, int, int]  # (lane, register, half); half 0 for 32-bit elements
Elem = tuple[int, int]  # (row, column) of the matrix


# ---------------------------------------------------------------------------------------
# The PTX ISA's documented layouts of mma.m16n8k16 (f16 A/B, f32 C/D): the names we give the classes
# ---------------------------------------------------------------------------------------
def ptx_a(lane: int, reg: int, half: int) -> Elem:
    g, t = lane >> 2, lane & 3
    return g + 8 * (reg & 1), 2 * t + half + 8 * (reg >> 1)


def ptx_b(lane: int, reg: int, half: int) -> Elem:  # (k, n)
    g, t = lane >> 2, lane & 3
    return 2 * t + half + 8 * reg, g


def ptx_c(lane: int, reg: int, half: int = 0) -> Elem:
    g, t = lane >> 2, lane & 3
    return g + 8 * (reg >> 1), 2 * t + (reg & 1)


def ptx_wg_a(t: int, reg: int, half: int) -> Elem:
    """wgmma m64nNk16 A in registers (f16): thread t = 32 w + 4 g + q."""
    w, g, q = t >> 5, (t & 31) >> 2, t & 3
    return 16 * w + g + 8 * (reg & 1), 8 * (reg >> 1) + 2 * q + half


def ptx_wg_d(t: int, reg: int, half: int = 0) -> Elem:
    """wgmma m64nN f32 D: register i of thread t."""
    w, g, q = t >> 5, (t & 31) >> 2, t & 3
    return 16 * w + g + 8 * ((reg >> 1) & 1), 8 * (reg >> 2) + 2 * q + (reg & 1)


# ---------------------------------------------------------------------------------------
# Pure analysis
# ---------------------------------------------------------------------------------------
F16_ONE = 0x3C00


def f16_code(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, np.float16).view(np.uint16)


def decode_halves(words: np.ndarray) -> np.ndarray:
    """[reg][lane] f16x2 words -> [reg][lane][half] float values."""
    w = np.asarray(words, np.uint32)
    lo = (w & 0xFFFF).astype(np.uint16).view(np.float16)
    hi = (w >> 16).astype(np.uint16).view(np.float16)
    return np.stack([lo, hi], axis=-1).astype(np.float64)


def map_from_codes(values: np.ndarray, n_cols: int) -> dict[Slot, Elem]:
    """values [reg][lane][half] holding codes row * n_cols + col + 1 -> slot -> element (0 = unused)."""
    out: dict[Slot, Elem] = {}
    for (r, lane, h), v in np.ndenumerate(values):
        code = int(round(v)) - 1
        if code >= 0 and abs(v - round(v)) < 1e-6:
            out[(lane, r, h)] = divmod(code, n_cols)
    return out


def holders(m: dict[Slot, Elem]) -> dict[Elem, list[Slot]]:
    inv: dict[Elem, list[Slot]] = defaultdict(list)
    for s, e in m.items():
        inv[e].append(s)
    return inv


def a_slots() -> list[Slot]:
    return [(lane, r, h) for lane in range(32) for r in range(4) for h in range(2)]


def b_slots() -> list[Slot]:
    return [(lane, r, h) for lane in range(32) for r in range(2) for h in range(2)]


def d_slots() -> list[Slot]:
    return [(lane, r, 0) for lane in range(32) for r in range(4)]


def probe_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """[probe][reg][lane] words of A, B, C for the mma.sync probes: 256 A probes (one-hot A, B slot codes
    1..128), then 128 C probes (one-hot C). Returns (a, b, c, n_a, n_c)."""
    A, B, D = a_slots(), b_slots(), d_slots()
    n = len(A) + len(D)
    a = np.zeros((n, 4, 32), np.uint32)
    b = np.zeros((n, 2, 32), np.uint32)
    c = np.zeros((n, 4, 32), np.uint32)
    codes = np.zeros((2, 32, 2), np.uint16)
    for i, (lane, r, h) in enumerate(B):
        codes[r, lane, h] = f16_code(np.float16(i + 1))
    bw = codes[..., 0].astype(np.uint32) | (codes[..., 1].astype(np.uint32) << 16)
    for p, (lane, r, h) in enumerate(A):
        a[p, r, lane] = F16_ONE << (16 * h)
        b[p] = bw
    one = np.float32(1.0).view(np.uint32)
    for q, (lane, r, _) in enumerate(D):
        c[len(A) + q, r, lane] = one
    return a, b, c, len(A), len(D)


def infer_mma(d: np.ndarray, n_a: int) -> tuple[dict[str, dict[Slot, Elem]], list[str]]:
    """d [probe][reg][lane] f32 values -> (maps of A, B, C/D named by the PTX layout, disagreements)."""
    A, B, D = a_slots(), b_slots(), d_slots()
    problems: list[str] = []
    lit: dict[Slot, dict[Slot, Slot]] = {}  # A slot -> {D slot: B slot}
    for p, s in enumerate(A):
        got = {}
        for ds in D:
            v = d[p, ds[1], ds[0]]
            if v != 0:
                code = int(round(v)) - 1
                if not (0 <= code < len(B)) or v != round(v):
                    problems.append(f"A probe {s}: D{ds} = {v} is no B code")
                    continue
                got[ds] = B[code]
        lit[s] = got
    # C probes: D must equal C slot for slot
    for q, s in enumerate(D):
        nz = [ds for ds in D if d[n_a + q, ds[1], ds[0]] != 0]
        if nz != [s] or d[n_a + q, s[1], s[0]] != 1.0:
            problems.append(f"C probe {s}: D nonzero at {nz[:4]}")
    # classes: rows (A and D), k (A and B), columns (B and D)
    row_of_a = {s: frozenset(g) for s, g in lit.items()}
    k_of_a = {s: frozenset(g.values()) for s, g in lit.items()}
    col_of_d: dict[Slot, set[Slot]] = defaultdict(set)
    k_of_b: dict[Slot, set[Slot]] = defaultdict(set)
    for s, g in lit.items():
        for ds, bs in g.items():
            col_of_d[ds].add(bs)
            k_of_b[bs].add(s)
    maps: dict[str, dict[Slot, Elem]] = {"a": {}, "b": {}, "d": {}}
    # name each class by the PTX layout and check that the naming is a bijection of classes
    for name, classes, doc, axis in (
        ("a rows", row_of_a, ptx_a, 0),
        ("a k", k_of_a, ptx_a, 1),
        ("d cols", {k: frozenset(v) for k, v in col_of_d.items()}, ptx_c, 1),
        ("b k", {k: frozenset(v) for k, v in k_of_b.items()}, ptx_b, 0),
    ):
        names: dict[frozenset, set[int]] = defaultdict(set)
        for s, cls in classes.items():
            names[cls].add(doc(*s)[axis])
        if any(len(v) != 1 for v in names.values()) or len({next(iter(v)) for v in names.values()}) != len(names):
            problems.append(f"{name}: the classes found do not match the PTX layout ({len(names)} classes)")
    # the maps: every A slot -> (its row, its k); B slot -> (k, col); D slot -> (row, col), via the names
    for s, g in lit.items():
        if g:
            maps["a"][s] = ptx_a(*s)
            for ds, bs in g.items():
                maps["d"][ds] = (ptx_a(*s)[0], ptx_b(*bs)[1])
                maps["b"][bs] = (ptx_a(*s)[1], ptx_b(*bs)[1])
                if ptx_c(*ds) != maps["d"][ds] or ptx_b(*bs)[0] != ptx_a(*s)[1]:
                    problems.append(f"A{s} x B{bs} -> D{ds} disagrees with the PTX layout")
    for key, n in (("a", 256), ("b", 128), ("d", 128)):
        if len(maps[key]) != n:
            problems.append(f"{key}: {len(maps[key])} of {n} slots mapped")
    return maps, problems[:20]


WG_N = 8  # wgmma m64n8k16: D is 64 x 8, 4 f32 registers per thread of the warpgroup


def wg_slots_a() -> list[Slot]:
    return [(t, r, h) for t in range(128) for r in range(4) for h in range(2)]


def wg_b_image() -> tuple[np.ndarray, int]:
    """B (16 x 8, B[k][n] = k * 8 + n + 1) as its no-swizzle K-major shared-memory image, and the descriptor
    template (start address 0: the kernel adds it), as bench/tensor/wgmma/layout.py packs its operands."""
    from ..tensor.wgmma import operand_desc, pack_operand

    b = (np.arange(16)[:, None] * WG_N + np.arange(WG_N)[None, :] + 1).astype(np.float16)  # [k][n]
    rows = np.ascontiguousarray(b.T).view(np.uint8).reshape(WG_N, 32)  # K-major: one row of K per n
    return pack_operand(rows), operand_desc(0, WG_N)


def wg_probe_inputs() -> np.ndarray:
    """[probe][reg][thread] A words: one-hot 1.0 per probe."""
    A = wg_slots_a()
    a = np.zeros((len(A), 4, 128), np.uint32)
    for p, (t, r, h) in enumerate(A):
        a[p, r, t] = F16_ONE << (16 * h)
    return a


def infer_wgmma(d: np.ndarray) -> tuple[dict[str, dict[Slot, Elem]], list[str]]:
    """d [probe][reg][thread] f32 -> maps of A (registers) and D, rows named by the PTX layout; k and n
    come from the B codes themselves (B's place in shared memory is set by its descriptor)."""
    problems: list[str] = []
    maps: dict[str, dict[Slot, Elem]] = {"a": {}, "d": {}}
    rows: dict[frozenset, set[int]] = defaultdict(set)
    for p, s in enumerate(wg_slots_a()):
        nz = np.argwhere(d[p] != 0)
        lit = {(int(t), int(r), 0): float(d[p, r, t]) for r, t in nz}
        ks = set()
        for ds, v in lit.items():
            code = int(round(v)) - 1
            if v != round(v) or not 0 <= code < 16 * WG_N:
                problems.append(f"A probe {s}: D{ds} = {v} is no B code")
                continue
            k, n = divmod(code, WG_N)
            ks.add(k)
            maps["d"][ds] = (ptx_wg_a(*s)[0], n)
            if ptx_wg_d(*ds) != maps["d"][ds]:
                problems.append(f"A{s} lights D{ds} = element {maps['d'][ds]}, PTX layout says {ptx_wg_d(*ds)}")
        if len(ks) != 1 or len(lit) != WG_N:
            problems.append(f"A probe {s}: {len(lit)} D slots lit, k values {sorted(ks)}")
            continue
        k = ks.pop()
        maps["a"][s] = (ptx_wg_a(*s)[0], k)
        rows[frozenset(lit)].add(ptx_wg_a(*s)[0])
        if ptx_wg_a(*s)[1] != k:
            problems.append(f"A{s} multiplies k = {k}, PTX layout says {ptx_wg_a(*s)[1]}")
    if any(len(v) != 1 for v in rows.values()) or len(rows) != 64:
        problems.append(f"row classes: {len(rows)} (64 expected, one PTX row each)")
    for key, n in (("a", 1024), ("d", 512)):
        if len(maps[key]) != n:
            problems.append(f"wgmma {key}: {len(maps[key])} of {n} slots mapped")
    return maps, problems[:20]


def tile_points(m: dict[Slot, Elem], reg: int, half_all: bool = True) -> tuple[list[Point], tuple[int, int]]:
    """The elements register `reg` holds (all lanes, both halves) as points of an 8x8 (or larger) panel:
    x = column, row = row, value = lane; returns the points and the panel's top-left element."""
    cells = {e: s[0] for s, e in m.items() if s[1] == reg}
    if not cells:
        return [], (0, 0)
    r0 = min(e[0] for e in cells) // 8 * 8
    c0 = min(e[1] for e in cells) // 8 * 8
    return [Point(e[1], float(lane), extra={"row": e[0]}) for e, lane in sorted(cells.items())], (r0, c0)


# ---------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------
@benchmark(
    name="fragment_maps",
    title="Tensor-core register mapping: wmma m16n16k16 (load/store), mma.sync m16n8k16 and wgmma m64n8k16 (products)",
    axes={
        "layout": "wmma A (row), B (col), C load (row), D store (row); mma.m16n8k16 A, B, C/D; "
        "wgmma m64n8k16 A (registers), D"
    },
    kernels=SPECS,
    timeout_s=120,
    needs=Needs(features=("wmma",)),
    paper="002 §4.3 Figs. 4.2-4.7; 004 §IV-B Fig. 1",
)
def fragment_maps(ctx: BenchContext) -> None:
    parts = {
        WMMA_SPEC.name: (_wmma, "wmma A/B/C-load/D-store (memory codes)"),
        MMA_SPEC.name: (_mma_sync, "mma.m16n8k16 A/B/C-D"),
        WGMMA_SPEC.name: (_wgmma, "wgmma m64n8k16 A (registers)/D"),
    }
    mapped, what = 0, []
    for spec in ctx.runnable(SPECS):  # wmma everywhere, mma.sync m16n8k16 from sm_80, wgmma on sm_90a
        measure, text = parts[spec.name]
        mapped += measure(ctx, ctx.module(spec))
        what.append(text)
    ctx.figure("isa.fragment_maps", mapped, "", "measured", _mapped_method(what))


def _mapped_method(what: list[str]) -> str:
    """The method of isa.fragment_maps: the layouts this GPU's variants mapped (on sm_90a all three)."""
    text = what[0] if len(what) == 1 else ", ".join(what[:-1]) + " and " + what[-1]
    products = any(not w.startswith("wmma") for w in what)  # mma.sync and wgmma: found from products
    return f"layouts mapped on the GPU: {text}" + (" (products)" if products else "")


def _wmma(ctx: BenchContext, mod: Module) -> int:
    """wmma m16n16k16: codes in memory, the fragments read back. Returns the layouts mapped (of 4)."""
    dev = ctx.device
    codes = np.arange(1, 257, dtype=np.float64).reshape(16, 16)  # element (i, j) holds i*16 + j + 1
    a_mem = f16_code(codes)  # row-major A
    b_mem = f16_code(codes.T)  # B[k][n] = k*16 + n + 1, stored column-major
    c_mem = codes.astype(np.float32)
    with ctx.scratch():
        bufs = [ctx.upload(a_mem.reshape(-1)), ctx.upload(b_mem.reshape(-1)), ctx.upload(c_mem.reshape(-1))]
        outs = [ctx.alloc(8 * 32 * 4) for _ in range(3)] + [ctx.alloc(256 * 4), ctx.alloc(256 * 4)]
        for o in outs:
            dev.memset32(o, 0xFFFFFFFF)
        mod.function("frag_wmma")(1, 32, [Arg.ptr(b) for b in bufs + outs])
        dev.sync("frag_wmma")
        fa, fb, fc = (dev.download(o, np.uint32, 256).reshape(8, 32) for o in outs[:3])
        dst = dev.download(outs[3], np.float32, 256).reshape(16, 16)
        dmat = dev.download(outs[4], np.float32, 256).reshape(16, 16)
    wmaps = {
        "wmma_a_row": map_from_codes(decode_halves(fa), 16),
        "wmma_b_col": map_from_codes(decode_halves(fb), 16),
        "wmma_c_row_load": map_from_codes(fc.view(np.float32)[..., None].astype(np.float64), 16),
    }
    store: dict[Slot, Elem] = {}
    for (i, j), v in np.ndenumerate(dst):
        if not np.isfinite(v) or not 0 <= v < 256:  # poison left: wmma.store did not write this element
            continue
        lane, reg = divmod(int(v), 8)
        store[(lane, reg, 0)] = (i, j)
    wmaps["wmma_d_row_store"] = store
    want = codes.astype(np.float64) @ codes.astype(np.float64) + codes
    prod_ok = bool(np.allclose(dmat, want, rtol=1e-6))
    ctx.soft_check(prod_ok, "wmma A*B+C differs from the CPU product")
    mapped = 0
    for name, m in wmaps.items():
        inv = holders(m)
        n_elem = 256
        ok = prod_ok and len(inv) == n_elem
        if ok:
            mapped += 1
        dup = sorted({len(v) for v in inv.values()})
        _draw(ctx, name, m)
        ctx.figure(
            f"isa.fragments.{name}.holders_per_element",
            "/".join(map(str, dup)) if dup else "none",
            "",
            "measured",
            "wmma.load of a 16x16 matrix whose elements hold distinct codes; the fragment "
            "registers read back (wmma.store: registers holding lane*8+register codes)",
            check="ok" if ok else "failed",
            note=f"{len(inv)} of {n_elem} elements found in {len(m)} (lane, register, half) slots; "
            f"D = A*B + C from these fragments {'equals' if prod_ok else 'differs from'} the CPU product",
        )
    # wmma accumulator: load and store agree
    agree = all(
        wmaps["wmma_d_row_store"].get((lane, r, 0)) == e for (lane, r, _), e in wmaps["wmma_c_row_load"].items()
    )
    ctx.figure(
        "isa.fragments.wmma_c_load_equals_d_store",
        "yes" if agree else "no",
        "",
        "measured",
        "every accumulator slot holds the same element after wmma.load.c as wmma.store.d writes from it",
    )
    return mapped


def _mma_sync(ctx: BenchContext, mod: Module) -> int:
    """mma.sync m16n8k16 from products. Returns the layouts mapped (of 3)."""
    dev = ctx.device
    a, b, c, n_a, n_c = probe_inputs()
    n = n_a + n_c
    with ctx.scratch():
        da, db, dc = ctx.upload(a.reshape(-1)), ctx.upload(b.reshape(-1)), ctx.upload(c.reshape(-1))
        dd = ctx.alloc(n * 128 * 4)
        dev.memset32(dd, 0x7FC00000)
        mod.function("frag_mma_probe")(n, 32, [Arg.ptr(da), Arg.ptr(db), Arg.ptr(dc), Arg.ptr(dd)])
        dev.sync("frag_mma_probe")
        d = dev.download(dd, np.float32, n * 128).reshape(n, 4, 32)
    maps, problems = infer_mma(d, n_a)
    agrees = not problems
    ctx.soft_check(agrees, "mma m16n8k16: " + "; ".join(problems[:3]))
    mapped = 0
    for key in ("a", "b", "d"):
        m = maps[key]
        name = f"mma_m16n8k16_{key if key != 'd' else 'cd'}"
        _draw(ctx, name, m)
        if agrees and m:
            mapped += 1
    _agrees_figure(
        ctx,
        "isa.fragments.mma_m16n8k16_agrees_ptx",
        problems,
        f"{n_a} one-hot A probes x distinct B codes, {n_c} one-hot C probes (one warp each); the row, k and "
        "column classes found, named by the PTX ISA layout, checked to be a bijection with it",
    )
    return mapped


def _wgmma(ctx: BenchContext, mod: Module) -> int:
    """wgmma m64n8k16 from products (A in registers, B in shared memory). Returns the layouts mapped (of 2)."""
    dev = ctx.device
    img, tpl = wg_b_image()
    a = wg_probe_inputs()
    n = a.shape[0]
    with ctx.scratch():
        da, dimg, dd = ctx.upload(a.reshape(-1)), ctx.upload(img.view(np.uint32)), ctx.alloc(n * 512 * 4)
        dev.memset32(dd, 0x7FC00000)
        mod.function("frag_wgmma_probe")(
            n, 128, [Arg.ptr(da), Arg.ptr(dimg), Arg.u32(img.size), Arg.u64(tpl), Arg.ptr(dd)]
        )
        dev.sync("frag_wgmma_probe")
        d = dev.download(dd, np.float32, n * 512).reshape(n, 4, 128)
    maps, problems = infer_wgmma(d)
    agrees = not problems
    ctx.soft_check(agrees, "wgmma m64n8k16: " + "; ".join(problems[:3]))
    mapped = 0
    for key in ("a", "d"):
        _draw(ctx, f"wgmma_m64n8k16_{key}", maps[key])
        if agrees:
            mapped += 1
    _agrees_figure(
        ctx,
        "isa.fragments.wgmma_m64n8k16_agrees_ptx",
        problems,
        f"{n} one-hot A-register probes (one warpgroup each) against B codes in shared memory (no-swizzle "
        "K-major, B[k][n] = 8k + n + 1): k and n read from the codes, rows named by the PTX layout",
    )
    return mapped


def _agrees_figure(ctx: BenchContext, key: str, problems: list[str], method: str) -> None:
    """Whether the layouts the probes found are the PTX ISA's: yes, or no (failed) with the first problems."""
    agrees = not problems
    ctx.figure(
        key,
        "yes" if agrees else "no",
        "",
        "derived",
        method,
        check="ok" if agrees else "failed",
        note="; ".join(problems[:3]),
    )


def _draw(ctx: BenchContext, name: str, m: dict[Slot, Elem]) -> None:
    """One heatmap panel per register: the lane holding each element (Yan Fig. 1 / Jia Figs. 4.2-4.7)."""
    for reg in sorted({s[1] for s in m}):
        pts, (r0, c0) = tile_points(m, reg)
        ctx.series(
            f"{name} reg {reg} (rows {r0}.., cols {c0}..)",
            "column",
            "",
            "lane",
            "lane",
            pts,
            plot="heatmap",
            figure=f"fragments.{name}",
        )
