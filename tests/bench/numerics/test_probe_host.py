"""The host side of the probes, made cheaper without changing what it computes: the integer evaluator against
its Fraction definition (rational_evaluator.py), probe by probe; the probe builders' per-process sharing; the
lazy greedy cover; the fp8 value lookup and the packing of a whole stage; Runner.dots writing straight into
the packed buffers what run() would upload."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
import rational_evaluator as ref

from fakes import FakeDevice, bench_context
from gpudissect.bench import numerics as n
from gpudissect.bench.numerics import multiblock, probe_kit, probes
from gpudissect.bench.numerics import runner as num_runner


@pytest.fixture(autouse=True)
def _fresh_probes():
    """No test sees probes another built (under another evaluator, or with answers set)."""
    probe_kit.forget_probes()
    yield
    probe_kit.forget_probes()


# ------------------------------------------------------------------ the evaluator
def _dyadic(rng: random.Random) -> Fraction:
    """A value like a probe's: zero, a product of two fp32-range floats, near an overflow or a cancellation."""
    kind = rng.random()
    if kind < 0.15:
        return Fraction(0)
    mant = rng.randint(1, 1 << rng.choice([1, 3, 8, 11, 24, 48]))
    if kind < 0.25:  # at the top of f16 or f32
        e = rng.choice([15, 16, 126, 127, 128]) - mant.bit_length() + rng.randint(-1, 1)
    else:
        e = rng.randint(-300, 120)
    return Fraction(mant * rng.choice([1, -1])) * Fraction(2) ** e


def _hyp(rng: random.Random, k: int) -> n.Hyp:
    return n.Hyp(
        block_size=rng.choice([b for b in (2, 4, 8, 16, 32, 64) if b <= k]),
        align_frac_bits=rng.randint(2, 40),
        align_rounding=rng.choice(["truncate", "floor", "rne"]),
        normalize=rng.choice(["per_block", "per_block", "per_add"]),
        c_position=rng.choice(["first", "last", "separate"]),
        out_rounding=rng.choice(["rne", "rtz", "rna", "rup", "rdown"]),
        out_man_bits=rng.choice([None, None, 4, 10, 13]),
        c_ref_shift=rng.randint(-2, 2),
        inter_fmt=rng.choice(["f32", "f16", "e8m13", "exact"]),
        inter_rounding=rng.choice([None, "rne", "rtz", "rup", "rdown"]),
        c_add=rng.choice(["fused", "ieee_rne", "ieee_rtz"]),
    )


def test_the_integer_evaluator_is_the_rational_one():
    """Random hypotheses (every field) on random dyadic sums (cancellation, subnormal and overflowing
    values, zeros): the integer evaluator gives exactly the Fraction definition's D, sign of zero and
    infinities included; round_to likewise, under every mode and kept width."""
    rng = random.Random(11)
    for _ in range(2500):
        k = rng.choice([4, 8, 16, 32, 64])
        prods = [_dyadic(rng) for _ in range(k)]
        if rng.random() < 0.3:  # a cancelling pair
            i, j = rng.sample(range(k), 2)
            prods[j] = -prods[i]
        c, h, out = _dyadic(rng), _hyp(rng, k), rng.choice(["f32", "f16"])
        assert repr(n.predict(h, prods, c, out)) == repr(ref.predict(h, prods, c, out)), (h, prods, c, out)
        for mode in ("rne", "rtz", "rna", "rup", "rdown"):
            man = rng.choice([None, 5, 13])
            assert repr(n.round_to(c, out, mode, man)) == repr(ref.round_to(c, out, mode, man)), (c, out, mode, man)


def test_the_evaluator_refuses_what_it_cannot_represent():
    with pytest.raises(ValueError, match="not dyadic"):
        n.predict(n.Hyp(), [Fraction(1, 3)], Fraction(0), "f32")
    with pytest.raises(ValueError, match="unknown rounding"):
        n.predict(n.Hyp(out_rounding="nearest"), [Fraction(1, 2**40) + 1], Fraction(0), "f32")


def _stages(ins: n.Instr, base: n.Hyp) -> dict[str, list[probe_kit.Probe]]:
    """Every probe builder of an instruction under `base` (the multi-block ones where they apply)."""
    out = {
        "layout": n.layout_probes(ins),
        "align": n.align_probes(ins, base),
        "align_ref": n.align_ref_probes(ins, base.align_frac_bits),
        "rounding": n.rounding_probes(ins, base),
        "normalize": n.normalize_probes(ins, base),
        "block": n.block_probes(ins, base),
        "inter": n.inter_probes(ins, base),
        "acc_bits": n.acc_bits_probes(ins, base),
        "c": n.c_probes(ins, base),
        "c_add": n.c_add_probes(ins, replace(base, c_position="separate")),
        "out_rounding": n.out_rounding_probes(ins, base),
        "c_ref": n.c_ref_probes(ins, base),
        "in_convert": n.in_convert_probes(ins, base, True),
        "specials": n.subnormal_probes(ins) + n.special_probes(ins) + n.tf32_probes(ins) + n.fp8_probes(ins),
    }
    chain = next((ci for ci in n.CHAIN_INSTRS if ci.single == ins), None)
    if chain is not None:
        out["chain"] = n.chain_probes(chain, base)
    return out


