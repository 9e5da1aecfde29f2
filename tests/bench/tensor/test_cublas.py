"""The PTX -> SASS map (on self-compiled snippets) and the cuBLAS benchmark's CPU-side logic."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from gpudissect.bench.registry import REGISTRY, Benchmark, KernelSpec, load_all, resolve_params
from gpudissect.bench.tensor import cublas as tl
from gpudissect.errors import GpuDissectError
from gpudissect.sass.disasm import find_tool
from gpudissect.sassmap import (
    Row,
    emulation_note,
    map_source,
    map_spec,
    parse_ptx,
    ptx_instructions,
    ptx_of,
    ptx_sass_map,
    published_for,
    render_markdown,
    sass_ops,
    tensor_specs,
)

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


# ---------------------------------------------------------------------------------------
# Self-contained PTX snippets: every operand comes from memory and every result is stored, so
# ptxas keeps the instruction. Register lists are built from (a, b, c, d) counts.
def _mma_source(ptx: str, na: int, nb: int, nc: int, nd: int, acc: str) -> str:
    ctype = {"f": "float", "r": "unsigned", "d": "double"}[acc]
    regs = lambda first, n: "{" + ",".join(f"%{first + j}" for j in range(n)) + "}"
    text = f"{ptx} {regs(0, nd)},{regs(nd, na)},{regs(nd + na, nb)},{regs(nd + na + nb, nc)};"
    ab = "d" if acc == "d" else "r"  # f64 mma takes f64 A/B registers
    outs = ",".join(f'"={acc}"(d[{j}])' for j in range(nd))
    ins = ",".join([f'"{ab}"(in[{j}])' for j in range(na + nb)] + [f'"{acc}"(c[{j}])' for j in range(nc)])
    itype = "double" if acc == "d" else "unsigned"
    return (
        f'extern "C" __global__ void k({ctype} *out, const {itype} *in, const {ctype} *cin) {{\n'
        f"  {ctype} c[{nc}], d[{nd}];\n  for (int j = 0; j < {nc}; j++) c[j] = cin[j];\n"
        f'  asm volatile("{text}" : {outs} : {ins});\n'
        f"  for (int j = 0; j < {nd}; j++) out[j] = d[j];\n}}\n"
    )


SNIPPETS = {  # ptx: (a regs, b regs, c regs, d regs, accumulator constraint)
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": (4, 2, 4, 4, "f"),
    "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32": (2, 2, 8, 8, "f"),
    "mma.sync.aligned.m8n8k32.row.col.s32.s4.s4.s32": (1, 1, 2, 2, "r"),
    "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32": (4, 2, 4, 4, "r"),
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32": (4, 2, 4, 4, "f"),
    "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc": (4, 2, 4, 4, "r"),
    "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64": (1, 1, 2, 2, "d"),
}

LDMATRIX = {
    "ldmatrix.sync.aligned.m8n8.x4.shared.b16": 4,
    "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16": 1,
}


def _ldmatrix_source(ptx: str, n: int) -> str:
    outs = ",".join(f'"=r"(r[{j}])' for j in range(n))
    regs = "{" + ",".join(f"%{j}" for j in range(n)) + "}"
    return (
        'extern "C" __global__ void k(unsigned *out, const unsigned *in) {\n'
        "  __shared__ unsigned s[512];\n  s[threadIdx.x] = in[threadIdx.x];\n  __syncthreads();\n"
        f"  unsigned r[{n}], x = 0;\n"
        "  unsigned addr = (unsigned)__cvta_generic_to_shared(&s[(threadIdx.x % 32) * 4]);\n"
        f'  asm volatile("{ptx} {regs}, [%{n}];" : {outs} : "r"(addr));\n'
        f"  for (int j = 0; j < {n}; j++) x ^= r[j];\n  out[threadIdx.x] = x;\n}}\n"
    )


@pytest.fixture(scope="module")
def snippet_rows() -> dict[str, Row]:
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    rows: dict[str, Row] = {}
    for i, (ptx, (na, nb, nc, nd, acc)) in enumerate(SNIPPETS.items()):
        (rows[ptx],) = map_source(ptx, f"snippet{i}", _mma_source(ptx, na, nb, nc, nd, acc))
    for i, (ptx, n) in enumerate(LDMATRIX.items()):
        (rows[ptx],) = map_source(ptx, f"ldsm{i}", _ldmatrix_source(ptx, n))
    return rows


def _row(rows: dict[str, Row], prefix: str, shape: str, *types: str) -> Row:
    hits = [
        r
        for p, r in rows.items()
        if p.startswith(prefix) and f".{shape}." in p and all(f".{t}." in p + "." for t in types)
    ]
    assert len(hits) == 1, (prefix, shape, types, list(rows))
    return hits[0]


@needs_cuobjdump
@pytest.mark.sass
def test_f16_m16n8k16_is_one_hmma(snippet_rows):
    r = _row(snippet_rows, "mma.sync", "m16n8k16", "f16", "f32")
    assert r.tensor == ("HMMA.16816.F32",)
    assert r.note == ""
    assert published_for(r.ptx) == ["HMMA.16816.F32"]  # 000 Table VII agrees


@needs_cuobjdump
@pytest.mark.sass
def test_m8n8k4_f16_has_no_tensor_instruction(snippet_rows):
    """001 §2.2: on Ampere (and, as compiled here, Hopper) mma.m8n8k4 becomes FPU instructions."""
    r = _row(snippet_rows, "mma.sync", "m8n8k4", "f16")
    assert r.tensor == ()
    assert "FFMA" in r.math and not any("MMA" in op.split(".")[0] for op in r.sass)
    assert r.note.startswith("no tensor-core instruction")


@needs_cuobjdump
@pytest.mark.sass
def test_s4_is_emulated(snippet_rows):
    """000 §6.2: Hopper has no 4-bit IMMA; NVRTC unpacks s4 to s8 (IMAD/LOP3/SHF) and uses the s8 IMMA."""
    r = _row(snippet_rows, "mma.sync", "m8n8k32", "s4")
    assert r.tensor, "no tensor instruction left at all"
    assert not any(".S4" in op or ".U4" in op for op in r.tensor)
    assert all(op.startswith("IMMA.8816.S8.S8") for op in r.tensor), r.tensor  # NVRTC 13.x on sm_90a
    assert any(op.startswith("IMAD") for op in r.math)  # the IMADs 000 Table VII reports
    assert any(op.startswith("LOP3") for op in r.math)
    assert "4-bit operands unpacked" in r.note
    assert published_for(r.ptx) == ["IMAD.MOV.U32"]


@needs_cuobjdump
@pytest.mark.sass
def test_other_types_lower_to_their_units(snippet_rows):
    assert _row(snippet_rows, "mma.sync", "m16n8k32", "s8").tensor == ("IMMA.16832.S8.S8",)
    assert _row(snippet_rows, "mma.sync", "m8n8k4", "f64").tensor == ("DMMA.8x8x4",)
    fp8 = _row(snippet_rows, "mma.sync", "m16n8k32", "e4m3")
    assert fp8.tensor and all(op == "HMMA.16816.F32" for op in fp8.tensor)
    assert any(op.startswith("F2FP.F16.E4M3") for op in fp8.math) and "FP8 converted to FP16" in fp8.note
    assert published_for(fp8.ptx) == ["HMMA.16816.F32"]
    b1 = _row(snippet_rows, "mma.sync", "m16n8k256", "b1")
    assert b1.tensor == ("BMMA.168256.AND.POPC",) and "xor.popc" in b1.note
    assert _row(snippet_rows, "ldmatrix", "m8n8", "x4").tensor == ("LDSM.16.M88.4",)
    assert _row(snippet_rows, "ldmatrix", "m8n8", "x1").tensor == ("LDSM.16.MT88",)


@needs_cuobjdump
@pytest.mark.sass
def test_render_markdown(snippet_rows):
    md = render_markdown(list(snippet_rows.values()))
    lines = md.strip().splitlines()
    assert lines[0].startswith("| PTX instruction |") and len(lines) == 2 + len(snippet_rows)
    s4 = next(line for line in lines if ".s4." in line)
    assert "IMMA.8816.S8.S8" in s4 and "IMAD.MOV.U32" in s4 and "unpacked" in s4


@needs_cuobjdump
@pytest.mark.sass
def test_map_spec_compiles_a_registered_kernel_file():
    # A real kernel file that holds no ldmatrix: the map must say so rather than invent an LDSM.
    spec = KernelSpec(
        "memory_bank.cu", {"bank_u32": [r"LDS"]}, label="ldmatrix.sync.aligned.m8n8.x4.shared.b16 [probe]"
    )
    (row,) = map_spec(spec)
    assert row.ptx == "ldmatrix.sync.aligned.m8n8.x4.shared.b16" and row.function == "bank_u32"
    assert row.tensor == () and row.note == "no LDSM instruction"
    missing = KernelSpec("no_such_file.cu", {"k": []}, label="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    (bad,) = ptx_sass_map(specs=[missing])
    assert bad.sass == () and bad.note.startswith("does not compile for sm_90a")


# ---------------------------------------------------------------------------------------
def test_ptx_of_and_parse():
    lbl = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    assert ptx_of(KernelSpec("tensor_mma.cu", {}, label=lbl)) == lbl
    assert ptx_of(KernelSpec("tensor_mma.cu", {}, label=lbl + " [ilp4]")) == lbl
    assert ptx_of(KernelSpec("tensor_mma.cu", {}, label=lbl + "[w8]")) == lbl
    sp = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
    assert ptx_of(KernelSpec("x.cu", {}, label=sp)) == sp
    wg = "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16"
    assert ptx_of(KernelSpec("x.cu", {}, defines={"PTX": f'"{wg}"'}, label="wg_sp_rs")) == wg
    assert ptx_of(KernelSpec("tensor_mma.cu", {}, label="tensor_mma.cu[f16]")) is None
    assert ptx_of(KernelSpec("tensor_mma.cu", {}, label="mma_latency")) is None
    assert ptx_of(KernelSpec("tensor_mma.cu", {})) is None
    info = parse_ptx(sp)
    assert (info.family, info.shape, info.a, info.d) == ("mma_sp", "m16n8k32", "f16", "f32")
    info = parse_ptx(wg)
    assert (info.family, info.shape, info.a, info.d) == ("wgmma_sp", "m64n256k32", "f16", "f32")
    assert parse_ptx("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16").family == "ldmatrix"


def test_sass_ops_and_notes():
    text = (
        "/*0010*/ WARPGROUP.ARRIVE\n/*0060*/ HGMMA.64x256x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0\n"
        "/*0070*/ @P0 IMAD.MOV.U32 R1, RZ, RZ, 0x0\n/*0080*/ HGMMA.64x256x16.F32 R24, gdesc[UR8], R24, gsb0\n"
        "/*0090*/ STG.E desc[UR4][R2.64], R5\n"
    )
    assert sass_ops(text) == ("HGMMA.64x256x16.F32", "IMAD.MOV.U32")
    wg = "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
    assert emulation_note(wg, ("HGMMA.64x256x16.F32",)) == ""
    assert emulation_note(wg, ("FFMA",)).startswith("no tensor-core instruction")
    e5 = "wgmma.mma_async.sync.aligned.m64n256k32.f16.e5m2.e5m2"
    assert emulation_note(e5, ("QGMMA.64x256x32.F16.E5M2.E5M2",)) == ""
    assert published_for(e5) == ["QGMMA.64x256x32.F16.E5M2.E5M2"]
    assert published_for(e5.replace("m64n256", "m64n64")) == []
    assert published_for("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == ["HGMMA.64x256x16.F32"]
    assert published_for("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == []  # Table VII: N = 256 only
    assert published_for("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32") == ["HGMMA.64x256x8.F32.TF32"]
    assert published_for("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32") == []  # Table VII: k16 only
    assert published_for("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16") == ["×"]


def test_tensor_specs_selection(monkeypatch):
    load_all()
    good = KernelSpec("tensor_mma.cu", {"k": []}, label="mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
    other = KernelSpec("tensor_mma.cu", {"k": []}, label="clock_overhead")
    foreign = KernelSpec("x.cu", {"k": []}, label="ldmatrix.sync.aligned.m8n8.x2.shared.b16")
    noise = KernelSpec("x.cu", {"k": []}, label="memory_pchase.cu[ca]")
    monkeypatch.setitem(REGISTRY, "tensor/_probe", Benchmark("tensor", "_probe", lambda c: None, "", {}, [good, other]))
    monkeypatch.setitem(
        REGISTRY, "other/_probe", Benchmark("other", "_probe", lambda c: None, "", {}, [foreign, noise])
    )
    names = {s.name for s in tensor_specs()}
    assert {good.name, other.name, foreign.name} <= names  # the whole tensor suite, and labelled others
    assert noise.name not in names


@needs_cuobjdump
@pytest.mark.sass
def test_map_spec_reads_the_ptx_of_each_function(monkeypatch):
    """The PTX instruction comes from the compiled PTX of each function, not from the label."""
    from gpudissect.device import compiler

    mma_ptx = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    ldsm_ptx = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
    src = _mma_source(mma_ptx, 4, 2, 4, 4, "f").replace("void k(", "void k_mma(") + _ldmatrix_source(
        ldsm_ptx, 4
    ).replace("void k(", "void k_ldsm(")
    real = compiler.kernel_source
    monkeypatch.setattr(compiler, "kernel_source", lambda name: src if name == "_probe_tc.cu" else real(name))
    spec = KernelSpec(
        "_probe_tc.cu", {"k_mma": [], "k_ldsm": []}, label="mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"
    )
    rows = {r.function: r for r in map_spec(spec)}
    assert rows["k_mma"].ptx == mma_ptx and rows["k_mma"].tensor == ("HMMA.16816.F32",)
    assert rows["k_ldsm"].ptx == ldsm_ptx and rows["k_ldsm"].tensor == ("LDSM.16.M88.4",)
    # a spec whose PTX holds no tensor instruction and whose label names none gives no row
    assert map_spec(KernelSpec("memory_bank.cu", {"bank_u32": [r"LDS"]})) == []


def test_ptx_instructions_per_entry():
    text = (
        ".visible .entry a(\n.param .u64 p)\n{\n// begin inline asm\n"
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1, %f2}, {%r1}, {%r2}, {%f3};\n"
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f5, %f6}, {%r1}, {%r2}, {%f5};\n}\n"
        ".visible .entry b()\n{\nwgmma.fence.sync.aligned;\n"
        "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16 {%f1}, %rd1, %rd2, %r3, 0, 1, 1, 1;\n"
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r1, %r2}, [%r3];\n}\n.visible .entry c()\n{\nret;\n}\n"
    )
    got = ptx_instructions(text)
    assert got == {
        "a": ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",),
        "b": (
            "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16",
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        ),
        "c": (),
    }


# ---------------------------------------------------------------------------------------
# cuBLAS benchmark: CPU-side logic
def test_registered_with_valid_params():
    b = load_all()["tensor/cublas_gemm"]
    assert b.suite == "tensor" and b.kernels == [] and b.needs_gpu
    p = resolve_params(b, {"types": "bf16,e4m3", "sizes": "1024,8192"}, {})
    assert p["types"] == ["bf16", "e4m3"] and p["sizes"] == [1024, 8192]
    with pytest.raises(GpuDissectError, match="valid: fp64, fp32, tf32"):
        resolve_params(b, {"types": "fp4"}, {})
    with pytest.raises(GpuDissectError, match="multiples of 16"):
        resolve_params(b, {"sizes": "1000"}, {})
    with pytest.raises(GpuDissectError, match="0.05 .. 0.9"):
        resolve_params(b, {"mem_fraction": "0.95"}, {})


def test_missing_torch_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    from gpudissect.errors import BenchSkipped

    with pytest.raises(BenchSkipped, match=r"cublas_gemm .*needs PyTorch .*gpudissect\[app\]"):  # skipped, not failed
        tl._import_torch()


def test_sizes_sets_and_memory():
    assert tl.QUICK_SIZES == (1024, 4096, 8192) and tl.FULL_SIZES == (1024, 2048, 4096, 8192, 16384)
    l2 = 50 * 2**20
    assert tl.n_sets(tl.TYPES["bf16"], 1024, l2) == 3  # 6 MiB of A, B, C: rotate
    assert tl.n_sets(tl.TYPES["bf16"], 8192, l2) == 1
    assert tl.n_sets(tl.TYPES["fp64"], 2048, l2) == 1  # 96 MiB
    fp64 = tl.bytes_needed(tl.TYPES["fp64"], 16384, 1)
    assert 3 * 16384**2 * 8 < fp64 < 7.5 * 2**30  # fits in 60% of an 80 GB H100's free memory
    assert tl.bytes_needed(tl.TYPES["e4m3"], 8192, 1) < tl.bytes_needed(tl.TYPES["bf16"], 8192, 1) + 8192**2 * 2
    assert tl.tflops(8192, 1.0) == pytest.approx(2 * 8192**3 / 1e-3 / 1e12)


def test_tolerances():
    assert tl.tolerance(tl.TYPES["int8"], 16384) == 0.0
    assert tl.tolerance(tl.TYPES["fp64"], 16384) == 1e-12
    assert tl.tolerance(tl.TYPES["fp32"], 1024) == 1e-5
    # fp32 accumulation error grows ~sqrt(n): the bound must allow it at 16384
    assert 1e-5 < tl.tolerance(tl.TYPES["fp32"], 16384) < 1e-4
    assert tl.tolerance(tl.TYPES["tf32"], 8192) == 2e-3
    assert tl.tolerance(tl.TYPES["e4m3"], 8192) == 5e-2


def _round_mantissa(x: np.ndarray, bits: int) -> np.ndarray:
    """Round float32 values to `bits` explicit mantissa bits (nearest, ties away: enough here)."""
    m, e = np.frexp(x.astype(np.float64))
    scale = 2.0 ** (bits + 1)
    return np.ldexp(np.round(m * scale) / scale, e)


def test_tolerances_separate_tf32_from_fp32():
    """A TF32 product must fail the fp32 check (so a TF32 kernel cannot pass as fp32) and pass its own;
    a bf16-rounded output must pass the bf16 check."""
    rng = np.random.default_rng(1)
    n = 512
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    tf32 = _round_mantissa(a, 10) @ _round_mantissa(b, 10)
    err = tl.rel_l2(tf32, exact)
    assert tl.tolerance(tl.TYPES["fp32"], n) < err < tl.tolerance(tl.TYPES["tf32"], n)
    fp32 = (a @ b).astype(np.float64)
    assert tl.rel_l2(fp32, exact) < tl.tolerance(tl.TYPES["fp32"], n)
    bf16_out = _round_mantissa(exact.astype(np.float32), 7)
    assert tl.TYPES["fp32"].tol < tl.rel_l2(bf16_out, exact) < tl.tolerance(tl.TYPES["bf16"], n)
    assert tl.rel_l2(exact, exact) == 0.0 and math.isinf(tl.rel_l2(exact + 1, exact * 0))
