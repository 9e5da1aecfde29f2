"""The layers of shared/DESIGN.md, read from every module's imports: data flows top to bottom, and a module
imports only from its own layer or the ones below it. The table places the modules the design does not
name (runner, sass, gemm, app...) where their imports put them; README "Architecture" draws the same."""

import ast
from pathlib import Path

import pytest

from helpers import ROOT

SRC = ROOT / "src" / "gpudissect"

# Top to bottom. A name is a top-level module or package of gpudissect.
LAYERS: list[tuple[str, set[str]]] = [
    (
        "cli",
        {
            "__main__",
            "entry",
            "cli",
            "cli_compare",
            "cli_gemm",
            "cli_isa",
            "cli_output",
            "cli_plan",
            "cli_progress",
            "cluster",
        },
    ),
    ("orchestration", {"runner", "worker", "eta", "multigpu", "doctor", "api", "__init__", "listing"}),
    ("bench", {"bench", "sasscheck", "sassmap"}),
    ("libraries", {"gemm", "app"}),  # what benchmarks call: our GEMM, the torch-side workloads
    ("analysis", {"analysis"}),
    ("report", {"report"}),
    ("store", {"store", "exportio", "exportschema"}),
    ("sass", {"sass"}),  # disassembly, encoding, control fields, patcher (compiles its probes with NVRTC)
    ("device", {"device", "kernels"}),
    ("numerics", {"numerics"}),
    ("ground", {"reference", "models", "errors", "version", "keys", "textsafe", "capability", "trace"}),
]
RANK = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}
# inside bench: the framework never reaches into a suite
BENCH_FRAMEWORK = {"registry", "context", "shared", "__init__"}


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every gpudissect import in the file, wherever it sits in the code."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from . import x`: x may be a module
            names = [f"{target}.{a.name}" for a in node.names]
            subs = [n for n in names if _exists(n)]
            for t in subs or [target]:
                out.append((node.lineno, t))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(ln, t) for ln, t in out if t == "gpudissect" or t.startswith("gpudissect.")]


def _exists(module: str) -> bool:
    p = SRC.parent.joinpath(*module.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


FILES = sorted(SRC.rglob("*.py"))


def test_every_module_has_a_layer():
    tops = {_top(_module(p)) for p in FILES}
    assert tops <= set(RANK), f"modules without a layer in this table: {sorted(tops - set(RANK))}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_upward_import(path):
    src_top = _top(_module(path))
    bad = []
    for line, target in _imports(path):
        dst_top = _top(target)
        if RANK.get(dst_top, len(LAYERS)) < RANK[src_top]:
            bad.append(
                f"line {line}: {target} ({LAYERS[RANK[dst_top]][0]}) is above {src_top} ({LAYERS[RANK[src_top]][0]})"
            )
    assert not bad, "\n".join(bad)


def test_no_circle_between_top_level_modules():
    edges: dict[str, set[str]] = {}
    for p in FILES:
        a = _top(_module(p))
        for _, t in _imports(p):
            b = _top(t)
            if a != b and b != "__init__":
                edges.setdefault(a, set()).add(b)
    circles = sorted({tuple(sorted((a, b))) for a, bs in edges.items() for b in bs if a in edges.get(b, ())})
    assert not circles, f"modules importing each other: {circles}"


def test_bench_framework_imports_no_suite():
    from gpudissect.bench import SUITES

    bench = SRC / "bench"
    for name in BENCH_FRAMEWORK:
        path = bench / f"{name}.py"
        for line, target in _imports(path):
            parts = target.split(".")
            assert not (len(parts) > 2 and parts[1] == "bench" and parts[2] in SUITES), f"{path.name}:{line}: {target}"


def test_suites_are_the_packages():
    from gpudissect.bench import SUITES
    from gpudissect.bench.registry import load_all, suite_packages

    assert sorted(SUITES) == suite_packages()
    assert {b.suite for b in load_all().values()} >= set(SUITES)