def _seen(stages: dict[str, list[probe_kit.Probe]]) -> dict[str, list[tuple]]:
    return {
        k: [(p.param, p.label, p.a, p.b, p.c, p.raw_a, [(h, repr(v)) for h, v in p.predictions.items()]) for p in ps]
        for k, ps in stages.items()
    }


PROBED = [n.INSTRS[0], n.INSTRS[5], n.INSTRS[7], n.INSTRS[12], n.INSTRS[11]]  # f16, f16->f16, tf32, fp8 k32, e5m2


@pytest.mark.parametrize("ins", PROBED, ids=lambda i: i.key)
def test_every_probe_prediction_is_the_rational_one(ins, monkeypatch):
    """Each builder's probes, with the integer evaluator and with the Fraction definition patched in where
    the builders predict: the same probes (the greedy covers choose by the predictions) with the same
    predictions, under single-block and two-block hypotheses."""
    bases = [
        n.Hyp(block_size=ins.k, align_frac_bits=13 if ins.a in n.FP8 else 24, out_rounding="rtz"),
        n.Hyp(block_size=max(2, ins.k // 2), align_frac_bits=25, out_man_bits=13, inter_rounding="rtz"),
    ]
    fast = [_seen(_stages(ins, b)) for b in bases]
    probe_kit.forget_probes()
    rational = lambda prods, c, fmt: lambda h: ref.predict(h, prods, c, fmt)
    monkeypatch.setattr(probe_kit, "predictor", rational)
    monkeypatch.setattr(multiblock, "predictor", rational)
    monkeypatch.setattr(multiblock, "predict", ref.predict)
    monkeypatch.setattr(probes, "round_to", ref.round_to)
    assert fast == [_seen(_stages(ins, b)) for b in bases]


# ------------------------------------------------------------------ sharing and the lazy cover
def test_probe_builders_share_their_probes_within_a_process(monkeypatch):
    """The second build of a stage predicts nothing and hands out fresh copies: an answer set on one call's
    probes is not in the next call's."""
    ins, base = n.INSTRS[4], n.Hyp(block_size=16, align_frac_bits=25)
    first = n.out_rounding_probes(ins, base)
    for p in first:
        p.got, p.got_bits = 1.0, 0x3F800000
        p.a[0] = 99.0
    calls, real = [], probe_kit.predictor
    monkeypatch.setattr(probe_kit, "predictor", lambda *a: calls.append(a) or real(*a))
    again = n.out_rounding_probes(ins, base)
    assert not calls and again and all(p.got is None and p.got_bits is None for p in again)
    assert [(p.label, p.predictions) for p in again] == [(p.label, p.predictions) for p in first]
    assert all(p.a[0] != 99.0 for p in again) and all(x is not y for x, y in zip(first, again))
    assert n.out_rounding_probes(ins, replace(base, align_frac_bits=24)) != []  # another hypothesis: built
    assert calls


def _probe(label: str, preds: dict[str, float]) -> probe_kit.Probe:
    return probe_kit.Probe("p", label, [0.0], [0.0], 0.0, preds)


def test_greedy_cover_reads_its_candidates_lazily():
    cands = [
        _probe("ab", {"a": 1.0, "b": 2.0, "c": 1.0}),
        _probe("none", {"a": 1.0, "b": 1.0, "c": 1.0}),
        _probe("ac", {"a": 1.0, "b": 2.0, "c": 3.0}),
        _probe("later", {"a": 5.0, "b": 6.0, "c": 7.0}),
    ]
    read = []

    def gen():
        for p in cands:
            read.append(p.label)
            yield p

    chosen = n.greedy_cover(gen())
    assert [p.label for p in chosen] == ["ab", "ac"] == [p.label for p in n.greedy_cover(cands)]
    assert read == ["ab", "none", "ac"]  # nothing built past the last one needed
    assert n.greedy_cover(iter([])) == [] and n.greedy_cover([], names=["a", "b"]) == []


# ------------------------------------------------------------------ inputs of the kernels
def _from_values_loop(fmt: str, x: np.ndarray) -> np.ndarray:
    """from_values of fp8 as it was: one table search per value."""
    table = n.to_values(fmt, np.arange(256))
    out = np.zeros(x.shape, np.uint32)
    for i, v in enumerate(x.ravel()):
        hits = np.flatnonzero(table == v) if not np.isnan(v) else np.flatnonzero(np.isnan(table))
        if v == 0:
            hits = np.array([0x80 if math.copysign(1.0, v) < 0 else 0])
        if hits.size == 0:
            raise ValueError(f"{v} is not representable in {fmt}")
        out.ravel()[i] = hits[0]
    return out


@pytest.mark.parametrize("fmt", n.FP8)
def test_fp8_values_find_the_codes_the_table_search_found(fmt):
    vals = n.to_values(fmt, np.arange(256))
    x = np.concatenate([vals, [-0.0, 0.0, math.nan]])[np.random.default_rng(3).permutation(259)].reshape(7, 37)
    got = n.from_values(fmt, x)
    assert got.dtype == np.uint32 and got.shape == x.shape
    assert np.array_equal(got, _from_values_loop(fmt, x))
    for bad in (1.0 + 2.0**-6, 1e6, -(2.0**-20)):
        with pytest.raises(ValueError, match="not representable"):
            n.from_values(fmt, np.array([[1.0, bad]]))


def _probe_bits_each(ins, ps):
    """probe_bits as it was: one probe at a time."""
    a = np.array([p.raw_a if p.raw_a is not None else n.from_values(ins.a, np.array(p.a)) for p in ps], np.uint32)
    b = np.array([n.from_values(ins.a, np.array(p.b)) for p in ps], np.uint32)
    c = np.array([n.from_values(ins.c, np.array([p.c]))[0] for p in ps], np.uint32)
    return a, b, c


@pytest.mark.parametrize("ins", [n.INSTRS[0], n.INSTRS[3], n.INSTRS[8], n.INSTRS[15]], ids=lambda i: i.key)
def test_a_stage_is_packed_at_once_as_probe_by_probe(ins):
    base = n.Hyp(block_size=ins.k, align_frac_bits=13 if ins.a in n.FP8 else 24)
    ps = n.align_probes(ins, base) + n.special_probes(ins) + n.tf32_probes(ins) + n.fp8_probes(ins)
    assert any(p.raw_a is not None for p in ps) == (ins.a in ("tf32", *n.FP8))
    perm = list(range(ins.k))[::-1]
    for got, want in zip(n.probe_bits(ins, ps, perm), _probe_bits_each(ins, ps)):
        assert got.dtype == want.dtype and np.array_equal(got[:, perm] if got.ndim == 2 else got, want)


class Records(FakeDevice):
    """num_mma / num_wgmma that keep every launch's operand bytes and answer D = C with every byte changed."""

    def __init__(self):
        super().__init__()
        self.seen: list[list[bytes]] = []

    def _d(self, ops, c, d):
        self.seen.append([self.buf(x).tobytes() for x in (*ops, c)])
        self.buf(d)[:] = self.buf(c) ^ (np.arange(self.buf(d).size) % 251 + 1).astype(np.uint8)

    def k_num_mma(self, launch, a, b, c, d, count):
        self._d((a, b), c, d)

    def k_num_wgmma(self, launch, img, c, d, count, one):
        self._d((img,), c, d)


@pytest.mark.parametrize("ins", n.INSTRS + n.CHAIN_INSTRS, ids=lambda i: i.key)
def test_dots_uploads_what_run_would_and_reads_d_00(ins, monkeypatch):
    """Runner.dots writes each dot straight into the packed buffers (dot_slots): every launch uploads the
    bytes that run() uploads for the same matrices (A row 0, B column 0, C (0, 0), zeros elsewhere), in the
    same chunks, and the answer is run()'s D[:, 0, 0]."""
    monkeypatch.setattr(num_runner.Runner, "MAX_INST", 16)  # three launches of 16, 16, 5
    rng = np.random.default_rng(5)
    cnt, top = 37, 1 << min(n.in_bits(ins.a), 31)
    a, b = (rng.integers(0, top, (cnt, ins.K)).astype(np.uint32) for _ in "ab")
    c = rng.integers(0, 1 << n.FMT[ins.c][3], cnt).astype(np.uint32)
    A, B, C = (
        np.zeros((cnt, ins.m, ins.K), np.uint32),
        np.zeros((cnt, ins.K, ins.n), np.uint32),
        np.zeros((cnt, ins.m, ins.n), np.uint32),
    )
    A[:, 0, :], B[:, :, 0], C[:, 0, 0] = a, b, c
    fast, slow = Records(), Records()
    got = n.Runner(bench_context("numerics/tc_probes", fast)[0]).dots(ins, a, b, c)
    want = n.Runner(bench_context("numerics/tc_probes", slow)[0]).run(ins, A, B, C)[:, 0, 0]
    assert len(fast.seen) == len(slow.seen) == 3 and fast.seen == slow.seen
    assert np.array_equal(got, want) and not np.array_equal(got, c)
