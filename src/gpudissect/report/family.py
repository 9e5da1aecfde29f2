"""Which published GPUs a run is compared with first: its own model, then its architecture family."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from gpudissect.report.compare import PublishedLike


class RunLike(Protocol):
    @property
    def arch(self) -> str: ...
    @property
    def gpu_name(self) -> str: ...


def run_family(run: RunLike) -> str:
    """The run's architecture family ("hopper"), or "" for an arch we cannot read (an imported run's)."""
    from gpudissect.capability import Target

    try:
        return Target.parse(run.arch).family
    except ValueError:
        return ""


def own_gpu_first(refs: Iterable[PublishedLike], run: RunLike) -> list[str]:
    """The published GPU labels, the run's own model first, then its architecture family, then the rest."""
    from gpudissect.reference.gpu_labels import own_first

    return own_first((r.gpu for r in refs), run.gpu_name, run_family(run))


def family_gpus(refs: Iterable[PublishedLike], run: RunLike) -> list[str]:
    """Only the run's own model and its family (own model first): the published values shown inline and drawn
    on plots; the other GPUs' values stay in the folded lists."""
    from gpudissect.reference.gpu_labels import family_of

    fam = run_family(run)
    return [g for g in own_gpu_first(refs, run) if fam and family_of(g) == fam] if fam else []
