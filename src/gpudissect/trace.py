"""A timeline of a run for finding where its seconds go (issue 24): with GPUDISSECT_TRACE=FILE, the runner
appends one JSON line per event (compile-pool builds done, waits for them, benchmarks started and ended,
every progress message) with the seconds since the trace started and the thread. Off (a no-op) otherwise."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

_PATH = os.environ.get("GPUDISSECT_TRACE") or None
_T0 = time.monotonic()
_LOCK = threading.Lock()


def on() -> bool:
    return _PATH is not None


def event(kind: str, **fields: Any) -> None:
    """Append one event (a no-op without GPUDISSECT_TRACE)."""
    if _PATH is None:
        return
    rec = {
        "t": round(time.monotonic() - _T0, 3),  # this process's clock (each worker starts its own)
        "wall": round(time.time(), 3),  # one clock for all the run's processes
        "thread": threading.current_thread().name,
        "kind": kind,
        **fields,
    }
    line = json.dumps(rec, default=str) + "\n"
    with _LOCK:
        try:
            with open(_PATH, "a", encoding="utf-8") as fh:
                fh.write(line)
        except OSError as e:  # a path it cannot write: one line, and the run goes on without a trace
            _off(f"gpudissect: GPUDISSECT_TRACE={_PATH}: {e.strerror or e}; no trace is written")


def _off(why: str) -> None:
    global _PATH
    _PATH = None
    print(why, file=sys.stderr)
