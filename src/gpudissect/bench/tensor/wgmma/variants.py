"""wgmma types and shapes, what the ISA allows on sm_90a, the published peaks and each variant's
kernel spec (the SASS it must hold).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....errors import GpuDissectError
from ...registry import KernelSpec

FILE = "tensor_wgmma.cu"
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

TYPES: dict[str, WgType] = {
    t.name: t
    for t in (
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
    )
}
SPARSE_TYPES = [t for t in TYPES if TYPES[t].sparse_ok]


def valid_ns(tname: str) -> tuple[int, ...]:
    return _INT_NS if TYPES[tname].kind == 2 else _FLOAT_NS


def _names(items: Any) -> str:
    return ", ".join(str(i) for i in items)


def validate(
    tname: str,
    n: int = 256,
    mode: str = "ss",
    sparse: bool = False,
    trans_a: bool = False,
    trans_b: bool = False,
    selector: int = 0,
) -> WgType:
    """The type/shape/mode combination, or an error naming the valid choices (PTX ISA 8.x, sm_90a)."""
    if tname not in TYPES:
        raise GpuDissectError(f"wgmma has no type {tname!r}; valid: {_names(TYPES)}")
    t = TYPES[tname]
    if mode not in ("ss", "rs"):
        raise GpuDissectError(
            f"wgmma mode {mode!r} is not valid; valid: ss (A and B in shared memory), rs (A in registers)"
        )
    if sparse and not t.sparse_ok:
        raise GpuDissectError(f"wgmma.sp has no {t.a} variant; sparse types: {_names(SPARSE_TYPES)}")
    if n not in valid_ns(tname):
        raise GpuDissectError(
            f"N={n} is not a valid wgmma N for {tname}{' (.sp)' if sparse else ''}; valid: {_names(valid_ns(tname))}"
        )
    if (trans_a or trans_b) and t.kind != 0:
        raise GpuDissectError(
            f"{tname}: only .f16/.bf16 wgmma can transpose A or B (imm-trans); "
            f"types with transpose: {_names(name for name, x in TYPES.items() if x.kind == 0)}"
        )
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
        "wg_rs": [
            rf"{mn} R\d+, R\d+, gdesc\[UR\d+\], R\d+{meta}",
            rf"{mn} R\d+, R\d+, gdesc\[UR\d+\], RZ, !UPT",
            *common,
        ],
    }
    defines = {
        "WG_N": n,
        "WG_K": kdim(tname, sparse),
        "WG_DT": t.d,
        "WG_AT": t.a,
        "WG_BT": t.a,
        "WG_NACC": t.nacc(n),
        "WG_FACC": int(t.d == "f32"),
        "WG_KIND": t.kind,
        "WG_B1": int(t.a == "b1"),
        "WG_SPARSE": int(sparse),
        "WG_UNROLL": unroll_for(n),
    }
    return KernelSpec(FILE, required, defines, label=f"{FILE}[{'sp.' if sparse else ''}{tname}.n{n}]")
