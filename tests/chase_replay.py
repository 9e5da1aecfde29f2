"""Replaying committed pointer-chase series through the real benchmark code (CPU only).

ReplayDevice is a FakeDevice whose chase kernels answer with the latencies a committed run measured at the
same chain: `pchase_latency`, `cache_lines` and `tma_latency` run as they would on the GPU (their grids,
capacity searches and refinement rounds decide what to measure next from what they got), and every chain a
benchmark asks for must be one the committed run measured (else KeyError: the replay would need a point
nobody measured). The figures they derive can then be set beside the committed ones: a quick mode that
measures fewer points is proven on real curves, and a mode that must not change (full) is proven to ask for
exactly the committed points.

Chains are kept symbolically (their order, not written memory) and replay() makes them sequential, so a chase
of millions of elements ends by arithmetic. The three repetitions of a point answer its committed y_min, y,
y_max in turn (median: y). `chased` sums what the chases would cost on the GPU: (warm + timed loads) x the
point's latency, the model behind the seconds quoted for these benchmarks' quick modes.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from fakes import FakeDevice, run_bench
from gpudissect.bench import shared
from gpudissect.bench.shared import CACHE_OPS

ROOT = Path(__file__).resolve().parents[1]
OPS = {v: k for k, v in CACHE_OPS.items()}  # CACHE_OP define -> "ca", "cg", ...


_NAMED: dict[Path, set[bytes]] = {}


def exports_naming(bench: str) -> list[Path]:
    """The committed exports (runs and profiles, all GPUs) whose text names `bench` (no JSON parsed: cheap
    enough for test collection)."""
    if not _NAMED:
        for path in sorted(ROOT.glob("results/**/*.json.gz")):
            _NAMED[path] = set(re.findall(rb'"bench": "(\w+)"', gzip.decompress(path.read_bytes())))
    return [p for p, names in _NAMED.items() if bench.encode() in names]


def ran(path: Path, bench: str, mode: str) -> bool:
    """Whether the export at `path` is a run in `mode` with `bench` ok."""
    d = load(path)
    return (
        d is not None
        and d["run"].get("mode") == mode
        and any(b["bench"] == bench and b["status"] == "ok" for b in d["benches"])
    )


_CACHE: dict[Path, Any] = {}


def load(path: Path) -> dict[str, Any] | None:
    if path not in _CACHE:
        d = json.loads(gzip.decompress(path.read_bytes()))
        _CACHE[path] = d if isinstance(d, dict) and "benches" in d and "run" in d else None
    return _CACHE[path]


def series_of(path: Path, bench: str) -> dict[str, dict[float, tuple[float, float, float]]]:
    """Series name -> x -> (y_min, y, y_max) of one committed run."""
    d = load(path)
    assert d is not None
    out: dict[str, dict[float, tuple[float, float, float]]] = {}
    for s in d["series"]:
        if s["bench"] == bench:
            out[s["name"]] = {p["x"]: (p["y_min"], p["y"], p["y_max"]) for p in s["points"]}
    return out


def figures_of(path: Path, bench: str) -> dict[str, Any]:
    d = load(path)
    assert d is not None
    return {f["key"]: f for f in d["figures"] if f["bench"] == bench}


@dataclass
class Chain:
    base: int
    n: int
    stride: int
    order: np.ndarray | None = None  # order[k]: the element k steps along the chain from its first; None: k
    pos: np.ndarray | None = None  # pos[element]: its place along the chain

    def end(self, start: int, hops: int) -> int:
        k = (start - self.base) // self.stride
        if self.order is None:
            return self.base + (k + hops) % self.n * self.stride
        if self.pos is None:
            self.pos = np.empty(self.n, np.int64)
            self.pos[self.order] = np.arange(self.n)
        k = int(self.pos[k])
        return self.base + int(self.order[(k + hops) % self.n]) * self.stride


class ReplayDevice(FakeDevice):
    """`lookup(kernel, op, chain) -> series key, x` names the committed point a chase reads; `curves[key][x]`
    holds its (y_min, y, y_max). Records every (key, x) asked for in `asked`."""

    def __init__(self, curves: dict[str, dict[float, tuple[float, float, float]]], lookup: Any, **props: Any):
        super().__init__(**props)
        self.curves, self.lookup = curves, lookup
        self.chains: dict[int, Chain] = {}
        self.reps: dict[tuple[str, float], int] = defaultdict(int)
        self.asked: list[tuple[str, float]] = []
        self.chased = 0.0  # cycles the chases would take: (warm + timed loads) x the point's latency, summed

    def alloc(self, nbytes: int):  # chains are symbolic: a chain buffer needs no bytes of its own
        buf = super().alloc(nbytes if nbytes <= 1 << 20 else 4096)
        return type(buf)(buf.ptr, nbytes)

    def free(self, buf) -> None:
        self.mem.pop(buf.ptr, None)
        self.chains.pop(buf.ptr, None)

    def upload(self, arr: np.ndarray, buf=None, offset: int = 0):
        buf = buf or FakeDevice.alloc(self, np.asarray(arr).nbytes)
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        self.mem[buf.ptr][offset : offset + raw.size] = raw
        return buf

    def k_chain_init(self, launch, base, perm, n, stride):
        order = self.buf(perm).view(np.uint32)[:n]
        sequential = np.array_equal(order, np.arange(n, dtype=np.uint32))  # replay()'s chains
        self.chains[base] = Chain(base, n, stride, None if sequential else order.copy())

    def k_chain_init_seq(self, launch, base, n, stride):
        self.chains[base] = Chain(base, n, stride)

    def _chain(self, addr: int) -> Chain:
        return self.chains[max(b for b in self.chains if b <= addr)]

    def _latency(self, kernel: str, launch, chain: Chain) -> float:
        op = OPS[int(launch.spec.defines.get("CACHE_OP", 1))] if launch.spec.defines else "cg"
        key, x = self.lookup(kernel, op, chain)
        if key is None:  # a chase the replay does not check (the clock's calibration chase)
            return 32.0
        y = self.curves[key][x]  # KeyError: a point the committed run did not measure
        self.asked.append((key, x))
        r = self.reps[(key, x)]
        self.reps[(key, x)] += 1
        return (y[0], y[1], y[2])[r % 3]

    def k_pchase(self, launch, start, warm, steps, out):
        ch = self._chain(start)
        y = self._latency("pchase", launch, ch)
        cycles, self.chased = y * steps, self.chased + y * (warm + steps)
        self.buf(out).view(np.uint64)[:4] = [ch.end(start, warm + steps), round(cycles), 0, round(cycles / 1.98)]

    def k_tma_chase(self, launch, start, warm, steps, out):
        ch = self._chain(start)
        y = self._latency("tma_chase", launch, ch)
        cycles, self.chased = y * steps, self.chased + y * (warm + steps)
        self.buf(out).view(np.uint64)[:3] = [ch.end(start, warm + steps), round(cycles), 0]

    def k_fine_pchase(self, launch, start, warm, n, lat, out):
        ch = self._chain(start)
        key = "l1 cold 8-byte steps" if launch.spec.defines.get("CACHE_OP") == 0 else "l2 cold 8-byte steps"
        ys = np.array([y for _, (_, y, _) in sorted(self.curves[key].items())])
        self.buf(lat).view(np.uint32)[:n] = np.resize(ys, n).astype(np.uint32)
        self.buf(out).view(np.uint64)[:3] = [ch.end(start, warm + n), 0, 0]


def props_of(path: Path) -> dict[str, Any]:
    run = load(path)["run"]  # type: ignore[index]
    return {"l2_bytes": int(run["l2_bytes"]), "sm_count": int(run["sm_count"])}


def replay(bench: str, path: Path, lookup: Any, mode: str = "quick"):
    """Run `bench` in `mode` against the committed run at `path`; returns (BenchRun, device). The chains are
    sequential (their order does not matter to a replay, and shuffling millions of elements on the host
    would cost seconds a run)."""
    dev = ReplayDevice(series_of(path, bench), lookup, **props_of(path))
    with mock.patch.object(shared, "random_cycle", lambda n, rng: np.arange(n, dtype=np.uint32)):
        return run_bench(bench, device=dev, mode=mode), dev


def footprint_lookup(names: dict[str, str]):
    """pchase_latency / tma_latency: a chase over n elements `stride` apart reads point n * stride of the
    series names[op] (names: cache op or "tma" -> series name); the calibration chase (one element) none."""

    def lookup(kernel: str, op: str, chain: Chain) -> tuple[str | None, float]:
        n = chain.n
        if n == 1:
            return None, 0.0
        return names["tma" if kernel == "tma_chase" else op], float(n * chain.stride)

    return lookup


def element_lookup(kernel: str, op: str, chain: Chain) -> tuple[str | None, float]:
    """cache_lines: a chase over c elements `s` apart reads point c of series "<level> stride <s>"."""
    n = chain.n
    if n == 1:
        return None, 0.0
    return f"{'l1' if op == 'ca' else 'l2'} stride {chain.stride}", float(n)
