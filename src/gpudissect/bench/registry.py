"""Benchmark declarations: what a benchmark sweeps, which kernels it needs, which SASS they must hold."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..capability import ANY, Needs, Target
from ..device.compiler import KernelSpec
from ..errors import GpuDissectError

__all__ = ["Benchmark", "KernelSpec", "Needs", "Param", "benchmark", "load_all", "select"]

# A suite is a package of gpudissect.bench (bench/<suite>/); modules beside the packages
# (registry, context, shared) are the framework, never suites.
_BENCH_PKG = __name__.rsplit(".", 1)[0]

Facts = dict[str, Any]  # device facts: sm_count, l2_bytes, free_mem, cc_major, ...


@dataclass(frozen=True)
class Param:
    """A user-settable parameter (`--set name=value`), validated before anything launches."""

    default: Any
    help: str
    parse: Callable[[str], Any] = int
    check: Callable[[Any, Facts], str | None] | None = None  # returns an error message or None


@dataclass
class Benchmark:
    suite: str
    name: str
    func: Callable[..., None]
    title: str
    axes: dict[str, str]  # axis -> what values it takes (for `gpudissect list`)
    kernels: list[KernelSpec]
    params: dict[str, Param] = field(default_factory=dict)
    timeout_s: float = 300.0
    needs: Needs = ANY  # what the GPU must have for the benchmark to run at all (its variants may need more)
    paper: str = ""  # where the method comes from
    needs_gpu: bool = True
    # named parts that are no kernel of ours (e.g. the app suite's FP8 types, run through torch) and need more
    # than the benchmark: `plan` lists them with the kernel variants, the benchmark skips them by name
    part_needs: dict[str, Needs] = field(default_factory=dict)
    # kernels the benchmark generates at run time whose shape is known before it starts (the icache staircase):
    # (target, mode) -> specs, compiled ahead by the runner's pool like the declared kernels
    prebuild: Callable[[Target, str], list[KernelSpec]] | None = None
    # CPU work the benchmark would do before its first launch, done ahead by the runner in a thread beside the
    # benchmarks before it (target, mode, its resolved parameters); what it leaves in the caches the benchmark
    # then reads (isa_regbank: the patched variants' nvdisasm text). It never raises into the run
    prepare: Callable[[Target, str, dict[str, Any]], None] | None = None
    # it imports torch: it runs in a process of its own (torch's global switches must not reach the next
    # benchmark), which the runner starts, and lets import torch, while the benchmarks before it run
    torch: bool = False
    # more modules its process imports ahead, after torch (llm: transformers' Llama, ~3 s)
    preload: tuple[str, ...] = ()
    # its figures time the host (launch cost, eager decode, pageable copies): nothing the runner starts ahead
    # (a torch benchmark's process importing torch) runs beside it; that import raised the host cost per call
    # by ~40 % (profiles/spare-ab)
    host_timed: bool = False

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.name}"

    @property
    def min_cc(self) -> tuple[int, int]:
        return self.needs.min_cc

    def why_not(self, target: Target) -> str | None:
        """Why this benchmark cannot run on `target` at all (None: it can, perhaps with fewer variants)."""
        if not self.needs_gpu:
            return None
        return self.needs.why_not(target)

    def variants(self, target: Target) -> tuple[list[KernelSpec], list[tuple[KernelSpec, str]]]:
        """The declared kernel variants `target` can run, and those it cannot with the reason."""
        runs, skips = [], []
        for spec in self.kernels:
            why = (self.needs & spec.needs).why_not(target)
            if why is None:
                runs.append(spec)
            else:
                skips.append((spec, why))
        return runs, skips

    def parts(self, target: Target) -> tuple[list[str], list[tuple[str, str]]]:
        """The named parts `target` can run, and those it cannot with the reason."""
        runs, skips = [], []
        for part, needs in self.part_needs.items():
            why = (self.needs & needs).why_not(target)
            if why is None:
                runs.append(part)
            else:
                skips.append((part, why))
        return runs, skips


REGISTRY: dict[str, Benchmark] = {}


def suite_of(module: str) -> str | None:
    """The suite a module belongs to: the package right below gpudissect.bench, or None outside it."""
    if not module.startswith(_BENCH_PKG + "."):
        return None
    rest = module[len(_BENCH_PKG) + 1 :].split(".")
    return rest[0] if len(rest) >= 2 else None


def benchmark(
    *,
    name: str,
    title: str,
    axes: dict[str, str],
    kernels: list[KernelSpec],
    params: dict[str, Param] | None = None,
    timeout_s: float = 300.0,
    needs: Needs = ANY,
    paper: str = "",
    needs_gpu: bool = True,
    suite: str | None = None,
    part_needs: dict[str, Needs] | None = None,
    prebuild: Callable[[Target, str], list[KernelSpec]] | None = None,
    torch: bool = False,
    host_timed: bool = False,
    preload: tuple[str, ...] = (),
    prepare: Callable[[Target, str, dict[str, Any]], None] | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Declare a benchmark. Its suite is the package it lives in (bench/<suite>/); `suite` is only for
    benchmarks declared outside gpudissect.bench (GPUDISSECT_EXTRA_SUITES)."""

    def wrap(func: Callable[..., None]) -> Callable[..., None]:
        pkg_suite = suite_of(func.__module__)
        if pkg_suite is not None and suite is not None:
            raise RuntimeError(f"{func.__module__}.{name}: the suite is the package ({pkg_suite}), not an argument")
        the_suite = pkg_suite or suite
        if the_suite is None:
            raise RuntimeError(f"{func.__module__}.{name}: declared outside bench/<suite>/ without a suite")
        b = Benchmark(the_suite, name, func, title, axes, kernels, params or {}, timeout_s, needs, paper, needs_gpu)
        b.part_needs, b.prebuild, b.torch, b.host_timed = part_needs or {}, prebuild, torch, host_timed
        if preload and not torch:
            raise RuntimeError(f"{b.key}: preload is for a torch benchmark's process, started ahead")
        b.preload, b.prepare = preload, prepare
        if b.key in REGISTRY:
            raise RuntimeError(f"benchmark {b.key} declared twice")
        REGISTRY[b.key] = b
        return func

    return wrap


