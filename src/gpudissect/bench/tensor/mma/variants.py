"""Which mma / mma.sp exist (on sm_90; lowering.py: which of them each GPU runs), their inputs in fragment form,
and the check of D."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....errors import GpuDissectError
from .fragments import (
    BITS,
    SIGNED,
    chunk_elems,
    decode,
    decompress,
    encode,
    layout_a,
    layout_b,
    layout_c,
    metadata_layout,
    metadata_words,
    pack,
    parse_shape,
    random_acc,
    random_nibbles,
    random_values,
    unpack,
)

# ---------------------------------------------------------------------------------------
# Which mma / mma.sp exist for sm_90 (PTX ISA 9.x, "mma" and "mma.sp" syntax and target notes),
# each confirmed by compiling it with NVRTC 13 for sm_90a; the rows below say what was refused.
# ---------------------------------------------------------------------------------------
ISA_SRC = "PTX ISA 9.x §9.7.14.5.14 (mma) / §9.7.14.6.3 (mma.sp); compiled with NVRTC 13.5 for sm_90a"
DENSE: dict[str, tuple[str, ...]] = {
    "f16_f16": ("m8n8k4", "m16n8k8", "m16n8k16"),
    "f16_f32": ("m8n8k4", "m16n8k8", "m16n8k16"),
    "bf16_f32": ("m16n8k8", "m16n8k16"),
    "tf32_f32": ("m16n8k4", "m16n8k8"),
    "f64_f64": ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"),  # m16n8k* f64: sm_90 only
    "e4m3_f32": ("m16n8k16", "m16n8k32"),  # fp8 mma.sync: sm_89+; m16n8k16 and f16 accumulators: PTX 8.7+
    "e5m2_f32": ("m16n8k16", "m16n8k32"),
    "e4m3_f16": ("m16n8k16", "m16n8k32"),
    "e5m2_f16": ("m16n8k16", "m16n8k32"),
    "s8_s32": ("m8n8k16", "m16n8k16", "m16n8k32"),
    "u8_s32": ("m8n8k16", "m16n8k16", "m16n8k32"),
    "s4_s32": ("m8n8k32", "m16n8k32", "m16n8k64"),
    "u4_s32": ("m8n8k32", "m16n8k32", "m16n8k64"),
    "b1and_s32": ("m8n8k128", "m16n8k128", "m16n8k256"),
    "b1xor_s32": ("m8n8k128", "m16n8k128", "m16n8k256"),
}
SPARSE: dict[str, tuple[str, ...]] = {
    "f16_f16": ("m16n8k16", "m16n8k32"),
    "f16_f32": ("m16n8k16", "m16n8k32"),
    "bf16_f32": ("m16n8k16", "m16n8k32"),
    "tf32_f32": ("m16n8k8", "m16n8k16"),
    "e4m3_f32": ("m16n8k64",),
    "e5m2_f32": ("m16n8k64",),
    "s8_s32": ("m16n8k32", "m16n8k64"),
    "u8_s32": ("m16n8k32", "m16n8k64"),
    "s4_s32": ("m16n8k64", "m16n8k128"),
    "u4_s32": ("m16n8k64", "m16n8k128"),
}
# Combinations the ISA's syntax allows but sm_90a refuses, with what refused them.
_F8_F16 = "ptxas: 'mma with F16 accumulator and F8 floating point type' not supported on .target 'sm_90a'"
REFUSED = {("mma_sp", "e4m3_f16"): _F8_F16, ("mma_sp", "e5m2_f16"): _F8_F16}


def check_combination(types: str, shape: str, sparse: bool = False) -> None:
    """Raise GpuDissectError naming the valid combinations unless (types, shape) exists on sm_90."""
    table, what = (SPARSE, "mma.sp") if sparse else (DENSE, "mma.sync")
    if types not in table:
        why = REFUSED.get(("mma_sp" if sparse else "mma", types))
        raise GpuDissectError(
            f"{what}: type pair {types!r} is not valid on sm_90{f' ({why})' if why else ''}; valid pairs: "
            + ", ".join(f"{t} ({'/'.join(s)})" for t, s in table.items())
            + f" [{ISA_SRC}]"
        )
    if shape not in table[types]:
        raise GpuDissectError(
            f"{what}: {types} has no shape {shape!r} on sm_90; valid shapes for {types}: "
            + ", ".join(table[types])
            + f" [{ISA_SRC}]"
        )


@dataclass(frozen=True)
class MmaVariant:
    """One PTX mma / mma.sp instruction: A and B of type `a`, C and D of type `c`."""

    a: str
    c: str
    shape: str
    sparse: bool = False
    bitop: str = ""  # b1 only: "and" | "xor"

    @property
    def types(self) -> str:
        return f"{self.a}{self.bitop}_{self.c}"

    @property
    def key(self) -> str:
        return f"{self.types}.{self.shape}"

    @property
    def family(self) -> str:
        return "mma_sp" if self.sparse else "mma"

    @property
    def mnk(self) -> tuple[int, int, int]:
        return parse_shape(self.shape)

    @property
    def quadpair(self) -> bool:
        return self.shape == "m8n8k4" and self.a == "f16"

    @property
    def fma_per_mma(self) -> int:
        """m*n*k per warp instruction (logical K for mma.sp, as Sun counts; 4 products for m8n8k4 .f16)."""
        m, n, k = self.mnk
        return m * n * k * (4 if self.quadpair else 1)

    @property
    def k_stored(self) -> int:
        return self.mnk[2] // 2 if self.sparse else self.mnk[2]

    def regs(self) -> tuple[int, int, int]:
        m, n, k = self.mnk
        ab = BITS[self.a]
        per = 1 if ab == 64 else 32 // ab
        cbits = BITS[self.c]
        if self.quadpair:
            return 2, 2, 4 if cbits == 16 else 8
        na = m * self.k_stored // 32 // per
        nb = k * n // 32 // per
        nc = m * n // 32 // (2 if cbits == 16 else 1)
        return na, nb, nc

    @property
    def ptx(self) -> str:
        m, n, k = self.mnk
        if self.a == "b1":
            return f"mma.sync.aligned.{self.shape}.row.col.s32.b1.b1.s32.{self.bitop}.popc"
        if self.sparse:
            return f"mma.sp::ordered_metadata.sync.aligned.{self.shape}.row.col.{self.c}.{self.a}.{self.a}.{self.c}"
        return f"mma.sync.aligned.{self.shape}.row.col.{self.c}.{self.a}.{self.a}.{self.c}"

    def asm(self) -> str:
        na, nb, nc = self.regs()
        lst = lambda start, count: "{" + ",".join(f"%{start + i}" for i in range(count)) + "}"
        ops = f"{lst(0, nc)}, {lst(nc, na)}, {lst(nc + na, nb)}, {lst(0, nc)}"
        if self.sparse:
            ops += f", %{nc + na + nb}, 0x0"
        return f"{self.ptx} {ops};"

    def defines(self) -> dict[str, object]:
        """The defines every family shares (lowering.defines adds OPAQUE and MAX_WARPS, which differ by family)."""
        na, nb, nc = self.regs()
        ck = {"f32": 0, "f16": 1, "s32": 1, "f64": 2}[self.c]
        return {
            "NA": na,
            "NB": nb,
            "NC": nc,
            "AK": 1 if self.a == "f64" else 0,
            "CK": ck,
            "SPARSE": int(self.sparse),
            "MMA_ASM": f'"{self.asm()}"',
        }


def all_variants(sparse: bool) -> list[MmaVariant]:
    out = []
    for types, shapes in (SPARSE if sparse else DENSE).items():
        a, c = types.split("_")
        bitop = ""
        if a.startswith("b1"):
            a, bitop = "b1", a[2:]
        out += [MmaVariant(a, c, s, sparse, bitop) for s in shapes]
    return out


# ---------------------------------------------------------------------------------------
# Inputs in fragment form, and what D must be
# ---------------------------------------------------------------------------------------
CHAINS = 6  # the kernel reads C for up to 6 chains (ILP 1..6)
ZMASKS = 8  # zero masks after the 32 metadata words (OPAQUE kernels)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + 2**31) % 2**32) - 2**31


@dataclass
class MmaInputs:
    """Matrices of one variant, their fragments, and the reference for D."""

    v: MmaVariant
    a: np.ndarray  # [batch, m, k] dense A (values; zeros where 2:4 sparse)
    b: np.ndarray  # [batch, k, n]
    b2: np.ndarray  # [batch, k, n]
    c: np.ndarray  # [chains, batch, m, n]
    a_words: np.ndarray  # [regs, 32]
    b_words: np.ndarray
    b2_words: np.ndarray
    c_words: np.ndarray  # [chains, regs, 32]
    e_words: np.ndarray  # [32 + ZMASKS] u32
    exact: bool

    def product(self, b: np.ndarray) -> np.ndarray:
        a, v = self.a, self.v
        if v.a == "b1" and v.bitop == "xor":
            return a.sum(axis=2)[:, :, None] + b.sum(axis=1)[:, None, :] - 2 * (a @ b)
        return a @ b

    def expected(self, iters: int) -> np.ndarray:
        """D of every chain, [chains, batch, m, n]: C + A*B + iters * (A*B + A*B2)."""
        ab, ab2 = self.product(self.b), self.product(self.b2)
        d = self.c + ab[None] + iters * (ab + ab2)[None]
        return _wrap32(d) if self.v.c == "s32" else d

    def d_values(self, words: np.ndarray) -> np.ndarray:
        """Downloaded D fragments [..., regs, 32] -> values [..., batch, m, n]."""
        v = self.v
        m, n, _ = v.mnk
        nb = 4 if v.quadpair else 1
        bits = BITS[v.c]
        _, _, nc = v.regs()
        lead = words.shape[:-2]
        flat = words.reshape(-1, nc, 32)
        bt, row, col = layout_c(m, n, bits, v.quadpair)
        out = np.empty((flat.shape[0], nb, m, n))
        # every fragment at once (one Python call per fragment was 12 s of a quick run's mma benchmarks)
        out[:, bt, row, col] = decode(unpack(flat, bits, row.shape[1]), v.c)
        return out.reshape(*lead, nb, m, n)

    def tolerance(self, iters: int) -> np.ndarray | None:
        """Allowed |D - reference| per element: None (exact) or a bound from the accumulator's epsilon."""
        if self.exact or self.v.c == "s32":
            return None
        eps = {"f16": 2.0**-10, "f32": 2.0**-16, "f64": 2.0**-48}[self.v.c]
        mag = np.abs(self.a) @ np.abs(self.b) + np.abs(self.a) @ np.abs(self.b2)
        steps = 2 * iters + 1
        return 4 * eps * (np.abs(self.c) + steps * mag[None]) + 1e-30


