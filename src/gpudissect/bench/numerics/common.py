"""Shared parts of the numerics suite: host-side formats, the probed instructions and their kernel specs
(runner.py: the fragment packing and the Runner that executes one tensor-core instruction per instance).

Every instance (a warp for mma.sync, a warpgroup for wgmma) loads its own A, B, C, executes exactly ONE
instruction (a chained Instr: `chain` of them, each D the next C) and stores the raw D bits
(kernels/numerics.cu).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from ...capability import Needs
from ..registry import KernelSpec
from ..shared import by_family, family_has
from ..tensor.mma import MmaVariant
from ..tensor.mma import decode as tm_decode
from ..tensor.wgmma import TYPES as WG_TYPES

FILE = "numerics.cu"

# ---------------------------------------------------------------------------------------
# Formats (host side): exponent/mantissa widths, container bits
# ---------------------------------------------------------------------------------------
# name: (exponent bits, fraction bits, bias, container bits)
FMT = {
    "f16": (5, 10, 15, 16),
    "bf16": (8, 7, 127, 16),
    "tf32": (8, 10, 127, 32),
    "e4m3": (4, 3, 7, 8),
    "e5m2": (5, 2, 15, 8),
    "f32": (8, 23, 127, 32),
}


def fmt_min_normal_exp(fmt: str) -> int:
    return 1 - FMT[fmt][2]


def fmt_max_exp(fmt: str) -> int:
    """Largest exponent of a finite power of two (e4m3: 2^8 = 256, its top binade has no infinity)."""
    e, _, bias, _ = FMT[fmt]
    return (1 << e) - 1 - bias - (0 if fmt == "e4m3" else 1)


def fmt_max(fmt: str) -> float:
    return {
        "f16": 65504.0,
        "bf16": float(np.finfo(np.float32).max * (1 - 2.0**-8) / (1 - 2.0**-24)),
        "tf32": float((2 - 2.0**-10) * 2.0**127),
        "e4m3": 448.0,
        "e5m2": 57344.0,
        "f32": float(np.finfo(np.float32).max),
    }[fmt]


def to_values(fmt: str, bits: np.ndarray) -> np.ndarray:
    """Bits (any uint array) of fmt -> float64 values (tf32: low 13 bits ignored; e5m2 infinities)."""
    codes = np.asarray(bits).astype(np.uint64)
    v = tm_decode(codes, fmt)
    if fmt == "e5m2":  # tensor_mma's fp8 table has NaN for the infinity codes too
        inf = (codes & np.uint64(0x7F)) == np.uint64(0x7C)
        v = np.where(inf, np.where(codes & np.uint64(0x80), -np.inf, np.inf), v)
    return v


def from_values(fmt: str, x: np.ndarray | float) -> np.ndarray:
    """Exactly representable values -> bits (uint32). Raises if a value is not representable."""
    x = np.atleast_1d(np.asarray(x, np.float64))
    if fmt == "f32":
        out = x.astype(np.float32).view(np.uint32)
    elif fmt == "f16":
        out = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    elif fmt in ("bf16", "tf32"):
        w = x.astype(np.float32).view(np.uint32)
        out = w >> np.uint32(16) if fmt == "bf16" else w & np.uint32(0xFFFFE000)
    else:  # fp8: the lowest code of each value (-0 kept, NaN: the first NaN code)
        vals, codes, nan_code = _fp8_lookup(fmt)
        i = np.minimum(np.searchsorted(vals, x), vals.size - 1)
        out = codes[i].astype(np.uint32)
        ok = vals[i] == x
        out[np.isnan(x)], ok[np.isnan(x)] = nan_code, True
        out[x == 0] = np.where(np.signbit(x[x == 0]), 0x80, 0)
        if not ok.all():
            raise ValueError(f"{x[~ok].ravel()[0]} is not representable in {fmt}")
        return out
    back = to_values(fmt, out)
    ok = (back == x) | (np.isnan(back) & np.isnan(x))
    if not ok.all():
        raise ValueError(f"{x[~ok][:3]} not representable in {fmt}")
    return out.astype(np.uint32)


def in_bits(fmt: str) -> int:
    return 32 if fmt == "tf32" else FMT[fmt][3]


@cache
def _fp8_lookup(fmt: str) -> tuple[np.ndarray, np.ndarray, int]:
    """The 256 codes of an fp8 format without its NaNs, sorted by value (equal values: lowest code first), and
    its first NaN code: from_values looks every value up at once."""
    table = to_values(fmt, np.arange(256))
    num = np.flatnonzero(~np.isnan(table))
    order = num[np.argsort(table[num], kind="stable")]
    return table[order], order, int(np.flatnonzero(np.isnan(table))[0])


def round_values(fmt: str, x: np.ndarray) -> np.ndarray:
    """float64 -> bits of fmt by round-to-nearest-even (fp8: nearest, saturating to the largest finite;
    the host conversion of the paper's "initialise in fp32, convert when copying")."""
    x = np.asarray(x, np.float64)
    if fmt == "f16":
        with np.errstate(over="ignore"):  # beyond 65520 -> inf, as a conversion does
            return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    if fmt == "f32":
        return x.astype(np.float32).view(np.uint32)
    if fmt in ("bf16", "tf32"):
        u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        sh = 16 if fmt == "bf16" else 13
        half = (1 << (sh - 1)) - 1
        r = (u + half + ((u >> sh) & 1)) >> sh << sh
        nan = np.isnan(x)
        r = np.where(nan, u, r).astype(np.uint32)
        return r >> np.uint32(16) if fmt == "bf16" else r
    from ..tensor.wgmma import _fp8_encode  # nearest finite code (saturates)

    return _fp8_encode(fmt, np.nan_to_num(x)).astype(np.uint32)


# ---------------------------------------------------------------------------------------
# Instructions
# ---------------------------------------------------------------------------------------
# the capability (gpudissect.capability.FEATURES) an mma.sync of each input type needs
_MMA_FEATURE = {"f16": "mma_m16n8k16", "bf16": "mma_bf16", "tf32": "mma_tf32", "e4m3": "mma_fp8", "e5m2": "mma_fp8"}


@dataclass(frozen=True)
class Instr:
    family: str  # "mma" | "wgmma"
    a: str  # input format
    c: str  # accumulator format
    m: int
    n: int
    k: int
    chain: int = 1  # instructions in sequence, each taking the previous one's D as its C

    @property
    def tname(self) -> str:
        return f"{self.a}_{self.c}"

    @property
    def key(self) -> str:
        """Figure-key stem, e.g. wgmma.f16_f32 (a chain: wgmma.f16_f32.chain4)."""
        return f"{self.family}.{self.tname}" + (f".chain{self.chain}" if self.chain > 1 else "")

    @property
    def ptx(self) -> str:
        """Instruction name as gpudissect.numerics.presets names it (of one instruction of a chain)."""
        return f"{self.family}.m{self.m}n{self.n}k{self.k}.{self.c}.{self.a}.{self.a}"

    @property
    def K(self) -> int:
        """Products per dot product: k of each instruction times the chain length."""
        return self.k * self.chain

    @property
    def single(self) -> Instr:
        return replace(self, chain=1)

    @property
    def needs(self) -> Needs:
        """What the GPU must have to run it: wgmma is sm_90a only, fp8 mma.sync 8.9, the others 8.0."""
        return Needs(features=("wgmma",) if self.family == "wgmma" else (_MMA_FEATURE[self.a],))

    @property
    def per_inst(self) -> int:
        return self.m * self.n


MMA_INSTRS = [
    Instr("mma", "f16", "f32", 16, 8, 16),
    Instr("mma", "f16", "f16", 16, 8, 16),
    Instr("mma", "bf16", "f32", 16, 8, 16),
    Instr("mma", "tf32", "f32", 16, 8, 8),
]
WG_INSTRS = [
    Instr("wgmma", "f16", "f32", 64, 8, 16),
    Instr("wgmma", "f16", "f16", 64, 8, 16),
    Instr("wgmma", "bf16", "f32", 64, 8, 16),
    Instr("wgmma", "tf32", "f32", 64, 8, 8),
] + [Instr("wgmma", f, c, 64, 8, 32) for f in ("e4m3", "e5m2") for c in ("f32", "f16")]
# The float mma/wgmma of sm_90 whose one instruction has K above the tensor core's block: only fp8
# mma.sync m16n8k32 (sm_89+), which ptxas emulates on sm_90 and sm_100 (F2FP to f16, two HMMA.16816 of half
# the K, C added last by FADD/HADD2) and runs as one QMMA.16832 on sm_89 and sm_120 (what its block is there
# the probes decide). Every wgmma is one block (f16/bf16 k16, tf32 k8, fp8 k32: the probes find block = K);
# mma.sync f16/bf16 k16 and tf32 k8 are one block on sm_90; the k8/k4 shapes are below it.
MMA_FP8_INSTRS = [Instr("mma", f, c, 16, 8, 32) for f in ("e4m3", "e5m2") for c in ("f32", "f16")]
SINGLE_BLOCK_INSTRS = MMA_INSTRS + WG_INSTRS
INSTRS = SINGLE_BLOCK_INSTRS + MMA_FP8_INSTRS  # every instruction the probes decide
CHAIN = 4  # chained instructions per dot product in the multi-block cases (K = 4 k)
CHAIN_INSTRS = [replace(i, chain=CHAIN) for i in SINGLE_BLOCK_INSTRS]
MULTI_BLOCK_INSTRS = MMA_FP8_INSTRS + CHAIN_INSTRS


def mma_variant(ins: Instr) -> MmaVariant:
    return MmaVariant(ins.a, ins.c, f"m{ins.m}n{ins.n}k{ins.k}")


def _times(pattern: str, n: int) -> str:
    """A regex that matches n occurrences of pattern in one function's SASS."""
    return pattern if n == 1 else "(?s)" + f"(?:{pattern}.*?)" * (n - 1) + pattern


FP8 = ("e4m3", "e5m2")
# the families whose ptxas builds fp8 mma.sync m16n8k32 as one QMMA.16832 (NVRTC 13: sm_89, sm_120a); sm_90a and
# sm_100a emulate it. What a figure says of it comes from the SASS that ran (targets.implementation).
QMMA_FAMILIES = ("ada", "blackwell-consumer")


def sass_pattern(ins: Instr, family: str = "hopper") -> str:
    """The tensor-core SASS one instance must contain on `family` (NVRTC 13.x; sm_90a checked by
    tests/bench/test_required_sass.py, every family by `gpudissect sass --all`)."""
    if ins.family == "mma":
        if ins.a in FP8:
            if family in QMMA_FAMILIES:  # native: one QMMA of the whole K
                return _times(rf"QMMA\.16832\.{ins.c.upper()}\.{ins.a.upper()}\.{ins.a.upper()} ", ins.chain)
            return _times(rf"HMMA\.16816\.{ins.c.upper()} ", 2 * ins.chain)  # emulated: two f16 HMMA of half the K
        kind = {"f16": r"\.F16 " if ins.c == "f16" else r"\.F32 ", "bf16": r"\.F32\.BF16 ", "tf32": r"\.F32\.TF32 "}[
            ins.a
        ]
        return _times(rf"HMMA\.{ins.m}{ins.n}{ins.k}{kind}", ins.chain)
    head = "QGMMA" if ins.a in FP8 else "HGMMA"
    tail = {"f16": "", "bf16": r"\.BF16", "tf32": r"\.TF32"}.get(ins.a, rf"\.{ins.a.upper()}\.{ins.a.upper()}")
    return _times(rf"{head}\.64x8x{ins.k}\.{ins.c.upper()}{tail} R\d+, gdesc\[UR\d+\], R\d+", ins.chain)


def required(ins: Instr, family: str = "hopper") -> dict[str, list[str]]:
    """The SASS a variant must hold on `family` (a family that cannot run it: Hopper's, never checked)."""
    if family != "hopper" and not family_has(ins.needs, family):
        family = "hopper"
    if ins.family == "wgmma":
        return {"num_wgmma": [sass_pattern(ins), r"WARPGROUP\.ARRIVE", r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0"]}
    req = [sass_pattern(ins, family)]
    if ins.a in FP8 and family not in QMMA_FAMILIES:  # the emulation: fp8 -> f16, C added by FADD / HADD2 last
        req += [rf"F2FP\.F16\.{ins.a.upper()}\.UNPACK_B", r"FADD " if ins.c == "f32" else r"HADD2 "]
    return {"num_mma": req}


def spec_of(ins: Instr) -> KernelSpec:
    label, family_req = f"{FILE}[{ins.key}]", by_family(lambda fam: required(ins, fam))
    if ins.family == "mma":
        v = mma_variant(ins)
        na, nb, nc = v.regs()
        defines: dict[str, object] = {
            "NA": na,
            "NB": nb,
            "NC": nc,
            "CK": 0 if ins.c == "f32" else 1,
            "MMA_ASM": f'"{v.asm()}"',
            "CHAIN": ins.chain,
        }
        return KernelSpec(FILE, required(ins), defines, label=label, needs=ins.needs, required_by_family=family_req)
    t = WG_TYPES[ins.tname]
    op = f"wgmma.mma_async.sync.aligned.m64n8k{ins.k}.{ins.c}.{ins.a}.{ins.a}"
    defines = {
        "NUM_WG": 1,
        "WG_OP": f'"{op}"',
        "WG_TAIL": '", 1, 1, 0, 0"' if t.kind == 0 else '", 1, 1"',
        "WG_NACC": t.nacc(8),
        "WG_FACC": int(ins.c == "f32"),
        "CHAIN": ins.chain,
    }
    return KernelSpec(FILE, required(ins), defines, label=label, needs=ins.needs, required_by_family=family_req)


SPECS = {ins: spec_of(ins) for ins in INSTRS + CHAIN_INSTRS}


def _nan_bits(fmt: str) -> int:
    return {"f16": 0x7E00, "bf16": 0x7FC0, "tf32": 0x7FC00000, "e4m3": 0x7F, "e5m2": 0x7E, "f32": 0x7FC00000}[fmt]
