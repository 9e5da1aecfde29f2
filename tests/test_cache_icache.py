"""Instruction-cache probes: the generator gives straight-line code of the asked length (CPU only)."""

from __future__ import annotations

import re

import pytest

from gpudissect.bench.cache import sources as src
from gpudissect.sass.disasm import disassemble, find_tool

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def test_body_text():
    body = src.ffma_body(3)
    assert body.count("fma.rn.f32") == 3
    assert '"fma.rn.f32 %2, %2, %8, %9;\\n\\t"' in body
    with pytest.raises(ValueError):
        src.icache_source(12)  # not a multiple of 8: the chains would hold unequal counts


@needs_cuobjdump
@pytest.mark.parametrize("n,t", [(64, 8), (1024, 256), (8192, 64)])
def test_generated_sequences_are_straight_line(n, t):
    funcs = disassemble(src.build(src.icache_source(n, t), f"icache_{n}_{t}.cu", "sm_90a"))
    assert src.straight_line_problems(funcs["icache_seq"], n) == []
    assert src.straight_line_problems(funcs["icache_observe"], n) == []
    assert src.thrash_problems(funcs["icache_thrash"], t) == []
    assert src.thrash_problems(funcs["icache_thrash"], t + 8)  # a wrong count is caught
    assert len(re.findall(r"\bFFMA\b", funcs["icache_seq"])) == n


def test_checker_rejects_a_rolled_loop_and_a_short_run():
    clock = "/*0000*/ CS2R R4, SR_CLOCKLO"
    ffma = "/*0010*/ FFMA R0, R0, R2, R3"
    loop = "\n".join([clock, ffma, ffma, "/*0030*/ @P0 BRA 0x10", clock])
    assert src.straight_line_problems(loop, 64)  # 2 FFMA in a loop are not 64 straight-line ones
    ok = "\n".join([clock] + [ffma] * 16 + [clock])
    assert src.straight_line_problems(ok, 16) == []
    split = "\n".join([clock] + [ffma] * 8 + ["/*0100*/ BRA 0x200"] + [ffma] * 8 + [clock])
    assert src.straight_line_problems(split, 16)


def test_ffma_runs():
    text = "\n".join(["A", "FFMA x", "FFMA y", "B", "FFMA z"])
    assert src.ffma_runs(text) == [(1, 2, 2), (4, 4, 1)]
    assert src.ffma_total(text) == 3
