"""Environment checks for `gpudissect doctor`: each says what was found, or why not."""

from __future__ import annotations

import platform
import sys


def checks() -> list[tuple[str, bool, str]]:
    out: list[tuple[str, bool, str]] = [("python", sys.version_info >= (3, 11), platform.python_version())]
    try:
        import cuda.bindings

        out.append(("cuda-bindings", True, getattr(cuda.bindings, "__version__", "?")))
    except ImportError as e:
        out.append(("cuda-bindings", False, f"pip install cuda-bindings ({e})"))
    try:
        from .device.compiler import nvrtc_version

        out.append(("NVRTC", True, nvrtc_version()))
    except Exception as e:  # noqa: BLE001
        out.append(("NVRTC", False, f"pip install nvidia-cuda-nvrtc ({e})"))
    try:
        from .device.compiler import compile_cubin

        compile_cubin('extern "C" __global__ void k(int* p) { p[0] = 1; }', "doctor.cu", "sm_90a")
        out.append(("compile sm_90a", True, "NVRTC produced a cubin (kernels need no headers)"))
    except Exception as e:  # noqa: BLE001
        out.append(("compile sm_90a", False, str(e).splitlines()[0]))
    from .device.sass import find_tool

    nvcc = find_tool("nvcc")
    out.append(("CUDA toolkit (nvcc)", nvcc is not None,
                nvcc or "not found: not needed (NVRTC compiles every kernel), only informative"))
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        inc = find_nvidia_header_directory("cudart")
    except Exception:  # noqa: BLE001
        inc = None
    out.append(("CUDA headers", inc is not None,
                str(inc) if inc else "not found: not needed, kernels include only gpudissect.cuh (in memory)"))
    for tool in ("cuobjdump", "nvdisasm"):
        p = find_tool(tool)
        out.append((tool, p is not None, p or f"pip install nvidia-cuda-{tool}"))
    from .device.telemetry import static_facts

    facts = static_facts()
    out.append(("NVML / driver", bool(facts), f"driver {facts.get('driver')}" if facts else "NVML not loadable: no NVIDIA driver"))
    try:
        from .device.cuda import Device

        d = Device(0)
        p = d.props
        out.append(("GPU", True, f"{p['name']} cc {p['cc_major']}.{p['cc_minor']} -> {d.arch}, {p['sm_count']} SMs, "
                                 f"L2 {p['l2_bytes'] >> 20} MiB, CUDA driver API {p['cuda_driver']}"))
    except Exception as e:  # noqa: BLE001
        out.append(("GPU", False, str(e)))
    from .store import default_db_path

    out.append(("store", True, str(default_db_path())))
    return out
