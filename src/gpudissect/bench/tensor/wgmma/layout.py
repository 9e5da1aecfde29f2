"""Where each bit of a wgmma goes, host side: the shared-memory matrix descriptor and operand image,
element encodings, the register fragments of A and D, and the sparse A's metadata registers.
"""

from __future__ import annotations

import numpy as np

from .variants import ROW_BYTES, SBO, TYPES, M, lbo_for


# ---------------------------------------------------------------------------------------
# Shared-memory matrix descriptor and operand layout
# ---------------------------------------------------------------------------------------
def make_desc(start: int, lbo: int, sbo: int = SBO, base_offset: int = 0, swizzle: int = 0) -> int:
    """64-bit wgmma matrix descriptor: bits 0-13 start address >> 4, 16-29 leading dimension byte
    offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 base offset, 62-63 swizzle mode
    (0 none/interleave, 1 128B, 2 64B, 3 32B)."""
    for name, v in (("start address", start), ("leading byte offset", lbo), ("stride byte offset", sbo)):
        if v % 16 or not 0 <= v >> 4 < 1 << 14:
            raise ValueError(f"{name} {v} must be a multiple of 16 below 256 KiB")
    if not 0 <= base_offset < 8 or not 0 <= swizzle < 4:
        raise ValueError("base offset is 3 bits, swizzle mode 2 bits")
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | base_offset << 49 | swizzle << 62


def desc_fields(desc: int) -> dict[str, int]:
    return {
        "start": (desc & 0x3FFF) << 4,
        "lbo": (desc >> 16 & 0x3FFF) << 4,
        "sbo": (desc >> 32 & 0x3FFF) << 4,
        "base_offset": desc >> 49 & 7,
        "swizzle": desc >> 62 & 3,
    }


