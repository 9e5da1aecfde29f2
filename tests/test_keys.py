"""Figure keys: the lint (gpudissect/keys.py) holds for every key of every committed run, and catches
what a new key could get wrong."""

import gzip
import json

import pytest

from gpudissect import keys
from gpudissect.bench import SUITES
from helpers import ROOT

EXPORTS = sorted(ROOT.glob("results/*/runs/*/export.json.gz"))


def test_every_suite_has_its_prefixes():
    assert set(keys.SUITE_PREFIXES) == set(SUITES)


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: f"{p.parent.parent.parent.name}/{p.parent.name}")
def test_committed_keys_pass(path):
    figures = json.loads(gzip.decompress(path.read_bytes()))["figures"]
    bad = [p for f in figures for p in keys.problems(f["suite"], f["key"], f.get("unit") or "")]
    assert not bad, bad[:10]


@pytest.mark.parametrize(
    ("suite", "key", "unit"),
    [
        ("memory", "mem.latency.l1_hit_cycles", "cycles"),
        ("isa", "isa.throughput.dfma_per_clk_sm", "instr/clk/SM"),
        ("hopper", "dpx.vimax_s32.latency_cycles_sm80", "cycles"),
        ("atomics", "atom.global.merge.one_lane_cycles_per_instr", "cycles"),
        ("tensor", "tc.wgmma.f16_f32.m64n256k16.rand_power_w", "W"),
        ("gemm", "gemm.bf16.4096.ours_power_watts", "W"),  # stored before the rule: aliased
        ("gemm", "gemm.bf16.4096.vs_cublas", "ratio"),
        ("memory", "clock.pchase_latency.sm_mhz", "MHz"),
    ],
)
def test_good_and_aliased_keys(suite, key, unit):
    assert keys.problems(suite, key, unit) == []


@pytest.mark.parametrize(
    ("suite", "key", "unit", "what"),
    [
        ("memory", "memory.latency.l1_hit_cycles", "cycles", "starts with mem."),
        ("tensor", "mem.latency.x_cycles", "cycles", "starts with tc."),
        ("memory", "mem.latency.l1_hit", "cycles", "ends with _cycles"),
        ("tensor", "tc.wgmma.f16_f32.new_power_watts", "W", "ends with _w"),  # _watts only where stored before
        ("link", "link.Bandwidth_gbps", "GB/s", "lower-case"),
        ("link", "bandwidth_gbps", "GB/s", "dotted"),
    ],
)
def test_bad_keys_are_named(suite, key, unit, what):
    found = keys.problems(suite, key, unit)
    assert found and any(what in p for p in found), found


def test_a_benchmark_cannot_emit_a_bad_key_under_test(monkeypatch):
    from gpudissect.bench import context
    from gpudissect.bench.registry import Benchmark

    monkeypatch.setattr(context, "_STRICT_KEYS", True)
    ctx = context.BenchContext(Benchmark("memory", "x", lambda c: None, "", {}, []), None, "quick", {}, lambda *a: None)
    ctx.figure("mem.latency.l1_hit_cycles", 1.0, "cycles", "measured", "m")
    with pytest.raises(ValueError, match="ends with _cycles"):
        ctx.figure("mem.latency.l1_hit", 1.0, "cycles", "measured", "m")
