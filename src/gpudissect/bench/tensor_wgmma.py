"""wgmma on Hopper (sm_90a): latency, throughput, N sweep, sparsity and power (Luo et al. §6.2, Tables IX-XIII).

Operands A and B sit in shared memory in the simplest layout the matrix descriptor can describe:
no swizzle ("interleave"), K-major, 8-row x 16-byte core matrices stored contiguously (128 bytes).
A wgmma reads 32 bytes of K per row of A and B (two core matrices along K); a sparse one reads 32
of the compressed A and 64 of B (four). Core matrix (row group i, K chunk j) of an operand starts at
start + i * SBO + j * LBO (PTX ISA: the stride byte offset steps along M or N, the leading byte offset
along K, for K-major no-swizzle operands). The image stores the K chunks one after the other, each
holding all row groups: SBO = 128, LBO = 16 * rows (the tiling CUTLASS's no-swizzle atoms give).

Everything that decides where a bit goes is on the host and runs on the CPU: the packer of the
shared-memory image, the descriptor encoder, the RS register packer of A, the sparse metadata packer
and the reader of the accumulator fragment. A numpy simulator of how the hardware interprets a
descriptor, the A/metadata registers and the D registers (`emulate`) checks all of them without a GPU,
and on the GPU every variant's D is compared element by element with a numpy reference first.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..device.cuda import Arg
from ..errors import GpuDissectError
from ..models import Point
from .context import BenchContext
from .registry import Facts, KernelSpec, Param, benchmark

SUITE = "tensor"
FILE = "wgmma.cu"
M = 64  # every wgmma is m64
ROW_BYTES = 32  # bytes of K per row of A (compressed if sparse) and of dense B in one wgmma
SBO = 128  # stride byte offset: the next 8 rows (M or N) follow the core matrix directly


def lbo_for(rows: int) -> int:
    """Leading byte offset: the next K chunk of an operand of `rows` rows comes after all its row groups."""
    return 16 * rows


def b_row_bytes(sparse: bool) -> int:
    """Bytes of K per column of B: the logical K, twice the dense K for .sp."""
    return ROW_BYTES * (2 if sparse else 1)


# ---------------------------------------------------------------------------------------
# Types, shapes and what the ISA allows
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WgType:
    name: str  # "<A type>_<accumulator type>", as in the summary keys
    a: str  # PTX type of A and B
    d: str  # PTX type of D
    k: int  # dense K
    kind: int  # 0: .f16/.bf16 (scale + transpose immediates), 1: .tf32/fp8 (scale), 2: integer/.b1
    peak: str | None  # key of the per-clock peak table (None: no published peak)
    sass: str  # SASS mnemonic of the dense N=256 variant, derived from the disassembly

    @property
    def integer(self) -> bool:
        return self.d == "s32"

    @property
    def elem_bits(self) -> int:
        return {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b1": 1}[self.a]

    @property
    def unit(self) -> str:
        return "TOPS" if self.integer else "TFLOPS"

    @property
    def sparse_ok(self) -> bool:
        return self.a != "b1"

    def nacc(self, n: int) -> int:
        """32-bit accumulator registers per thread: N/2 elements, two .f16 per register."""
        return n // 4 if self.d == "f16" else n // 2


_FLOAT_NS = tuple(range(8, 257, 8))
_INT_NS = (8, 16, 24) + tuple(range(32, 257, 16))  # .s8/.u8/.b1 (checked against ptxas)

TYPES: dict[str, WgType] = {t.name: t for t in (
    WgType("f16_f16", "f16", "f16", 16, 0, "f16", "HGMMA.64x256x16.F16"),
    WgType("f16_f32", "f16", "f32", 16, 0, "f16", "HGMMA.64x256x16.F32"),
    WgType("bf16_f32", "bf16", "f32", 16, 0, "f16", "HGMMA.64x256x16.F32.BF16"),
    WgType("tf32_f32", "tf32", "f32", 8, 1, "tf32", "HGMMA.64x256x8.F32.TF32"),
    WgType("e4m3_f16", "e4m3", "f16", 32, 1, "fp8", "QGMMA.64x256x32.F16.E4M3.E4M3"),
    WgType("e4m3_f32", "e4m3", "f32", 32, 1, "fp8", "QGMMA.64x256x32.F32.E4M3.E4M3"),
    WgType("e5m2_f16", "e5m2", "f16", 32, 1, "fp8", "QGMMA.64x256x32.F16.E5M2.E5M2"),
    WgType("e5m2_f32", "e5m2", "f32", 32, 1, "fp8", "QGMMA.64x256x32.F32.E5M2.E5M2"),
    WgType("s8_s32", "s8", "s32", 32, 2, "int8", "IGMMA.64x256x32.S8.S8"),
    WgType("u8_s32", "u8", "s32", 32, 2, "int8", "IGMMA.64x256x32.U8.U8"),
    WgType("b1_s32", "b1", "s32", 256, 2, None, "BGMMA.64x256x256.AND.POPC"),
)}
SPARSE_TYPES = [t for t in TYPES if TYPES[t].sparse_ok]

# Dense multiply-accumulates per clock per SM, from NVIDIA's H100 figures: 989.4 dense FP16 TFLOPS =
# 132 SMs x 1830 MHz x 2 x 2048; TF32 half of that, FP8 and INT8 twice. Sparse: twice the dense rate
# (counted as the dense-equivalent K). No per-clock .b1 rate is published for Hopper.
PEAK_FMA_PER_CLK_SM: dict[tuple[int, int], dict[str, int]] = {
    (9, 0): {"f16": 2048, "tf32": 1024, "fp8": 4096, "int8": 4096},
}
PEAK_SOURCE = "H100 whitepaper: 989.4 dense FP16 TFLOPS = 132 SMs x 1830 MHz x 2 x 2048 FMA/clk/SM; TF32 x1/2, FP8/INT8 x2; sparse x2"


def valid_ns(tname: str) -> tuple[int, ...]:
    return _INT_NS if TYPES[tname].kind == 2 else _FLOAT_NS


def _names(items: Any) -> str:
    return ", ".join(str(i) for i in items)


def validate(tname: str, n: int = 256, mode: str = "ss", sparse: bool = False,
             trans_a: bool = False, trans_b: bool = False, selector: int = 0) -> WgType:
    """The type/shape/mode combination, or an error naming the valid choices (PTX ISA 8.x, sm_90a)."""
    if tname not in TYPES:
        raise GpuDissectError(f"wgmma has no type {tname!r}; valid: {_names(TYPES)}")
    t = TYPES[tname]
    if mode not in ("ss", "rs"):
        raise GpuDissectError(f"wgmma mode {mode!r} is not valid; valid: ss (A and B in shared memory), rs (A in registers)")
    if sparse and not t.sparse_ok:
        raise GpuDissectError(f"wgmma.sp has no {t.a} variant; sparse types: {_names(SPARSE_TYPES)}")
    if n not in valid_ns(tname):
        raise GpuDissectError(f"N={n} is not a valid wgmma N for {tname}{' (.sp)' if sparse else ''}; "
                              f"valid: {_names(valid_ns(tname))}")
    if (trans_a or trans_b) and t.kind != 0:
        raise GpuDissectError(f"{tname}: only .f16/.bf16 wgmma can transpose A or B (imm-trans); "
                              f"types with transpose: {_names(name for name, x in TYPES.items() if x.kind == 0)}")
    if trans_a and mode == "rs":
        raise GpuDissectError(f"{tname}: A from registers (rs) cannot be transposed; imm-trans-a exists only for ss")
    sels = (0, 1) if t.elem_bits in (16, 32) else (0,)
    if sparse and selector not in sels:
        raise GpuDissectError(f"{tname}: sparsity selector {selector} is not valid; valid: {_names(sels)}")
    return t


def kdim(tname: str, sparse: bool) -> int:
    """Logical K of the instruction (twice the dense K for .sp)."""
    return TYPES[tname].k * (2 if sparse else 1)


def shape_of(tname: str, n: int, sparse: bool = False) -> str:
    return f"m64n{n}k{kdim(tname, sparse)}"


def key_of(tname: str, n: int, sparse: bool = False) -> str:
    return f"tc.wgmma{'_sp' if sparse else ''}.{tname}.{shape_of(tname, n, sparse)}"


def unroll_for(n: int) -> int:
    # short instructions need more of them per commit group to keep the loop overhead hidden
    return 16 if n <= 32 else 8


def sass_mnemonic(tname: str, n: int, sparse: bool) -> str:
    t = TYPES[tname]
    head, rest = t.sass.split(".", 1)
    dims, tail = rest.split(".", 1)
    k = kdim(tname, sparse)
    return f"{head}{'.SP' if sparse else ''}.64x{n}x{k}.{tail}"


def variant_spec(tname: str, n: int, sparse: bool = False) -> KernelSpec:
    """One compiled variant (type, N, dense/sparse) with the SASS each of its two kernels must hold."""
    t = validate(tname, n, sparse=sparse)
    mn = sass_mnemonic(tname, n, sparse).replace(".", r"\.")
    # metadata register, then the selector (shown only where the type has two: 16- and 32-bit)
    meta = (r", R\d+, 0x0" if t.elem_bits in (16, 32) else r", R\d+") if sparse else ""
    common = [r"WARPGROUP\.ARRIVE", r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1", r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0"]
    required = {
        # the accumulating form (D += A*B) and the first one with scale-d = 0 (RZ, !UPT)
        "wg_ss": [rf"{mn} R\d+, gdesc\[UR\d+\], R\d+{meta}", rf"{mn} R\d+, gdesc\[UR\d+\], RZ, !UPT", *common],
        "wg_rs": [rf"{mn} R\d+, R\d+, gdesc\[UR\d+\], R\d+{meta}", rf"{mn} R\d+, R\d+, gdesc\[UR\d+\], RZ, !UPT", *common],
    }
    defines = {
        "WG_N": n, "WG_K": kdim(tname, sparse), "WG_DT": t.d, "WG_AT": t.a, "WG_BT": t.a,
        "WG_NACC": t.nacc(n), "WG_FACC": int(t.d == "f32"), "WG_KIND": t.kind, "WG_B1": int(t.a == "b1"),
        "WG_SPARSE": int(sparse), "WG_UNROLL": unroll_for(n),
    }
    return KernelSpec(FILE, required, defines, label=f"{FILE}[{'sp.' if sparse else ''}{tname}.n{n}]")


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
    return {"start": (desc & 0x3FFF) << 4, "lbo": (desc >> 16 & 0x3FFF) << 4, "sbo": (desc >> 32 & 0x3FFF) << 4,
            "base_offset": desc >> 49 & 7, "swizzle": desc >> 62 & 3}


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
            out[r, 16 * j:16 * j + 16] = smem[a:a + 16]
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
            out[row, col:col + 4] = np.frombuffer(regs[t, j].tobytes(), np.uint8)
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
                    raise ValueError(f"row {r} chunk {c}: metadata {nib[r, c]:#06b} does not name two ascending indices")
                logical[r, 4 * c + i0] = comp[r, 2 * c]
                logical[r, 4 * c + i1] = comp[r, 2 * c + 1]
    return logical


# ---------------------------------------------------------------------------------------
# Operands: values, what is uploaded, and the reference
# ---------------------------------------------------------------------------------------
OFF_A = 0
OFF_B = M * ROW_BYTES  # B right after A (2048 bytes, 16-byte aligned)
CHECK_SMEM = 160 * 1024  # shared memory of the one-warpgroup check: zeros after the image (see diagnose)


@dataclass
class Operands:
    tname: str
    n: int
    sparse: bool
    a: np.ndarray  # logical A (64, K): exactly the values the hardware multiplies
    b: np.ndarray  # B (K, N)
    img: np.ndarray  # shared-memory image: A (compressed if sparse) at OFF_A, B at OFF_B
    tpl_a: int  # descriptor templates: start address added on the device
    tpl_b: int
    afrag: np.ndarray  # (128, 4) u32: A for RS
    meta: np.ndarray  # (128,) u32: sparsity metadata (zeros when dense)

    def reference(self) -> np.ndarray:
        """A x B in float64 (exact for the small values used in checks) or int64; .b1 is AND + popc."""
        return self.a @ self.b


def _values(a: str, shape: tuple[int, int], data: str, rng: np.random.Generator) -> np.ndarray:
    if data == "zero":
        return np.zeros(shape)
    if a == "b1":
        return rng.integers(0, 2, shape)
    if a == "s8":
        return rng.integers(-128, 128, shape)
    if a == "u8":
        return rng.integers(0, 256, shape)
    if data == "exact":  # sums of products stay exact even in .f16 accumulators (|D| <= 2048)
        return rng.integers(-2, 3, shape).astype(np.float64)
    return rng.standard_normal(shape) / 8  # full-entropy mantissas, no overflow in long runs


def make_operands(tname: str, n: int, sparse: bool, data: str, seed: int = 0) -> Operands:
    """Random operands (`data`: zero, exact = small values checked exactly, rand = full entropy) and
    everything the kernels take: the packed image, descriptor templates, A registers, metadata."""
    t = validate(tname, n, sparse=sparse)
    rng = np.random.default_rng(seed)
    k = kdim(tname, sparse)
    a_vals = decode(t.a, encode(t.a, _values(t.a, (M, k), data, rng)))  # exactly representable
    meta = np.zeros(128, np.uint32)
    if sparse:
        a_logical, comp, nib = sparsify(a_vals, tname, rng)
        a_stored = encode(t.a, comp)
        meta = pack_meta(nib, tname)
    else:
        a_logical, a_stored = a_vals, encode(t.a, a_vals)
    bt_stored = encode(t.a, _values(t.a, (n, k), data, rng))  # B^T: K-major, one row per column of B
    if a_stored.shape != (M, ROW_BYTES) or bt_stored.shape != (n, b_row_bytes(sparse)):
        raise AssertionError(f"{tname}: rows of {a_stored.shape[1]}/{bt_stored.shape[1]} bytes, "
                             f"expected {ROW_BYTES}/{b_row_bytes(sparse)}")
    img = np.concatenate([pack_operand(a_stored), pack_operand(bt_stored)])
    return Operands(tname, n, sparse, a_logical, decode(t.a, bt_stored).T.copy(), img,
                    operand_desc(0, M), operand_desc(0, n), pack_a_frag(a_stored), meta)


def emulate_raw(tname: str, n: int, sparse: bool, mode: str, img: np.ndarray, desc_a: int, desc_b: int,
                afrag: np.ndarray, meta: np.ndarray, count: int = 1) -> np.ndarray:
    """CPU model of one warpgroup running the kernel on what it was given: A and B read from the
    shared-memory image through the descriptors (A from the registers for RS), sparse A expanded by
    the metadata registers, D = count * A x B written to registers as the hardware lays them out
    -> (128, nacc) u32."""
    t = TYPES[tname]
    a_rows = sim_a_from_frag(afrag) if mode == "rs" else sim_read_operand(img, desc_a, M)
    a = decode(t.a, a_rows)
    if sparse:
        a = sim_unsparsify(a, meta, tname, kdim(tname, sparse))
    b = decode(t.a, sim_read_operand(img, desc_b, n, b_row_bytes(sparse))).T
    return sim_d_regs(count * (a @ b), tname, n)


def emulate(ops: Operands, mode: str, count: int = 1) -> np.ndarray:
    return emulate_raw(ops.tname, ops.n, ops.sparse, mode, ops.img, ops.tpl_a | OFF_A >> 4,
                       ops.tpl_b | OFF_B >> 4, ops.afrag, ops.meta, count)


def compare(got: np.ndarray, want: np.ndarray) -> str:
    """'' when equal, else a description that says whether whole rows or columns are wrong
    (rows point at A, its layout or metadata; columns at B)."""
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want))) if got.dtype.kind == "f" else got != want
    if not bad.any():
        return ""
    r, c = np.argwhere(bad)[0]
    rows, cols = np.unique(np.nonzero(bad)[0]), np.unique(np.nonzero(bad)[1])
    return (f"{int(bad.sum())} of {bad.size} elements differ (rows {len(rows)}/{bad.shape[0]}, columns "
            f"{len(cols)}/{bad.shape[1]}); first at ({r}, {c}): got {got[r, c]}, want {want[r, c]}")


def diagnose(ops: Operands, mode: str, got: np.ndarray, count: int) -> str:
    """Which other reading of the same bytes the GPU result matches (a hint for whoever debugs it)."""
    t = TYPES[ops.tname]
    k = kdim(ops.tname, ops.sparse)
    smem = np.concatenate([ops.img, np.zeros(CHECK_SMEM - ops.img.size, np.uint8)])  # as the kernel fills it
    hints = [f"D = {c} x A x B (scale-d or a commit group off by one)"
             for c in (count - 1, count + 1) if c >= 0 and not compare(got, c * ops.reference())]
    try:  # the descriptor's two byte offsets read the other way round
        a = decode(t.a, sim_read_operand(smem, make_desc(OFF_A, SBO, lbo_for(M)), M)) if mode == "ss" else \
            decode(t.a, sim_a_from_frag(ops.afrag))
        if ops.sparse:
            a = sim_unsparsify(a, ops.meta, ops.tname, k)
        b = decode(t.a, sim_read_operand(smem, make_desc(OFF_B, SBO, lbo_for(ops.n)), ops.n,
                                         b_row_bytes(ops.sparse))).T
        if not compare(got, count * (a @ b)):
            hints.append("leading and stride byte offsets swapped")
    except (IndexError, ValueError):
        pass
    return f" (matches: {'; '.join(hints)})" if hints else ""


# ---------------------------------------------------------------------------------------
# Device side
# ---------------------------------------------------------------------------------------
def precompile(ctx: BenchContext, specs: list[KernelSpec]) -> None:
    """Compile the variants in parallel into the cubin cache (NVRTC releases the GIL)."""
    from ..device.compiler import compile_kernel_file

    todo = list({s.name: s for s in specs}.values())
    with ThreadPoolExecutor(max(1, min(len(todo), os.cpu_count() or 1))) as ex:
        list(ex.map(lambda s: compile_kernel_file(s.file, ctx.device.arch, s.defines), todo))


@dataclass
class Rate:
    """One timed configuration: event-timed rate, clock64-timed FMA/clk/SM, clock derived from both."""

    per_s: list[float]  # TFLOPS (TOPS) per repetition, from CUDA events
    fma_clk_sm: list[float]  # per repetition: median over SMs of FMA per clock
    clock_mhz: float  # median block span in cycles over the event time

    @property
    def value(self) -> float:
        return float(np.median(self.per_s))

    @property
    def fma(self) -> float:
        return float(np.median(self.fma_clk_sm))


class Variant:
    """One compiled variant on the device, with its operand buffers."""

    def __init__(self, ctx: BenchContext, tname: str, n: int, sparse: bool):
        self.ctx, self.tname, self.n, self.sparse = ctx, tname, n, sparse
        self.t = validate(tname, n, sparse=sparse)
        self.spec = variant_spec(tname, n, sparse)
        self.fns = {m: ctx.kernel(self.spec, f"wg_{m}") for m in ("ss", "rs")}
        self.k = kdim(tname, sparse)
        self.nacc = self.t.nacc(n)
        self.unroll = unroll_for(n)
        dev = ctx.device
        self.img_bytes = OFF_B + n * b_row_bytes(sparse)
        self.img = dev.alloc(self.img_bytes)
        self.afrag, self.meta = dev.alloc(128 * 16), dev.alloc(128 * 4)
        self.rec = dev.alloc(ctx.props["sm_count"] * 3 * 8)
        self.dout = None
        self.dout_bytes = 0
        self.ops: Operands | None = None

    def close(self) -> None:
        for b in (self.img, self.afrag, self.meta, self.rec, self.dout):
            if b is not None:
                self.ctx.device.free(b)

    @property
    def flop_per_mma(self) -> float:
        return 2.0 * M * self.n * self.k

    def load(self, data: str, seed: int = 1) -> Operands:
        self.ops = make_operands(self.tname, self.n, self.sparse, data, seed)
        dev = self.ctx.device
        dev.upload(self.ops.img, self.img)
        dev.upload(self.ops.afrag, self.afrag)
        dev.upload(self.ops.meta, self.meta)
        return self.ops

    def warpgroups(self, mode: str, smem: int, want: int = 4) -> int:
        """Most warpgroups (<= want) one block of this kernel can hold on an SM."""
        fn = self.fns[mode]
        if smem > 48 * 1024:
            fn.allow_dynamic_smem(smem)  # the occupancy calculator honours the opt-in
        for w in range(max(1, want), 0, -1):
            if self.ctx.device.occupancy(fn, 128 * w, smem) >= 1:
                return w
        raise GpuDissectError(f"{self.spec.name}: one warpgroup does not fit an SM")

    def smem_one_per_sm(self) -> int:
        """Dynamic shared memory that keeps a second block off the SM: one block per SM, each SM's
        clock span covers exactly its warpgroups."""
        p = self.ctx.props
        return min(p["smem_per_block_optin"], max(self.img_bytes, p["smem_per_sm"] // 2 + 1024))

    def _ensure_dout(self, grid: int, wgs: int) -> None:
        need = grid * wgs * 128 * self.nacc * 4
        if need > self.dout_bytes:
            if self.dout is not None:
                self.ctx.device.free(self.dout)
            self.dout, self.dout_bytes = self.ctx.device.alloc(need), need

    def launch(self, mode: str, grid: int, wgs: int, iters: int, smem: int, reps: int = 1) -> list[float]:
        self._ensure_dout(grid, wgs)
        fn = self.fns[mode]
        args = [Arg.ptr(self.img), Arg.u32(self.img_bytes), Arg.u32(OFF_A), Arg.u32(OFF_B),
                Arg.u64(self.ops.tpl_a), Arg.u64(self.ops.tpl_b), Arg.ptr(self.afrag), Arg.ptr(self.meta),
                Arg.u32(iters), Arg.ptr(self.dout), Arg.ptr(self.rec)]
        ms = self.ctx.device.time_ms(lambda: fn(grid, 128 * wgs, args, smem=smem), reps)
        self.ctx.device.sync(self.spec.name)
        return ms

    def regs(self, grid: int, wgs: int) -> np.ndarray:
        return self.ctx.device.download(self.dout, np.uint32, grid * wgs * 128 * self.nacc).reshape(
            grid * wgs, 128, self.nacc)

    def spans(self, grid: int) -> tuple[np.ndarray, np.ndarray]:
        r = self.ctx.device.download(self.rec, np.uint64, grid * 3).reshape(grid, 3).astype(np.int64)
        return r[:, 1] - r[:, 0], r[:, 2]

    def count(self, iters: int) -> int:
        return 1 + iters * self.unroll  # wgmmas per warpgroup

    # ---- checks ----------------------------------------------------------------------
    def check(self, mode: str, wgs: int) -> str:
        """'' if D equals the reference on exact random operands: one warpgroup, one wgmma (scale-d
        = 0 over poisoned registers), then every SM busy with one commit group; else what differs."""
        dev, sms = self.ctx.device, self.ctx.props["sm_count"]
        ops = self.load("exact", seed=7)
        want = ops.reference()
        for grid, w, iters, smem in ((1, 1, 0, CHECK_SMEM), (sms, wgs, 1, self.smem_one_per_sm())):
            self._ensure_dout(grid, w)
            dev.memset32(self.dout, 0xFFFFFFFF)  # poison: an unwritten register cannot pass
            self.launch(mode, grid, w, iters, smem)
            got = read_d(self.regs(grid, w), self.tname, self.n)
            cnt = self.count(iters)
            for i in range(got.shape[0]):
                diff = compare(got[i], cnt * want)
                if diff:
                    where = f"grid {grid} x {w} warpgroups, warpgroup {i}, {cnt} wgmma"
                    return f"{self.spec.name} {mode}: {where}: {diff}{diagnose(ops, mode, got[i], cnt)}"
        return ""

    def verify_run(self, grid: int, wgs: int, data: str) -> str:
        """After a timed run: zero operands give D = 0 everywhere; random ones give the same D in
        every warpgroup, finite for float accumulators, and none left poisoned."""
        regs = self.regs(grid, wgs)
        if data == "zero":
            return "" if not regs.any() else f"{self.spec.name}: zero operands but D != 0 in {int((regs != 0).sum())} registers"
        if (regs == 0xFFFFFFFF).all(axis=(1, 2)).any():
            return f"{self.spec.name}: a warpgroup left its accumulators unwritten"
        same = (regs == regs[0]).all(axis=(1, 2))
        if not same.all():
            return f"{self.spec.name}: warpgroup {int(np.argmin(same))} computed a different D than warpgroup 0"
        if self.t.d != "s32" and not np.isfinite(read_d(regs[:1], self.tname, self.n)).all():
            return f"{self.spec.name}: non-finite accumulators with random operands"
        return ""

    # ---- measurements ---------------------------------------------------------------
    def latency(self, mode: str, iters: int, reps: int) -> list[float]:
        """Cycles per wgmma of one warpgroup's chain of dependent wgmmas (same accumulators)."""
        out = []
        for _ in range(reps):
            self.launch(mode, 1, 1, iters, self.img_bytes)
            span, _ = self.spans(1)
            out.append(float(span[0]) / self.count(iters))
        return out

    def throughput(self, mode: str, wgs: int, target_ms: float, reps: int) -> tuple[Rate, int]:
        """All SMs, one block of `wgs` warpgroups each; iterations sized to `target_ms` per launch."""
        sms, smem = self.ctx.props["sm_count"], self.smem_one_per_sm()
        iters = 16
        while True:
            ms = min(self.launch(mode, sms, wgs, iters, smem))
            if ms >= target_ms / 4 or iters >= 1 << 26:
                break
            iters *= 4
        iters = int(min(max(iters * target_ms / max(ms, 1e-3), 1), (1 << 31) // self.unroll))
        per_s, fma, clocks = [], [], []
        for _ in range(reps):
            (ms,) = self.launch(mode, sms, wgs, iters, smem)
            span, sm = self.spans(sms)
            mmas = self.count(iters) * wgs
            per_s.append(self.flop_per_mma * mmas * sms / (ms * 1e-3) / 1e12)
            fma.append(float(np.median(mmas * self.flop_per_mma / 2 / span)))
            clocks.append(float(np.median(span)) / (ms * 1e3))
        return Rate(per_s, fma, float(np.median(clocks))), iters


def peak_fma(ctx: BenchContext, tname: str, sparse: bool) -> float | None:
    table = PEAK_FMA_PER_CLK_SM.get((ctx.props["cc_major"], ctx.props["cc_minor"]), {})
    p = TYPES[tname].peak
    if p is None or p not in table:
        return None
    return table[p] * (2 if sparse else 1)


def _assumed_peaks(ctx: BenchContext) -> None:
    table = PEAK_FMA_PER_CLK_SM.get((ctx.props["cc_major"], ctx.props["cc_minor"]))
    if not table:
        return
    for p, v in table.items():
        ctx.figure(f"tc.wgmma.peak.{p}_dense_fma_per_clk_sm", v, "FMA/clk/SM", "assumed", PEAK_SOURCE)


def _wgs_param(v: int, facts: Facts) -> str | None:
    return None if 0 <= v <= 8 else "0 (automatic: as many as fit, up to 4) or 1 .. 8"


def _types_param(v: tuple[str, ...], facts: Facts) -> str | None:
    bad = [t for t in v if t not in TYPES]
    return f"unknown wgmma type(s) {', '.join(bad)}; valid: {_names(TYPES)}" if bad else None


def _sparse_types_param(v: tuple[str, ...], facts: Facts) -> str | None:
    bad = [t for t in v if t not in SPARSE_TYPES]
    return f"no sparse wgmma for {', '.join(bad)}; valid: {_names(SPARSE_TYPES)}" if bad else None


def _parse_names(s: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in s.split(",") if x.strip())


def _parse_ints(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split(",") if x.strip())


def _measure_matrix(ctx: BenchContext, v: Variant, modes: tuple[str, ...], datas: tuple[str, ...],
                    wgs_want: int) -> tuple[dict[tuple[str, str], tuple[list[float], Rate | None, str]], dict[str, int]]:
    """Latency and throughput of one variant for each mode x data, after the exact check of each
    mode: ({(mode, data): (latency samples, rate, failure message)}, {mode: warpgroups per SM})."""
    quick = ctx.quick
    reps = 3 if quick else 5
    lat_iters = 64 if quick else 256
    target = 4.0 if quick else 20.0
    out, used = {}, {}
    for mode in modes:
        wgs = used[mode] = v.warpgroups(mode, v.smem_one_per_sm(), wgs_want or 4)
        err = v.check(mode, wgs)
        ok = ctx.soft_check(not err, err)
        for data in datas:
            if not ok:
                out[(mode, data)] = ([], None, err)
                continue
            v.load(data, seed=11)
            lat = v.latency(mode, lat_iters, reps)
            rate, _ = v.throughput(mode, wgs, target, reps)
            bad = v.verify_run(ctx.props["sm_count"], wgs, data)
            ctx.soft_check(not bad, bad)
            out[(mode, data)] = (lat, rate, bad)
    return out, used


def _emit(ctx: BenchContext, tname: str, n: int, sparse: bool, res: dict, wgs: dict[str, int],
          headline_latency: bool = True) -> None:
    base = key_of(tname, n, sparse)
    t = TYPES[tname]
    unit, suffix = t.unit, t.unit.lower()
    peak = peak_fma(ctx, tname, sparse)
    what = f"wgmma{'.sp' if sparse else ''}.{shape_of(tname, n, sparse)}.{t.d}.{t.a}.{t.a}"
    for (mode, data), (lat, rate, err) in res.items():
        chk = "failed" if err else "ok"
        p = f"{base}.{mode}_{data}"
        if lat or err:
            ctx.figure(f"{p}_latency_cycles", float(np.median(lat)) if lat else 0.0, "cycles", "measured",
                       f"{what} {mode}: one warpgroup, chain of dependent wgmmas (same accumulators), clock64 "
                       "around the chain / its length, median of launches",
                       (min(lat), max(lat)) if lat else None, chk, err)
            if headline_latency and mode == "ss" and data == "zero":
                ctx.figure(f"{base}.latency_cycles", float(np.median(lat)) if lat else 0.0, "cycles", "measured",
                           f"{what} ss, zero operands: cycles per dependent wgmma of one warpgroup", None, chk, err)
        if rate is None and not err:
            continue
        w = wgs.get(mode, 0)
        note = err or (f"{rate.fma:.0f} FMA/clk/SM (clock64), SM clock {rate.clock_mhz:.0f} MHz "
                       f"(block cycles / event time), {w} warpgroups per SM")
        ctx.figure(f"{p}_{suffix}", rate.value if rate else 0.0, unit, "measured",
                   f"{what} {mode}: all SMs, one block of {w} warpgroups each issuing back-to-back wgmmas; "
                   "2*M*N*K per wgmma over CUDA-event time, median of launches",
                   (min(rate.per_s), max(rate.per_s)) if rate else None, chk, note)
        ctx.figure(f"{p}_fma_per_clk_sm", rate.fma if rate else 0.0, "FMA/clk/SM", "measured",
                   "multiply-accumulates per SM per clock: each block's clock64 span, median over SMs",
                   (min(rate.fma_clk_sm), max(rate.fma_clk_sm)) if rate else None, chk, err)
        if peak:
            ctx.figure(f"{p}_pct_peak", round(100 * rate.fma / peak, 2) if rate else 0.0, "%", "derived",
                       f"FMA/clk/SM over the assumed peak of {peak:g} FMA/clk/SM ({t.peak}{', sparse x2' if sparse else ''})",
                       None, chk, err)


def _series(ctx: BenchContext, name: str, rows: list[tuple[str, float, float, float]], unit: str, figure: str) -> None:
    pts = [Point(i, v, lo, hi, extra={"label": label}) for i, (label, v, lo, hi) in enumerate(rows)]
    if pts:
        ctx.series(name, "variant", "", "throughput", unit, pts, plot="bar", figure=figure)


def _run_types(ctx: BenchContext, names: tuple[str, ...], sparse: bool, figure: str) -> None:
    modes, datas = ("ss", "rs"), ("zero", "rand")
    variants = [(t, 256) for t in names]
    precompile(ctx, [variant_spec(t, n, sparse) for t, n in variants])
    if not sparse:  # once per run: figure keys are unique
        _assumed_peaks(ctx)
    bars: dict[tuple[str, str], list] = {}
    for i, (tname, n) in enumerate(variants):
        v = Variant(ctx, tname, n, sparse)
        try:
            res, wgs = _measure_matrix(ctx, v, modes, datas, ctx.params["warpgroups"])
        finally:
            v.close()
        _emit(ctx, tname, n, sparse, res, wgs)
        for (mode, data), (_, rate, err) in res.items():
            if rate is not None and not err:
                bars.setdefault((mode, data), []).append((f"{tname} {shape_of(tname, n, sparse)}", rate.value,
                                                          min(rate.per_s), max(rate.per_s)))
        ctx.progress(i + 1, len(variants), f"{'sp ' if sparse else ''}{tname}")
    for (mode, data), rows in bars.items():
        _series(ctx, f"{mode}_{data}", rows, "TFLOPS or TOPS", figure)


DENSE_SPECS = [variant_spec(t, 256) for t in TYPES]
SWEEP_SPECS = [variant_spec("f16_f32", n) for n in _FLOAT_NS if n != 256]
SPARSE_SPECS = [variant_spec(t, 256, sparse=True) for t in SPARSE_TYPES]
_WGS = Param(0, "warpgroups per SM (one block per SM); 0 = as many as fit, up to 4", int, _wgs_param)


@benchmark(
    suite=SUITE, name="wgmma_throughput", title="Dense wgmma m64n256k*: latency and throughput, SS/RS, zero/random operands",
    axes={"type": _names(TYPES), "mode": "ss (A, B in shared memory), rs (A in registers)", "operands": "zero, random"},
    kernels=DENSE_SPECS, min_cc=(9, 0), timeout_s=400, paper="000 §6.2 Table IX",
    params={"types": Param(tuple(TYPES), "comma-separated wgmma types", _parse_names, _types_param), "warpgroups": _WGS},
)
def wgmma_throughput(ctx: BenchContext) -> None:
    _run_types(ctx, ctx.params["types"], False, "wgmma_dense")


@benchmark(
    suite=SUITE, name="wgmma_sparse", title="Sparse wgmma.sp m64n256k*: latency and throughput, SS/RS, zero/random operands",
    axes={"type": _names(SPARSE_TYPES), "mode": "ss, rs", "operands": "zero, random (2:4 structure, valid metadata)"},
    kernels=SPARSE_SPECS, min_cc=(9, 0), timeout_s=400, paper="000 §6.2 Table X",
    params={"types": Param(tuple(SPARSE_TYPES), "comma-separated sparse wgmma types", _parse_names, _sparse_types_param),
            "warpgroups": _WGS},
)
def wgmma_sparse(ctx: BenchContext) -> None:
    _run_types(ctx, ctx.params["types"], True, "wgmma_sparse")


def _ns_param(v: tuple[int, ...], facts: Facts) -> str | None:
    bad = [n for n in v if n not in _FLOAT_NS]
    return f"N={', '.join(map(str, bad))} not valid for f16_f32 wgmma; valid: {_names(_FLOAT_NS)}" if bad else None


@benchmark(
    suite=SUITE, name="wgmma_n_sweep", title="wgmma.m64nNk16.f32.f16.f16 over N: latency and throughput (SS and RS)",
    axes={"N": "8 .. 256 step 8 (quick: 8, 16, 32, 64, 128, 256)", "mode": "ss, rs", "operands": "zero (+ random in full mode)"},
    kernels=SWEEP_SPECS + [variant_spec("f16_f32", 256)], min_cc=(9, 0), timeout_s=500, paper="000 §6.2 Table XI",
    params={"ns": Param(None, "comma-separated N values (default: mode's list)", _parse_ints, _ns_param), "warpgroups": _WGS},
)
def wgmma_n_sweep(ctx: BenchContext) -> None:
    tname = "f16_f32"
    ns = ctx.params["ns"] or ((8, 16, 32, 64, 128, 256) if ctx.quick else _FLOAT_NS)
    datas = ("zero", "rand") if not ctx.quick else ("zero",)
    precompile(ctx, [variant_spec(tname, n) for n in ns])
    curves: dict[tuple[str, str, str], list[Point]] = {}
    for i, n in enumerate(ns):
        v = Variant(ctx, tname, n, False)
        try:
            res, wgs = _measure_matrix(ctx, v, ("ss", "rs"), datas, ctx.params["warpgroups"])
        finally:
            v.close()
        if n != 256:  # N = 256 figures belong to wgmma_throughput (keys are unique in a run)
            _emit(ctx, tname, n, False, res, wgs, headline_latency=False)
        for (mode, data), (lat, rate, err) in res.items():
            if err or rate is None:
                continue
            curves.setdefault((mode, data, "lat"), []).append(
                Point(n, float(np.median(lat)), min(lat), max(lat), len(lat)))
            curves.setdefault((mode, data, "tput"), []).append(
                Point(n, rate.value, min(rate.per_s), max(rate.per_s), len(rate.per_s), {"fma_per_clk_sm": rate.fma}))
        ctx.progress(i + 1, len(ns), f"N={n}")
    for (mode, data, what), pts in curves.items():
        if what == "lat":
            ctx.series(f"{mode}_{data}", "N", "", "latency", "cycles", pts, plot="line", figure="wgmma_n_latency")
        else:
            ctx.series(f"{mode}_{data}", "N", "", "throughput", "TFLOPS", pts, plot="line", figure="wgmma_n_throughput")


# ---------------------------------------------------------------------------------------
# Power and energy (Tables XII-XIII)
# ---------------------------------------------------------------------------------------
def _sustain(ctx: BenchContext, v: Variant, mode: str, wgs: int, seconds: float) -> tuple[float, Any, int]:
    """Back-to-back launches for `seconds` on all SMs under NVML sampling (after a warm-up that is not
    sampled): (TFLOPS over the summed event time, telemetry summary, launches)."""
    from ..device.telemetry import Sampler, summarize

    sms, smem = ctx.props["sm_count"], v.smem_one_per_sm()
    _, iters = v.throughput(mode, wgs, 50.0, 1)  # ~50 ms per launch
    warm = min(0.5, seconds / 3)
    t_end = time.monotonic() + warm
    while time.monotonic() < t_end:
        v.launch(mode, sms, wgs, iters, smem)
    total_ms, launches = 0.0, 0
    sampler = Sampler(ctx.props.get("uuid"), period_s=0.02)
    if not sampler.available:
        sampler = Sampler(None, period_s=0.02)
    with sampler as s:
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            total_ms += v.launch(mode, sms, wgs, iters, smem)[0]
            launches += 1
    flops = v.flop_per_mma * v.count(iters) * wgs * sms * launches
    return flops / (total_ms * 1e-3) / 1e12, summarize(s.samples), launches


@benchmark(
    suite=SUITE, name="wgmma_power", title="wgmma sustained on all SMs: SM clock, power, TFLOPS/W, zero vs random operands",
    axes={"type": "every dense type at N=256 (+ sparse f16_f32)", "operands": "zero, random", "mode": "ss (+ rs in full mode)"},
    kernels=DENSE_SPECS + [variant_spec("f16_f32", 256, sparse=True)], min_cc=(9, 0), timeout_s=600, paper="000 §6.2 Tables XII-XIII",
    params={"seconds": Param(None, "sustained seconds per variant (default 0.5 quick, 1.5 full)", float,
                             lambda v, f: None if 0.1 <= v <= 30 else "0.1 .. 30"),
            "types": Param(tuple(TYPES), "comma-separated dense wgmma types", _parse_names, _types_param)},
)
def wgmma_power(ctx: BenchContext) -> None:
    seconds = ctx.params["seconds"] or (0.5 if ctx.quick else 1.5)
    modes = ("ss",) if ctx.quick else ("ss", "rs")
    todo = [(t, False) for t in ctx.params["types"]] + [("f16_f32", True)]
    precompile(ctx, [variant_spec(t, 256, sp) for t, sp in todo])
    for i, (tname, sparse) in enumerate(todo):
        t = TYPES[tname]
        v = Variant(ctx, tname, 256, sparse)
        base = key_of(tname, 256, sparse)
        try:
            for mode in modes:
                wgs = v.warpgroups(mode, v.smem_one_per_sm())
                err = v.check(mode, wgs)
                ctx.soft_check(not err, err)
                for data in ("zero", "rand"):
                    pre = f"{base}.{'' if mode == 'ss' else 'rs_'}{data}"
                    if err:
                        ctx.figure(f"{pre}_tflops_per_watt" if not t.integer else f"{pre}_tops_per_watt", 0.0,
                                   f"{t.unit}/W", "derived", "check failed", None, "failed", err)
                        continue
                    v.load(data, seed=13)
                    rate, tel, launches = _sustain(ctx, v, mode, wgs, seconds)
                    bad = v.verify_run(ctx.props["sm_count"], wgs, data)
                    ctx.soft_check(not bad, bad)
                    chk = "failed" if bad else "ok"
                    how = (f"{mode}, {launches} back-to-back launches over {seconds:g} s on all SMs after a warm-up; "
                           "NVML sampled every 20 ms")
                    sfx = t.unit.lower()
                    ctx.figure(f"{pre}_sustained_{sfx}", rate, t.unit, "measured", how + "; rate from CUDA events",
                               check=chk, note=bad)
                    if tel is None or tel.power_w_median is None:
                        msg = f"{key_of(tname, 256, sparse)} {data}: NVML gave no power samples"
                        ctx.soft_check(False, msg)
                        ctx.figure(f"{pre}_power_w", 0.0, "W", "measured", how, None, "failed", msg)
                        continue
                    ctx.figure(f"{pre}_power_w", tel.power_w_median, "W", "measured", how + "; median power",
                               (tel.power_w_median, tel.power_w_max or tel.power_w_median), chk, bad)
                    if tel.sm_clock_mhz_median is not None:
                        ctx.figure(f"{pre}_sm_clock_mhz", tel.sm_clock_mhz_median, "MHz", "measured",
                                   how + "; median SM clock", (tel.sm_clock_mhz_min, tel.sm_clock_mhz_max), chk, bad)
                    ctx.figure(f"{pre}_{sfx}_per_watt", round(rate / tel.power_w_median, 4), f"{t.unit}/W", "derived",
                               f"sustained {t.unit} over median NVML power ({mode})", None, chk,
                               f"throttle reasons: {', '.join(tel.throttle_reasons) or 'none'}; {tel.temp_c_max} C max")
                    ctx.figure(f"{pre}_throttle_reasons", ",".join(tel.throttle_reasons) or "none", "", "measured",
                               how + "; union of NVML clock-event reasons while busy", check=chk)
        finally:
            v.close()
        ctx.progress(i + 1, len(todo), f"{'sp ' if sparse else ''}{tname}")
