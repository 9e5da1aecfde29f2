"""A CUDA 12 cuobjdump for Volta: CUDA 13's cuobjdump refuses sm_70/sm_72 code ("deprecated"), and NVIDIA
ships no CUDA 12 cuobjdump wheel. The triton 3.4.0 wheel on PyPI carries the CUDA 12.8 one (a 0.6 MB binary,
which runs the CUDA 12 nvdisasm beside it for some cubins); `fetch()` downloads that wheel with pip (the package
index only), keeps the two binaries in our cache and checks that they are CUDA 12's. `disasm.disassemble` falls
back to it for a cubin the default cuobjdump will not read.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from functools import cache
from pathlib import Path

WHEEL = "triton==3.4.0"  # bundles CUDA 12.8's cuobjdump under triton/backends/nvidia/bin/
MEMBERS = ("cuobjdump", "nvdisasm")  # cuobjdump runs the nvdisasm beside it for some cubins
BIN = "triton/backends/nvidia/bin/"
# architectures CUDA 13's cuobjdump no longer reads; NVRTC 13 no longer builds them either (nvrtc_legacy)
LEGACY_ARCHES = ("sm_70", "sm_72")


def home() -> Path:
    """Where the fetched tool lives: beside the cubin cache ($GPUDISSECT_CACHE or ~/.cache/gpudissect)."""
    root = os.environ.get("GPUDISSECT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpudissect"
    )
    return Path(root) / "cuda12"


@cache
def tool_version(path: str) -> tuple[int, int] | None:
    """(major, minor) of a cuobjdump's CUDA release, None when it does not run or say."""
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+)\.(\d+)", r.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else None


def cuobjdump() -> str | None:
    """The CUDA 12 cuobjdump: $GPUDISSECT_CUOBJDUMP12, else the fetched one; None when absent or not working."""
    path = Path(os.environ.get("GPUDISSECT_CUOBJDUMP12") or home() / "cuobjdump")
    if path.is_file() and os.access(path, os.X_OK) and (v := tool_version(str(path))) and v[0] == 12:
        return str(path)
    return None


FETCH_HINT = "run `gpudissect doctor --fetch-cuda12` (a CUDA 12 cuobjdump) or set GPUDISSECT_CUOBJDUMP to one"


def fetch() -> str:
    """Download the wheel (pip, the package index), keep its cuobjdump in home(); the tool's path. Raises
    RuntimeError with one line when pip or the check fails."""
    dest = home()
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", WHEEL, "-d", tmp]
        r = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if r.returncode != 0 or not wheels:
            why = " ".join((r.stderr or r.stdout).split())[-200:]
            raise RuntimeError(f"pip could not download {WHEEL}: {why}")
        with zipfile.ZipFile(wheels[0]) as z:
            try:
                data = {m: z.read(BIN + m) for m in MEMBERS}
            except KeyError as e:
                raise RuntimeError(f"{wheels[0].name} holds no {e}") from None
    for m in MEMBERS:
        part = dest / f"{m}.part"
        part.write_bytes(data[m])
        part.chmod(0o755)
        v = tool_version(str(part))
        if v is None or v[0] != 12:
            part.unlink()
            raise RuntimeError(f"the {m} in {WHEEL} does not run here or is not CUDA 12 ({v})")
    for m in MEMBERS:
        (dest / f"{m}.part").replace(dest / m)
    tool_version.cache_clear()
    return str(dest / "cuobjdump")


if __name__ == "__main__":  # python -m gpudissect.sass.legacy: fetch, print the path (CI's setup step)
    try:
        print(fetch())
    except (OSError, RuntimeError) as e:
        sys.exit(f"gpudissect: {e}")
