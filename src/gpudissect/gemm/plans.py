"""Plans of the public `matmul`, cached per call signature so that a shape seen before costs only the launch.

A plan is what `matmul` works out from the shapes alone: (M, N, K), B's layout, the dtype, the rung (AUTO
resolved per shape) and a prepared Launch whose kernel is loaded, whose tensor maps are encoded and whose
stream-K workspace is allocated. A later call with the same signature re-points the launch at its tensors
(Launch.rebind) instead of asking the driver for the context, device facts, occupancy and three tensor-map
encodings again. Torch-free: the signature is built by the caller from the tensors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

MAX_PLANS = 512  # a model runs a few dozen GEMM shapes; a sweep over thousands evicts the oldest


@dataclass
class Plan:
    """One call signature's prepared GEMM: the shapes checked once, the launch re-pointed per call."""

    m: int
    n: int
    k: int
    b_colmajor: bool
    dtype: str  # bf16, fp16, e4m3
    out_dtype: Any  # the output's torch dtype
    launch: Any  # gemm.launch.Launch
    device: int = 0  # the CUDA device's index
    lock: threading.Lock = field(default_factory=threading.Lock)  # rebind + launch are one step per plan
    mn: tuple[int, int] = (0, 0)  # C's shape
    # matmul's one-frame path takes it: 16-bit (C in A's type, no scales) and B column-major (no transposed copy)
    fast: bool = False
    go: Any = None  # that path's run(a, bt, c, stream) (Launch.runner), set by whoever made the plan
    like: Any = None  # a tensor of C's shape, type and device whose empty_like is C (gemm.api._template), or None

    def __post_init__(self) -> None:
        self.mn = (self.m, self.n)
        self.fast = self.b_colmajor and self.dtype in ("bf16", "fp16")

    @property
    def rung(self) -> int:
        return int(self.launch.rung)

    def run(self, a: int, bt: int, c: int, scale_a: int, scale_b: int, stream: int) -> None:
        with self.lock:
            self.launch.run(a, bt, c, scale_a, scale_b, stream)


class PlanCache:
    """Plans by signature, the oldest made evicted first past the limit (a hit costs one dict lookup), with hit
    and miss counts (for tests and `cache_info`)."""

    def __init__(self, limit: int = MAX_PLANS):
        if limit < 1:
            raise ValueError(f"a plan cache holds at least one plan, got a limit of {limit}")
        self.limit, self.hits, self.misses = limit, 0, 0
        self._plans: dict[Hashable, Plan] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Plan | None:
        plan = self._plans.get(key)
        if plan is not None:
            self.hits += 1
        return plan

    def fast(self, key: Hashable) -> Plan | None:
        """The plan of `key` if matmul's one-frame path can run it (Plan.fast, its `go` made), counted as a hit;
        else None."""
        plan = self._plans.get(key)
        if plan is not None and plan.go is not None:
            self.hits += 1
            return plan
        return None

    def peek(self, key: Hashable) -> Plan | None:
        """The plan of `key` without counting a hit or touching the order."""
        return self._plans.get(key)

    def build(self, key: Hashable, make: Callable[[], Plan]) -> Plan:
        """The plan of `key`, made by `make` where there is none (concurrent callers: one makes it)."""
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                self.misses += 1
                plan = make()
                self._plans[key] = plan
                while len(self._plans) > self.limit:  # the oldest made goes first (no reordering per hit)
                    del self._plans[next(iter(self._plans))]
            return plan

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._plans)

    def info(self) -> dict[str, int]:
        return {"plans": len(self._plans), "limit": self.limit, "hits": self.hits, "misses": self.misses}
