"""DPX and Smith-Waterman (000 §8), CPU only: the intrinsic models on hand-checked cases, the chain
replays, the kernels' instruction counts, the compute_80 path without DPX, BLOSUM62, the sequence
generator, and the Smith-Waterman references (scalar, vectorised, and the kernel's pass scheme)."""

import re

import numpy as np
import pytest

from fakes import FakeDevice, bench_context
from gpudissect.bench.hopper import dpx as hd
from gpudissect.bench.hopper import dpx_model as dm
from gpudissect.bench.hopper import smith_waterman as sw
from gpudissect.bench.hopper import sw_reference as swr
from gpudissect.capability import FAMILIES
from gpudissect.device.compiler import compile_ptx, kernel_source
from gpudissect.sass.disasm import find_tool


def s16x2(lo: int, hi: int) -> int:
    return (lo & 0xFFFF) | ((hi & 0xFFFF) << 16)


def u32(v: int) -> int:
    return v & 0xFFFFFFFF


def call(name, a, b, c=0):
    r, p = dm.dpx_model(
        name, np.array([u32(a)], np.uint32), np.array([u32(b)], np.uint32), np.array([u32(c)], np.uint32)
    )
    return int(r[0]), int(p[0])


# ---------------------------------------------------------------------------------------
# The function list
# ---------------------------------------------------------------------------------------
def test_intrinsic_list_is_the_math_api_set():
    want = set()
    for op in ("max", "min"):
        want |= {f"vi{op}_s32_relu", f"vi{op}_s16x2_relu"}
        for t in ("s32", "u32", "s16x2", "u16x2"):
            want |= {f"vi{op}3_{t}", f"viadd{op}_{t}", f"vib{op}_{t}"}
        for t in ("s32", "s16x2"):
            want |= {f"vi{op}3_{t}_relu", f"viadd{op}_{t}_relu"}
    names = [it.name for it in dm.intrinsics()]
    assert len(names) == len(set(names)) == 36
    assert set(names) == want
    for it in dm.intrinsics():
        if it.form == "A2":  # paired with the opposite direction, same type
            assert it.partner == it.name.replace("max", "MIN").replace("min", "max").replace("MIN", "min")
        assert it.form == (
            "B2"
            if it.family.startswith("vib") and "16x2" in it.dtype
            else "B1"
            if it.family.startswith("vib")
            else "A2"
            if it.family in ("vimax", "vimin")
            else "A3"
        )


# ---------------------------------------------------------------------------------------
# The CPU model on hand-checked cases
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,a,b,c,want",
    [
        ("vimax3_s32", -5, 3, 2, 3),
        ("vimax3_s32", -1, 1, 2, 2),  # 0xFFFFFFFF is -1 when signed ...
        ("vimax3_u32", -1, 1, 2, 0xFFFFFFFF),  # ... and the largest when unsigned
        ("vimin3_s32", 0x80000000, 0x7FFFFFFF, 0, 0x80000000),
        ("vimin3_u32", 0x80000000, 0x7FFFFFFF, 5, 5),
        ("vimax3_s32_relu", -5, -3, -2, 0),  # relu clamps at 0
        ("vimin3_s32_relu", 5, -3, 2, 0),
        ("vimin3_s32_relu", 5, 3, 4, 3),
        ("vimax_s32_relu", -7, -2, 99, 0),  # two operands: c is ignored
        ("vimin_s32_relu", 7, 2, -99, 2),
        ("viaddmax_s32", 0x7FFFFFFF, 1, 0, 0),  # INT_MAX + 1 wraps to INT_MIN
        ("viaddmax_u32", 0xFFFFFFFF, 2, 0, 1),  # wraps to 1
        ("viaddmin_s32", 10, -3, 9, 7),
        ("viaddmin_s32_relu", -10, 2, 5, 0),
        ("viaddmax_s32_relu", -10, 2, -20, 0),
        ("viaddmax_s32_relu", 10, 2, 5, 12),
    ],
)
def test_model_32bit(name, a, b, c, want):
    assert call(name, a, b, c)[0] == u32(want)


def test_model_16x2_lanes_are_independent():
    a, b, c = s16x2(-1, 5), s16x2(3, -7), s16x2(-9, 2)
    assert call("vimax3_s16x2", a, b, c)[0] == s16x2(3, 5)
    assert call("vimax3_u16x2", a, b, c)[0] == s16x2(0xFFFF, 0xFFF9)  # unsigned halfwords
    assert call("vimin3_s16x2", a, b, c)[0] == s16x2(-9, -7)
    assert call("vimax3_s16x2_relu", s16x2(-1, -5), s16x2(-2, 4), s16x2(-3, -6))[0] == s16x2(0, 4)
    assert call("vimin_s16x2_relu", s16x2(-1, 9), s16x2(4, 7))[0] == s16x2(0, 7)
    # the low halfword's sum wraps inside its lane: no carry into the high one
    assert call("viaddmax_s16x2", s16x2(0x7FFF, 1), s16x2(1, 1), 0)[0] == s16x2(0, 2)
    assert call("viaddmax_u16x2", s16x2(0xFFFF, 0), s16x2(1, 0), 0)[0] == 0
    assert call("viaddmin_s16x2_relu", s16x2(-4, 4), s16x2(1, 1), s16x2(9, 9))[0] == s16x2(0, 5)


def test_model_predicates():
    assert call("vibmax_s32", 3, 3) == (3, 1)  # pred = a >= b
    assert call("vibmax_s32", 2, 3) == (3, 0)
    assert call("vibmin_s32", 3, 3) == (3, 1)  # pred = a <= b
    assert call("vibmin_s32", 4, 3) == (3, 0)
    assert call("vibmax_u32", 0x80000000, 1) == (0x80000000, 1)
    assert call("vibmax_s32", 0x80000000, 1) == (1, 0)
    # x2: bit 0 = pred_hi, bit 1 = pred_lo
    assert call("vibmax_s16x2", s16x2(1, -2), s16x2(0, 5)) == (s16x2(1, 5), 0b10)
    assert call("vibmin_u16x2", s16x2(1, 0xFFFF), s16x2(0, 5)) == (s16x2(0, 5), 0b00)
    assert call("vibmin_s16x2", s16x2(2, -1), s16x2(2, 5)) == (s16x2(2, -1), 0b11)
    assert call("vimax3_s32", 1, 2, 3)[1] == 0  # no predicate outside __vib*


