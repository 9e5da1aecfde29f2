"""nvdisasm instruction text split into guard predicate, opcode, modifiers and operands."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Instr:
    guard: str  # "" or e.g. "@!P0"
    opcode: str  # base mnemonic, e.g. "FFMA"
    modifiers: tuple[str, ...]  # e.g. ("FTZ", "RZ")
    operands: tuple[str, ...]

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode, *self.modifiers))


def split_operands(text: str) -> list[str]:
    """Operands separated by commas outside brackets and braces."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse(text: str) -> Instr:
    t = text.strip().rstrip(";").strip()
    guard = ""
    if t.startswith("@"):
        guard, _, t = t.partition(" ")
    head, _, rest = t.partition(" ")
    parts = head.split(".")
    return Instr(guard, parts[0], tuple(parts[1:]), tuple(split_operands(rest)))


def operand_kind(op: str) -> str:
    """reg, ureg, pred, upred, imm, const, mem, special, other."""
    o = op.lstrip("-!|~")
    if re.match(r"^(R\d+|RZ)(\.|$)", o):
        return "reg"
    if re.match(r"^(UR\d+|URZ)(\.|$)", o):
        return "ureg"
    if re.match(r"^(P\d|PT)$", o):
        return "pred"
    if re.match(r"^(UP\d|UPT)$", o):
        return "upred"
    if re.match(r"^-?(0x[0-9a-fA-F]+|\d+(\.\d*)?(e[-+]?\d+)?|[-+]?INF|[-+]?QNAN)$", o):
        return "imm"
    if o.startswith(("c[", "cx[")):
        return "const"
    if "[" in o:
        return "mem"
    if o.startswith("SR_"):
        return "special"
    return "other"


def register_number(op: str) -> int | None:
    """255 for RZ, n for Rn (any prefix/suffix), None for anything else."""
    m = re.match(r"^[-!|~]*(?:R(\d+)|(RZ))(?:\.|$|\|)", op)
    if not m:
        return None
    return 255 if m.group(2) else int(m.group(1))


def strip_reuse(op: str) -> str:
    return op.replace(".reuse", "")
