"""A cubin split into functions, each instruction as its 128-bit word and nvdisasm's text (with branch
targets relative to the function). bench/isa/corpus.py builds every cubin of the project into such functions."""

from __future__ import annotations

from dataclasses import dataclass

from .cubin import Cubin
from .disasm import disassemble_raw
from .encoding import relative_text


@dataclass(frozen=True)
class Function:
    spec: str  # KernelSpec name
    name: str
    words: tuple[int, ...]
    texts: tuple[str | None, ...]


def cubin_functions(spec: str, cubin: bytes, arch: str = "SM90a") -> list[Function]:
    """All functions of one cubin, disassembled in one nvdisasm call."""
    c = Cubin(cubin)
    names = c.functions()
    per = [c.words(n) for n in names]
    texts = disassemble_raw([w for ws in per for w in ws], arch)
    out, at = [], 0
    for n, ws in zip(names, per):
        out.append(Function(spec, n, tuple(ws), own_addresses(texts[at : at + len(ws)], at)))
        at += len(ws)
    return out


def own_addresses(texts: list[str | None], start: int) -> tuple[str | None, ...]:
    """Branch targets as offsets in the function (the batch put it at 16*start)."""
    return tuple(relative_text(t, start, absolute=True) for t in texts)