def test_scalar_model_equals_numpy_model():
    a, b, c = dm.eval_inputs(extra=512)
    for it in dm.intrinsics():
        r, p = dm.dpx_model(it.name, a, b, c)
        one = dm.scalar_one(it.name)
        got = [one(int(x), int(y), int(z)) for x, y, z in zip(a, b, c)]
        assert [g[0] for g in got] == r.tolist(), it.name
        assert [g[1] | (g[2] << 1) for g in got] == p.tolist(), it.name


def test_eval_inputs_cover_every_edge_triple():
    a, b, c = dm.eval_inputs(extra=0)
    assert a.size == 14**3 and len(set(zip(a.tolist(), b.tolist(), c.tolist()))) == 14**3
    assert {0x80000000, 0x7FFFFFFF, 0x00008000, 0x7FFF8000} <= set(a.tolist())


def test_a2_step_is_the_max_min_pair():
    step, f, g = dm.scalar_step("vimax_s32_relu"), dm.scalar_one("vimax_s32_relu"), dm.scalar_one("vimin_s32_relu")
    for x, b, c in [(5, u32(-3), 2), (u32(-9), u32(-3), 7), (100, 50, 60)]:
        assert step(x, b, c)[0] == g(f(x, b, 0)[0], c, 0)[0]
    assert step(u32(-9), u32(-3), 7)[0] == 0  # relu(max(-9,-3)) = 0, then relu(min(0, 7)) = 0


def test_chain_replays_match_a_stepwise_numpy_replay():
    ops = dm.chain_operands(4)
    for name in ("viaddmax_s16x2", "vibmax_u16x2", "vimin_s32_relu", "viaddmin_u32"):
        it = dm.intrinsic(name)
        x = np.array([ops[2 * dm.LAT_PAIRS]], np.uint32)
        pa = pb = 0
        for _ in range(2 * 2):
            for k in range(dm.LAT_UNROLL):
                j = k % dm.LAT_PAIRS
                b, c = ops[j : j + 1], ops[dm.LAT_PAIRS + j : dm.LAT_PAIRS + j + 1]
                x, p = dm.dpx_model(name, x, b, c)
                if it.form == "A2":
                    x, _ = dm.dpx_model(it.partner, x, c)
                pa, pb = pa + (int(p[0]) & 1), pb + (int(p[0]) >> 1)
        assert dm.chain_latency(name, ops, 2) == (int(x[0]), pa, pb)
        t = dm.chain_throughput(name, ops, 3)
        assert t.shape == (dm.THR_ILP + 2,) and t.dtype == np.uint32


def test_chains_are_not_trivial():
    """The timing chains must move: a chain stuck at its start value would prove nothing."""
    ops = dm.chain_operands(11)
    moved = [dm.chain_throughput(it.name, ops, 2)[0] != ops[2 * dm.LAT_PAIRS] for it in dm.intrinsics()]
    assert sum(moved) >= 30


# ---------------------------------------------------------------------------------------
# Kernels: one DPX instruction per chain step on sm_90a; no DPX in the compute_80 PTX
# ---------------------------------------------------------------------------------------
needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


@needs_cuobjdump
@pytest.mark.sass
def test_every_chain_step_is_one_instruction():
    """ptxas neither folded nor fused the chains: each step of the unrolled loop bodies is there."""
    from gpudissect.sasscheck import check_spec

    funcs, _ = check_spec(hd.DPX_SPEC)
    for it in dm.intrinsics():
        pat, _ = hd.dpx_sass(it)
        lat = len(re.findall(pat, funcs[f"dpx_lat_{it.name}"], re.M))
        thr = len(re.findall(pat, funcs[f"dpx_thr_{it.name}"], re.M))
        assert lat >= dm.LAT_UNROLL * it.calls, (it.name, lat)
        assert thr >= dm.THR_UNROLL * dm.THR_ILP * it.calls, (it.name, thr)
        # and not a partly fused chain either (A2 would show as VIMNMX3 with two operands folded)
        if it.form == "A2":
            assert "VIMNMX3" not in funcs[f"dpx_lat_{it.name}"], it.name


@needs_cuobjdump
@pytest.mark.sass
def test_required_sass_distinguishes_max_from_min():
    from gpudissect.sass.disasm import check_required
    from gpudissect.sasscheck import check_spec

    funcs, _ = check_spec(hd.DPX_SPEC)
    _, pats = hd.dpx_sass(dm.intrinsic("vimax3_s32"))
    assert all(c.found for c in check_required(funcs, {"dpx_lat_vimax3_s32": pats}))
    assert not any(c.found for c in check_required(funcs, {"dpx_lat_vimin3_s32": pats}))


def _ptx_instructions(ptx: bytes) -> list[str]:
    return re.findall(r"^\s+([a-z][\w.]*)\s", ptx.decode(errors="replace"), re.M)


@pytest.mark.parametrize("file", ["hopper_dpx.cu", "hopper_smith_waterman.cu"])
@pytest.mark.sass
def test_compute_80_ptx_has_no_dpx_path(file):
    """The sm_80 build is the emulated path: plain 32-bit max/min/add, no x2 or relu forms, which
    the compute_90 PTX of the same source does use."""
    ins80 = _ptx_instructions(compile_ptx(kernel_source(file), file, "compute_80"))
    ins90 = _ptx_instructions(compile_ptx(kernel_source(file), file, "compute_90"))
    integer = [i for i in ins80 if re.match(r"(max|min|add)\.(relu\.)?[su](16x2|32)\b", i)]
    dpx = [i for i in integer if ".relu" in i or "16x2" in i]  # (f16x2 of the half2 kernel is not DPX)
    assert not dpx, sorted(set(dpx))
    assert "max.s32" in ins80
    assert any(re.match(r"(max|min)\.s16x2\.relu", i) for i in ins90)
    if file == "hopper_dpx.cu":
        assert {"min.s32", "max.u32", "min.u32"} <= set(ins80)
        assert {"max.s32.relu", "add.s16x2", "max.u16x2"} <= set(ins90)


