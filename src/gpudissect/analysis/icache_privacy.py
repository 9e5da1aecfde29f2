"""Which instruction-cache level is private to what (Jia Fig. 3.5), from observers' slow-downs.

A thrasher runs more code than a level holds; observers placed ever farther from it (same warp slot,
same sub-core, same SM, same TPC, same GPC, another GPC) time their own warmed code. The level is
private to the smallest domain that holds every observer that slowed down and no observer that did
not. Slow-downs are judged against the observers' own controls (no thrasher; a thrasher whose code
fits the level), not against a fixed percentage. Pure functions, no GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .sm_groups import merge_groups  # noqa: F401 - part of this module's interface

# Domains from the smallest to the GPU; an observer's rank is the smallest domain it shares with the thrasher.
DOMAINS = ("warp slot", "sub-core", "SM", "TPC", "GPC", "GPU")


@dataclass(frozen=True)
class Observer:
    name: str
    rank: int  # index into DOMAINS of the smallest domain shared with the thrasher
    controls: tuple[float, ...]  # cycles/instr with no thrasher and with thrashers that fit the level
    thrashed: tuple[float, ...]  # cycles/instr after thrashers larger than the level


@dataclass(frozen=True)
class Verdict:
    slowed: dict[str, bool]
    rise: dict[str, float]  # median after thrash - median of the controls
    threshold: float
    text: str
    conclusive: bool
    domain: str | None = None  # the domain the level is private to, when conclusive


def rank_of(same_sm: bool, same_subcore: bool, same_slot: bool, same_tpc: bool, same_gpc: bool) -> int:
    """Index into DOMAINS of the smallest domain an observer shares with the thrasher."""
    if same_sm:
        return 0 if same_slot else 1 if same_subcore else 2
    if same_tpc:
        return 3
    return 4 if same_gpc else 5


def rise_threshold(observers: Sequence[Observer], k: float = 6.0, floor: float = 0.0) -> float:
    """k pooled robust standard deviations (1.4826 x the median absolute deviation) of the controls
    around each observer's control median (the launch-to-launch spread of unthrashed code; a rare slow
    launch does not inflate it), at least `floor` (the clock resolution)."""
    dev = [abs(c - float(np.median(o.controls))) for o in observers for c in o.controls if len(o.controls) > 1]
    sigma = 1.4826 * float(np.median(dev)) if dev else 0.0
    return max(k * sigma, floor)


def judge(observers: Sequence[Observer], threshold: float, share: float = 0.5) -> Verdict:
    """Slowed (its code evicted) = median after thrash exceeds the median of the controls by more than
    `threshold` and by more than `share` of the rise of the observer nearest the thrasher (the positive
    control: eviction costs a whole level step). A significant smaller rise is interference (e.g. the
    thrasher's fetches loading a shared path), named in the text but not counted as eviction."""
    rise = {o.name: float(np.median(o.thrashed) - np.median(o.controls)) for o in observers}
    ranks = sorted({o.rank for o in observers})
    ref = max((rise[o.name] for o in observers if ranks and o.rank == ranks[0]), default=0.0)
    slowed = {o.name: rise[o.name] > threshold and rise[o.name] > share * ref for o in observers}
    small = [f"{o.name} {rise[o.name]:+.3f}" for o in observers if threshold < rise[o.name] <= share * ref]
    v = _verdict(observers, rise, slowed, ranks, threshold)
    if small:
        return Verdict(
            v.slowed,
            v.rise,
            v.threshold,
            v.text + f"; smaller significant rises (interference, not eviction): {', '.join(small)}",
            v.conclusive,
            v.domain,
        )
    return v


def _verdict(
    observers: Sequence[Observer], rise: dict[str, float], slowed: dict[str, bool], ranks: list[int], threshold: float
) -> Verdict:
    if not observers:
        return Verdict(slowed, rise, threshold, "inconclusive: no observer", False)
    nearest = [slowed[o.name] for o in observers if o.rank == ranks[0]]
    if not all(nearest):  # the positive control: the observer nearest the thrasher must see the eviction
        return Verdict(
            slowed,
            rise,
            threshold,
            f"inconclusive: the observer sharing the thrasher's {DOMAINS[ranks[0]]} did "
            "not slow down (the thrash did not evict the level)",
            False,
        )
    # the largest rank d such that every observer up to d slowed and none above it did
    fits = [d for d in ranks if all(slowed[o.name] == (o.rank <= d) for o in observers)]
    if not fits:
        detail = ", ".join(
            f"{o.name} ({DOMAINS[o.rank]}): {'slowed' if slowed[o.name] else 'unaffected'}" for o in observers
        )
        return Verdict(
            slowed,
            rise,
            threshold,
            f"inconclusive: no domain holds exactly the observers that slowed ({detail})",
            False,
        )
    d = fits[0]
    above = [r for r in ranks if r > d]
    if not above:
        where = "GPU-wide" if d == len(DOMAINS) - 1 else f"by at least a {DOMAINS[d]} (no farther observer tested)"
        return Verdict(
            slowed,
            rise,
            threshold,
            f"shared {where}: every observer slowed down",
            True,
            DOMAINS[d] if d == len(DOMAINS) - 1 else f">= {DOMAINS[d]}",
        )
    nxt = above[0]
    names = [DOMAINS[r] for r in range(d, nxt)]
    text = names[0] if len(names) == 1 else " or ".join(names) + " (untested domain between)"
    return Verdict(
        slowed,
        rise,
        threshold,
        f"{text}: observers sharing the thrasher's {DOMAINS[d]} slowed down, "
        f"those sharing only its {DOMAINS[nxt]} or less did not",
        True,
        text.split(" (")[0],
    )
