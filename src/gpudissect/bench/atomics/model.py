"""The atomics suite's host model: the final value a latency chain leaves in its word (simulate), and
the near/far split of the probed lines by their atom.add chain latencies (split_lines, Placement).
Pure host code; latency.py checks and places its launches with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...analysis import clustering


def simulate(op: str, lanes: int, total_steps: int) -> int | float:
    """Final value of the word after `lanes` lanes each ran `total_steps` steps of the chain."""
    if op in ("add_u32", "add_f32", "add_f64"):
        return lanes * total_steps
    if lanes != 1:
        raise ValueError(f"{op} chains run on one lane")
    if op in ("max", "min"):
        return 1 if total_steps else (0 if op == "max" else 0xFFFFFFFF)
    word, o = 0, (1 if op == "cas" else 0)
    for _ in range(total_steps):
        if op == "cas":
            old = word
            if word == (o ^ 1):
                word = o
            o = old
        else:  # exch
            old, word = word, o ^ 1
            o = old
    return word


@dataclass
class Placement:
    """Near and far candidate lines for the SM the one-block launches run on, from a chain of
    dependent atom.add on each line (an atomic is performed at its line's home L2 partition): two
    latency modes, the home partition near or far; the same lines' ld.relaxed.gpu chains beside."""

    sm: int
    near: int  # line index
    far: int | None  # None when no two modes separate
    near_cycles: float
    far_cycles: float | None
    threshold: float
    lat: list[float]  # per line: atom.add chain, cycles per step (LOP3 link not subtracted)
    ld: list[float]  # per line: ld.relaxed.gpu chain, cycles per load


def split_lines(
    per_line: list[list[float]], k: float = 6.0, floor: float = 2.0
) -> tuple[int, int | None, float, float | None, float]:
    """(near line, far line or None, near median, far median, threshold) from each line's repeated
    per-load latencies: 2-means over the line medians; the modes count only when their centres differ
    by more than k pooled sigmas of the repetitions (at least `floor` cycles). The chosen lines are
    the members nearest each mode's median."""
    med = np.array([float(np.median(v)) for v in per_line])
    dev = [x - float(np.median(v)) for v in per_line for x in v]
    thr = max(k * float(np.sqrt(np.mean(np.square(dev)))) if dev else 0.0, floor)
    lo, hi = clustering.kmeans_1d(med, 2) if len(set(med.round(6))) > 1 else (None, None)
    if lo is None or hi is None or hi.median - lo.median <= thr:
        i = int(np.argmin(np.abs(med - np.median(med))))
        return i, None, float(med[i]), None, thr
    cut = (lo.hi + hi.lo) / 2
    near_ids = [i for i in range(len(med)) if med[i] <= cut]
    far_ids = [i for i in range(len(med)) if med[i] > cut]
    n = min(near_ids, key=lambda i: abs(med[i] - lo.median))
    f = min(far_ids, key=lambda i: abs(med[i] - hi.median))
    return n, f, float(med[n]), float(med[f]), thr