# ---------------------------------------------------------------------------------------
# Helpers of the benchmark
# ---------------------------------------------------------------------------------------
def test_sweep_counts_straddle_every_multiple_of_the_sm_count():
    xs = hd.sweep_counts(132, 3)
    assert xs == sorted(set(xs)) and xs[0] == 1 and xs[-1] == 396
    for m in (1, 2, 3):
        assert {132 * m - 1, 132 * m} <= set(xs)
    assert {133, 265} <= set(xs) and 397 not in xs


def test_per_sm_rate_groups_blocks_by_sm():
    spans = np.array([[100, 300, 0], [150, 300, 0], [0, 1000, 7]], np.uint64)
    r = hd.per_sm_rate(spans, 400.0)
    assert sorted(r.tolist()) == [0.4, 4.0]  # SM 7: 400 / 1000; SM 0: 800 / 200


def test_per_sm_rate_is_the_loop_over_sms():
    """The grouped form gives, SM by SM, exactly the per-SM loop's rates (blocks in any order, an SM with one
    block, a zero span, SM ids with gaps, an int count of calls)."""

    def loop(spans, calls):
        r = spans.reshape(-1, 3).astype(np.int64)
        return [
            len(on) * calls / max(1, int(on[:, 1].max() - on[:, 0].min()))
            for on in (r[r[:, 2] == sm] for sm in np.unique(r[:, 2]))
        ]

    rng = np.random.default_rng(8)
    for calls in (400.0, 3 * 256 * 4 * 8 * 128):
        start = rng.integers(0, 1 << 40, 1056)
        spans = np.stack([start, start + rng.integers(0, 1 << 20, 1056), rng.choice([0, 3, 4, 131, 9], 1056)], 1)
        spans[5, 1] = spans[5, 0]
        spans = np.concatenate([spans, [[7, 7, 77]]]).astype(np.uint64)
        assert hd.per_sm_rate(spans.ravel(), calls).tolist() == loop(spans, calls)


# ---------------------------------------------------------------------------------------
# BLOSUM62, background frequencies, generator
# ---------------------------------------------------------------------------------------
def test_blosum62_is_the_standard_matrix():
    m, ix = swr.BLOSUM62, {c: i for i, c in enumerate(swr.AMINO)}
    assert m.shape == (20, 20) and np.array_equal(m, m.T)
    assert m.diagonal().tolist() == [4, 5, 6, 6, 9, 5, 5, 6, 8, 4, 4, 5, 5, 6, 7, 4, 5, 11, 7, 4]
    known = {
        ("W", "W"): 11,
        ("C", "C"): 9,
        ("W", "F"): 1,
        ("W", "Y"): 2,
        ("D", "E"): 2,
        ("I", "V"): 3,
        ("W", "D"): -4,
        ("G", "I"): -4,
        ("C", "E"): -4,
        ("F", "P"): -4,
        ("K", "R"): 2,
        ("A", "S"): 1,
        ("H", "Y"): 2,
        ("M", "L"): 2,
        ("N", "D"): 1,
        ("Q", "E"): 2,
        ("T", "S"): 1,
        ("P", "W"): -4,
    }
    for (a, b), v in known.items():
        assert m[ix[a], ix[b]] == v, (a, b)
    assert m.min() == -4 and m.max() == 11
    # whole-table fingerprints (checked against an independent transcription of the matrix)
    assert int((m < 0).sum()) == 288 and int((m == 0).sum()) == 50 and int(m.sum()) == -426
    # every off-diagonal score is at most the mean of the two diagonal scores (identity is best)
    d = m.diagonal()
    assert (m <= (d[:, None] + d[None, :]) / 2).all()


def test_background_frequencies():
    p = swr.BACKGROUND
    assert p.shape == (20,) and abs(p.sum() - 1) < 1e-12 and swr.BACKGROUND_PERMILLE.sum() == pytest.approx(1000)
    assert swr.AMINO[int(p.argmax())] == "L" and swr.AMINO[int(p.argmin())] == "W"
    # a local-alignment matrix must score random pairs negatively on average
    assert float(p @ swr.BLOSUM62 @ p) < 0


def test_generator_frequencies_and_reproducibility():
    s = swr.generate_sequences(2000, 1024, seed=7)
    assert s.shape == (2000, 1024) and s.dtype == np.uint8 and s.max() < 20
    freq = np.bincount(s.ravel(), minlength=20) / s.size
    sigma = np.sqrt(swr.BACKGROUND * (1 - swr.BACKGROUND) / s.size)
    assert (np.abs(freq - swr.BACKGROUND) < 5 * sigma + 1 / 65536).all()
    assert np.array_equal(s, swr.generate_sequences(2000, 1024, seed=7))
    assert not np.array_equal(s[:10], swr.generate_sequences(10, 1024, seed=8))
    table = swr._sampling_table()
    assert table.size == 65536
    assert (np.abs(np.bincount(table, minlength=20) / 65536 - swr.BACKGROUND) <= 1 / 65536).all()


def test_encode_decode_and_profile():
    q = swr.encode("WACDY")
    assert swr.decode(q) == "WACDY"
    with pytest.raises(ValueError):
        swr.encode("WXZ")
    prof = swr.query_profile(q, 8)
    assert prof.shape == (20, 8)
    assert prof[swr.AMINO.index("W"), 0] == 11 and prof[swr.AMINO.index("D"), 3] == 6
    assert (prof[:, 5:] == swr.PAD_SCORE).all() and swr.PAD_SCORE < 0


