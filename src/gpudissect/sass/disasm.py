"""Disassembly of cubins and checks that a kernel contains the instructions it must."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any


@cache
def find_tool(name: str) -> str | None:
    """cuobjdump / nvdisasm: $GPUDISSECT_CUOBJDUMP / $GPUDISSECT_NVDISASM (e.g. a CUDA 12 toolkit's, which
    still reads Volta code), then the pip wheels (cuda.pathfinder), then PATH and /usr/local/cuda."""
    override = os.environ.get(f"GPUDISSECT_{name.upper()}")
    if override:
        return override
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility(name)
        if found:
            return str(found)
    except Exception:  # noqa: BLE001 - pathfinder absent or failing: fall back to PATH
        pass
    return shutil.which(name) or next(
        (str(p) for p in Path("/usr/local").glob(f"cuda*/bin/{name}") if p.exists()), None
    )


def _run_cuobjdump(tool: str, path: str) -> subprocess.CompletedProcess:
    return subprocess.run([tool, "-sass", path], capture_output=True, text=True)


def disassemble(cubin: bytes) -> dict[str, str]:
    """SASS text of each function in a cubin, keyed by (mangled) function name. A cubin the cuobjdump found
    no longer reads (Volta, with CUDA 13's) goes to the CUDA 12 one `gpudissect doctor --fetch-cuda12` keeps."""
    from . import legacy

    tool = find_tool("cuobjdump")
    if tool is None:
        raise RuntimeError("cuobjdump not found: pip install nvidia-cuda-cuobjdump, or put the CUDA toolkit on PATH")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = _run_cuobjdump(tool, f.name)
        old = legacy.cuobjdump()
        if "deprecated" in r.stdout + r.stderr and old is not None and old != tool:
            r = _run_cuobjdump(old, f.name)
    if r.returncode != 0 or "deprecated" in r.stdout + r.stderr:
        from ..errors import GpuDissectError

        why = " ".join((r.stderr or r.stdout).split())[:200]
        hint = f": this cuobjdump no longer reads that architecture; {legacy.FETCH_HINT}" if "deprecated" in why else ""
        raise GpuDissectError(f"cuobjdump could not read the cubin ({why}){hint}")
    return parse_cuobjdump(r.stdout)


# one pass of C-level regex over the whole listing: a 1 MiB icache build prints ~4 MB of SASS, and a
# per-line Python loop (with += on the function's text) held the GIL ~0.6 s per build, which serialised
# the benchmark's parallel builds (icache's fine scans: ~220 builds)
_FUNCTION = re.compile(r"^[ \t]*Function : (\S+)", re.M)
_INSTRUCTION = re.compile(r"^[ \t]*/\*([0-9a-f]{4,})\*/[ \t]+([^\n]*?)[ \t]*;", re.M)


def parse_cuobjdump(out: str) -> dict[str, str]:
    """SASS text per function from `cuobjdump -sass`: instruction lines only ("/*addr*/ text"), without the
    hex encodings."""
    funcs: dict[str, str] = {}
    heads = list(_FUNCTION.finditer(out))
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(out)
        body = _INSTRUCTION.findall(out, h.end(), end)
        funcs[h.group(1)] = "".join(f"/*{a}*/ {t}\n" for a, t in body)
    return funcs


def unreadable_why(arch: str) -> str | None:
    """Why no cuobjdump here reads `arch`'s SASS (None when one does, or none is installed: that is said
    elsewhere). CUDA 13's stops at sm_75; Volta needs a CUDA 12 one."""
    from . import legacy

    tool = find_tool("cuobjdump")
    if arch not in legacy.LEGACY_ARCHES or tool is None or legacy.cuobjdump() is not None:
        return None
    v = legacy.tool_version(tool)
    if v is not None and v[0] <= 12:
        return None
    release = f"CUDA {v[0]}.{v[1]}" if v else "unknown release"
    return f"the cuobjdump found ({tool}, {release}) no longer reads {arch}: {legacy.FETCH_HINT}"


def disassemble_cached(cubin: bytes) -> dict[str, str]:
    """disassemble(), kept beside the cubin cache by the cubin's hash: a run checks the SASS of every kernel
    before it times it, and a kernel seen before costs a file read, not a cuobjdump."""
    import hashlib

    from ..device.compiler import cached_json

    return cached_json(f"{hashlib.sha256(cubin).hexdigest()[:32]}.sass.json", lambda: disassemble(cubin), dict)


def build_and_read(spec: Any, arch: str) -> None:
    """A compile-pool job: the cubin, and its SASS read into the cache beside it, which the run-time check of
    every kernel (and icache's straight-line check) would otherwise disassemble inside the benchmark."""
    from ..device.compiler import compile_spec

    cubin = compile_spec(spec, arch)
    if find_tool("cuobjdump") is not None and not spec.virtual:  # PTX has no SASS to read
        with contextlib.suppress(Exception):  # a cubin the tool cannot read: the benchmark reports it
            disassemble_cached(cubin)


def failed_checks(funcs: dict[str, str], required: dict[str, list[str]]) -> list[str]:
    """One line per required pattern the SASS lacks (or holds, for an absence pattern): empty when it holds."""
    return [f"{c.function}: /{c.pattern}/ not in its SASS" for c in check_required(funcs, required) if not c.found]


@dataclass(frozen=True)
class SassCheck:
    function: str
    pattern: str
    found: bool
    example: str  # first matching instruction, for the report


def check_required(funcs: dict[str, str], required: dict[str, list[str]]) -> list[SassCheck]:
    """For each function, whether each required regex matches one of its instructions."""
    results = []
    for fn, patterns in required.items():
        text = funcs.get(fn)
        for pat in patterns:
            m = re.search(pat, text, re.MULTILINE) if text is not None else None
            line = ""
            if m:
                start = text.rfind("\n", 0, m.start()) + 1
                line = text[start : text.find("\n", m.end())].strip()
            results.append(SassCheck(fn, pat, m is not None, line))
    return results


# The NOP the compiler pads every function with; stands in for words nvdisasm rejects (it prints
# nothing at all for a binary holding one illegal word).
NOP_WORD = (0x000FC00000000000 << 64) | 0x0000000000007918
_RAW_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\*\s*0x[0-9a-f]{16}\s*\*/\s*$")


def disassemble_raw(words: list[int], arch: str = "SM90a", chunk: int = 8192) -> list[str | None]:
    """Text of each 128-bit instruction word (low 64 bits first in memory, as in a cubin), one
    nvdisasm call per `chunk` words on a raw binary, the calls in parallel (half the cores: a batch of
    patched variants is ~90k words, ~0.5 s of nvdisasm per 16k); None for a word nvdisasm calls illegal."""
    from ..errors import GpuDissectError

    tool = find_tool("nvdisasm")
    if tool is None:
        raise GpuDissectError("nvdisasm not found: pip install nvidia-cuda-nvdisasm, or put the CUDA toolkit on PATH")
    parts = [words[start : start + chunk] for start in range(0, len(words), chunk)]
    if len(parts) <= 1:
        return _raw_chunk(tool, words, arch) if words else []
    workers = max(1, min(len(parts), (os.cpu_count() or 2) // 2))
    with ThreadPoolExecutor(max_workers=workers) as ex:  # nvdisasm runs outside the GIL
        done = list(ex.map(lambda p: _raw_chunk(tool, p, arch), parts))
    return [t for part in done for t in part]


def disassemble_raw_cached(words: list[int], arch: str = "SM90a") -> list[str | None]:
    """disassemble_raw(), kept beside the cubin cache by the words' hash: a benchmark's words disassembled
    ahead (the runner's `prepare`) cost a file read when the benchmark asks for them."""
    import hashlib

    from ..device.compiler import cached_json

    def load(texts: object) -> list[str | None]:
        if not isinstance(texts, list) or len(texts) != len(words):
            raise ValueError("not this batch's texts")
        return texts

    h = hashlib.sha256(arch.encode() + b"".join(w.to_bytes(16, "little") for w in words))
    return cached_json(f"{h.hexdigest()[:32]}.raw.json", lambda: disassemble_raw(words, arch), load)


def _raw_chunk(tool: str, words: list[int], arch: str) -> list[str | None]:
    bad: set[int] = set()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "words.bin"
        for _ in range(64):  # nvdisasm names some illegal words per pass; replace them and go again
            data = b"".join((NOP_WORD if i in bad else w).to_bytes(16, "little") for i, w in enumerate(words))
            path.write_bytes(data)
            r = subprocess.run([tool, "-b", arch, "-hex", "-novliw", str(path)], capture_output=True, text=True)
            if r.returncode == 0:
                break
            new = {int(a, 16) // 16 for a in re.findall(r"at address (0x[0-9a-fA-F]+)", r.stderr)} - bad
            if not new:
                raise RuntimeError(f"nvdisasm failed on a raw binary: {r.stderr.strip()[:300]}")
            bad |= new
        else:
            raise RuntimeError("nvdisasm kept rejecting words after 64 passes")
    texts: list[str | None] = [None] * len(words)
    for line in r.stdout.splitlines():
        m = _RAW_LINE.match(line)
        if m:
            i = int(m.group(1), 16) // 16
            if i < len(words) and i not in bad:
                texts[i] = " ".join(m.group(2).split())
    return texts
