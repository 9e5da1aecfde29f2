"""Environment checks for `gpudissect doctor`: each says what was found, or why not, and whether
`gpudissect run` needs it."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    needed: bool = True  # `gpudissect run` cannot work without it


def _store_check(db: Path | None) -> Check:
    """The store for real: an existing file must open as a gpudissect store; a missing one must be creatable."""
    import os

    from .errors import GpuDissectError
    from .store import Store, default_db_path, expand_path

    path = expand_path(db, "--db") if db else default_db_path()
    if path.exists() and not path.is_dir():
        try:
            s = Store(path, read_only=True)
            n = len(s.runs())
            s.close()
        except GpuDissectError as e:
            return Check("store", False, str(e))
        writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        return Check(
            "store", writable, f"{path}: {n} run(s)" + ("" if writable else "; not writable, `run` cannot store")
        )
    if path.is_dir():
        return Check("store", False, f"{path} is a directory; --db / GPUDISSECT_DB must name a file")
    parent = next((q for q in [path.parent, *path.parent.parents] if q.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK):
        return Check("store", False, f"{path} does not exist and cannot be created under {parent}")
    return Check("store", True, f"{path} (not created yet: the first `gpudissect run` creates it)")


def _local_arch() -> str | None:
    """The local GPU's target (sm_XX), or None without one; an architecture gpudissect does not know is
    still compiled for, and the GPU line says it is unknown."""
    try:
        from .device.cuda import Device

        return Device(0).arch
    except Exception:  # noqa: BLE001 - no GPU: the GPU check below says why
        return None


def checks(db: Path | None = None) -> list[Check]:
    out = [Check("python", sys.version_info >= (3, 11), platform.python_version())]
    try:
        from .device.driver import bindings_version

        out.append(Check("cuda-bindings", True, bindings_version()))
    except ImportError as e:
        out.append(Check("cuda-bindings", False, f"pip install cuda-bindings ({e})"))
    try:
        from .device.compiler import nvrtc_version, supported_archs

        archs = supported_archs()
        span = f" (sm_{min(archs)} .. sm_{max(archs)})" if archs else ""
        out.append(Check("NVRTC", True, nvrtc_version() + span))
    except Exception as e:  # noqa: BLE001
        out.append(Check("NVRTC", False, f"pip install nvidia-cuda-nvrtc ({e})"))
    arch = _local_arch() or "sm_90a"  # the GPU's own target; without one, Hopper's as a representative
    try:
        from .device.compiler import compile_cubin

        compile_cubin('extern "C" __global__ void k(int* p) { p[0] = 1; }', "doctor.cu", arch)
        out.append(Check(f"compile {arch}", True, "NVRTC produced a cubin (kernels need no headers)"))
    except Exception as e:  # noqa: BLE001
        out.append(Check(f"compile {arch}", False, str(e).splitlines()[0] if str(e) else type(e).__name__))
    from .sass.disasm import find_tool

    nvcc = find_tool("nvcc")
    out.append(
        Check(
            "CUDA toolkit (nvcc)",
            nvcc is not None,
            nvcc or "not found: not needed (NVRTC compiles every kernel), only informative",
            needed=False,
        )
    )
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        inc = find_nvidia_header_directory("cudart")
    except Exception:  # noqa: BLE001
        inc = None
    out.append(
        Check(
            "CUDA headers",
            inc is not None,
            str(inc) if inc else "not found: not needed, kernels include only gpudissect.cuh (in memory)",
            needed=False,
        )
    )
    for tool in ("cuobjdump", "nvdisasm"):
        p = find_tool(tool)
        out.append(
            Check(
                tool, p is not None, p or f"pip install nvidia-cuda-{tool} (needed by `gpudissect sass`)", needed=False
            )
        )
    from .device.telemetry import static_facts

    facts = static_facts()
    out.append(
        Check(
            "NVML / driver",
            bool(facts),
            f"driver {facts.get('driver')}"
            if facts
            else "NVML not loadable: no NVIDIA driver (runs would have no clock, power or throttle telemetry)",
        )
    )
    try:
        from .capability import Target
        from .device.cuda import Device

        d = Device(0)
        p = d.props
        t = Target(p["cc_major"], p["cc_minor"])
        fam = t.family if t.known else "a compute capability gpudissect does not know yet: `plan` shows what runs"
        out.append(
            Check(
                "GPU",
                True,
                f"{p['name']} cc {p['cc_major']}.{p['cc_minor']} -> {d.arch} ({fam}), {p['sm_count']} SMs, "
                f"L2 {p['l2_bytes'] >> 20} MiB, CUDA driver API {p['cuda_driver']}",
            )
        )
        from .sass.disasm import unreadable_why

        why = unreadable_why(d.arch)
        out.append(Check(f"SASS of {d.arch}", why is None, why or "the disassembler reads this GPU's code"))
    except Exception as e:  # noqa: BLE001
        out.append(Check("GPU", False, " ".join(str(e).split()) or type(e).__name__))
    out.append(_store_check(db))
    return out