# ---------------------------------------------------------------------------------------
# Smith-Waterman references
# ---------------------------------------------------------------------------------------
def test_identical_sequences_score_the_diagonal_sum():
    rng = np.random.default_rng(1)
    for length in (1, 7, 40):
        s = rng.integers(0, 20, length).astype(np.uint8)
        want = int(swr.BLOSUM62.diagonal()[s].sum())
        assert swr.sw_score_scalar(s, s) == want
        assert swr.sw_scores(s, s[None, :])[0] == want


@pytest.mark.parametrize("insert,want", [("AA", 88), ("AAA", 87), ("", 100)])
def test_affine_gap_by_hand(insert, want):
    """Query W5 C5 against W5 <insert> C5: 55 + 45 - (11 + (k - 1) * 1) for an insert of k >= 1
    beats the ungapped alignment (55 + 0 * k + C matches left): 88 for k = 2, 87 for k = 3."""
    q = swr.encode("WWWWWCCCCC")
    s = swr.encode("WWWWW" + insert + "CCCCC")
    assert swr.sw_score_scalar(q, s) == want
    assert swr.sw_score_scalar(s, q) == want  # the gap in the other sequence: same score
    assert swr.sw_scores(q, s[None, :])[0] == want


def test_local_alignment_never_negative():
    assert swr.sw_score_scalar(swr.encode("W"), swr.encode("D")) == 0
    assert swr.sw_scores(swr.encode("WWW"), swr.encode("DDD")[None, :])[0] == 0


def test_vectorised_scores_equal_the_scalar_definition():
    rng = np.random.default_rng(9)
    for _ in range(6):
        m, n = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        q = swr.generate_query(m, int(rng.integers(1 << 20)))
        subj = swr.generate_sequences(5, n, int(rng.integers(1 << 20)))
        subj[0, : min(m, n)] = q[: min(m, n)]  # one related pair
        want = [swr.sw_score_scalar(q, s) for s in subj]
        assert swr.sw_scores(q, subj).tolist() == want


@pytest.mark.parametrize("gaps", [(11, 1), (5, 2), (3, 3), (1 << 27, 1)], ids=["blosum", "5-2", "3-3", "int64"])
def test_vectorised_scores_equal_the_scalar_definition_for_any_matrix(gaps):
    """sw_scores runs the DP with the sequences' roles swapped (rows: the subject's residues): equal to the
    textbook recurrences for an asymmetric matrix, other gap costs, related pairs with gaps, lengths 1 ..
    70, and with int64 where a gap cost is beyond int32's safe range."""
    rng = np.random.default_rng(21)
    matrix = rng.integers(-6, 9, (20, 20)).astype(np.int32)
    for _ in range(8):
        m, n = int(rng.integers(1, 70)), int(rng.integers(1, 70))
        q = swr.generate_query(m, int(rng.integers(1 << 20)))
        subj = swr.generate_sequences(4, n, int(rng.integers(1 << 20)))
        cut = min(m, n) // 2
        subj[0, : min(m, n) - 3] = np.concatenate([q[:cut], q[cut + 3 : min(m, n)]])[: min(m, n) - 3]  # a deletion
        for mat in (swr.BLOSUM62, matrix):
            want = [swr.sw_score_scalar(q, s, mat, *gaps) for s in subj]
            assert swr.sw_scores(q, subj, mat, *gaps).tolist() == want, (m, n, gaps)


