"""PTX -> SASS map of the tensor suite's kernels (000 Table VII, 001 Fig. 3), from disassembly.

Every KernelSpec of the tensor suite is compiled twice for the target arch: to PTX, where each
function's tensor instructions (mma, mma.sp, wgmma.mma_async, ldmatrix) are read back as written,
and to a cubin, whose SASS gives the tensor and math opcodes each function became. A spec whose
PTX holds none of those instructions may still name one in its ``label`` (e.g.
``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 [ilp4]``) or in a string ``defines`` value.
A note says where the SASS does not do what the PTX names (no tensor instruction at all, 4-bit
operands unpacked to 8 bit, FP8 converted to FP16, xor.popc rebuilt from AND.POPC).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .device.compiler import KernelSpec, compile_spec
from .errors import GpuDissectError

# The PTX instruction at the start of a label: family token, then the rest of the dotted name.
_PTX_RE = re.compile(r"(?:mma\.(?:sync|sp(?:::ordered_metadata)?)|wgmma\.mma_async|ldmatrix\.sync)(?:[.:][\w:]+)*")
_PREFIXES = ("mma", "wgmma", "ldmatrix")
_PTX_IN_TEXT = re.compile(r"(?<![\w.%])" + _PTX_RE.pattern)
_ENTRY = re.compile(r"\.entry\s+([\w$]+)")

# Opcode families we list. Tensor: executes on the tensor cores (or moves their operands).
_TENSOR = ("HMMA", "IMMA", "DMMA", "BMMA", "QMMA", "HGMMA", "QGMMA", "IGMMA", "BGMMA", "LDSM", "STSM")
# Math/unpacking opcodes that show emulation on the CUDA cores.
_MATH = (
    "IMAD",
    "FFMA",
    "FMUL",
    "FADD",
    "HFMA2",
    "HADD2",
    "HMUL2",
    "DFMA",
    "DMUL",
    "DADD",
    "F2FP",
    "I2F",
    "I2FP",
    "F2I",
    "POPC",
    "LOP3",
    "SHF",
    "IADD3",
    "PRMT",
)

# Arithmetic that shows a tensor op computed on the CUDA cores (HFMA2.MMA is a register-move idiom).
_FP_MATH = ("FFMA", "FMUL", "FADD", "HFMA2", "HADD2", "HMUL2", "DFMA", "DMUL", "DADD")
_PTX_TYPES = ("f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2", "s8", "u8", "s4", "u4", "b1", "s32")
# PTX type -> the name 000 Table VII uses.
_PAPER_TYPE = {
    "f16": "FP16",
    "bf16": "BF16",
    "tf32": "TF32",
    "f32": "FP32",
    "f64": "FP64",
    "e4m3": "FP8",
    "e5m2": "FP8",
    "s8": "INT8",
    "u8": "INT8",
    "s4": "INT4",
    "u4": "INT4",
    "b1": "Binary",
    "s32": "INT32",
}


@dataclass(frozen=True)
class Row:
    """One (PTX instruction, compiled function) pair and the SASS opcodes it became."""

    ptx: str  # the PTX instruction, e.g. "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    spec: str  # KernelSpec label (or the test's name for a snippet)
    function: str
    sass: tuple[str, ...]  # tensor and math opcodes with modifiers, in order of first appearance
    note: str = ""  # what differs from the PTX's promise; compile errors

    @property
    def tensor(self) -> tuple[str, ...]:
        return tuple(op for op in self.sass if _family(op) in _TENSOR)

    @property
    def math(self) -> tuple[str, ...]:
        return tuple(op for op in self.sass if _family(op) in _MATH)

    @property
    def fp_math(self) -> tuple[str, ...]:
        return _fp_math(self.sass)


def _fp_math(ops: Iterable[str]) -> tuple[str, ...]:
    """Floating-point arithmetic opcodes, sorted (stable across kernel variants)."""
    return tuple(sorted({op for op in ops if _family(op) in _FP_MATH and not op.endswith(".MMA")}))


def _family(op: str) -> str:
    return op.split(".", 1)[0]


def sass_ops(text: str) -> tuple[str, ...]:
    """Tensor and math opcodes (with modifiers) of disassembled SASS, deduplicated in order."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        instr = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", line).strip()
        if not instr:
            continue
        words = instr.split()
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        if _family(op) in _TENSOR or _family(op) in _MATH:
            seen.setdefault(op.rstrip(";"), None)
    return tuple(seen)