def pack_operand(rows: np.ndarray) -> np.ndarray:
    """(R, C*16) bytes of a K-major operand -> its shared-memory image for LBO = 16 R, SBO = 128:
    [K chunk][row group][row in group][16 bytes]."""
    r, c = rows.shape[0], rows.shape[1] // 16
    if rows.shape != (r, 16 * c) or r % 8 or c < 1:
        raise ValueError(f"operand must be (8i, 16j) bytes, got {rows.shape}")
    assert SBO == 128 and lbo_for(r) == 16 * r, "pack_operand hard-codes the layout it packs"
    return np.ascontiguousarray(rows.astype(np.uint8).reshape(r // 8, 8, c, 16).transpose(2, 0, 1, 3)).reshape(-1)


def operand_desc(start: int, rows: int) -> int:
    """Descriptor of an operand image made by pack_operand at byte `start` of shared memory."""
    return make_desc(start, lbo_for(rows), SBO)


def sim_read_operand(smem: np.ndarray, desc: int, rows: int, row_bytes: int = ROW_BYTES) -> np.ndarray:
    """What a wgmma reads through `desc` for a K-major operand of `rows` rows and `row_bytes` of K
    (PTX ISA, shared-memory matrix layout, no swizzle): the core matrix of row group i and K chunk j
    starts at start + i * SBO + j * LBO, and row r of it is the 16 bytes at +16 * (r % 8)."""
    f = desc_fields(desc)
    if f["swizzle"] or f["base_offset"]:
        raise NotImplementedError("the simulator models the no-swizzle layout only")
    out = np.zeros((rows, row_bytes), np.uint8)
    for r in range(rows):
        for j in range(row_bytes // 16):
            a = f["start"] + (r // 8) * f["sbo"] + j * f["lbo"] + (r % 8) * 16
            if a + 16 > smem.size:
                raise IndexError(f"row {r} chunk {j} reads bytes {a}..{a + 15} beyond the {smem.size}-byte image")
            out[r, 16 * j : 16 * j + 16] = smem[a : a + 16]
    return out


# ---------------------------------------------------------------------------------------
# Element encodings (host side of every type)
# ---------------------------------------------------------------------------------------
def _fp8_table(fmt: str) -> np.ndarray:
    """Value of each of the 256 codes (NaN for NaN/inf codes): e4m3 (bias 7, no inf, S.1111.111 NaN)
    and e5m2 (bias 15, IEEE-like)."""
    ebits, mbits, bias = (4, 3, 7) if fmt == "e4m3" else (5, 2, 15)
    out = np.empty(256)
    for c in range(256):
        s, e, m = c >> 7, (c >> mbits) & ((1 << ebits) - 1), c & ((1 << mbits) - 1)
        if e == 0:
            v = m / (1 << mbits) * 2.0 ** (1 - bias)
        elif fmt == "e5m2" and e == 31 or fmt == "e4m3" and e == 15 and m == 7:
            v = np.nan
        else:
            v = (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
        out[c] = -v if s else v
    return out


FP8 = {f: _fp8_table(f) for f in ("e4m3", "e5m2")}


def _fp8_encode(fmt: str, x: np.ndarray) -> np.ndarray:
    table = FP8[fmt]
    codes = np.flatnonzero(np.isfinite(table))
    order = codes[np.argsort(table[codes], kind="stable")]
    vals = table[order]
    i = np.clip(np.searchsorted(vals, x), 1, len(vals) - 1)
    pick = np.where(np.abs(vals[i - 1] - x) <= np.abs(vals[i] - x), i - 1, i)
    return order[pick].astype(np.uint8)


def encode(a: str, x: np.ndarray) -> np.ndarray:
    """(R, K) values of PTX type `a` -> (R, K * bits / 8) bytes as they sit in memory (little endian).
    Floats are rounded to the type (tf32: low 13 bits of the f32 cleared); b1 takes 0/1."""
    x = np.asarray(x)
    if a == "f16":
        b = x.astype(np.float16)
    elif a == "bf16":
        u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        b = ((u + 0x7FFF + (u >> 16 & 1)) >> 16).astype(np.uint16)
    elif a == "tf32":
        b = (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    elif a in FP8:
        b = _fp8_encode(a, x)
    elif a == "s8":
        b = x.astype(np.int8)
    elif a == "u8":
        b = x.astype(np.uint8)
    elif a == "b1":
        return np.packbits(x.astype(np.uint8) & 1, axis=-1, bitorder="little")
    else:
        raise ValueError(f"unknown type {a}")
    return np.ascontiguousarray(b).view(np.uint8).reshape(x.shape[0], -1)


def decode(a: str, b: np.ndarray) -> np.ndarray:
    """Inverse of `encode`: (R, bytes) -> (R, K) float64 (floats) or int64 (integers, b1 as 0/1)."""
    b = np.ascontiguousarray(b, dtype=np.uint8)
    if a == "f16":
        return b.view(np.float16).astype(np.float64)
    if a == "bf16":
        return (b.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if a == "tf32":
        return (b.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if a in FP8:
        return FP8[a][b]
    if a == "s8":
        return b.view(np.int8).astype(np.int64)
    if a == "u8":
        return b.astype(np.int64)
    if a == "b1":
        return np.unpackbits(b, axis=-1, bitorder="little").astype(np.int64)
    raise ValueError(f"unknown type {a}")


# ---------------------------------------------------------------------------------------
# Register fragments (per thread of the warpgroup: warp w = t // 32, g = lane // 4, q = lane % 4)
# ---------------------------------------------------------------------------------------
def _tid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.arange(128)
    return t // 32, (t % 32) // 4, t % 4


def pack_a_frag(a_rows: np.ndarray) -> np.ndarray:
    """A (64, 32) bytes -> (128, 4) u32 registers for RS. In bytes the layout is the same for every
    type: register j of thread (w, g, q) holds row 16w + g + 8(j % 2), bytes 16(j // 2) + 4q .. +3
    (= 2 .f16, 1 .tf32, 4 8-bit or 32 .b1 elements)."""
    w, g, q = _tid()
    j = np.arange(4)
    row = (16 * w + g)[:, None] + 8 * (j % 2)[None, :]
    col = (4 * q)[:, None] + 16 * (j // 2)[None, :]
    idx = row[..., None] * ROW_BYTES + col[..., None] + np.arange(4)
    return np.ascontiguousarray(a_rows.reshape(-1)[idx].astype(np.uint8)).view(np.uint32).reshape(128, 4)


def sim_a_from_frag(frag: np.ndarray) -> np.ndarray:
    """The A (64, 32) bytes a wgmma sees in the registers (PTX ISA fragment layout of A for
    m64nNk16 / k8 / k32 / k256: a0..a3 = rows g, g+8, g, g+8 of the warp's 16, K halves 0, 0, 1, 1)."""
    out = np.zeros((M, ROW_BYTES), np.uint8)
    regs = np.ascontiguousarray(frag, dtype=np.uint32)
    for t in range(128):
        w, lane = divmod(t, 32)
        g, q = divmod(lane, 4)
        for j in range(4):
            row, col = 16 * w + g + 8 * (j % 2), 16 * (j // 2) + 4 * q
            out[row, col : col + 4] = np.frombuffer(regs[t, j].tobytes(), np.uint8)
    return out


def d_coords(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of accumulator element e (0 .. N/2 - 1) of each thread: e = 4j + 2h + v holds
    row 16w + g + 8h, column 8j + 2q + v (PTX ISA, wgmma D fragment for m64nNk*)."""
    w, g, q = _tid()
    e = np.arange(n // 2)
    j, h, v = e // 4, (e // 2) % 2, e % 2
    return (16 * w + g)[:, None] + 8 * h[None, :], (2 * q)[:, None] + (8 * j + v)[None, :]


def read_d(regs: np.ndarray, tname: str, n: int) -> np.ndarray:
    """(..., 128, nacc) u32 registers of warpgroups -> (..., 64, N) values (float64 or int64).
    .f16 accumulators hold elements 2i (low half) and 2i+1 (high half) in register i."""
    t = TYPES[tname]
    regs = np.ascontiguousarray(regs, dtype=np.uint32)
    lead = regs.shape[:-2]
    if regs.shape[-2:] != (128, t.nacc(n)):
        raise ValueError(f"expected (..., 128, {t.nacc(n)}) registers, got {regs.shape}")
    if t.d == "f16":
        el = regs.view(np.float16).astype(np.float64)
    elif t.d == "f32":
        el = regs.view(np.float32).astype(np.float64)
    else:
        el = regs.view(np.int32).astype(np.int64)
    rows, cols = d_coords(n)
    out = np.zeros(lead + (M, n), el.dtype)
    out[..., rows, cols] = el
    return out


def sim_d_regs(d: np.ndarray, tname: str, n: int) -> np.ndarray:
    """The registers a wgmma writes for the (64, N) result `d` (ISA fragment layout, element by element)."""
    t = TYPES[tname]
    out = np.zeros((128, t.nacc(n)), np.uint32)
    for th in range(128):
        w, lane = divmod(th, 32)
        g, q = divmod(lane, 4)
        vals = []
        for e in range(n // 2):
            j, h, v = e // 4, (e // 2) % 2, e % 2
            vals.append(d[16 * w + g + 8 * h, 8 * j + 2 * q + v])
        if t.d == "f16":
            out[th] = np.array(vals, np.float16).view(np.uint32)
        elif t.d == "f32":
            out[th] = np.array(vals, np.float32).view(np.uint32)
        else:
            out[th] = np.array(vals, np.int64).astype(np.int32).view(np.uint32)
    return out


# ---------------------------------------------------------------------------------------
# Sparse A: 2:4 structure (1:2 pairs for .tf32), compressed values and metadata registers
# ---------------------------------------------------------------------------------------
_PAIRS = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def sparsify(values: np.ndarray, tname: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense (64, K) values -> (logical A with the pruned zeros, compressed (64, K/2), metadata nibbles).
    Each chunk of 4 elements keeps 2 at indices i0 < i1: nibble i0 | i1 << 2. .tf32 chunks are 2
    elements keeping 1, as if 4 16-bit halves kept 2: nibble 0b0100 (element 0) or 0b1110 (element 1)."""
    rows, k = values.shape
    logical = np.zeros_like(values)
    if TYPES[tname].a == "tf32":
        keep = rng.integers(0, 2, (rows, k // 2))
        src = np.arange(0, k, 2)[None, :] + keep
        comp = np.take_along_axis(values, src, axis=1)
        np.put_along_axis(logical, src, comp, axis=1)
        return logical, comp, np.where(keep == 0, 0x4, 0xE).astype(np.uint8)
    pair = np.array(_PAIRS)[rng.integers(0, len(_PAIRS), (rows, k // 4))]  # (rows, chunks, 2)
    src = (np.arange(0, k, 4)[None, :, None] + pair).reshape(rows, k // 2)
    comp = np.take_along_axis(values, src, axis=1)
    np.put_along_axis(logical, src, comp, axis=1)
    return logical, comp, (pair[..., 0] | pair[..., 1] << 2).astype(np.uint8)


def pack_meta(nibbles: np.ndarray, tname: str) -> np.ndarray:
    """Metadata nibbles (64, chunks) -> one u32 per thread (selector 0).
    16-bit and .tf32 (8 nibbles a row): thread (g, q) holds nibbles 4(q%2) .. +3 of row g in bits 0-15
    and of row g + 8 in bits 16-31; threads q = 2, 3 repeat q = 0, 1 (either selector finds them).
    8-bit (16 nibbles a row): thread (g, q) holds nibbles 8(q//2) .. +7 of row g + 8(q%2)."""
    w, g, q = _tid()
    nib = nibbles.astype(np.uint32)
    shifts = 4 * np.arange(8, dtype=np.uint32)
    if nib.shape[1] == 8:
        sel = (4 * (q % 2))[:, None] + np.arange(4)
        lo = (nib[(16 * w + g)[:, None], sel] << shifts[:4]).sum(axis=1)
        hi = (nib[(16 * w + g + 8)[:, None], sel] << shifts[:4]).sum(axis=1)
        return (lo | hi << 16).astype(np.uint32)
    if nib.shape[1] == 16:
        row = 16 * w + g + 8 * (q % 2)
        sel = (8 * (q // 2))[:, None] + np.arange(8)
        return (nib[row[:, None], sel] << shifts).sum(axis=1).astype(np.uint32)
    raise ValueError(f"unexpected metadata shape {nibbles.shape}")


def sim_unsparsify(comp: np.ndarray, meta: np.ndarray, tname: str, k: int) -> np.ndarray:
    """The logical (64, K) A a wgmma.sp sees from the compressed A and the metadata registers
    (selector 0: threads q = 0, 1 of each quad for 16-bit/.tf32, all four for 8-bit)."""
    t = TYPES[tname]
    logical = np.zeros((M, k), comp.dtype)
    per_row = 8 if t.elem_bits in (16, 32) else 16
    nib = np.zeros((M, per_row), np.uint32)
    for th in range(128):
        w, lane = divmod(th, 32)
        g, q = divmod(lane, 4)
        m = int(meta[th])
        if per_row == 8:
            if q > 1:
                continue
            for i in range(4):
                nib[16 * w + g, 4 * q + i] = m >> 4 * i & 0xF
                nib[16 * w + g + 8, 4 * q + i] = m >> 16 + 4 * i & 0xF
        else:
            for i in range(8):
                nib[16 * w + g + 8 * (q % 2), 8 * (q // 2) + i] = m >> 4 * i & 0xF
    for r in range(M):
        for c in range(per_row):
            i0, i1 = int(nib[r, c] & 3), int(nib[r, c] >> 2)
            if t.a == "tf32":  # nibble selects 16-bit halves {0,1} (element 0) or {2,3} (element 1)
                if (i0, i1) not in ((0, 1), (2, 3)):
                    raise ValueError(f"row {r} chunk {c}: .tf32 metadata {nib[r, c]:#06b} is not 0b0100 or 0b1110")
                logical[r, 2 * c + i0 // 2] = comp[r, c]
            else:
                if not i0 < i1:
                    raise ValueError(
                        f"row {r} chunk {c}: metadata {nib[r, c]:#06b} does not name two ascending indices"
                    )
                logical[r, 4 * c + i0] = comp[r, 2 * c]
                logical[r, 4 * c + i1] = comp[r, 2 * c + 1]
    return logical
