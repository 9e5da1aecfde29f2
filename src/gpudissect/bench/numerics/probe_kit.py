"""The probes' toolkit: a probe (inputs, each hypothesis' prediction, the hardware's answer), exact
power-of-two terms in a format, the packing of probes into kernel inputs and the verdict."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache, lru_cache, wraps
from typing import Any

import numpy as np

from .common import FMT, Instr, fmt_max, fmt_max_exp, fmt_min_normal_exp, from_values, to_values
from .evaluator import Hyp, predictor
from .runner import Runner


@dataclass
class Probe:
    param: str
    label: str
    a: list[float]  # K input values (exactly representable)
    b: list[float]
    c: float
    predictions: dict[str, float]  # hypothesis -> predicted D value
    got: float | None = None
    got_bits: int | None = None
    raw_a: list[int] | None = None  # bit patterns, where the probe needs codes values cannot express

    def matches(self) -> list[str]:
        strict = self.param == "special"  # signed zeros count there
        return [h for h, v in self.predictions.items() if self.got is not None and _same(v, self.got, strict)]

    def fresh(self) -> Probe:
        """A copy of the probe without the hardware's answer (its lists its own)."""
        raw = None if self.raw_a is None else list(self.raw_a)
        return replace(self, a=list(self.a), b=list(self.b), predictions=dict(self.predictions), raw_a=raw)


_SHARED: list[Any] = []  # the caches of the shared probe builders


def shared(build: Callable[..., list[Probe]]) -> Callable[..., list[Probe]]:
    """A probe builder whose probes are built once per process: they are a function of its arguments alone
    (an instruction, a hypothesis, numbers), and tc_model_agreement runs the probes tc_probes ran, in the same
    worker, with the same hypotheses where the hardware answered the same. Every call gets fresh copies (the
    hardware's answers are set on them); the hardware still runs every probe."""
    built = lru_cache(maxsize=256)(lambda *args, **kw: tuple(build(*args, **kw)))
    _SHARED.append(built)

    @wraps(build)
    def probes(*args: Any, **kw: Any) -> list[Probe]:
        return [p.fresh() for p in built(*args, **kw)]

    return probes


def forget_probes() -> None:
    """Empty the shared builders' caches (tests that build the probes under another evaluator)."""
    for built in _SHARED:
        built.cache_clear()


def _same(x: float, y: float, signed_zero: bool = False) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and (not signed_zero or math.copysign(1.0, x) == math.copysign(1.0, y))


@cache  # the probes ask for the same few exponents tens of thousands of times
def pow2_pair(e: int, fmt: str, sub: bool = False) -> tuple[float, float] | None:
    """Two normal (sub: or subnormal) powers of two of fmt whose product is 2^e (factors as equal as possible)."""
    lo, hi = fmt_min_normal_exp(fmt) - (FMT[fmt][1] if sub else 0), fmt_max_exp(fmt)
    best = None
    for x in range(lo, hi + 1):
        if lo <= e - x <= hi and (best is None or abs(2 * x - e) < abs(2 * best - e)):
            best = x
    return None if best is None else (2.0**best, 2.0 ** (e - best))


def _out_ok(v: float, out: str) -> bool:
    return v == 0 or 2.0 ** fmt_min_normal_exp(out) <= abs(v) <= fmt_max(out)


def scale_exp(ins: Instr) -> int:
    """Exponent of the large terms of the probes: high enough that small terms stay normal."""
    return min(2 * fmt_max_exp(ins.a) - 1, fmt_max_exp(ins.c) - 1, 40)


def _terms(
    ins: Instr, placed: dict[int, tuple[float, float]], c: float = 0.0
) -> tuple[list[float], list[float], float]:
    a, b = [0.0] * ins.K, [0.0] * ins.K
    for pos, (x, y) in placed.items():
        a[pos], b[pos] = x, y
    return a, b, c


_ZERO = Fraction(0)


