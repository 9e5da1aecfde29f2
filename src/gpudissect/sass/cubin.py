"""ELF access to a cubin: each kernel's .text section as 128-bit instruction words, and a copy of
the cubin with some words replaced (same size, so no offsets move)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import GpuDissectError


class CubinError(GpuDissectError):
    pass


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size: int


class Cubin:
    """A parsed 64-bit little-endian ELF image, as NVRTC and nvcc write cubins."""

    def __init__(self, data: bytes):
        if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise CubinError("not a 64-bit little-endian ELF file (a cubin)")
        self.data = bytes(data)
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if shoff == 0 or shentsize < 64 or shoff + shnum * shentsize > len(data):
            raise CubinError("cubin section table lies outside the file")
        raw = []
        for i in range(shnum):
            name_off, _type, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
            raw.append((name_off, off, size))
        _, str_off, str_size = raw[shstrndx]
        strtab = data[str_off : str_off + str_size]
        self.sections = [Section(strtab[n : strtab.index(b"\0", n)].decode(), off, size) for n, off, size in raw]

    def functions(self) -> list[str]:
        """Names of the functions with code (sections .text.<name>)."""
        return [s.name[len(".text.") :] for s in self.sections if s.name.startswith(".text.") and s.size]

    def _text(self, function: str) -> Section:
        for s in self.sections:
            if s.name == f".text.{function}":
                return s
        raise CubinError(f"no function {function!r} in the cubin; functions: {', '.join(self.functions())}")

    def words(self, function: str) -> list[int]:
        """The function's instructions as 128-bit integers (bit 0 = lowest bit of the first 8 bytes)."""
        s = self._text(function)
        if s.size % 16:
            raise CubinError(f".text.{function} is {s.size} bytes, not whole 128-bit instructions")
        body = self.data[s.offset : s.offset + s.size]
        return [int.from_bytes(body[i : i + 16], "little") for i in range(0, len(body), 16)]

    def with_words(self, function: str, changes: dict[int, int]) -> bytes:
        """A copy of the cubin whose instruction `index` of `function` is replaced by each given word."""
        s = self._text(function)
        out = bytearray(self.data)
        n = s.size // 16
        for index, word in changes.items():
            if not 0 <= index < n:
                raise CubinError(f"{function} has {n} instructions; index {index} is outside")
            if not 0 <= word < 1 << 128:
                raise CubinError("an instruction word must fit in 128 bits")
            out[s.offset + 16 * index : s.offset + 16 * index + 16] = word.to_bytes(16, "little")
        return bytes(out)
