"""What a GPU can run, from its compute capability alone (no device needed): the target we build for, its
family, the named hardware features, and what a benchmark or one of its kernel variants needs.

The runner, `gpudissect plan` and `gpudissect sass --all` ask the same model, so what the plan says would run
is what runs. A need names a feature, never a GPU; a figure's label (native or emulated) comes from the SASS
that ran, not from this table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# compute capability -> (family, GPUs of it the docs name); the 'a' targets are where wgmma/tcgen05/setmaxnreg
# need the architecture-specific instruction set
FAMILIES: dict[tuple[int, int], tuple[str, str]] = {
    (7, 0): ("volta", "V100"),
    (7, 2): ("volta", "Jetson AGX Xavier"),
    (7, 5): ("turing", "T4, RTX 20xx"),
    (8, 0): ("ampere", "A100, A30"),
    (8, 6): ("ampere", "A10, A40, RTX 30xx"),
    (8, 7): ("ampere", "Jetson Orin"),
    (8, 9): ("ada", "L4, L40S, RTX 40xx"),
    (9, 0): ("hopper", "H100, H200, H800"),
    (10, 0): ("blackwell", "B200, GB200"),
    (10, 3): ("blackwell", "B300, GB300"),
    (12, 0): ("blackwell-consumer", "RTX 50xx, RTX PRO 6000"),
    (12, 1): ("blackwell-consumer", "DGX Spark"),
}
ARCH_SPECIFIC = {(9, 0), (10, 0), (10, 3), (12, 0), (12, 1)}  # built as sm_XXa


@dataclass(frozen=True, order=True)
class Target:
    """A GPU architecture: its compute capability and the target we compile for."""

    major: int
    minor: int

    @property
    def cc(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def arch(self) -> str:
        base = f"sm_{self.major}{self.minor}"
        return base + "a" if self.cc in ARCH_SPECIFIC else base

    @property
    def family(self) -> str:
        return FAMILIES.get(self.cc, ("unknown", ""))[0]

    @property
    def known(self) -> bool:
        return self.cc in FAMILIES

    def __str__(self) -> str:
        return f"{self.arch} (compute capability {self.major}.{self.minor})"

    @classmethod
    def parse(cls, text: str) -> Target:
        """'sm_80', 'sm_90a', 'compute_89', '8.0', '80' -> Target; ValueError naming the forms otherwise."""
        t = text.strip().lower()
        m = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3})[af]?", t) or re.fullmatch(r"(\d+)\.(\d)", t)
        if not m:
            raise ValueError(f"{text!r} is no GPU target: use sm_80, sm_90a, 8.0 ...")
        if m.lastindex == 2:
            return cls(int(m.group(1)), int(m.group(2)))
        digits = m.group(1)
        return cls(int(digits[:-1]), int(digits[-1]))


@dataclass(frozen=True)
class Feature:
    name: str
    what: str  # for a skip reason: "needs <what>"
    test: Callable[[Target], bool]


def _cc_at_least(major: int, minor: int) -> Callable[[Target], bool]:
    return lambda t: t.cc >= (major, minor)


FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        Feature("wmma", "wmma (compute capability >= 7.0)", _cc_at_least(7, 0)),
        Feature("mma_m8n8k4", "mma.sync m8n8k4 (compute capability >= 7.0)", _cc_at_least(7, 0)),
        Feature("mma_f16", "mma.sync f16 m16n8k8 (compute capability >= 7.5)", _cc_at_least(7, 5)),
        Feature("mma_int8", "mma.sync s8/u8 (compute capability >= 7.5)", _cc_at_least(7, 5)),
        Feature("ldmatrix", "ldmatrix (compute capability >= 7.5)", _cc_at_least(7, 5)),
        Feature("mma_m16n8k16", "mma.sync m16n8k16 (compute capability >= 8.0)", _cc_at_least(8, 0)),
        Feature("mma_bf16", "bf16 mma.sync (compute capability >= 8.0)", _cc_at_least(8, 0)),
        Feature("mma_tf32", "tf32 mma.sync (compute capability >= 8.0)", _cc_at_least(8, 0)),
        Feature("mma_f64", "f64 mma.sync (compute capability >= 8.0)", _cc_at_least(8, 0)),
        Feature("mma_sparse", "mma.sp (compute capability >= 8.0)", _cc_at_least(8, 0)),
        Feature("cp_async", "cp.async (compute capability >= 8.0)", _cc_at_least(8, 0)),
        Feature("redux", "redux.sync (compute capability >= 8.0)", _cc_at_least(8, 0)),
        Feature("mma_fp8", "fp8 mma.sync (compute capability >= 8.9)", _cc_at_least(8, 9)),
        Feature("tma", "TMA, cp.async.bulk (compute capability >= 9.0)", _cc_at_least(9, 0)),
        Feature("clusters", "thread-block clusters (compute capability >= 9.0)", _cc_at_least(9, 0)),
        Feature("dsm", "distributed shared memory (compute capability >= 9.0)", _cc_at_least(9, 0)),
        Feature("wgmma", "wgmma (sm_90a only)", lambda t: t.arch == "sm_90a"),
        Feature(
            "setmaxnreg", "setmaxnreg (sm_90a, sm_100a, sm_103a)", lambda t: t.arch in ("sm_90a", "sm_100a", "sm_103a")
        ),
        Feature("tcgen05", "tcgen05 (sm_100a, sm_103a)", lambda t: t.arch in ("sm_100a", "sm_103a")),
    )
}


@dataclass(frozen=True)
class Needs:
    """What a benchmark or a kernel variant needs: a compute-capability range and named features."""

    min_cc: tuple[int, int] = (7, 0)
    max_cc: tuple[int, int] | None = None  # inclusive
    features: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            raise ValueError(f"unknown feature(s) {unknown}; known: {', '.join(FEATURES)}")

    def missing(self, t: Target) -> list[str]:
        """What `t` lacks, one phrase each (empty: it can run)."""
        out = []
        if t.cc < self.min_cc:
            out.append(f"compute capability >= {self.min_cc[0]}.{self.min_cc[1]}")
        if self.max_cc is not None and t.cc > self.max_cc:
            out.append(f"compute capability <= {self.max_cc[0]}.{self.max_cc[1]}")
        out += [FEATURES[f].what for f in self.features if not FEATURES[f].test(t)]
        return out

    def why_not(self, t: Target) -> str | None:
        """'needs X, Y (this GPU: sm_80, compute capability 8.0)' or None when `t` can run it."""
        miss = self.missing(t)
        return f"needs {', '.join(miss)} (this GPU: {t})" if miss else None

    def __and__(self, other: Needs) -> Needs:
        hi = [c for c in (self.max_cc, other.max_cc) if c is not None]
        feats = tuple(dict.fromkeys(self.features + other.features))
        return Needs(max(self.min_cc, other.min_cc), min(hi) if hi else None, feats)


ANY = Needs()


def targets(arches: Iterable[str]) -> list[Target]:
    return [Target.parse(a) for a in arches]


# the architectures CI compiles for: one per family the tool claims to support
CI_ARCHES = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120a")
