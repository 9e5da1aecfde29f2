"""Operands of one variant: values, what is uploaded, the numpy reference, the simulator of how the
hardware reads them (`emulate`), and the comparison of D with the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import (
    decode,
    encode,
    make_desc,
    operand_desc,
    pack_a_frag,
    pack_meta,
    pack_operand,
    sim_a_from_frag,
    sim_d_regs,
    sim_read_operand,
    sim_unsparsify,
    sparsify,
)
from .variants import ROW_BYTES, SBO, TYPES, M, b_row_bytes, kdim, lbo_for, validate

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
        raise AssertionError(
            f"{tname}: rows of {a_stored.shape[1]}/{bt_stored.shape[1]} bytes, "
            f"expected {ROW_BYTES}/{b_row_bytes(sparse)}"
        )
    img = np.concatenate([pack_operand(a_stored), pack_operand(bt_stored)])
    return Operands(
        tname,
        n,
        sparse,
        a_logical,
        decode(t.a, bt_stored).T.copy(),
        img,
        operand_desc(0, M),
        operand_desc(0, n),
        pack_a_frag(a_stored),
        meta,
    )


def emulate_raw(
    tname: str,
    n: int,
    sparse: bool,
    mode: str,
    img: np.ndarray,
    desc_a: int,
    desc_b: int,
    afrag: np.ndarray,
    meta: np.ndarray,
    count: int = 1,
) -> np.ndarray:
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
    return emulate_raw(
        ops.tname,
        ops.n,
        ops.sparse,
        mode,
        ops.img,
        ops.tpl_a | OFF_A >> 4,
        ops.tpl_b | OFF_B >> 4,
        ops.afrag,
        ops.meta,
        count,
    )


def compare(got: np.ndarray, want: np.ndarray) -> str:
    """'' when equal, else a description that says whether whole rows or columns are wrong
    (rows point at A, its layout or metadata; columns at B)."""
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want))) if got.dtype.kind == "f" else got != want
    if not bad.any():
        return ""
    r, c = np.argwhere(bad)[0]
    rows, cols = np.unique(np.nonzero(bad)[0]), np.unique(np.nonzero(bad)[1])
    return (
        f"{int(bad.sum())} of {bad.size} elements differ (rows {len(rows)}/{bad.shape[0]}, columns "
        f"{len(cols)}/{bad.shape[1]}); first at ({r}, {c}): got {got[r, c]}, want {want[r, c]}"
    )


def diagnose(ops: Operands, mode: str, got: np.ndarray, count: int) -> str:
    """Which other reading of the same bytes the GPU result matches (a hint for whoever debugs it)."""
    t = TYPES[ops.tname]
    k = kdim(ops.tname, ops.sparse)
    smem = np.concatenate([ops.img, np.zeros(CHECK_SMEM - ops.img.size, np.uint8)])  # as the kernel fills it
    hints = [
        f"D = {c} x A x B (scale-d or a commit group off by one)"
        for c in (count - 1, count + 1)
        if c >= 0 and not compare(got, c * ops.reference())
    ]
    try:  # the descriptor's two byte offsets read the other way round
        a = (
            decode(t.a, sim_read_operand(smem, make_desc(OFF_A, SBO, lbo_for(M)), M))
            if mode == "ss"
            else decode(t.a, sim_a_from_frag(ops.afrag))
        )
        if ops.sparse:
            a = sim_unsparsify(a, ops.meta, ops.tname, k)
        b = decode(t.a, sim_read_operand(smem, make_desc(OFF_B, SBO, lbo_for(ops.n)), ops.n, b_row_bytes(ops.sparse))).T
        if not compare(got, count * (a @ b)):
            hints.append("leading and stride byte offsets swapped")
    except (IndexError, ValueError):
        pass
    return f" (matches: {'; '.join(hints)})" if hints else ""
