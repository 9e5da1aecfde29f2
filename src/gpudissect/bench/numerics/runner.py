"""The Runner of the numerics suite: one tensor-core instruction per instance over arbitrary bit matrices,
and the packing of its operands into the kernel's buffers (kernels/numerics.cu): the register fragments of
mma.sync (the packers of tensor_mma), the no-swizzle shared-memory images and D fragment of wgmma
(tensor_wgmma); Runner.dots writes independent dot products straight into those buffers."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from ...device.cuda import Arg
from ..context import BenchContext
from ..tensor.mma import layout_a, layout_b, layout_c
from ..tensor.wgmma import d_coords
from .common import FMT, SPECS, Instr, in_bits


# ---------------------------------------------------------------------------------------
# Fragment packing: matrices of bits (inst, M, K), (inst, K, N), (inst, M, N) -> kernel buffers
# ---------------------------------------------------------------------------------------
def _words(codes: np.ndarray, bits: int) -> np.ndarray:
    """[..., lane, element] codes -> [..., register, lane] 32-bit words (element 0 in the low bits),
    the vectorised form of tensor_mma.pack."""
    c = codes.astype(np.uint64)
    per = 32 // bits if bits < 32 else 1
    lead, lanes, n = c.shape[:-2], c.shape[-2], c.shape[-1]
    c = c.reshape(*lead, lanes, n // per, per)
    w = (c << (np.arange(per, dtype=np.uint64) * np.uint64(bits))).sum(axis=-1)
    return np.ascontiguousarray(np.swapaxes(w, -1, -2).astype(np.uint32))


def _codes(words: np.ndarray, bits: int) -> np.ndarray:
    """Inverse of _words: [..., register, lane] -> [..., lane, element]."""
    per = 32 // bits if bits < 32 else 1
    w = np.swapaxes(words.astype(np.uint64), -1, -2)[..., None]
    c = (w >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))) & np.uint64((1 << bits) - 1 if bits < 64 else ~0)
    return c.reshape(*c.shape[:-2], -1).astype(np.uint32)


def mma_pack(ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ib, cb = in_bits(ins.a), FMT[ins.c][3]
    _, ra, ca = layout_a(ins.m, ins.k, ib)
    _, rb, cbb = layout_b(ins.k, ins.n, ib)
    _, rc, cc = layout_c(ins.m, ins.n, cb)
    return _words(a[:, ra, ca], ib), _words(b[:, rb, cbb], ib), _words(c[:, rc, cc], cb)


def mma_unpack_d(ins: Instr, words: np.ndarray) -> np.ndarray:
    cb = FMT[ins.c][3]
    _, rc, cc = layout_c(ins.m, ins.n, cb)
    codes = _codes(words, cb)
    out = np.zeros((words.shape[0], ins.m, ins.n), np.uint32)
    out[:, rc, cc] = codes[:, :, : rc.shape[1]]
    return out


def _to_bytes(fmt: str, bits: np.ndarray) -> np.ndarray:
    """(..., K) codes -> (..., K * bytes) little-endian bytes."""
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}[in_bits(fmt)]
    b = np.ascontiguousarray(bits.astype(dt))
    return b.view(np.uint8).reshape(*bits.shape[:-1], -1)


IMG_BYTES = 2304  # numerics.cu: A (64 x 32 bytes) then B^T (8 x 32 bytes)


def wg_pack_img(ins: Instr, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A (inst, 64, K) and B (inst, K, 8) codes -> (inst, IMG_BYTES) shared-memory images, the layout of
    tensor_wgmma.pack_operand (vectorised over instances)."""

    def img(rows: np.ndarray) -> np.ndarray:
        i, r, c = rows.shape[0], rows.shape[1], rows.shape[2] // 16
        return rows.reshape(i, r // 8, 8, c, 16).transpose(0, 3, 1, 2, 4).reshape(i, -1)

    ab, bb = _to_bytes(ins.a, a), _to_bytes(ins.a, np.swapaxes(b, 1, 2))
    return np.ascontiguousarray(np.concatenate([img(ab), img(bb)], axis=1))


def wg_pack_c(ins: Instr, c: np.ndarray) -> np.ndarray:
    """C (inst, 64, 8) codes -> (inst, 128, nacc) registers in the wgmma D fragment."""
    rows, cols = d_coords(8)
    el = c[:, rows, cols].astype(np.uint32)  # (inst, 128, 4)
    if ins.c == "f16":
        el = el[..., 0::2] | (el[..., 1::2] << np.uint32(16))
    return np.ascontiguousarray(el)


def wg_unpack_d(ins: Instr, regs: np.ndarray) -> np.ndarray:
    rows, cols = d_coords(8)
    if ins.c == "f16":
        el = np.empty(regs.shape[:-1] + (4,), np.uint32)
        el[..., 0::2], el[..., 1::2] = regs & np.uint32(0xFFFF), regs >> np.uint32(16)
    else:
        el = regs
    out = np.zeros((regs.shape[0], 64, 8), np.uint32)
    out[:, rows, cols] = el
    return out


class Runner:
    """Runs one instruction per instance over arbitrary bit matrices."""

    MAX_INST = 1 << 14

    def __init__(self, ctx: BenchContext):
        self.ctx = ctx
        self.launches = 0

    def supported(self, ins: Instr) -> bool:
        return ins.needs.why_not(self.ctx.target) is None

    def run(self, ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """a (I, M, K), b (I, K, N), c (I, M, N) codes -> D (I, M, N) codes (K = ins.K: a chain takes
        K in slices of k, one per instruction)."""
        out = np.empty(c.shape, np.uint32)
        for s in range(0, a.shape[0], self.MAX_INST):
            sl = slice(s, s + self.MAX_INST)
            out[sl] = self._run(ins, a[sl], b[sl], c[sl])
        return out

    def _run(self, ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        inputs = pack(ins, a, b, c)
        words = self._launch(ins, inputs, a.shape[0])
        return mma_unpack_d(ins, words) if ins.family == "mma" else wg_unpack_d(ins, words)

    def _launch(self, ins: Instr, inputs: list[np.ndarray], count: int) -> np.ndarray:
        """One launch over `count` instances of packed operands (pack: the last is C, whose layout D has);
        D's words."""
        ctx = self.ctx
        dev = ctx.device
        fname = "num_mma" if ins.family == "mma" else "num_wgmma"
        fn = ctx.kernel(SPECS[ins], fname)
        cw = inputs[-1]
        if ins.family == "mma":
            grid, block, tail = (count * 32 + 255) // 256, 256, []
        else:
            per = 4  # WG_PER_BLOCK
            grid, block, tail = (count + per - 1) // per, 128 * per, [Arg.u32(1)]
        with ctx.scratch():  # this launch's operands and D
            bufs = [ctx.upload(np.ascontiguousarray(x)) for x in inputs]
            dbuf = ctx.alloc(cw.nbytes)
            dev.memset32(dbuf, 0xFFFFFFFF)
            fn(grid, block, [*(Arg.ptr(x) for x in bufs), Arg.ptr(dbuf), Arg.u32(count), *tail])
            dev.sync(fname)
            words = dev.download(dbuf, np.uint32, cw.size).reshape(cw.shape)
        self.launches += 1
        return words

    def dots(self, ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Independent dot products a (n, K), b (n, K), c (n,) -> d (n,): one per instance, at D[0, 0]
        (every other element of A, B, C is +0). The operands are written straight into their packed
        buffers (dot_slots): what run() would upload for those matrices, without building them."""
        out = np.empty(a.shape[0], np.uint32)
        slots, d_slot = dot_slots(ins)
        for s in range(0, a.shape[0], self.MAX_INST):
            sl = slice(s, s + self.MAX_INST)
            count = len(out[sl])
            inputs = [np.zeros((count, *shape), dt) for shape, dt in slots.shapes]
            for (buf, offs, width), vals in zip(slots.where, (a[sl], b[sl], c[sl, None])):
                _put(inputs[buf], offs, width, vals)
            words = self._launch(ins, inputs, count)
            out[sl] = _get(words, d_slot, FMT[ins.c][3] // 8)
        return out


def pack(ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list[np.ndarray]:
    """The kernel's operand buffers for a (I, M, K), b (I, K, N), c (I, M, N) codes: mma A, B, C words; wgmma
    the shared-memory images of A and B, then C; a chain's A and B in slices of k, one per instruction."""
    k = ins.k
    steps = [(a[:, :, s * k : (s + 1) * k], b[:, s * k : (s + 1) * k, :]) for s in range(ins.chain)]
    if ins.family == "mma":
        packed = [mma_pack(ins, x, y, c) for x, y in steps]
        aw = np.stack([p[0] for p in packed], axis=1)  # [inst][CHAIN][NA][32]
        bw = np.stack([p[1] for p in packed], axis=1)
        return [aw, bw, packed[0][2]]
    img = np.concatenate([wg_pack_img(ins, x, y) for x, y in steps], axis=1)
    return [img, wg_pack_c(ins, c)]


@dataclass(frozen=True)
class DotSlots:
    shapes: list[tuple[tuple[int, ...], np.dtype]]  # each packed buffer: one instance's shape, its dtype
    where: list[tuple[int, np.ndarray, int]]  # A row 0, B column 0, C (0, 0): (buffer, byte offsets, bytes each)


@cache
def dot_slots(ins: Instr) -> tuple[DotSlots, int]:
    """Where Runner.dots's elements lie in one instance's packed buffers (A's row 0 and B's column 0, k = 0..K-1;
    C's element (0, 0)), and the byte offset of D's (0, 0) in its words. The packers only move bytes: packing
    one instance whose used elements hold distinct tags (below 256: one nonzero byte each) shows where each
    lands; D has C's layout, which unpacking the tagged C proves."""
    K, w_in, w_c = ins.K, in_bits(ins.a) // 8, FMT[ins.c][3] // 8
    tags = np.arange(1, K + 1, dtype=np.uint32)
    zero_a, zero_b, zero_c = (np.zeros(s, np.uint32) for s in ((1, ins.m, K), (1, K, ins.n), (1, ins.m, ins.n)))
    a, b, c = zero_a.copy(), zero_b.copy(), zero_c.copy()
    a[0, 0, :], b[0, :, 0], c[0, 0, 0] = tags, tags, 1
    base = pack(ins, zero_a, zero_b, zero_c)
    where = []
    for packed, want, width in (
        (pack(ins, a, zero_b, zero_c), tags, w_in),
        (pack(ins, zero_a, b, zero_c), tags, w_in),
        (pack(ins, zero_a, zero_b, c), tags[:1], w_c),
    ):
        (buf,) = [i for i, (x, y) in enumerate(zip(packed, base)) if (x != y).any()]
        raw = np.ascontiguousarray(packed[buf]).view(np.uint8).ravel()
        offs = np.array([int(np.flatnonzero(raw == t)[0]) for t in want])
        assert (raw != 0).sum() == len(want) and (offs % width == 0).all(), f"{ins.key}: packing is not a byte move"
        where.append((buf, offs, width))
    cw = np.ascontiguousarray(pack(ins, zero_a, zero_b, c)[-1])
    d = mma_unpack_d(ins, cw) if ins.family == "mma" else wg_unpack_d(ins, cw)
    assert d[0, 0, 0] == 1 and d.sum() == 1, f"{ins.key}: D is not laid out as C"
    return DotSlots([(x.shape[1:], x.dtype) for x in base], where), int(where[2][1][0])


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _put(buf: np.ndarray, offs: np.ndarray, width: int, vals: np.ndarray) -> None:
    """Write vals (count, len(offs)) codes, `width` bytes each, at byte offsets of every instance's buffer."""
    view = buf.reshape(buf.shape[0], -1).view(np.uint8).view(_UINT[width])
    view[:, offs // width] = vals.astype(_UINT[width])


def _get(words: np.ndarray, off: int, width: int) -> np.ndarray:
    """The `width`-byte element at byte offset `off` of every instance's D words."""
    return words.reshape(words.shape[0], -1).view(np.uint8).view(_UINT[width])[:, off // width].astype(np.uint32)