def metadata_for(v: MmaVariant) -> tuple[int, np.ndarray]:
    """(chunks per row, [lane, nibble] layout) of a sparse variant."""
    chunks = v.mnk[2] // chunk_elems(v.a)
    return chunks, metadata_layout(v.a, chunks)


def make_inputs(v: MmaVariant, rng: np.random.Generator, mode: str = "exact") -> MmaInputs:
    """mode: "exact" (integer-valued, D exact), "random" (full random mantissas) or "zero"."""
    m, n, k = v.mnk
    nb = 4 if v.quadpair else 1
    exact = mode != "random"
    gen = lambda t, shape: np.zeros(shape) if mode == "zero" else random_values(t, shape, rng, exact)
    b = gen(v.a, (nb, k, n))
    if v.a in SIGNED:
        b2 = -b  # D returns to C + A*B every iteration: exact for any length
    elif mode == "random":
        b2 = gen(v.a, (nb, k, n))
    else:
        b2 = b.copy()
    c = np.zeros((CHAINS, nb, m, n)) if mode == "zero" else random_acc(v.c, (CHAINS, nb, m, n), rng, exact)
    e_words = np.zeros(32 + ZMASKS, np.uint32)
    abits = BITS[v.a]
    if v.sparse:
        stored = gen(v.a, (m, k // 2))
        chunks, lay = metadata_for(v)
        nib = random_nibbles(v.a, (m, chunks), rng)
        a = decompress(stored, nib, v.a)[None]
        e_words[:32] = metadata_words(nib, lay)
        bt, row, col = layout_a(m, k // 2, abits)
        a_codes = encode(stored, v.a)[row, col]
    else:
        a = gen(v.a, (nb, m, k))
        bt, row, col = layout_a(m, k, abits, v.quadpair)
        a_codes = encode(a, v.a)[bt, row, col]
    bt, row, col = layout_b(k, n, abits, v.quadpair)
    b_words = pack(encode(b, v.a)[bt, row, col], abits)
    b2_words = pack(encode(b2, v.a)[bt, row, col], abits)
    bt, row, col = layout_c(m, n, BITS[v.c], v.quadpair)
    c_words = np.stack([pack(encode(c[j], v.c)[bt, row, col], BITS[v.c]) for j in range(CHAINS)])
    return MmaInputs(v, a, b, b2, c, pack(a_codes, abits), b_words, b2_words, c_words, e_words, exact)


def check_d(inp: MmaInputs, words: np.ndarray, iters: int) -> str:
    """'' when every D (all blocks, warps, chains) equals the reference; else what differs."""
    ilp = words.shape[-3]
    got = inp.d_values(words)  # [..., ilp, batch, m, n]
    want = inp.expected(iters)[:ilp]
    tol = inp.tolerance(iters)
    if tol is None:
        bad = got != want
    else:
        bad = ~(np.abs(got - want) <= tol[:ilp])
    if not bad.any():
        return ""
    idx = np.argwhere(bad)[0]
    where = tuple(int(i) for i in idx)
    return (
        f"{int(bad.sum())} of {bad.size} D elements differ; first at {where}: got {got[where]!r}, "
        f"want {want[where[-4:]]!r}"
    )
