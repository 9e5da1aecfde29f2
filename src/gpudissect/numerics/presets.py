"""Ready parameter sets per (arch, instruction), loaded from the committed presets.json.

File layout: ``{"_status": str, arch: {instruction: {TCParams field: value, "_verified": bool, ...}}}``.
Keys starting with "_" are metadata. An entry counts as verified only with ``"_verified": true``
(written by the numerics probes after a GPU run). Instruction names are
``<family>.<shape>.<dtype>.<atype>.<btype>``, e.g. "wgmma.m64n8k16.f32.f16.f16"; the name must agree with
the entry's acc_fmt, in_fmt and k.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpudissect.errors import GpuDissectError
from gpudissect.numerics.model import TCParams

PRESETS_PATH = Path(__file__).with_name("presets.json")

_NAME = re.compile(r"^(mma|wgmma)\.m(\d+)n(\d+)k(\d+)\.(f32|f16)\.(\w+)\.(\w+)$")


class UnknownInstructionError(GpuDissectError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def parse_instruction(instruction: str) -> dict[str, Any]:
    """'wgmma.m64n8k16.f32.f16.f16' ->
    {'family': 'wgmma', 'm': 64, 'n': 8, 'k': 16, 'acc_fmt': 'f32', 'in_fmt': 'f16'}."""
    m = _NAME.match(instruction)
    if not m:
        raise ValueError(f"instruction name {instruction!r} is not <mma|wgmma>.mMnNkK.<f32|f16>.<atype>.<btype>")
    family, mm, nn, kk, acc, at, bt = m.groups()
    if at != bt:
        raise ValueError(f"{instruction}: mixed input types are not modelled")
    return {"family": family, "m": int(mm), "n": int(nn), "k": int(kk), "acc_fmt": acc, "in_fmt": at}


def _validate(data: Any, source: str) -> dict[str, dict[str, tuple[TCParams, bool]]]:
    if not isinstance(data, dict):
        raise ValueError(f"{source}: top level must be an object")
    out: dict[str, dict[str, tuple[TCParams, bool]]] = {}
    for arch, entries in data.items():
        if arch.startswith("_"):
            continue
        if not isinstance(entries, dict):
            raise ValueError(f"{source}: {arch} must map instructions to parameter objects")
        out[arch] = {}
        for instr, entry in entries.items():
            if instr.startswith("_"):
                continue
            where = f"{source}: {arch} {instr}"
            if not isinstance(entry, dict):
                raise ValueError(f"{where}: must be an object")
            verified = entry.get("_verified", False)
            if not isinstance(verified, bool):
                raise ValueError(f"{where}: _verified must be true or false")
            try:
                params = TCParams.from_dict({k: v for k, v in entry.items() if not k.startswith("_")})
                name = parse_instruction(instr)
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
            for key in ("in_fmt", "acc_fmt", "k"):
                if getattr(params, key) != name[key]:
                    raise ValueError(f"{where}: {key}={getattr(params, key)!r} contradicts the name ({name[key]!r})")
            out[arch][instr] = (params, verified)
    return out


@lru_cache(maxsize=4)
def load_presets(path: str | None = None) -> dict[str, dict[str, tuple[TCParams, bool]]]:
    """{arch: {instruction: (TCParams, verified)}} from presets.json (validated; errors name the entry)."""
    p = Path(path) if path else PRESETS_PATH
    with open(p) as fh:
        return _validate(json.load(fh), str(p))


def known_instructions(arch: str | None = None, path: str | None = None) -> list[str]:
    presets = load_presets(path)
    if arch is None:
        return sorted(f"{a}:{i}" for a, e in presets.items() for i in e)
    return sorted(presets.get(arch, {}))


def _entry(arch: str, instruction: str, path: str | None) -> tuple[TCParams, bool]:
    presets = load_presets(path)
    if arch not in presets:
        raise UnknownInstructionError(
            f"no numerics presets for arch {arch!r}; known archs: {', '.join(sorted(presets))}"
        )
    if instruction not in presets[arch]:
        raise UnknownInstructionError(
            f"no numerics preset for {instruction!r} on {arch}; known instructions: {', '.join(sorted(presets[arch]))}"
        )
    return presets[arch][instruction]


def model(arch: str, instruction: str, path: str | None = None) -> TCParams:
    """The parameter set for an instruction on an arch, e.g. model("sm_90", "wgmma.m64n8k16.f32.f16.f16")."""
    return _entry(arch, instruction, path)[0]


def is_verified(arch: str, instruction: str, path: str | None = None) -> bool:
    """True only when the preset was measured on a GPU by the probes (not a placeholder guess)."""
    return _entry(arch, instruction, path)[1]