def kernel_scheme(query, subject, rows, pad=swr.PAD_SCORE):
    """hopper_smith_waterman.cu's schedule in Python: passes of `rows` query rows, the column sweep with E
    carried down, F and H per row, (H, E) of the pass's last row through a boundary buffer, and a
    profile padded to whole passes."""
    a, b = swr.GAP_OPEN, swr.GAP_EXTEND
    npass = -(-len(query) // rows)
    prof = swr.query_profile(query, npass * rows, pad=pad)
    n = len(subject)
    bound_h, bound_e = [0] * n, [-a] * n
    best = 0
    for p in range(npass):
        H, F = [0] * rows, [-a] * rows
        hb_prev = 0
        new_h, new_e = [0] * n, [0] * n
        for j in range(n):
            hb, e = (0, -a) if p == 0 else (bound_h[j], bound_e[j])
            diag, hb_prev = hb_prev, hb
            for r in range(rows):
                h = max(diag + int(prof[subject[j], p * rows + r]), e, F[r], 0)
                hm = h - a
                e = max(e - b, hm)
                F[r] = max(F[r] - b, hm)
                diag, H[r] = H[r], h
                best = max(best, h)
            new_h[j], new_e[j] = H[rows - 1], e
        bound_h, bound_e = new_h, new_e
    return best


def test_kernel_pass_scheme_equals_the_definition():
    rng = np.random.default_rng(12)
    for rows in (4, 8):
        for m in (1, 3, 8, 13, 21):
            q = swr.generate_query(m, int(rng.integers(1 << 20)))
            for s in swr.generate_sequences(3, 24, int(rng.integers(1 << 20))):
                s[: min(m, 24) // 2] = q[: min(m, 24) // 2]
                assert kernel_scheme(q, s, rows) == swr.sw_score_scalar(q, s), (rows, m)


def test_db_words_are_the_transposed_database():
    db = swr.generate_sequences(1000, 64, seed=4)  # not a whole number of blocks
    want = np.ascontiguousarray(db.view(np.uint32).T)
    for block in (1, 7, 256, 4096):
        got = sw.db_words(db, block)
        assert got.flags.c_contiguous and got.dtype == np.uint32 and np.array_equal(got, want), block


def test_profile_words_and_gap_bits():
    prof = swr.query_profile(swr.encode("WACDYK"), 8)
    w16 = sw.profile_words(prof, "s16")
    assert w16.shape == (20, 4)
    lo = (w16 & 0xFFFF).astype(np.uint16).view(np.int16)
    hi = (w16 >> 16).astype(np.uint16).view(np.int16)
    assert np.array_equal(lo, prof[:, 0::2]) and np.array_equal(hi, prof[:, 1::2])
    wh = sw.profile_words(prof, "half2")
    assert np.array_equal((wh & 0xFFFF).astype(np.uint16).view(np.float16).astype(int), prof[:, 0::2])
    assert np.array_equal(sw.profile_words(prof, "s32").view(np.int32), prof)
    assert np.array_equal(sw.profile_words(prof, "float").view(np.float32), prof.astype(np.float32))
    assert sw.gap_bits("s16", -11) == 0xFFF5FFF5
    assert sw.gap_bits("half2", -11) == 0xC980C980
    assert sw.gap_bits("s32", -1) == 0xFFFFFFFF
    assert sw.gap_bits("float", -11) == 0xC1300000


def test_decode_scores_per_kind():
    vals = np.array([0, 7, 1234], np.int64)
    assert sw.decode_scores(vals.astype(np.int32), "s32").tolist() == [0, 7, 1234]
    assert sw.decode_scores(vals.astype(np.float32).view(np.int32), "float").tolist() == [0, 7, 1234]
    assert sw.decode_scores(vals.astype(np.int16).view(np.uint16).astype(np.int32), "s16").tolist() == [0, 7, 1234]
    assert sw.decode_scores(vals.astype(np.float16).view(np.uint16).astype(np.int32), "half2").tolist() == [0, 7, 1234]


def test_planted_homologs_score_high_but_stay_fp16_exact():
    queries = [swr.generate_query(m, 50 + m) for m in (144, 700)]
    db = swr.generate_sequences(64, 1024, seed=3)
    idx = sw.plant_homologs(db, queries, np.random.default_rng(2))
    assert len(idx) == 2 and len(set(idx)) == 2
    for q, i in zip(queries, idx):
        s = swr.sw_scores(q, db[[i, (i + 1) % 64]])
        assert 150 < s[0] < 2048 and s[1] < 100  # the homolog vs an ordinary random sequence


def test_query_lengths_of_the_benchmark():
    assert len(swr.QUERY_LENGTHS) == 20 and swr.QUERY_LENGTHS[0] == 144 and swr.QUERY_LENGTHS[-1] == 5478
    assert swr.QUERY_LENGTHS == sorted(swr.QUERY_LENGTHS)
    assert set(sw.QUICK_QUERIES) <= set(swr.QUERY_LENGTHS)


def test_dpx_figures_for_both_builds():
    """Per function: latency and throughput of each build, the throughput speedup with its spread,
    and a failed check on either build marks the derived figures failed."""
    ctx, run = bench_context("dpx_latency_throughput")
    funcs = dm.intrinsics()[:2]
    res = {
        (it.name, b): {
            "lat": [4.0, 5.0, 6.0] if b == "sm90" else [40.0, 50.0, 60.0],
            "thr": [60.0, 64.0, 66.0] if b == "sm90" else [4.0, 5.0, 6.0],
            "blocks_per_sm": 8,
        }
        for it in funcs
        for b in ("sm80", "sm90")
    }
    bad = {(funcs[1].name, "sm80")}
    hd._dpx_figures(ctx, funcs, {"sm90": None, "sm80": None}, res, bad, hd.native_label(ctx.target, True), 10, 10)
    figs = run.figures
    assert not run.twice
    k0, k1 = f"dpx.{funcs[0].name}", f"dpx.{funcs[1].name}"
    assert figs[f"{k0}.latency_cycles"].value == 5.0 and figs[f"{k0}.latency_cycles_sm80"].value == 50.0
    thr = figs[f"{k0}.ops_per_clk_sm"]
    assert (thr.value, thr.spread) == (64.0, (60.0, 66.0)) and "sm_90a build" in thr.method
    speedup = figs[f"{k0}.speedup_vs_sm80"]
    assert (speedup.value, speedup.spread) == (64.0 / 5.0, (60.0 / 6.0, 66.0 / 4.0))
    assert figs[f"{k0}.latency_speedup_vs_sm80"].value == 10.0
    assert figs[f"{k1}.ops_per_clk_sm_sm80"].value == "FAILED" and figs[f"{k1}.ops_per_clk_sm"].value == 64.0
    assert figs[f"{k1}.speedup_vs_sm80"].value == "FAILED"
    # the series: one bar per function and build, each the median of its launches
    lat90 = next(s for s in run.series if s.figure == "dpx_latency" and s.name == "sm90")
    assert [(p.x, p.y, p.y_min, p.y_max, p.extra["label"]) for p in lat90.points] == [
        (0, 5.0, 4.0, 6.0, funcs[0].name),
        (1, 5.0, 4.0, 6.0, funcs[1].name),
    ]


# ---------------------------------------------------------------------------------------
# Both benchmarks on a simulated GPU (tests/fakes.py)
# ---------------------------------------------------------------------------------------
CYCLES = {"native": 2.0, "sm80": 8.0}  # cycles per call of a dependent chain: the GPU's own build, the JIT one
RATE = {"native": 64, "sm80": 16}  # calls per SM clock of the throughput kernels


def _build(launch) -> str:
    return "native" if launch.spec is not None else "sm80"  # the compute_80 PTX is loaded without a spec


class DpxDevice(FakeDevice):
    """The DPX kernels on 4 SMs: every result the CPU model's (`wrong`: the compute_80 latency chain of
    that function ends one off), CYCLES per chain call, RATE calls per clock on every SM (block b on SM
    b mod 4, one wave after another), a wave of the blocks sweep 10 us."""

    def __init__(self, wrong: str | None = None, **props):
        super().__init__(sm_count=4, **props)
        self.wrong = wrong
        self.rows: dict[tuple[str, int], np.ndarray] = {}  # a throughput thread's results, replayed once

    def ops(self, dops: int) -> np.ndarray:
        return self.download(dops, np.uint32, 2 * dm.LAT_PAIRS + dm.THR_ILP)

    def k_dpx_eval(self, launch, da, db, dc, n, dout, dpred):
        a, b, c = (self.download(p, np.uint32, n) for p in (da, db, dc))
        for f, it in enumerate(hd.intrinsics()):
            r, p = dm.dpx_model(it.name, a, b, c)
            self.buf(dout)[4 * f * n : 4 * (f + 1) * n] = r.astype(np.uint32).view(np.uint8)
            self.buf(dpred)[4 * f * n : 4 * (f + 1) * n] = p.astype(np.uint32).view(np.uint8)

    def __getattr__(self, name):  # k_dpx_lat_<function>, k_dpx_thr_<function>
        for kind, sim in (("lat", self.lat), ("thr", self.thr)):
            if name.startswith(f"k_dpx_{kind}_"):
                return lambda launch, *args: sim(launch, name[len(f"k_dpx_{kind}_") :], *args)
        raise AttributeError(name)

    def lat(self, launch, name, dops, iters, out, cyc):
        x, pa, pb = dm.chain_latency(name, self.ops(dops), iters)
        x ^= int(name == self.wrong and _build(launch) == "sm80")
        self.buf(out).view(np.uint32)[:3] = [x, pa, pb]
        calls = iters * dm.LAT_UNROLL * dm.intrinsic(name).calls
        self.buf(cyc).view(np.uint64)[0] = int(calls * CYCLES[_build(launch)])

    def thr(self, launch, name, dops, iters, out, spans):
        nb, block = launch.grid, launch.block
        rows = self.buf(out).view(np.uint32)[: nb * block * (dm.THR_ILP + 2)].reshape(nb * block, -1)
        if (name, iters) not in self.rows:
            self.rows[(name, iters)] = dm.chain_throughput(name, self.ops(dops), iters)
        rows[:] = self.rows[(name, iters)]
        t = block * dm.THR_ILP * dm.THR_UNROLL * iters * dm.intrinsic(name).calls // RATE[_build(launch)]
        self.buf(spans).view(np.uint64)[: 3 * nb] = [
            v for b in range(nb) for v in (b // 4 * t, (b // 4 + 1) * t, b % 4)
        ]
        self.last_ms = 0.01 * -(-nb // (4 * self.occupancy(None, block)))


HOPPER_SASS = {"dpx_eval": "/*0100*/ VIMNMX3 R5, R5, R40, R41, !PT\n"}  # what the label reads of a build
EMULATED_SASS = {"dpx_eval": "/*0100*/ IMNMX R5, R5, R40, !PT\n"}
VOLTA_EVAL = "/*0100*/ ISETP.LT.AND P1, PT, R5, R40, PT\n/*0110*/ SEL R5, R5, R40, !P1\n"


@pytest.fixture
def three_functions(monkeypatch):
    """The benchmark over three functions, not 36, without compiling the compute_80 PTX (the fake device loads
    anything; test_compute_80_ptx_has_no_dpx_path compiles it) and with the SASS of a hardware-DPX build
    (tests/bench/hopper/test_targets.py reads the real ones)."""
    funcs = dm.intrinsics()[:3]
    monkeypatch.setattr(hd, "intrinsics", lambda: funcs)
    monkeypatch.setattr(hd, "jit_ptx", lambda spec: b"compute_80 PTX")
    monkeypatch.setattr(hd, "native_sass", lambda ctx, spec: HOPPER_SASS)
    return funcs


def test_dpx_benchmark_on_a_simulated_gpu(run_bench, three_functions):
    r = run_bench("dpx_latency_throughput", {}, DpxDevice())
    assert r.status == "ok", r.message
    for it in three_functions:
        key = f"dpx.{it.name}"
        assert r.figures[f"{key}.latency_cycles"].value == CYCLES["native"]
        assert r.figures[f"{key}.latency_cycles_sm80"].value == CYCLES["sm80"]
        assert r.figures[f"{key}.ops_per_clk_sm"].spread == (RATE["native"], RATE["native"])
        assert r.figures[f"{key}.speedup_vs_sm80"].value == RATE["native"] / RATE["sm80"]
        assert r.figures[f"{key}.latency_speedup_vs_sm80"].value == CYCLES["sm80"] / CYCLES["native"]
        assert r.figures[f"{key}.latency_cycles"].method.startswith("sm_90a build (hardware DPX); 1 thread")
        assert r.figures[f"{key}.speedup_vs_sm80"].method.startswith("per-SM throughput of the sm_90a build /")
    assert {s.name for s in r.series if s.figure == "dpx_latency"} == {"sm90", "sm80"}
    for name in hd.SWEEP_FUNCS:  # 8 blocks of 1024 fit at once: the 5th of 4 SMs' blocks adds no wave
        assert r.figures[f"dpx.{name}.sweep_drop_past_sm_count"].value == pytest.approx(5 / 4)
    sweep = next(s for s in r.series if s.figure == "dpx_blocks_sweep")
    assert [p.extra["waves"] for p in sweep.points][-1] == 2 and sweep.points[0].reps == 3
    assert r.device.mem == {}  # every buffer the context's, freed when the benchmark ended


def test_a_wrong_chain_fails_only_its_function_and_build(run_bench, three_functions):
    wrong = three_functions[1].name
    r = run_bench("dpx_latency_throughput", {}, DpxDevice(wrong=wrong))
    assert r.status == "failed" and f"sm80 dpx_lat_{wrong}" in r.message
    assert r.figures[f"dpx.{wrong}.latency_cycles_sm80"].value == "FAILED"
    assert r.figures[f"dpx.{wrong}.speedup_vs_sm80"].value == "FAILED"
    assert r.figures[f"dpx.{wrong}.latency_cycles"].value == CYCLES["native"]
    assert r.figures[f"dpx.{three_functions[0].name}.latency_cycles_sm80"].check == "ok"
    assert r.device.mem == {}


# ---------------------------------------------------------------------------------------
# Other GPUs: this GPU's build always, labelled from its SASS; the compute_80 JIT build where it runs
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cc,sass,label,jit",
    [
        ((7, 5), EMULATED_SASS, "sm_75 build (emulated: no VIMNMX3/VIADDMNMX in its SASS); ", None),
        ((8, 0), EMULATED_SASS, "sm_80 build (emulated: no VIMNMX3/VIADDMNMX in its SASS); ", None),
        ((8, 6), EMULATED_SASS, "sm_86 build (emulated: no VIMNMX3/VIADDMNMX in its SASS); ", "sm80"),
        ((10, 0), HOPPER_SASS, "sm_100a build (hardware DPX); ", "sm80"),
        # sm_120 has VIMNMX.S16x2.RELU but neither VIMNMX3 nor VIADDMNMX: not hardware DPX
        ((12, 0), {"dpx_eval": "/*0100*/ VIMNMX.S16x2.RELU R3, R3, R20, !PT\n"}, "sm_120a build (emulated", "sm80"),
        # Volta: a compare and a select for every min/max; no compute_80 JIT build
        ((7, 0), {"dpx_eval": VOLTA_EVAL}, "sm_70 build (emulated: no VIMNMX3/VIADDMNMX in its SASS); ", None),
        # no disassembler: the SASS the variant declares for the family (checked wherever one runs)
        ((9, 0), None, "sm_90a build (hardware DPX by its declared SASS: not disassembled here); ", "sm80"),
        ((12, 0), None, "sm_120a build (emulated by its declared SASS: not disassembled here); ", "sm80"),
        ((7, 0), None, "sm_70 build (emulated by its declared SASS: not disassembled here); ", None),
    ],
)
def test_dpx_on_other_gpus(run_bench, three_functions, monkeypatch, cc, sass, label, jit):
    """Every GPU runs its own build, named sm<cc> and labelled hardware or emulated by its SASS (the 'sm_120 is
    hardware DPX' label came from a table); the compute_80 JIT build and the speedups only where the GPU can
    load compute_80 PTX and is no sm_80 itself, n/a with the reason elsewhere."""
    monkeypatch.setattr(hd, "native_sass", lambda ctx, spec: sass)
    r = run_bench("dpx_latency_throughput", {}, DpxDevice(cc_major=cc[0], cc_minor=cc[1]))
    assert r.status == "ok", r.message
    native = f"sm{cc[0]}{cc[1]}"
    assert {s.name for s in r.series if s.figure == "dpx_latency"} == {native} | ({jit} if jit else set())
    assert any(launch.spec is None for launch in r.device.launches) == bool(jit)  # the PTX module: no spec
    for it in three_functions:
        key = f"dpx.{it.name}"
        assert r.figures[f"{key}.latency_cycles"].value == CYCLES["native"]
        assert r.figures[f"{key}.latency_cycles"].method.startswith(label)
        if jit:
            assert r.figures[f"{key}.ops_per_clk_sm_sm80"].value == RATE["sm80"]
            assert r.figures[f"{key}.speedup_vs_sm80"].value == RATE["native"] / RATE["sm80"]
            assert f"of the sm_{cc[0]}{cc[1]}" in r.figures[f"{key}.speedup_vs_sm80"].method
        else:
            why = "8.0 or newer" if cc < (8, 0) else "this GPU's own build is the sm_80 build"
            for k in ("latency_cycles_sm80", "ops_per_clk_sm_sm80", "speedup_vs_sm80", "latency_speedup_vs_sm80"):
                f = r.figures[f"{key}.{k}"]
                assert f.value.startswith("n/a: ") and why in f.value and f.method == "skipped", (k, f.value)
    for name in hd.SWEEP_FUNCS:  # the GPU's own sweep under the keys without a suffix
        assert f"dpx.{name}.sweep_peak_gcalls_per_s" in r.figures
        assert (f"dpx.{name}.sweep_peak_gcalls_per_s_sm80" in r.figures) == bool(jit)
    assert not r.twice and r.device.mem == {}


def test_native_label_reads_the_sass():
    t = hd.Target(12, 0)
    assert hd.has_hardware_dpx(HOPPER_SASS) and not hd.has_hardware_dpx(EMULATED_SASS)
    assert hd.has_hardware_dpx(None) is None
    assert hd.has_hardware_dpx({"a": "VIADDMNMX.S16x2 R5", "b": "IMNMX R1"}, ["b"]) is False
    assert hd.native_label(t, False) == "sm_120a build (emulated: no VIMNMX3/VIADDMNMX in its SASS); "
    assert hd.native_label(hd.Target(9, 0), True) == "sm_90a build (hardware DPX); "  # Hopper's text, as before
    # no SASS: the declared one, per family (hardware on sm_90 and sm_100 only)
    declared = {cc: "hardware DPX" in hd.native_label(hd.Target(*cc), None) for cc in FAMILIES}
    assert {cc for cc, hw in declared.items() if hw} == {(9, 0), (10, 0), (10, 3)}


@pytest.mark.parametrize("family", ["volta", "turing", "ampere", "ada", "blackwell-consumer"])
def test_emulating_families_declare_no_dpx_instruction(family):
    """Where the functions are emulated, no required pattern names a DPX instruction (an emulated build would
    otherwise fail its check, or pass it by a table's say-so)."""
    for fn, pats in hd.DPX_SPEC.required_by_family[family].items():
        assert not any(re.search(r"VIMNMX3|VIADDMNMX", p) for p in pats), (family, fn)


class SwDevice(FakeDevice):
    """The Smith-Waterman kernels: each launch scores its sequences with sw_reference (query read back from
    the profile) and writes them as its score kind does; the sm_90a build takes 1 ms, the compute_80 one 2."""

    def __getattr__(self, name):  # k_sw_<kind>
        if name.startswith("k_sw_"):
            return lambda launch, *args: self.sw(launch, name[len("k_sw_") :], *args)
        raise AttributeError(name)

    def query(self, prof: int, kind: str, words: int) -> np.ndarray:
        w = self.buf(prof).view(np.uint32)[: 20 * words].reshape(20, words)
        if kind in ("s32", "float"):
            p = w.view(np.int32 if kind == "s32" else np.float32).astype(np.int64)
        else:
            half = np.stack([w & 0xFFFF, w >> 16], axis=2).reshape(20, 2 * words).astype(np.uint16)
            p = half.view(np.int16 if kind == "s16" else np.float16).astype(np.int64)
        cols = [col for col in p.T if not (col == swr.PAD_SCORE).all()]
        return np.array([next(a for a in range(20) if (swr.BLOSUM62[:, a] == c).all()) for c in cols], np.uint8)

    def sw(self, launch, kind, db, nthreads, cnt, n, prof, words, npass, bound, scores, open_b, ext_b):
        lanes = 2 if kind in ("s16", "half2") else 1
        base = max(p for p in self.mem if p <= db)  # db points into the (n / 4, sequences) word matrix
        first = (db - base) // 4
        mat = self.mem[base].view(np.uint32)[: n // 4 * nthreads * lanes].reshape(n // 4, -1)
        seqs = np.ascontiguousarray(mat[:, first : first + cnt * lanes].T).view(np.uint8)
        got = swr.sw_scores(self.query(prof, kind, words), seqs)
        enc = {"s32": np.int32, "float": np.float32, "s16": np.int16, "half2": np.float16}[kind]
        raw = got.astype(enc).view(np.uint16 if lanes == 2 else np.uint32).astype(np.uint32)
        start = max(p for p in self.mem if p <= scores)
        self.mem[start][scores - start : scores - start + 4 * raw.size] = raw.view(np.uint8)
        self.last_ms = 1.0 if launch.spec is not None else 2.0


@pytest.mark.sass
def test_smith_waterman_on_a_simulated_gpu(run_bench):
    params = {"db_size": "512", "subject_len": "64", "queries": "12,40", "check_seqs": "10", "rows": "8"}
    dev = SwDevice(free_mem=200_000)  # room for 256 threads' boundary columns: two launches a pass
    r = run_bench("smith_waterman", params, dev)
    assert r.status == "ok", r.message
    gcups = [m * 64 * 512 / 1e6 for m in (12, 40)]  # at 1 ms
    assert r.figures["sw.gcups.s32_sm90"].value == np.mean(gcups)
    assert r.figures["sw.gcups.half2_sm80"].spread == (gcups[0] / 2, gcups[1] / 2)
    assert r.figures["sw.s16.speedup_vs_sm80"].value == 2.0
    assert (
        sum(launch.name == "sw_s32" for launch in dev.launches) == 2 * (2 + 1) * 2
    )  # (2 queries + warm-up) x 2 builds
    assert dev.mem == {}


@pytest.mark.parametrize(
    "cc,sass,builds,note",
    [
        ((12, 0), {"sw_s16": "VIMNMX.S16x2.RELU R1", "sw_s32": "VIMNMX.S32.RELU R1"}, ("sm120", "sm80"), "emulated"),
        ((10, 0), {"sw_s16": "VIADDMNMX.S16x2 R1", "sw_s32": "VIMNMX3.RELU R1"}, ("sm100", "sm80"), ""),
        ((8, 0), {"sw_s16": "IMNMX R1", "sw_s32": "IMNMX R1"}, ("sm80",), "emulated"),
        ((7, 5), {"sw_s16": "IMNMX R1", "sw_s32": "IMNMX R1"}, ("sm75",), "emulated"),
        ((7, 0), {"sw_s16": "SEL R1, RZ, R2, !P1", "sw_s32": "SEL R1, RZ, R2, !P1"}, ("sm70",), "emulated"),
        ((7, 0), None, ("sm70",), "declared"),
        ((10, 0), None, ("sm100", "sm80"), ""),
    ],
)
def test_smith_waterman_on_other_gpus(run_bench, monkeypatch, cc, sass, builds, note):
    """Every GPU scores with its own build (keys sw.gcups.<kind>_sm<cc>), the DPX kinds' method saying from the
    build's SASS whether the functions were emulated; the compute_80 JIT build and the speedup where it runs."""
    monkeypatch.setattr(hd, "jit_ptx", lambda spec: b"compute_80 PTX")
    monkeypatch.setattr(sw, "native_sass", lambda ctx, spec: sass)
    params = {"db_size": "64", "subject_len": "32", "queries": "12", "check_seqs": "4", "rows": "8"}
    dev = SwDevice(free_mem=200_000, cc_major=cc[0], cc_minor=cc[1])
    r = run_bench("smith_waterman", params, dev)
    assert r.status == "ok", r.message
    arch = hd.Target(*cc).arch
    for kind in sw.SW_KINDS:
        m = r.figures[f"sw.gcups.{kind}_{builds[0]}"].method
        want = {
            "emulated": " (DPX functions emulated: no VIADDMNMX/VIMNMX3 in its SASS)",
            "declared": " (DPX functions emulated by its declared SASS: not disassembled here)",
        }.get(note, "")
        want = want if kind in sw.DPX_KINDS else ""
        assert m.startswith(f"{arch} cubin{want}; BLOSUM62"), m
        if len(builds) == 2:
            assert r.figures[f"sw.gcups.{kind}_sm80"].method.startswith("compute_80 PTX JIT; ")
            assert r.figures[f"sw.{kind}.speedup_vs_sm80"].value == 2.0
        else:
            assert f"sw.{kind}.speedup_vs_sm80" not in r.figures
            if builds[0] != "sm80":
                assert r.figures[f"sw.gcups.{kind}_sm80"].value.startswith("n/a: compute_80 PTX needs")
        assert f"sw.gcups.{kind}_sm90" not in r.figures
    assert not r.twice and dev.mem == {}
