"""What a run would do on a given GPU, without the GPU: per benchmark run or skip (with the reason), and
the kernel variants that would run or not. `gpudissect plan` prints it; the runner and `sass --all` ask the
same capability model (Benchmark.why_not, Benchmark.variants)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..capability import Target
from .registry import Benchmark


@dataclass
class PlanEntry:
    suite: str
    bench: str
    status: str  # "run" or "skip"
    reason: str  # why it is skipped ("" when it runs)
    variants: list[str] = field(default_factory=list)  # the kernel variants that would run
    skipped_variants: list[dict[str, str]] = field(default_factory=list)  # {"variant", "reason"}

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def plan(benches: list[Benchmark], target: Target) -> list[PlanEntry]:
    out = []
    for b in benches:
        why = b.why_not(target)
        if why:
            out.append(PlanEntry(b.suite, b.name, "skip", why))
            continue
        runs, skips = b.variants(target)
        part_runs, part_skips = b.parts(target)
        out.append(
            PlanEntry(
                b.suite,
                b.name,
                "run",
                "",
                [s.variant for s in runs] + part_runs,
                [{"variant": s.variant, "reason": r} for s, r in skips]
                + [{"variant": p, "reason": r} for p, r in part_skips],
            )
        )
    return out