def suite_packages() -> list[str]:
    """The suites as they are on disk: every package of gpudissect.bench."""
    import pkgutil

    from . import __path__ as bench_path

    return sorted(m.name for m in pkgutil.iter_modules(bench_path) if m.ispkg and not m.name.startswith("_"))


def load_all() -> dict[str, Benchmark]:
    """Every benchmark, in run order: suites in SUITES order; inside a suite, its modules in the order its
    package's ORDER names them (dotted module names relative to the suite; others after, by name), and
    the benchmarks of one module in declaration order. The order never depends on how imports are sorted."""
    import pkgutil

    from . import SUITES

    on_disk = suite_packages()
    for name in on_disk:
        pkg = importlib.import_module(f"{_BENCH_PKG}.{name}")
        for sub in sorted(pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."), key=lambda s: s.name):
            importlib.import_module(sub.name)
    suites = [s for s in SUITES if s in on_disk] + [s for s in on_disk if s not in SUITES]

    def rank(b: Benchmark) -> tuple[int, int, str, int]:
        if b.suite not in suites:  # declared outside gpudissect.bench (extra suites): after all others
            return (len(suites), 0, b.func.__module__, b.func.__code__.co_firstlineno)
        order = tuple(getattr(importlib.import_module(f"{_BENCH_PKG}.{b.suite}"), "ORDER", ()))
        rel = b.func.__module__.removeprefix(f"{_BENCH_PKG}.{b.suite}.")
        pos = order.index(rel) if rel in order else len(order)
        return (suites.index(b.suite), pos, rel, b.func.__code__.co_firstlineno)

    ordered = sorted(REGISTRY.values(), key=rank)
    REGISTRY.clear()
    REGISTRY.update((b.key, b) for b in ordered)
    # extra suites (tests use this to run CPU-only benchmarks through the real runner)
    for mod in filter(None, os.environ.get("GPUDISSECT_EXTRA_SUITES", "").split(",")):
        try:
            importlib.import_module(mod)
        except ImportError as e:
            raise GpuDissectError(f"GPUDISSECT_EXTRA_SUITES names {mod!r}, which cannot be imported: {e}") from None
    return REGISTRY


def select(suites: list[str] | None = None, benches: list[str] | None = None) -> list[Benchmark]:
    """Benchmarks by suite and/or name; unknown names are an error naming the valid ones."""
    reg = load_all()
    known_suites = sorted({b.suite for b in reg.values()})
    for s in suites or []:
        if s not in known_suites:
            raise GpuDissectError(f"unknown suite {s!r}; suites: {', '.join(known_suites)}")
    chosen = [b for b in reg.values() if not suites or b.suite in suites]
    if benches:
        by_name = {b.name: b for b in reg.values()} | {b.key: b for b in reg.values()}
        for n in benches:
            if n not in by_name:
                raise GpuDissectError(
                    f"unknown benchmark {n!r}; benchmarks: {', '.join(sorted(b.name for b in reg.values()))}"
                )
        wanted = {by_name[n].key for n in benches}
        chosen = [b for b in chosen if b.key in wanted]
        if not chosen:
            raise GpuDissectError("no benchmark matches both --suite and --bench")
    return chosen


def resolve_params(b: Benchmark, overrides: dict[str, str], facts: Facts) -> dict[str, Any]:
    """Defaults merged with `--set` values, each parsed and checked against the device."""
    unknown = set(overrides) - set(b.params)
    if unknown:
        valid = ", ".join(sorted(b.params)) or "none"
        raise GpuDissectError(f"{b.name}: unknown parameter(s) {', '.join(sorted(unknown))}; valid: {valid}")
    out: dict[str, Any] = {}
    for name, p in b.params.items():
        if name in overrides:
            try:
                value = p.parse(overrides[name])
            except ValueError as e:
                raise GpuDissectError(f"{b.name}: bad value for {name}: {overrides[name]!r} ({e})") from None
        else:
            value = p.default
        if p.check is not None and value is not None:
            err = p.check(value, facts)
            if err:
                raise GpuDissectError(f"{b.name}: {name}={overrides.get(name, value)}: {err}")
        out[name] = value
    return out


def comma_names(text: str) -> tuple[str, ...]:
    """A Param's comma-separated list of names: 'a, b,,c' -> ('a', 'b', 'c') (blanks dropped)."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


def comma_ints(text: str) -> tuple[int, ...]:
    """A Param's comma-separated list of integers: '1, 2,4' -> (1, 2, 4) (blanks dropped)."""
    return tuple(int(x) for x in text.split(",") if x.strip())


def one_of(valid: Iterable[str], what: str) -> Callable[[Sequence[str], Facts], str | None]:
    """A Param check of a list of names: each one of `valid`; `what` names them in the refusal
    ("pattern(s)": "unknown pattern(s) x, y; valid: ...")."""
    valid = tuple(valid)

    def check(v: Sequence[str], facts: Facts) -> str | None:
        bad = [x for x in v if x not in valid]
        return f"unknown {what} {', '.join(bad)}; valid: {', '.join(valid)}" if bad else None

    return check


def in_range(lo: float, hi: float, text: str | None = None) -> Callable[[float, Facts], str | None]:
    """A Param check: lo <= value <= hi; refused with `text` (default "lo .. hi")."""
    message = text or f"{lo} .. {hi}"

    def check(v: float, facts: Facts) -> str | None:
        return None if lo <= v <= hi else message

    return check


def multiple_of(step: int, why: str) -> Callable[[int, Facts], str | None]:
    """A Param check: a positive multiple of `step` bytes (`why` says what needs it)."""

    def check(v: int, facts: Facts) -> str | None:
        return None if v >= step and v % step == 0 else f"must be a positive multiple of {step} bytes ({why})"

    return check


def fits_free_memory(fraction: float) -> Callable[[int, Facts], str | None]:
    """A Param check: positive and at most `fraction` of the device's free memory (when known)."""

    def check(v: int, facts: Facts) -> str | None:
        free = facts.get("free_mem")
        if v <= 0:
            return "must be positive"
        if free and v > fraction * free:
            return f"above {fraction:.0%} of the free device memory ({free / 2**30:.1f} GiB free)"
        return None

    return check


def parse_size(text: str) -> int:
    """'48K', '2MiB', '1.5G', '4096' -> bytes."""
    t = text.strip().upper().replace("IB", "").replace("B", "")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)
