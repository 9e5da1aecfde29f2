"""Kernel files are named so a reader finds a benchmark's kernel from its suite: kernels/<suite>.cu or
kernels/<suite>_<family>.cu, named for a suite that uses it (memory_pchase.cu also serves the hopper suite's
chases). Generated, standalone builds (no file in kernels/) follow the same prefix rule."""

from collections import defaultdict
from pathlib import Path

from gpudissect.bench import SUITES
from gpudissect.bench.registry import load_all

KERNELS = Path(__file__).resolve().parents[2] / "src" / "gpudissect" / "kernels"


def _home(stem: str) -> str | None:
    return next((s for s in SUITES if stem == s or stem.startswith(s + "_")), None)


def test_every_kernel_file_names_its_suite():
    bad = [p.name for p in KERNELS.glob("*.cu") if _home(p.stem) is None]
    assert not bad, f"kernel files not named kernels/<suite>[_family].cu: {bad}"


def test_every_benchmark_kernel_is_named_for_a_suite_that_uses_it():
    users: dict[str, set[str]] = defaultdict(set)
    for b in load_all().values():
        if b.suite in SUITES:
            for spec in b.kernels:
                users[spec.file].add(b.suite)
    problems = []
    for file, suites in sorted(users.items()):
        spec_standalone = any(s.standalone for b in load_all().values() for s in b.kernels if s.file == file)
        if not spec_standalone and not (KERNELS / file).exists():
            problems.append(f"{file}: no such file in kernels/")
        home = _home(Path(file).stem)
        if home not in suites:
            problems.append(f"{file}: named for {home!r}, used by {sorted(suites)}")
    assert not problems, problems
