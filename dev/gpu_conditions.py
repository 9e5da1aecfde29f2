"""What the GPU-machine dev scripts share to set the GPU's condition before a timing: a power-limited burst, and
the board's NVML UUID (so that Case.compare samples its clock)."""

from __future__ import annotations

import time


def heat(torch: object, seconds: float = 0.5) -> None:
    """`seconds` of 8192^3 bf16 GEMMs: the GPU at its power limit, as after a run's large shapes."""
    a = torch.randn((8192, 8192), device="cuda", dtype=torch.bfloat16)  # type: ignore[attr-defined]
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for _ in range(4):
            torch.matmul(a, a)  # type: ignore[attr-defined]
        torch.cuda.synchronize()  # type: ignore[attr-defined]
    del a


def nvml_uuid() -> str | None:
    """GPU 0's UUID from NVML, or None without it."""
    try:
        import pynvml

        pynvml.nvmlInit()
        u = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(0))
        return u.decode() if isinstance(u, bytes) else u
    except Exception:  # noqa: BLE001
        return None