def _products(a: list[float], b: list[float]) -> list[Fraction]:
    # most positions of a probe hold zeros: no Fraction built for them
    return [Fraction(x) * Fraction(y) if x and y else _ZERO for x, y in zip(a, b)]


def _make(param: str, label: str, ins: Instr, a: list[float], b: list[float], c: float, hyps: dict[str, Hyp]) -> Probe:
    pred = predictor(_products(a, b), Fraction(c), ins.c)
    return Probe(param, label, a, b, c, {k: pred(h) for k, h in hyps.items()})


def _term(e: int, fmt: str, sign: float = 1.0, mant: float = 1.0) -> tuple[float, float] | None:
    """A product sign * mant * 2^e of two inputs; fp8's range needs subnormal factors for the small terms
    of a wide alignment (fp8 mma.sync aligns like f16: 26 bits)."""
    p = pow2_pair(e, fmt)
    if p is None and mant == 1.0 and fmt in ("e4m3", "e5m2"):
        p = pow2_pair(e, fmt, sub=True)
    return None if p is None else (sign * mant * p[0], p[1])


def probe_bits(
    ins: Instr, probes: list[Probe], perm: list[int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel inputs of probes. perm: the k index of each position of the probes' (block-ordered) inputs,
    where the blocks are not contiguous runs of k (see layout_probes)."""
    raw = [i for i, p in enumerate(probes) if p.raw_a is not None]
    a_vals = np.array([p.a for p in probes], np.float64)
    a_vals[raw] = 0.0  # these rows hold codes that values cannot express
    a = from_values(ins.a, a_vals)  # every probe of the stage at once
    for i in raw:
        a[i] = probes[i].raw_a
    b = from_values(ins.a, np.array([p.b for p in probes], np.float64))
    c = from_values(ins.c, np.array([p.c for p in probes], np.float64))
    if perm is not None:
        a2, b2 = np.zeros_like(a), np.zeros_like(b)
        a2[:, perm], b2[:, perm] = a, b
        a, b = a2, b2
    return a, b, c


def run_probes(runner: Runner, ins: Instr, probes: list[Probe], perm: list[int] | None = None) -> None:
    if not probes:
        return
    a, b, c = probe_bits(ins, probes, perm)
    d = runner.dots(ins, a, b, c)
    vals = to_values(ins.c, d)
    for p, bits, v in zip(probes, d, vals):
        p.got_bits, p.got = int(bits), float(v)


NO_PROBE = "no probe possible for this format"


def agreed(probes: list[Probe]) -> set[str]:
    """The hypotheses every one of `probes` (at least one) matches."""
    common = set(probes[0].predictions)
    for p in probes:
        common &= set(p.matches())
    return common


def no_match(probes: list[Probe]) -> str:
    """The note where no hypothesis matches every probe: the probes that matched none, with what they got."""
    return "no hypothesis matches: " + "; ".join(f"{p.label} -> {p.got!r}" for p in probes if not p.matches())


def _pick(probes: list[Probe], param: str) -> tuple[str | None, str]:
    """The one hypothesis every probe of `param` agrees with (None when none or several do)."""
    if not probes:
        return None, NO_PROBE
    common = agreed(probes)
    if len(common) == 1:
        return common.pop(), "ok"
    if not common:
        return None, no_match(probes)
    return None, "undecided between " + ", ".join(sorted(common))


def pick_preferred(probes: list[Probe], prefer: list[str]) -> tuple[str | None, str]:
    """Like _pick, but where several hypotheses fit every probe and predict the same for each (no input
    here tells them apart), the first of them in `prefer` is taken and the note names the others."""
    val, note = _pick(probes, probes[0].param if probes else "")
    if val is not None or not probes or not note.startswith("undecided between"):
        return val, note
    common = agreed(probes)
    same = all(len({repr(p.predictions[h]) for h in common}) == 1 for p in probes)
    choice = next((h for h in prefer if h in common), None)
    if same and choice is not None:
        others = sorted(common - {choice})
        return choice, f"ok ({choice}; no probe tells it from {', '.join(others)}: the same D for every probe)"
    return None, note
