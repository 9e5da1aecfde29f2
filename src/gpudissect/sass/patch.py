"""A small binary patcher: rewrites register operands and control fields of chosen instructions of a
cubin, using only field positions found by discovery (encoding.py, control.py), and states the text
nvdisasm must print for every patched instruction so the result can be checked."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .control import ControlLayout
from .cubin import Cubin
from .disasm import disassemble_raw
from .encoding import OpcodeEncoding, discover_many
from .text import parse, register_number


@dataclass(frozen=True)
class Patch:
    index: int  # instruction number inside the function
    regs: dict[int, int] = field(default_factory=dict)  # operand index -> new register number (255 = RZ)
    control: dict[str, int] = field(default_factory=dict)  # stall, yield, wbar, rbar, wait, reuse


class PatchError(ValueError):
    pass


def register_fields(enc: OpcodeEncoding) -> dict[int, tuple[int, int]]:
    """Operand index -> (lowest bit, width) of each operand the discovery proved to hold a register number."""
    out = {}
    for name, ok in enc.register_checked.items():
        if ok:
            i = int(name[2:])
            lo = enc.bits_of(name)[0]
            out[i] = (lo, 8)
    return out


@functools.lru_cache(maxsize=8192)  # a batch of variants patches the same few hundred texts again and again
def _signature(text: str) -> str:
    """Instructions of one form share field positions: opcode with modifiers and operand kinds."""
    ins = parse(text)
    kinds = ",".join(re.sub(r"\d+", "n", o) for o in ins.operands)
    return f"{ins.full_opcode} {kinds}"


def _reg_text(op: str, n: int) -> str:
    name = "RZ" if n == 255 else f"R{n}"
    return re.sub(r"(?<![\w])(?:R\d+|RZ)(?![\w])", name, op, count=1)


def expected_text(text: str, p: Patch, layout: ControlLayout, word_after: int) -> str:
    """What nvdisasm must print after the patch: registers renamed; `.reuse` on source slot k when
    reuse bit k is set and the yield bit lets nvdisasm print it (it hides reuse otherwise)."""
    ins = parse(text)
    ops = [o.replace(".reuse", "") for o in ins.operands]
    for i, n in p.regs.items():
        ops[i] = _reg_text(ops[i], n)
    c = layout.decode(word_after)
    for k in range(4):  # reuse bit k belongs to source slot k, operand k + 1
        if c.reuse >> k & 1:
            if k + 1 >= len(ops) or register_number(ops[k + 1]) in (None, 255):
                raise PatchError(f"reuse bit {k} set, but operand {k + 1} of '{text}' is no register")
            if c.yield_:
                ops[k + 1] += ".reuse"
    head = " ".join(x for x in (ins.guard, ins.full_opcode) if x)
    return f"{head} {', '.join(ops)}".strip()


class Patcher:
    """Field positions are discovered once per instruction form and reused."""

    def __init__(self, layout: ControlLayout, arch: str = "SM90a"):
        self.layout, self.arch = layout, arch
        self._forms: dict[str, dict[int, tuple[int, int]]] = {}

    def _fields_for(self, words: list[tuple[str, int]]) -> None:
        todo = {}
        for text, w in words:
            sig = _signature(text)
            if sig not in self._forms and sig not in todo:
                todo[sig] = w
        if todo:
            encs = discover_many(todo, self.arch)
            for sig in todo:
                self._forms[sig] = register_fields(encs[sig]) if sig in encs else {}

    def apply(
        self, words: list[int], texts: list[str | None], patches: list[Patch]
    ) -> tuple[dict[int, int], dict[int, str]]:
        """New words and the text each patched instruction must disassemble to."""
        self._fields_for([(texts[p.index] or "", words[p.index]) for p in patches if texts[p.index]])
        new: dict[int, int] = {}
        want: dict[int, str] = {}
        for p in patches:
            t = texts[p.index]
            if t is None:
                raise PatchError(f"instruction {p.index} does not disassemble")
            w = new.get(p.index, words[p.index])
            fields = self._forms[_signature(t)]
            for i, n in p.regs.items():
                if i not in fields:
                    raise PatchError(f"operand {i} of '{t}' has no discovered register field")
                if not 0 <= n <= 255:
                    raise PatchError(f"register number {n} outside 0..255")
                lo, width = fields[i]
                w = (w & ~(((1 << width) - 1) << lo)) | (n << lo)
            for name, v in p.control.items():
                if name not in self.layout.fields:
                    raise PatchError(f"unknown control field {name!r}; fields: {', '.join(self.layout.fields)}")
                w = self.layout.set(w, name, v)
            new[p.index] = w
            want[p.index] = expected_text(t, p, self.layout, w)
        return new, want


def patch_cubin(cubin: bytes, function: str, patches: list[Patch], patcher: Patcher) -> tuple[bytes, dict[int, str]]:
    c = Cubin(cubin)
    words = c.words(function)
    texts = disassemble_raw(words, patcher.arch)
    new, want = patcher.apply(words, texts, patches)
    return c.with_words(function, new), want


def verify(cubin: bytes, function: str, want: dict[int, str], arch: str = "SM90a") -> list[str]:
    """Mismatches between nvdisasm's text of the patched instructions and the intended text."""
    words = Cubin(cubin).words(function)
    got = disassemble_raw([words[i] for i in sorted(want)], arch)
    return [f"@{16 * i:#06x}: got '{g}', want '{want[i]}'" for i, g in zip(sorted(want), got) if g != want[i]]
