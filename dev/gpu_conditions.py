"""What the GPU-machine dev scripts that time conditions share: a power-limited burst, the board's NVML UUID (so
that Case.compare samples its clock), one timing's record, and the JSON they leave in $OUT."""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any


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


def record(out: Any) -> dict[str, Any]:
    """One Case.compare Outcome as a JSON-able record: its median ratio and interval, every pair, each side's median
    time, and NVML's SM clock in each side's batches (where sampled)."""
    return {
        "ratio": out.ratio,
        "pairs": len(out.ratios),
        "iters": out.iters,
        "ci": out.ci,
        "ratios": out.ratios,
        "ours_us": statistics.median(out.ours_ms) * 1e3,
        "cublas_us": statistics.median(out.cublas_ms) * 1e3,
        "mhz": {side: t["mhz"] for side, t in out.tel.items()},
    }


def write_rows(name: str, rounds: int, rows: list[dict[str, Any]]) -> None:
    """$OUT/NAME.json: the GPU's name, the rounds and the rows."""
    import torch

    with open(os.path.join(os.environ.get("OUT", "."), f"{name}.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "rounds": rounds, "rows": rows}, f, indent=1)
