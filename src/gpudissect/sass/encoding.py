"""Instruction encoding discovered by flipping bits (Jia et al. §2.3): each bit of a real instruction
word is flipped alone, every variant is disassembled by nvdisasm in one batch, and the bit is
labelled by what changed in the text. Contiguous bits with the same label make a field."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .disasm import disassemble_raw
from .text import Instr, operand_kind, parse, register_number, strip_reuse

BITS = 128
# Opcodes whose printed immediate is an absolute code address (next pc + offset): in a batch each
# variant sits at its own address, so the address is made relative before texts are compared.
ADDRESS_OPCODES = {"BRA", "BRX", "BSSY", "CALL", "JMP", "JMX", "RET", "BREAK", "WARPSYNC", "YIELD"}


def relative_text(text: str | None, index: int, absolute: bool = False) -> str | None:
    """`text` of the word at `index` of a raw batch, with code addresses made relative to it
    (".+0x40"), or with `absolute`, shifted down by 16*index (a function's own addresses)."""
    if text is None:
        return None
    ins = parse(text)
    if ins.opcode not in ADDRESS_OPCODES:
        return text

    def shift(m: re.Match) -> str:
        v = int(m.group(0), 16) - 16 * index
        return f"{v:#x}" if absolute else f".{v:+#x}"

    ops = [o if "[" in o else re.sub(r"-?0x[0-9a-f]+", shift, o) for o in ins.operands]
    head = " ".join(x for x in (ins.guard, ins.full_opcode) if x)
    return f"{head} {', '.join(ops)}".strip()


@dataclass(frozen=True)
class Field:
    name: str  # "opcode", "predicate", "modifier", "op1", "reuse1", "unprinted", "illegal"...
    lo: int
    hi: int  # inclusive
    kind: str  # what the bits hold: opcode, predicate, reg, ureg, imm, const, modifier, reuse, unprinted...
    example: str = ""  # one variant's text, as evidence

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    @property
    def bits(self) -> list[int]:
        return list(range(self.lo, self.hi + 1))


@dataclass
class OpcodeEncoding:
    opcode: str
    word: int
    text: str
    labels: list[str]  # one per bit
    kinds: list[str]
    examples: list[str]
    fields: list[Field] = field(default_factory=list)
    register_checked: dict[str, bool] = field(default_factory=dict)  # op -> bits map to register number

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def bits_of(self, label: str) -> list[int]:
        return [b for b, lab in enumerate(self.labels) if lab == label]

    @property
    def opcode_bits(self) -> list[int]:
        """Bits whose flip changes the mnemonic or makes the word illegal."""
        return [b for b, lab in enumerate(self.labels) if lab in ("opcode", "illegal")]

    @property
    def unprinted_bits(self) -> list[int]:
        return self.bits_of("unprinted")


def classify(orig: Instr, var: Instr | None) -> tuple[str, str]:
    """(label, kind) of a bit from the original instruction and its one-bit variant."""
    if var is None:
        return "illegal", "illegal"
    if var.opcode != orig.opcode:
        return "opcode", "opcode"
    if var.guard != orig.guard:
        return "predicate", "predicate"
    if len(var.operands) != len(orig.operands):
        return "form", "form"  # the same opcode with another operand list (e.g. IMAD.X adds a predicate)
    changed = [i for i, (a, b) in enumerate(zip(orig.operands, var.operands)) if a != b]
    if var.modifiers != orig.modifiers:
        return ("modifier", "modifier") if not changed else ("form", "form")
    if not changed:
        return "unprinted", "unprinted"
    if len(changed) > 1:
        if all(strip_reuse(orig.operands[i]) == strip_reuse(var.operands[i]) for i in changed):
            return "reuse*", "reuse"  # several .reuse flags shown or hidden at once
        return "form", "form"
    i = changed[0]
    a, b = orig.operands[i], var.operands[i]
    if strip_reuse(a) == strip_reuse(b):
        return f"reuse{i}", "reuse"
    if operand_kind(a) != operand_kind(b):
        return f"op{i}.kind", "operand-kind"
    if register_number(a) is not None and register_number(a) == register_number(b):
        return f"op{i}.mod", "operand-modifier"  # -R, |R|, .H1 ... around the same register
    if operand_kind(a) in ("mem", "const"):
        # which part of an address changed: its register, uniform register or offset
        ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
        j = next((k for k, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
        part = ta[j] if j < len(ta) else "+"
        what = "ureg" if part.startswith("UR") else "reg" if part.startswith("R") else "imm"
        return f"op{i}.{what}{j}", f"{operand_kind(a)} {what}"
    return f"op{i}", operand_kind(a)


_TOKEN = re.compile(r"URZ|UR\d+|RZ|R\d+|-?0x[0-9a-f]+|\w+")


def _fields(labels: list[str], kinds: list[str], examples: list[str]) -> list[Field]:
    out: list[Field] = []
    b = 0
    while b < BITS:
        e = b
        while e + 1 < BITS and labels[e + 1] == labels[b] and kinds[e + 1] == kinds[b]:
            e += 1
        out.append(Field(labels[b], b, e, kinds[b], examples[b]))
        b = e + 1
    return out


def _register_map_ok(enc: OpcodeEncoding, orig: Instr, texts: list[str | None]) -> None:
    """For each register operand, flipping bit k of its field must change Rn to R(n ^ 2^(k - lo)):
    the field holds the register number in binary, lowest bit first."""
    for i, op in enumerate(orig.operands):
        n = register_number(op)
        bits = enc.bits_of(f"op{i}")
        if n is None or not bits:
            continue
        lo = bits[0]
        bits = [b for b in bits if b - lo < 8]  # the register number: 8 bits from the field's lowest bit
        ok = True
        for k in bits:
            t = texts[k]
            got = register_number(parse(t).operands[i]) if t else None
            want = n ^ (1 << (k - lo))
            ok &= got == want
        enc.register_checked[f"op{i}"] = ok and bits == list(range(lo, lo + len(bits)))


def discover_many(words: dict[str, int], arch: str = "SM90a") -> dict[str, OpcodeEncoding]:
    """Bit-flip discovery for several instruction words at once (one nvdisasm call for all)."""
    names = list(words)
    batch = [words[n] for n in names]
    for n in names:
        batch += [words[n] ^ (1 << b) for b in range(BITS)]
    texts = [relative_text(t, i) for i, t in enumerate(disassemble_raw(batch, arch))]
    out: dict[str, OpcodeEncoding] = {}
    for j, n in enumerate(names):
        base = texts[j]
        if base is None:
            continue
        orig = parse(base)
        var_texts = texts[len(names) + j * BITS : len(names) + (j + 1) * BITS]
        labels, kinds, ex = [], [], []
        for t in var_texts:
            lab, kind = classify(orig, parse(t) if t else None)
            labels.append(lab)
            kinds.append(kind)
            ex.append(t or "(illegal)")
        enc = OpcodeEncoding(n, words[n], base, labels, kinds, ex)
        enc.fields = _fields(labels, kinds, ex)
        _register_map_ok(enc, orig, var_texts)
        out[n] = enc
    return out


def representative_words(functions, min_count: int = 1) -> dict[str, int]:  # functions: list[corpus.Function]
    """One real instruction word per base opcode, preferring unpredicated instructions with the most
    register operands (more fields to find)."""
    best: dict[str, tuple[tuple[int, int], int]] = {}
    for f in functions:
        for w, t in zip(f.words, f.texts):
            if not t:
                continue
            ins = parse(t)
            score = (
                0 if ins.guard else 1,
                sum(operand_kind(o) == "reg" and register_number(o) != 255 for o in ins.operands),
            )
            if ins.opcode not in best or score > best[ins.opcode][0]:
                best[ins.opcode] = (score, w)
    return {k: v[1] for k, v in sorted(best.items())}


def annotate(
    enc: OpcodeEncoding, control_fields: dict[str, tuple[int, int]], unused: tuple[int, ...]
) -> OpcodeEncoding:
    """A copy whose unprinted (or illegal) bits inside a control field carry that field's name, and
    whose never-set, never-printed bits read "unused"."""
    labels, kinds = list(enc.labels), list(enc.kinds)
    for name, (lo, w) in control_fields.items():
        for b in range(lo, lo + w):
            if labels[b] in ("unprinted", "illegal"):
                labels[b], kinds[b] = (
                    f"control.{name}",
                    "control" if labels[b] == "unprinted" else "control (some values illegal)",
                )
    for b in unused:
        if labels[b] == "unprinted":
            labels[b], kinds[b] = "unused", "unused"
    out = OpcodeEncoding(
        enc.opcode, enc.word, enc.text, labels, kinds, enc.examples, register_checked=enc.register_checked
    )
    out.fields = _fields(labels, kinds, enc.examples)
    return out


def fields_table(enc: OpcodeEncoding) -> list[dict[str, object]]:
    """Rows for a report: one per field, highest bits first as nvdisasm prints words."""
    rows = []
    orig = parse(enc.text)
    for f in sorted(enc.fields, key=lambda f: -f.lo):
        what = f.kind
        if f.kind.startswith(("mem ", "const ")):
            i = int(f.name[2:].split(".")[0])
            what = f"{f.kind.split()[1]} in {f.kind.split()[0]} operand {i} ({orig.operands[i]})"
        elif f.name.startswith("op") and f.name[2:].split(".")[0].isdigit():
            i = int(f.name[2:].split(".")[0])
            what = (
                f"{f.kind} of operand {i} ({orig.operands[i]})"
                if "." in f.name
                else f"{f.kind} operand {i} ({orig.operands[i]})"
            )
            if f.name in enc.register_checked and f.width >= 8:
                what += ", register number in binary" if enc.register_checked[f.name] else ", not a plain binary number"
        elif f.kind.startswith("control"):
            what = f"control information: {f.name[8:]}" + (
                " (some values illegal for this opcode)" if "illegal" in f.kind else ""
            )
        elif f.name == "reuse*":
            what = "shows or hides the .reuse flags of several operands"
        elif f.kind == "reuse":
            what = f"reuse flag of operand {f.name[5:]} ({orig.operands[int(f.name[5:])]})"
        rows.append(
            {
                "bits": f"{f.hi}:{f.lo}" if f.hi != f.lo else f"{f.lo}",
                "width": f.width,
                "field": f.name,
                "holds": what,
                "example": f.example,
            }
        )
    return rows