@dataclass(frozen=True)
class PtxInfo:
    family: str  # "mma" | "mma_sp" | "wgmma" | "wgmma_sp" | "ldmatrix"
    shape: str  # "m16n8k16", "m64n256k16", "m8n8" ("" if none)
    types: tuple[str, ...]  # PTX types in order of appearance: d, a, b[, c]

    @property
    def a(self) -> str:
        return self.types[1] if len(self.types) > 1 else ""

    @property
    def d(self) -> str:
        return self.types[0] if self.types else ""


def parse_ptx(ptx: str) -> PtxInfo:
    words = re.split(r"[.:]+", ptx)
    head = words[0]
    if head == "mma" and "sp" in words[1:3]:
        family = "mma_sp"
    elif head == "wgmma" and "sp" in words[1:3]:
        family = "wgmma_sp"
    else:
        family = head
    shape = next((w for w in words if re.fullmatch(r"m\d+n\d+(k\d+)?", w)), "")
    types = tuple(w for w in words[1:] if w in _PTX_TYPES)
    return PtxInfo(family, shape, types)


def ptx_of(spec: KernelSpec) -> str | None:
    """The PTX instruction a spec exercises: from its label, else from a string define value; a
    label that starts with mma/wgmma/ldmatrix but is not a full instruction name counts as is (up
    to its first space or '[')."""
    for text in (spec.label, *[v for v in spec.defines.values() if isinstance(v, str)]):
        m = _PTX_RE.match(text.strip().strip('"')) if text else None
        if m:
            return m.group(0)
    head = re.split(r"[\s\[]", spec.label.strip(), maxsplit=1)[0]
    if "." in head and head.split(".", 1)[0] in _PREFIXES and not head.endswith(".cu"):
        return head
    return None


def emulation_note(ptx: str, ops: tuple[str, ...]) -> str:
    """Where the SASS does not execute what the PTX names, say how it is done instead."""
    info = parse_ptx(ptx)
    tensor = [op for op in ops if _family(op) in _TENSOR]
    mma = [op for op in tensor if "MMA" in _family(op)]
    math = [op for op in ops if _family(op) in _MATH]
    if info.family in ("mma", "mma_sp", "wgmma", "wgmma_sp") and not mma:
        shown = ", ".join(_fp_math(ops)) or ", ".join(math[:6]) or "no math opcode found"
        return f"no tensor-core instruction: computed on the CUDA cores ({shown})"
    if info.family == "ldmatrix" and not any(_family(op) == "LDSM" for op in tensor):
        return "no LDSM instruction"
    notes = []
    if info.a in ("s4", "u4") and not any(re.search(r"\.[SU]4\b", op) for op in mma):
        notes.append(f"4-bit operands unpacked to 8 bit on the CUDA cores, then {', '.join(mma)}")
    if info.a in ("e4m3", "e5m2") and not any(_family(op) in ("QGMMA", "QMMA") for op in mma):  # QMMA: Ada, RTX BW
        conv = [op for op in math if op.startswith("F2FP")]
        notes.append(f"FP8 converted to FP16 ({', '.join(conv) or 'conversion'}), then {', '.join(mma)}")
    if info.a == "b1" and mma and not any(_family(op) in ("BMMA", "BGMMA") for op in mma):  # Blackwell: no BMMA
        notes.append(f"bits unpacked to bytes, then {', '.join(mma)}")
    if ".xor." in ptx and mma and not any("XOR" in op for op in mma):
        notes.append(f"xor.popc computed with {', '.join(mma)} and integer fix-up")
    return "; ".join(notes)


