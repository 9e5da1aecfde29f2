"""NVML: clocks, power, temperature and throttle reasons sampled beside each benchmark.

Runs in the parent process (NVML needs no CUDA context), so a benchmark that crashes its own
process still leaves its telemetry behind.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..models import Telemetry

# NVML clock-event (throttle) reason bits, named as nvidia-smi names them.
_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_reasons(mask: int) -> list[str]:
    return [name for bit, name in _REASONS.items() if mask & bit]


@dataclass
class Sample:
    t: float
    sm_mhz: float | None
    mem_mhz: float | None
    power_w: float | None
    temp_c: float | None
    reasons: int


def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # noqa: BLE001 - no driver / no library: telemetry is simply absent
        return None


def nvml_handle(uuid: str | None = None, index: int = 0) -> tuple[Any, Any] | None:
    nv = _nvml()
    if nv is None:
        return None
    try:
        h = nv.nvmlDeviceGetHandleByUUID(uuid) if uuid else nv.nvmlDeviceGetHandleByIndex(index)
        return nv, h
    except Exception:  # noqa: BLE001
        return None


def _safe(fn: Any, *a: Any) -> Any:
    try:
        return fn(*a)
    except Exception:  # noqa: BLE001 - a field unsupported on this GPU
        return None


def read_sample(nv: Any, h: Any) -> Sample:
    power = _safe(nv.nvmlDeviceGetPowerUsage, h)
    reasons_fn = (
        getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    return Sample(
        t=time.monotonic(),
        sm_mhz=_safe(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
        mem_mhz=_safe(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
        power_w=None if power is None else power / 1000.0,
        temp_c=_safe(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
        reasons=_safe(reasons_fn, h) or 0,
    )


def static_facts(uuid: str | None = None) -> dict[str, Any]:
    """What NVML knows without a CUDA context: used to validate input before anything launches."""
    got = nvml_handle(uuid)
    if got is None:
        return {}
    nv, h = got
    mem = _safe(nv.nvmlDeviceGetMemoryInfo, h)
    name = _safe(nv.nvmlDeviceGetName, h)
    return {
        "name": name.decode() if isinstance(name, bytes) else name,
        "uuid": _safe(nv.nvmlDeviceGetUUID, h),
        "driver": _safe(nv.nvmlSystemGetDriverVersion),
        "total_mem": getattr(mem, "total", None),
        "free_mem": getattr(mem, "free", None),
        "sm_clock_max_mhz": _safe(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
        "mem_clock_max_mhz": _safe(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
        "power_limit_w": (_safe(nv.nvmlDeviceGetEnforcedPowerLimit, h) or 0) / 1000.0 or None,
    }


class Sampler:
    """Background thread sampling NVML every `period_s` until stopped."""

    def __init__(self, uuid: str | None = None, period_s: float = 0.05):
        self._got = nvml_handle(uuid)
        self.period_s = period_s
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self._got is not None

    def __enter__(self) -> Sampler:
        if self._got is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        nv, h = self._got  # type: ignore[misc]
        while not self._stop.is_set():
            self.samples.append(read_sample(nv, h))
            self._stop.wait(self.period_s)

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def summary(self) -> Telemetry | None:
        return summarize(self.samples)


def summarize(samples: list[Sample]) -> Telemetry | None:
    if not samples:
        return None
    # Idle samples (between launches) would drag the clock median down: prefer busy ones.
    busy = [s for s in samples if not (s.reasons & 0x1)] or samples

    def col(attr: str, src: list[Sample]) -> list[float]:
        return [getattr(s, attr) for s in src if getattr(s, attr) is not None]

    sm, mem, pw, tc = col("sm_mhz", busy), col("mem_mhz", busy), col("power_w", busy), col("temp_c", samples)
    mask = 0
    for s in busy:
        mask |= s.reasons
    return Telemetry(
        samples=len(samples),
        sm_clock_mhz_median=statistics.median(sm) if sm else None,
        sm_clock_mhz_min=min(sm) if sm else None,
        sm_clock_mhz_max=max(sm) if sm else None,
        mem_clock_mhz_median=statistics.median(mem) if mem else None,
        power_w_median=statistics.median(pw) if pw else None,
        power_w_max=max(pw) if pw else None,
        temp_c_max=max(tc) if tc else None,
        throttle_reasons=decode_reasons(mask),
    )
