"""Text of `gpudissect list`: a table of every benchmark, a long form per benchmark (wrapped to a terminal's
width, `width` None: never), JSON."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from gpudissect.bench.registry import Benchmark
from gpudissect.textsafe import visible


def table(benches: Sequence[Benchmark]) -> tuple[list[str], list[list[str]]]:
    """Headers and one row per benchmark: suite, name, title (on one line)."""
    # a suite may come from GPUDISSECT_EXTRA_SUITES, i.e. anyone: every text is shown with visible()
    rows = [[visible(b.suite), visible(b.name), visible(" ".join(b.title.split()))] for b in benches]
    return ["SUITE", "BENCHMARK", "TITLE"], rows


def footer(benches: Sequence[Benchmark]) -> str:
    n_suites = len({b.suite for b in benches})
    return (
        f"{len(benches)} benchmarks in {n_suites} suites. `gpudissect list BENCH` (or --long) "
        "shows axes, parameters and kernels; --json all of it."
    )


def _field(label: str, text: str, width: int | None, indent: int = 14) -> list[str]:
    head = f"  {(label + ':') if label else '':<{indent - 2}}"
    text = visible(text)
    if width is None:
        return [head + text]
    lines = textwrap.wrap(
        text, width, initial_indent=head, subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False
    )
    return lines or [head]


def _fmt_default(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ",".join(str(x) for x in v)
    return str(v)


def long(benches: Sequence[Benchmark], width: int | None) -> str:
    """Per benchmark: title, paper, requirements, axes, parameters (as --set takes them), kernels."""
    out: list[str] = []
    for b in benches:
        head = visible(f"{b.key}: {' '.join(b.title.split())}")
        out += textwrap.wrap(head, width, subsequent_indent="    ", break_long_words=False) if width else [head]
        if b.paper:
            out += _field("paper", b.paper, width)
        need = "a GPU of compute capability >= {}.{}".format(*b.min_cc) if b.needs_gpu else "no GPU (CPU only)"
        out += _field("needs", f"{need}; time limit {b.timeout_s:.0f} s", width)
        for i, (axis, what) in enumerate(b.axes.items()):
            out += _field("axes" if i == 0 else "", f"{axis}: {what}", width)
        if not b.axes:
            out += _field("axes", "none", width)
        for i, (name, p) in enumerate(b.params.items()):
            out += _field(
                "parameters" if i == 0 else "", f"--set {b.name}.{name}={_fmt_default(p.default)}  {p.help}", width
            )
        if not b.params:
            out += _field("parameters", "none", width)
        kernels = ", ".join(k.name for k in b.kernels) or "none of its own"
        out += _field("kernels", f"{len(b.kernels)}: {kernels}" if b.kernels else kernels, width)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def as_json(benches: Sequence[Benchmark]) -> list[dict[str, Any]]:
    return [
        {
            "suite": b.suite,
            "name": b.name,
            "title": b.title,
            "paper": b.paper,
            "needs_gpu": b.needs_gpu,
            "min_cc": list(b.min_cc),
            "timeout_s": b.timeout_s,
            "axes": dict(b.axes),
            "params": {n: {"default": p.default, "help": p.help} for n, p in b.params.items()},
            "kernels": [
                {"name": k.name, "file": k.file, "defines": k.defines, "required": k.required} for k in b.kernels
            ],
        }
        for b in benches
    ]