def map_functions(ptx: str, spec: str, funcs: dict[str, str], functions: Iterable[str] | None = None) -> list[Row]:
    """Rows for disassembled functions (all of ``funcs`` unless ``functions`` names some)."""
    rows = []
    for fn in functions if functions is not None else funcs:
        if fn not in funcs:
            rows.append(Row(ptx, spec, fn, (), f"function {fn} not in the cubin"))
            continue
        ops = sass_ops(funcs[fn])
        rows.append(Row(ptx, spec, fn, ops, emulation_note(ptx, ops)))
    return rows


def map_source(ptx: str, name: str, source: str, arch: str = "sm_90a") -> list[Row]:
    """Compile one CUDA C++ source and map every function in it (used for self-contained snippets)."""
    from .device.compiler import compile_cubin
    from .sass.disasm import disassemble

    return map_functions(ptx, name, disassemble(compile_cubin(source, f"{name}.cu", arch)))


def ptx_text(spec: KernelSpec, arch: str = "sm_90a") -> str:
    """The PTX NVRTC makes of a spec (same options as its cubin), cached on disk."""
    import hashlib
    import os

    from .device.compiler import HEADERS, cache_dir, kernel_source, nvrtc_compile, nvrtc_version

    source = kernel_source(spec.file)
    opts = [f"-arch={arch}", "-std=c++17", *[f"-D{k}={v}" for k, v in sorted(spec.defines.items())]]
    key = hashlib.sha256(
        "\0".join([source, *opts, nvrtc_version(), *(kernel_source(h) for h in HEADERS)]).encode()
    ).hexdigest()[:32]
    folder = cache_dir().parent / "ptx"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.file.replace('/', '_')}-{key}.ptx"
    if path.exists():
        return path.read_text()
    buf = nvrtc_compile(source, spec.file, arch, opts, "ptx")
    text = buf.rstrip(b"\0").decode(errors="replace")
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return text


def ptx_instructions(ptx: str) -> dict[str, tuple[str, ...]]:
    """Tensor instructions (mma, mma.sp, wgmma.mma_async, ldmatrix) of each .entry of a PTX text."""
    marks = list(_ENTRY.finditer(ptx))
    out: dict[str, tuple[str, ...]] = {}
    for i, m in enumerate(marks):
        body = ptx[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(ptx)]
        out[m.group(1)] = tuple(dict.fromkeys(x.group(0) for x in _PTX_IN_TEXT.finditer(body)))
    return out


def map_spec(spec: KernelSpec, arch: str = "sm_90a") -> list[Row]:
    """Rows for the functions a spec declares (its ``required`` keys): one per tensor instruction
    found in the function's PTX, else one for the instruction its label or defines name."""
    from .sass.disasm import disassemble_cached

    fallback = ptx_of(spec)
    try:
        in_ptx = ptx_instructions(ptx_text(spec, arch))
        funcs = disassemble_cached(compile_spec(spec, arch))
    except GpuDissectError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return [
            Row(fallback or spec.name, spec.name, fn, (), f"does not compile for {arch}: {first}")
            for fn in spec.required
        ]
    rows: list[Row] = []
    for fn in spec.required:
        for ptx in in_ptx.get(fn) or ((fallback,) if fallback else ()):
            rows += map_functions(ptx, spec.name, funcs, [fn])
    return rows


def tensor_specs(suite: str = "tensor") -> list[KernelSpec]:
    """Every spec of ``suite``, plus any other spec labelled with a PTX instruction
    (mma / wgmma / ldmatrix); one per label."""
    from .bench.registry import load_all

    out: dict[str, KernelSpec] = {}
    for b in load_all().values():
        for spec in b.kernels:
            if b.suite == suite or (ptx_of(spec) is not None and spec.label.split(".", 1)[0] in _PREFIXES):
                out.setdefault(spec.name, spec)
    return list(out.values())


def ptx_sass_map(arch: str = "sm_90a", specs: Iterable[KernelSpec] | None = None) -> list[Row]:
    """The PTX -> SASS map of every tensor-suite kernel spec (or of ``specs``), compiled for ``arch``."""
    rows: list[Row] = []
    for spec in specs if specs is not None else tensor_specs():
        rows += map_spec(spec, arch)
    return rows


def _shape_of_sass(op: str) -> str:
    """PTX shape implied by a SASS tensor opcode: HMMA.16816 -> m16n8k16, HGMMA.64x256x16 -> m64n256k16."""
    for part in op.split(".")[1:]:
        if m := re.fullmatch(r"(\d+)x(\d+)x(\d+)", part):
            return f"m{m[1]}n{m[2]}k{m[3]}"
        if re.fullmatch(r"\d{3,6}", part):
            for mn, (m_, n_) in (("168", (16, 8)), ("88", (8, 8))):
                if part.startswith(mn):
                    return f"m{m_}n{n_}k{part[len(mn) :]}"
    return ""


def published_for(ptx: str, gpu: str = "H800") -> list[str]:
    """What 000 Table VII prints for this PTX instruction (same family, types and, where the
    printed SASS implies one, shape); empty if the table has no such row."""
    from .reference.tensor import published_sass

    info = parse_ptx(ptx)
    if info.family not in ("mma", "wgmma") or len(info.types) < 2:
        return []
    ab, cd = _PAPER_TYPE.get(info.a, ""), _PAPER_TYPE.get(info.d, "")
    # FP8 and INT4 mma run as other shapes (conversion / unpacking): their SASS shape says nothing.
    check_shape = info.family == "wgmma" or info.a not in ("e4m3", "e5m2", "s4", "u4")
    out = []
    for rec in published_sass(info.family, ab, cd, gpu):
        shape = _shape_of_sass(rec.sass)
        if check_shape and shape and shape != info.shape:  # Table VII prints wgmma at N = 256 only
            continue
        if ab == "FP8" and rec.sass.startswith("QGMMA") and info.a.upper() not in rec.sass:
            continue
        out.append(rec.sass)
    return out


def table_rows(rows: list[Row], arch: str = "sm_90a") -> tuple[list[str], list[list[str]]]:
    """Table VII style: headers, then one row per PTX instruction: the SASS it becomes (its tensor opcodes,
    else the floating-point ones, else —), notes, what 000 printed, the kernels it was read from."""
    by_ptx: dict[str, list[Row]] = {}
    for r in rows:
        by_ptx.setdefault(r.ptx, []).append(r)
    out = []
    for ptx, group in by_ptx.items():
        tensor = list(dict.fromkeys(op for r in group for op in r.tensor))
        shown = tensor or sorted({op for r in group for op in r.fp_math})
        notes = list(dict.fromkeys(r.note for r in group if r.note))
        pub = published_for(ptx)
        fns: dict[str, list[str]] = {}
        for r in group:
            fns.setdefault(r.spec, []).append(r.function)
        kernels = ", ".join(
            f"{spec} ({', '.join(f) if len(f) <= 2 else f'{len(f)} functions'})" for spec, f in fns.items()
        )
        out.append([ptx, ", ".join(shown) or "—", "; ".join(notes), ", ".join(pub) or "—", kernels])
    return ["PTX instruction", f"SASS ({arch})", "note", "000 Table VII (H800)", "kernels"], out


def render_markdown(rows: list[Row], arch: str = "sm_90a") -> str:
    """table_rows as Markdown, the PTX as code."""
    head, cells = table_rows(rows, arch)
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|---|"]
    lines += [f"| `{c[0]}` | " + " | ".join(c[1:]) + " |" for c in cells]
    return "\n".join(lines) + "\n"
