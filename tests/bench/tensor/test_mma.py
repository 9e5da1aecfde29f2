"""mma.sync / mma.sp / ldmatrix benchmarks: validity table, fragment layouts, CPU references, sparse
metadata, ldmatrix chase images and the convergence analysis (CPU only), and the benchmarks driven end to
end by fake devices that run the kernels' contract."""

import re

import numpy as np
import pytest

from fakes import FakeDevice
from gpudissect.bench import registry
from gpudissect.bench.shared import one_block_per_sm_smem
from gpudissect.bench.tensor import mma as T
from gpudissect.errors import GpuDissectError


# ---------------------------------------------------------------------------------------
# Validity table
# ---------------------------------------------------------------------------------------
def test_valid_combinations_pass():
    for sparse, table in ((False, T.DENSE), (True, T.SPARSE)):
        for types, shapes in table.items():
            for s in shapes:
                T.check_combination(types, s, sparse)


def test_invalid_shape_names_the_valid_ones():
    with pytest.raises(GpuDissectError) as e:
        T.check_combination("f16_f32", "m16n8k32")
    assert "m8n8k4, m16n8k8, m16n8k16" in str(e.value)
    with pytest.raises(GpuDissectError) as e:
        T.check_combination("e4m3_f32", "m16n8k64")  # ptxas: "Incorrect instruction type ... '.m16n8k64'"
    assert "m16n8k16, m16n8k32" in str(e.value)


def test_refused_pair_says_why_and_names_valid_pairs():
    with pytest.raises(GpuDissectError) as e:
        T.check_combination("e4m3_f16", "m16n8k64", sparse=True)
    msg = str(e.value)
    assert "not supported on .target 'sm_90a'" in msg and "f16_f32 (m16n8k16/m16n8k32)" in msg
    with pytest.raises(GpuDissectError) as e:
        T.check_combination("s8_f32", "m16n8k32")
    assert "s8_s32 (m8n8k16/m16n8k16/m16n8k32)" in str(e.value)


def test_only_parameter_is_validated_before_launch():
    reg = registry.load_all()
    b = reg["tensor/mma_latency_throughput"]
    assert registry.resolve_params(b, {"only": "f16_f32.m16n8k16,s8_s32.m16n8k32"}, {})["only"] == [
        "f16_f32.m16n8k16",
        "s8_s32.m16n8k32",
    ]
    with pytest.raises(GpuDissectError, match="valid shapes for tf32_f32: m16n8k4, m16n8k8"):
        registry.resolve_params(b, {"only": "tf32_f32.m16n8k16"}, {})
    sp = reg["tensor/mma_sparse"]
    registry.resolve_params(sp, {"only": "tf32_f32.m16n8k16"}, {})  # valid for mma.sp


def test_variant_registers_and_asm_follow_the_isa():
    V = T.MmaVariant
    cases = {
        V("f16", "f32", "m16n8k16"): (4, 2, 4),
        V("f16", "f16", "m16n8k16"): (4, 2, 2),
        V("tf32", "f32", "m16n8k8"): (4, 2, 4),
        V("f64", "f64", "m16n8k16"): (8, 4, 4),
        V("s8", "s32", "m8n8k16"): (1, 1, 2),
        V("s4", "s32", "m16n8k64"): (4, 2, 4),
        V("b1", "s32", "m16n8k256", bitop="and"): (4, 2, 4),
        V("f16", "f32", "m8n8k4"): (2, 2, 8),
        V("f16", "f32", "m16n8k32", True): (4, 4, 4),
        V("tf32", "f32", "m16n8k8", True): (2, 2, 4),
        V("s8", "s32", "m16n8k64", True): (4, 4, 4),
    }
    for v, regs in cases.items():
        assert v.regs() == regs, v.key
    assert V("f16", "f32", "m16n8k16").asm() == (
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
    )
    assert V("f16", "f32", "m16n8k32", True).asm().endswith("{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;")
    assert V("f16", "f32", "m16n8k32", True).ptx.startswith("mma.sp::ordered_metadata.sync.aligned.m16n8k32")
    assert V("b1", "s32", "m8n8k128", bitop="xor").ptx == "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc"
    assert V("f16", "f32", "m8n8k4").fma_per_mma == 4 * 8 * 8 * 4  # four quad-pair products per warp
    assert V("f16", "f32", "m16n8k32", True).fma_per_mma == 16 * 8 * 32  # logical K, as Sun counts


def test_every_variant_has_a_distinct_labelled_spec_with_sass():
    labels = [s.label for s in T.SPECS.values()] + [s.label for s in T.LDSM_SPECS.values()]
    assert len(labels) == len(set(labels))
    assert len(T.DENSE_VARIANTS) == sum(len(s) for s in T.DENSE.values())
    assert len(T.SPARSE_VARIANTS) == sum(len(s) for s in T.SPARSE.values())
    for v, spec in T.SPECS.items():
        assert set(spec.required) == {f"mma_ilp{i}" for i in range(1, 7)}
        assert all(spec.required.values())
        hopper_emulates = v.a in ("e4m3", "e5m2", "s4", "u4") or v.bitop == "xor" or v.quadpair
        assert arch_define(spec.defines["OPAQUE"], 900) == int(hopper_emulates), v.key  # as before the families
        assert arch_define(spec.defines["MAX_WARPS"], 900) == (8 if v.sparse and v.a in ("e4m3", "e5m2") else 16)


def arch_define(value, arch: int) -> int:
    """The value a define takes when compiled with __CUDA_ARCH__ == arch (an int, or lowering's conditional
    "((__CUDA_ARCH__>=a&&__CUDA_ARCH__<=b)||...?x:y)")."""
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\((.*)\?(\d+):(\d+)\)", value)
    ranges = re.findall(r"__CUDA_ARCH__>=(\d+)&&__CUDA_ARCH__<=(\d+)", m.group(1))
    return int(m.group(2) if any(int(a) <= arch <= int(b) for a, b in ranges) else m.group(3))


def test_sass_patterns_pin_the_lowering():
    V = T.MmaVariant
    assert T.sass_patterns(V("f16", "f32", "m16n8k16")) == [r"HMMA\.16816\.F32 "]
    assert T.sass_patterns(V("bf16", "f32", "m16n8k8")) == [r"HMMA\.1688\.F32\.BF16 "]
    assert T.sass_patterns(V("f64", "f64", "m16n8k16")) == [r"DMMA\.16x8x16\b"]
    assert T.sass_patterns(V("f16", "f32", "m16n8k32", True)) == [r"HMMA\.SP\.16832\.F32 "]
    assert r"IMMA\.16832\.S8\.S8" in T.sass_patterns(V("s4", "s32", "m16n8k64"))  # s4 is unpacked to s8
    assert r"F2FP\.F16\.E4M3\.UNPACK_B" in T.sass_patterns(V("e4m3", "f32", "m16n8k32"))
    no_mma = T.NO.format(r"[HBDI]MMA")
    assert re.search(no_mma, "/*0010*/ FFMA R1, R2, R3, R4\n/*0020*/ SHFL.IDX PT, R1, R2, R3, 0x1f\n")
    assert not re.search(no_mma, "/*0010*/ FFMA R1, R2, R3, R4\n/*0020*/ HMMA.16816.F32 R4, R8, R2, R4\n")


# ---------------------------------------------------------------------------------------
# Codecs
# ---------------------------------------------------------------------------------------
def test_codes_by_hand():
    assert T.encode(np.array([1.0]), "bf16")[0] == 0x3F80
    assert T.encode(np.array([-2.0]), "f16")[0] == 0xC000
    assert T.encode(np.array([1.5]), "tf32")[0] == 0x3FC00000
    assert T.encode(np.array([-0.25]), "e4m3")[0] == 0xA8
    assert T.encode(np.array([0.25]), "e5m2")[0] == 0x34
    assert T.encode(np.array([-3]), "s4")[0] == 0xD
    v = T.decode(np.array([0x38, 0x7E, 0x01, 0x7F], np.uint64), "e4m3")
    assert list(v[:3]) == [1.0, 448.0, 2.0**-9] and np.isnan(v[3])
    v = T.decode(np.array([0x3C, 0x7B, 0x7C], np.uint64), "e5m2")
    assert list(v[:2]) == [1.0, 57344.0] and np.isnan(v[2])
    with pytest.raises(ValueError):
        T.encode(np.array([0.1]), "f16")  # not exactly representable
    with pytest.raises(ValueError):
        T.encode(np.array([128]), "s8")


def test_pack_unpack():
    codes = np.tile(np.arange(1, 9, dtype=np.uint64), (32, 1))
    words = T.pack(codes, 4)
    assert words.shape == (1, 32) and words[0, 0] == 0x87654321
    for bits, n in ((16, 8), (8, 16), (1, 64), (32, 4), (64, 4)):
        c = np.random.default_rng(bits).integers(0, 2 ** min(bits, 62), (32, n)).astype(np.uint64)
        assert np.array_equal(T.unpack(T.pack(c, bits), bits, n), c)


# ---------------------------------------------------------------------------------------
# Fragment layouts
# ---------------------------------------------------------------------------------------
def _bijective(layout, shape):
    bt, row, col = layout
    flat = (bt * shape[1] + row) * shape[2] + col
    return sorted(flat.ravel().tolist()) == list(range(shape[0] * shape[1] * shape[2]))


@pytest.mark.parametrize("v", T.DENSE_VARIANTS + T.SPARSE_VARIANTS, ids=lambda v: f"{v.family}.{v.key}")
def test_fragments_cover_each_matrix_element_once(v):
    m, n, k = v.mnk
    nb = 4 if v.quadpair else 1
    bits = T.BITS[v.a]
    assert _bijective(T.layout_a(m, v.k_stored, bits, v.quadpair), (nb, m, v.k_stored))
    assert _bijective(T.layout_b(k, n, bits, v.quadpair), (nb, k, n))
    assert _bijective(T.layout_c(m, n, T.BITS[v.c], v.quadpair), (nb, m, n))

    def regs(elems, b):  # 32-bit registers, or 64-bit ones for f64
        return elems if b == 64 else elems * b // 32

    assert v.regs() == (
        regs(T.layout_a(m, v.k_stored, bits, v.quadpair)[1].shape[1], bits),
        regs(T.layout_b(k, n, bits, v.quadpair)[1].shape[1], bits),
        regs(T.layout_c(m, n, T.BITS[v.c], v.quadpair)[1].shape[1], T.BITS[v.c]),
    )


def test_fragments_by_hand():
    # PTX ISA, mma.m16n8k16 .f16: lane 5 is groupID 1, threadID_in_group 1
    _, r, c = T.layout_a(16, 16, 16)
    assert list(r[5]) == [1, 1, 9, 9, 1, 1, 9, 9] and list(c[5]) == [2, 3, 2, 3, 10, 11, 10, 11]
    _, r, c = T.layout_b(16, 8, 16)
    assert list(r[5]) == [2, 3, 10, 11] and list(c[5]) == [1, 1, 1, 1]
    _, r, c = T.layout_c(16, 8, 32)
    assert list(r[5]) == [1, 1, 9, 9] and list(c[5]) == [2, 3, 2, 3]
    _, r, c = T.layout_a(16, 32, 8)  # .s8 m16n8k32, lane 6
    assert list(r[6]) == [1] * 4 + [9] * 4 + [1] * 4 + [9] * 4
    assert list(c[6]) == [8, 9, 10, 11] * 2 + [24, 25, 26, 27] * 2
    _, r, c = T.layout_a(16, 8, 32)  # .tf32 m16n8k8, lane 6
    assert list(r[6]) == [1, 9, 1, 9] and list(c[6]) == [2, 2, 6, 6]
    b, r, c = T.layout_c(8, 8, 32, quadpair=True)  # m8n8k4 .f32 accumulators, lane 18 (quad-pair 0, upper half)
    assert set(b[18]) == {0} and list(r[18]) == [4, 4, 6, 6, 4, 4, 6, 6] and list(c[18]) == [2, 3, 2, 3, 6, 7, 6, 7]


# ---------------------------------------------------------------------------------------
# CPU reference
# ---------------------------------------------------------------------------------------
def _inputs(v, a, b, b2, c):
    z = np.zeros((32, 1), np.uint32)
    return T.MmaInputs(v, a, b, b2, c, z, z, z, z, np.zeros(40, np.uint32), True)


def test_reference_by_hand():
    v = T.MmaVariant("f16", "f32", "m16n8k16")
    a = np.zeros((1, 16, 16))
    b = np.zeros((1, 16, 8))
    a[0, 0, :2] = [1, 2]
    b[0, :2, 3] = [3, 4]
    c = np.zeros((6, 1, 16, 8))
    c[2, 0, 0, 3] = 0.5
    inp = _inputs(v, a, b, -b, c)
    d = inp.expected(7)  # C + A*B + 7 * (A*B - A*B)
    assert d[2, 0, 0, 3] == 0.5 + 11 and d[0, 0, 0, 3] == 11 and np.count_nonzero(d[0]) == 1
    # b1: and.popc counts common ones, xor.popc differing bits
    vb = T.MmaVariant("b1", "s32", "m8n8k128", bitop="xor")
    a = np.zeros((1, 8, 128))
    b = np.zeros((1, 128, 8))
    a[0, 0, :4] = [1, 1, 0, 1]
    b[0, :4, 0] = [1, 0, 1, 1]
    zc = np.zeros((6, 1, 8, 8))
    assert _inputs(vb, a, b, b, zc).expected(0)[0, 0, 0, 0] == 2  # 1101 ^ 1011 = 0110
    va = T.MmaVariant("b1", "s32", "m8n8k128", bitop="and")
    assert _inputs(va, a, b, b, zc).expected(2)[0, 0, 0, 0] == 2 * 5  # popc(1001) = 2, five products
    # s32 accumulators wrap like the hardware's
    vi = T.MmaVariant("u8", "s32", "m16n8k32")
    a = np.full((1, 16, 32), 255.0)
    b = np.full((1, 32, 8), 255.0)
    d = _inputs(vi, a, b, b, np.zeros((6, 1, 16, 8))).expected(500)[0, 0, 0, 0]
    assert d == ((1001 * 32 * 255 * 255 + 2**31) % 2**32) - 2**31


@pytest.mark.parametrize("v", T.DENSE_VARIANTS + T.SPARSE_VARIANTS, ids=lambda v: f"{v.family}.{v.key}")
def test_exact_inputs_stay_exact_for_long_runs(v):
    inp = T.make_inputs(v, np.random.default_rng(0), "exact")
    for iters in (0, 1, 10**6):
        d = inp.expected(iters)
        T.encode(d, v.c)  # raises unless exactly representable in the accumulator type
    if v.a in T.SIGNED:
        assert np.array_equal(inp.b2, -inp.b)


def _simulated_d(inp, want, ilp):
    v = inp.v
    m, n, _ = v.mnk
    bt, row, col = T.layout_c(m, n, T.BITS[v.c], v.quadpair)
    cast = {"f16": np.float16, "f32": np.float32}.get(v.c, np.float64)
    return np.stack(
        [T.pack(T.encode(want[j].astype(cast).astype(np.float64), v.c)[bt, row, col], T.BITS[v.c]) for j in range(ilp)]
    )


@pytest.mark.parametrize("v", T.DENSE_VARIANTS + T.SPARSE_VARIANTS, ids=lambda v: f"{v.family}.{v.key}")
def test_check_d_accepts_the_right_d_and_rejects_wrong_ones(v):
    rng = np.random.default_rng(1)
    for mode in ("exact", "random", "zero"):
        inp = T.make_inputs(v, rng, mode)
        words = np.stack([_simulated_d(inp, inp.expected(5), 3)] * 2)  # two warps
        assert T.check_d(inp, words, 5) == "", mode
        poisoned = words.copy()
        poisoned[1, 2, -1, 7] = 0xFFFFFFFF  # an unwritten (poisoned) register
        assert "differ" in T.check_d(inp, poisoned, 5)
    inp = T.make_inputs(v, rng, "exact")
    assert "differ" in T.check_d(inp, np.stack([_simulated_d(inp, inp.c, 2)]), 5)  # nothing computed: D = C
    if v.a not in T.SIGNED:  # (with B2 = -B, D does not depend on the number of iterations)
        assert "differ" in T.check_d(inp, np.stack([_simulated_d(inp, inp.expected(4), 2)]), 5)


# ---------------------------------------------------------------------------------------
# 2:4 sparsity and its metadata
# ---------------------------------------------------------------------------------------
def test_nibbles_and_decompression_by_hand():
    assert T.encode_nibble(0, 2) == 0x8 and T.encode_nibble(1, 3) == 0xD and T.nibble_slots(0xD) == (1, 3)
    for bad in ((2, 1), (1, 1), (0, 4)):
        with pytest.raises(ValueError):
            T.encode_nibble(*bad)
    f16 = T.decompress(np.array([[1.0, 2, 3, 4]]), np.array([[0x8, 0xD]]), "f16")
    assert list(f16[0]) == [1, 0, 2, 0, 0, 3, 0, 4]
    tf32 = T.decompress(np.array([[1.0, 2]]), np.array([[0x4, 0xE]]), "tf32")
    assert list(tf32[0]) == [1, 0, 0, 2]
    s4 = T.decompress(np.array([[1.0, 2, 3, 4]]), np.array([[0x9]]), "s4")  # pairs 1 and 2 of four
    assert list(s4[0]) == [0, 0, 1, 2, 3, 4, 0, 0]
    rng = np.random.default_rng(0)
    assert set(T.random_nibbles("f16", (100,), rng)) == set(T.ORDERED_NIBBLES)
    assert set(T.random_nibbles("tf32", (100,), rng)) == {0x4, 0xE}


def test_metadata_layout_is_the_probed_one():
    """What an H100 read when one nibble at a time was flipped (row:chunk per nibble 0..7)."""

    def row(layout, lane):
        return [f"{x // 64}:{x % 64}" if x >= 0 else "-" for x in layout[lane]]

    f16_k32 = T.metadata_layout("f16", 8)
    assert row(f16_k32, 0) == ["0:0", "0:1", "0:2", "0:3", "8:0", "8:1", "8:2", "8:3"]
    assert row(f16_k32, 5) == ["1:4", "1:5", "1:6", "1:7", "9:4", "9:5", "9:6", "9:7"]
    assert row(f16_k32, 2) == ["-"] * 8
    f16_k16 = T.metadata_layout("bf16", 4)
    assert row(f16_k16, 28) == ["7:0", "7:1", "7:2", "7:3", "15:0", "15:1", "15:2", "15:3"]
    assert row(f16_k16, 1) == ["-"] * 8
    s8_k32 = T.metadata_layout("s8", 8)
    assert row(s8_k32, 1) == [f"8:{c}" for c in range(8)] and row(s8_k32, 3) == ["-"] * 8
    e4m3_k64 = T.metadata_layout("e4m3", 16)
    assert row(e4m3_k64, 2) == [f"0:{c}" for c in range(8, 16)] and row(e4m3_k64, 7) == [f"9:{c}" for c in range(8, 16)]
    with pytest.raises(ValueError):
        T.metadata_layout("f16", 16)


@pytest.mark.parametrize("v", T.SPARSE_VARIANTS, ids=lambda v: v.key)
def test_metadata_round_trips(v):
    chunks, layout = T.metadata_for(v)
    assert chunks * T.chunk_elems(v.a) == v.mnk[2]
    used = layout[layout >= 0]
    assert sorted(used.tolist()) == sorted(r * 64 + c for r in range(16) for c in range(chunks))  # each once
    nib = T.random_nibbles(v.a, (16, chunks), np.random.default_rng(2))
    words = T.metadata_words(nib, layout)
    assert np.array_equal(T.metadata_nibbles(words, layout, chunks), nib)
    for w in words:  # unread nibbles hold a valid value too
        assert all(((int(w) >> (4 * q)) & 0xF) in T.ORDERED_NIBBLES for q in range(8))


# ---------------------------------------------------------------------------------------
# Timing analysis
# ---------------------------------------------------------------------------------------
def test_per_block_and_clock():
    rec = np.zeros((2, 2, T.REC), np.uint64)
    rec[0, :, 0], rec[0, :, 1], rec[0, :, 2] = [100, 110], [1100, 1130], 7
    rec[1, :, 0], rec[1, :, 1], rec[1, :, 2] = [0, 0], [2000, 2000], 9
    rec[0, :, 3], rec[0, :, 4] = [0, 0], [500, 600]
    rec[1, :, 3], rec[1, :, 4] = [10, 10], [1010, 1010]
    lat, thr, sm = T.per_block(rec.ravel(), 2, 10, 4096)
    assert np.allclose(lat, [101.0, 200.0]) and list(sm) == [7, 9]
    assert np.allclose(thr, [2 * 4096 * 10 / 1030, 2 * 4096 * 10 / 2000])
    assert np.allclose(T.sm_clock_hz(rec.ravel(), 2), [1030 / 600e-9, 2000 / 1000e-9])


def test_chain_fit_is_the_slope_net_of_the_fixed_cost():
    """cycles = fixed + steps x latency, measured with a few cycles of noise: the slope is the latency, the
    intercept the fixed cost, whatever the chain lengths; the span / steps of any one chain is not."""
    steps = [128, 256, 512, 1024]
    rng = np.random.default_rng(3)
    rows = [[343 + 24.0 * n + rng.uniform(-2, 2) for n in steps] for _ in range(5)]
    fit = T.fit_chain(steps, rows)
    assert fit.per_step == pytest.approx(24.0, abs=0.01) and fit.fixed == pytest.approx(343, abs=3)
    assert len(fit.slopes) == len(fit.intercepts) == 5 and fit.steps == tuple(steps)
    assert 0 < fit.residual <= 4
    assert fit.span(0) == pytest.approx(24.0 + 343 / 128, abs=0.02)  # the fixed cost spread over 128 steps
    assert fit.span() == pytest.approx(24.0 + 343 / 1024, abs=0.01)
    exact = T.fit_chain([256, 512], [[10 + 16 * 256, 10 + 16 * 512]])
    assert exact.per_step == pytest.approx(16.0) and exact.fixed == pytest.approx(10.0)
    assert exact.residual == pytest.approx(0, abs=1e-6)
    with pytest.raises(ValueError, match="two distinct chain lengths"):
        T.fit_chain([256, 256], [[1.0, 2.0]])


def test_measure_chain_checks_the_first_repetition_and_stops_at_a_wrong_result():
    calls = []

    def run(iters, check):
        calls.append((iters, check))
        return 100 + 2 * iters * 16.0, ""

    fit, err = T.measure_chain(run, (64, 128, 256), lambda it: 2 * it, 3)
    assert err == "" and fit.per_step == pytest.approx(16.0) and fit.fixed == pytest.approx(100.0)
    assert calls == [(it, rep == 0) for rep in range(3) for it in (64, 128, 256)]
    fit, err = T.measure_chain(lambda it, chk: (0.0, "D differs" if it == 128 else ""), (64, 128, 256), int, 2)
    assert fit is None and err == "latency sweep, 128 iterations: D differs"
    # whole bodies of mma_ilp1's unrolled loop at every length
    assert all(it % T.LATENCY_UNROLL == 0 for q in (True, False) for it in (*T.chain_iters(q), T.iters_for(q)))


def _cells(model):
    ws, ilps = T.grid(quick=False)
    return {(w, i): T.Cell(w, i, 25.0, model(w, i), 0, 0, 0, 0) for w in ws for i in ilps}


def test_convergence_points_of_a_table3_like_grid():
    # Four sub-cores of 250 FMA/clk, warps dealt round-robin; a sub-core fills with 3 mma in flight,
    # and a lone warp on a sub-core reaches only 90% (Sun §5: sync stalls not overlapped)
    def model(w, ilp):
        per_sub = [w // 4 + (i < w % 4) for i in range(4)]
        return sum(250 * min(n * ilp, 3) / 3 * (0.9 if n == 1 else 1.0) for n in per_sub)

    conv = T.convergence(_cells(model))
    assert conv["peak"].thr == 1000
    assert (conv["per_warps"][4].warps, conv["per_warps"][4].ilp) == (4, 3)
    assert (conv["per_warps"][8].warps, conv["per_warps"][8].ilp) == (8, 2)
    # 12 warps x ILP 1 (three warps per sub-core) is the smallest product at the peak; 6 x 3 is at 95% but larger
    assert (conv["point"].warps, conv["point"].ilp) == (12, 1)
    no12 = {k: c for k, c in _cells(model).items() if k[0] != 12}
    assert (T.convergence(no12)["point"].warps, T.convergence(no12)["point"].ilp) == (
        8,
        2,
    )  # 8 x 2 = 16 x 1: fewer warps
    # a flat grid converges at once
    flat = T.convergence(_cells(lambda w, i: 64.0))
    assert (flat["point"].warps, flat["point"].ilp) == (1, 1)


def test_arch_peaks_are_the_run_gpus_own():
    h100 = {"name": "NVIDIA H100 80GB HBM3", "cc_major": 9, "cc_minor": 0, "sm_count": 132}
    rate = lambda props, a, sparse=False, acc=None, ran_as=None: getattr(
        T.arch_peak(props, a, sparse, acc, ran_as), "fma_per_clk_sm", None
    )
    # the H100 figures of the old Hopper table
    assert rate(h100, "f16") == 2048 and rate(h100, "bf16", True) == 4096 and rate(h100, "f16", acc="f16") == 2048
    assert rate(h100, "e5m2") == 4096 and rate(h100, "tf32") == 1024 and rate(h100, "f64") == 128
    assert rate(h100, "b1") is None and rate(h100, "b1", ran_as="b1") is None
    # no int4 tensor path on Hopper: the rate of the IMMA .S8 the SASS ran it on, said so
    assert (
        rate(h100, "s4") is None
        and rate(h100, "s4", ran_as="s8") == 4096
        and rate(h100, "u4", True, None, "u8") == 8192
    )
    assert "no int4 tensor path" in T.arch_peak(h100, "s4", False, None, "s8").source
    a100 = {"name": "NVIDIA A100-SXM4-80GB", "cc_major": 8, "cc_minor": 0, "sm_count": 108}
    assert rate(a100, "b1") == 16384 and rate(a100, "f16") == 1024 and rate(a100, "e4m3") is None
    # a GeForce part: FP16 accumulate at twice the FP32-accumulate rate
    ada = {"name": "NVIDIA GeForce RTX 4090", "cc_major": 8, "cc_minor": 9, "sm_count": 128}
    assert rate(ada, "f16", acc="f16") == 2 * rate(ada, "f16", acc="f32")
    # a GPU without a record (or a MIG slice, or a fake): no fraction, not Hopper's
    assert rate({"name": "fake H100", "cc_major": 9, "cc_minor": 0, "sm_count": 132}, "f16") is None
    assert rate(h100 | {"sm_count": 66}, "f16") is None


def test_the_reproductions_records_name_figures_the_suite_emits():
    """reference.tensor.REPRODUCTION (an H100 run of 000's released code): every key is one our benchmarks
    record for that instruction, in the unit its suffix gives; its mma latencies are the compiler's schedule
    (24 / 16 / 14 cycles) within 0.11, where the fp8 and s4 rows carry why they are no tensor-core latency."""
    from gpudissect.bench.tensor import wgmma as W
    from gpudissect.reference.tensor import REPRO, REPRODUCTION, unit_for_key

    mma_keys = {f"tc.mma.{v.key}" for v in T.DENSE_VARIANTS}
    wgmma_keys = {W.key_of(t, 256) for t in W.TYPES}
    assert len({(r.key, r.table) for r in REPRODUCTION}) == len(REPRODUCTION) == 13 * 2 + 5 * 4
    for r in REPRODUCTION:
        base, _, what = r.key.rpartition(".")
        assert base in mma_keys | wgmma_keys, r.key
        assert r.unit == unit_for_key(r.key) and r.value > 0 and r.paper == REPRO and r.table.startswith("raw/")
        if what == "latency_cycles" and ("e4m3" in r.key or "s4" in r.key):
            assert "not" in r.note, r  # says why it is no tensor-core latency
        elif what == "latency_cycles":
            assert min(abs(r.value - s) for s in (14, 16, 24)) < 0.11, r


def test_one_block_per_sm():
    props = {"smem_per_sm": 233472, "smem_per_block_optin": 232448}
    s = one_block_per_sm_smem(props)
    assert 2 * (s + 1024) > props["smem_per_sm"] and s <= props["smem_per_block_optin"]


# ---------------------------------------------------------------------------------------
# ldmatrix chase
# ---------------------------------------------------------------------------------------
def _ldmatrix(img, addrs, base, n, trans):
    """ldmatrix by its definition: lane 8q+r supplies row r of matrix q; returns [lane][q] registers."""
    halves = img.view(np.uint16)
    out = [[0] * n for _ in range(32)]
    for q in range(n):
        m = np.array([halves[(addrs[8 * q + r] - base) // 2 : (addrs[8 * q + r] - base) // 2 + 8] for r in range(8)])
        if trans:
            m = m.T
        for lane in range(32):
            lo, hi = m[lane // 4, 2 * (lane % 4)], m[lane // 4, 2 * (lane % 4) + 1]
            out[lane][q] = int(lo) | int(hi) << 16
    return out


@pytest.mark.parametrize("n,trans", T.LDSM_VARIANTS)
def test_ldmatrix_image_is_a_chase(n, trans):
    rng = np.random.default_rng(4)
    base = 0x400
    order = rng.permutation(T.LDSM_SLOTS)
    nxt = np.empty(T.LDSM_SLOTS, np.int64)
    nxt[order] = np.roll(order, -1)
    img = T.ldsm_image(base, nxt, n, trans, rng)
    starts = [int(order[0]), int(order[10])]
    loads = 9
    want = T.ldsm_expected(img, base, nxt, starts, loads, n, trans)
    for j, s0 in enumerate(starts):
        addrs = [T.ldsm_address(base, s0, lane, n) for lane in range(32)]
        xor = list(addrs)
        for _ in range(loads):
            assert all(a % 16 == 0 and base <= a < base + len(img) for a in addrs[: 8 * n])
            regs = _ldmatrix(img, addrs, base, n, trans)
            for lane in range(32):
                for r in regs[lane]:
                    xor[lane] ^= r
            addrs = [regs[lane][0] for lane in range(32)]  # the first register is the next address
        s = s0
        for _ in range(loads):
            s = int(nxt[s])
        assert addrs == [T.ldsm_address(base, s, lane, n) for lane in range(32)]
        assert list(want[j, :, 0]) == addrs and list(want[j, :, 1]) == xor


def test_ldmatrix_rows_of_a_matrix_are_contiguous():
    """Each matrix's 8 rows are one 128-byte run: no bank conflict beyond the x2/x4 wavefronts."""
    for n in (1, 2, 4):
        for q in range(n):
            rows = sorted(T.ldsm_address(0, 3, lane, n) for lane in range(8 * q, 8 * q + 8))
            assert rows == list(range(rows[0], rows[0] + 128, 16))


def test_benchmarks_registered():
    reg = registry.load_all()
    for name in ("mma_latency_throughput", "mma_sparse", "ldmatrix", "mma_power"):
        b = reg[f"tensor/{name}"]
        assert b.suite == "tensor" and b.kernels


# ---------------------------------------------------------------------------------------
# The benchmarks end to end on fake devices that honour the kernels' contract
# ---------------------------------------------------------------------------------------
MMA_MODULES = ("gpudissect.bench.tensor.mma.mma", "gpudissect.bench.tensor.mma.power")


class MmaDevice(FakeDevice):
    """Runs tensor_mma.cu's mma_ilp<i>: every warp's chains end with the reference D of the inputs the
    benchmark made (found by the words of A among `inputs`), one block per SM. A dependent step takes
    `lat` cycles, an SM does at most `peak` FMA per clock, and `fixed` cycles between the clock reads do not
    grow with the chain (the loop's entry and exit); the SM clock is 1000 MHz (1 cycle = 1 ns)."""

    def __init__(self, inputs: list, wrong: bool = False, **props):
        super().__init__(**({"sm_count": 4} | props))
        self.inputs, self.wrong = inputs, wrong
        self.lat, self.peak, self.fixed = 33, 1024.0, 0
        self.d_cache: dict[tuple[int, int, int], np.ndarray] = {}

    def _mma(self, ilp, launch, a, b, b2, c, e, iters, d, rec):
        inp = next(
            i
            for i in reversed(self.inputs)
            if T.SPECS[i.v] == launch.spec
            and (raw := i.a_words.astype(np.uint64 if i.v.a == "f64" else np.uint32).tobytes())
            == self.buf(a)[: len(raw)].tobytes()
        )
        key = (id(inp), iters, ilp)
        if key not in self.d_cache:
            self.d_cache[key] = _simulated_d(inp, inp.expected(iters), ilp)
        warps = launch.block // 32
        words = np.broadcast_to(self.d_cache[key], (launch.grid * warps, *self.d_cache[key].shape))
        words = words.astype(np.uint64 if T.BITS[inp.v.c] == 64 else np.uint32)
        if self.wrong:  # one bit of one warp's D flipped
            words = words.copy()
            words.reshape(-1)[-1] ^= 1
        self.buf(d)[: words.nbytes] = words.reshape(-1).view(np.uint8)
        cycles = self.fixed + 2 * iters * max(self.lat, warps * ilp * inp.v.fma_per_mma / self.peak)
        _write_records(self, rec, launch.grid, warps, cycles)


def _write_records(dev, rec, blocks, warps, cycles):
    """Every warp of every block (block b on SM b) busy for `cycles` at 1000 MHz; the launch's event time."""
    r = np.zeros((blocks, warps, T.REC), np.uint64)
    r[..., 0], r[..., 1], r[..., 2] = 1000, 1000 + round(cycles), np.arange(blocks)[:, None]
    r[..., 3], r[..., 4] = 0, round(cycles)
    dev.buf(rec)[: r.nbytes] = r.reshape(-1).view(np.uint8)
    dev.last_ms = round(cycles) / 1e6


for _i in range(1, 7):
    setattr(MmaDevice, f"k_mma_ilp{_i}", lambda self, launch, *a, _i=_i: self._mma(_i, launch, *a))


@pytest.fixture
def made_inputs(monkeypatch):
    """The MmaInputs the benchmarks make, in order (the fake device reads D's reference from them)."""
    import importlib

    made = []

    def record(*a, **k):
        made.append(T.make_inputs(*a, **k))
        return made[-1]

    for name in MMA_MODULES:
        monkeypatch.setattr(importlib.import_module(name), "make_inputs", record)
    return made


@pytest.fixture(autouse=True)
def fake_sass(monkeypatch):
    """What bench.shared.sass_of reads for a figure's label: the text a test puts here under a variant's
    label, else None (as where no disassembler is installed: the label then says the SASS was not read)."""
    import importlib

    texts: dict[str, str] = {}
    for name in MMA_MODULES:
        mod = importlib.import_module(name)
        if hasattr(mod, "sass_of"):
            monkeypatch.setattr(mod, "sass_of", lambda ctx, spec, fn: texts.get(spec.label))
    return texts


def test_mma_benchmarks_end_to_end(run_bench, made_inputs):
    dev = MmaDevice(made_inputs)
    r = run_bench("tensor/mma_latency_throughput", {"only": "f16_f32.m16n8k16,s8_s32.m16n8k32"}, dev)
    assert r.status == "ok", r.message
    assert not r.twice and dev.mem == {}
    pre = "tc.mma.f16_f32.m16n8k16"
    assert r.value(f"{pre}.latency_cycles") == 33.0
    assert r.value(f"{pre}.peak_fma_per_clk_sm") == pytest.approx(1024.0, rel=1e-3)
    assert r.value(f"{pre}.sm_clock_mhz") == 1000.0
    assert r.value("tc.mma.s8_s32.m16n8k32.peak_tops") == pytest.approx(1024 * 2 * 4 * 1e9 / 1e12, rel=1e-3)
    assert {s.name for s in r.series} == {
        f"{k} {m}" for k in ("f16_f32.m16n8k16", "s8_s32.m16n8k32") for m in ("throughput", "latency")
    }
    r = run_bench("tensor/mma_sparse", {"only": "f16_f32.m16n8k32"}, MmaDevice(made_inputs))
    assert r.status == "ok", r.message
    assert r.value("tc.mma_sp.f16_f32.m16n8k32.latency_cycles") == 33.0


def test_latency_is_net_of_the_loops_fixed_cost(run_bench, made_inputs):
    """A chain whose span holds 400 cycles that do not grow with it: latency_cycles is the per-step cost,
    latency_fixed_cycles the 400, latency_span_cycles what one chain of the grid's length shows."""
    dev = MmaDevice(made_inputs)
    dev.fixed = 400
    r = run_bench("tensor/mma_latency_throughput", {"only": "f16_f32.m16n8k16"}, dev)
    assert r.status == "ok", r.message
    pre = "tc.mma.f16_f32.m16n8k16"
    assert r.value(f"{pre}.latency_cycles") == pytest.approx(33.0, abs=1e-6)
    assert r.value(f"{pre}.latency_fixed_cycles") == pytest.approx(400.0)
    steps = 2 * T.iters_for(quick=True)
    assert r.value(f"{pre}.latency_span_cycles") == pytest.approx(33.0 + 400 / steps, abs=0.01)
    lat = r.figures[f"{pre}.latency_cycles"]
    assert "slope of a least-squares line" in lat.method and "latency_fixed_cycles" in lat.method
    assert "128, 256, 512, 1024 steps" in lat.method  # 2 x the quick sweep's iterations
    assert "net of the loop" in lat.method and lat.spread == (pytest.approx(33.0), pytest.approx(33.0))
    assert "unrolled 64 times: 128 dependent mma and one loop-back" in lat.method
    assert "form latency_cycles had before" in r.figures[f"{pre}.latency_span_cycles"].method
    r = run_bench("tensor/mma_sparse", {"only": "f16_f32.m16n8k32"}, dev)
    assert r.value("tc.mma_sp.f16_f32.m16n8k32.latency_cycles") == pytest.approx(33.0, abs=1e-6)


def test_a_wrong_d_fails_the_variant(run_bench, made_inputs):
    r = run_bench("tensor/mma_latency_throughput", {"only": "s8_s32.m16n8k32"}, MmaDevice(made_inputs, wrong=True))
    assert r.status == "failed" and "differ" in r.message
    assert r.figures["tc.mma.s8_s32.m16n8k32.latency_cycles"].value == "FAILED"
    assert r.figures["tc.mma.s8_s32.m16n8k32.latency_fixed_cycles"].value == "FAILED"
    assert r.device.mem == {}


def test_mma_power_end_to_end(run_bench, made_inputs):
    dev = MmaDevice(made_inputs)
    r = run_bench("tensor/mma_power", {"seconds": "0.1"}, dev)
    assert r.status == "ok", r.message
    assert not r.twice and dev.mem == {}
    assert r.value("tc.power.mma.f16_f32.m16n8k16.rand_kernel_mhz") == 1000.0
    assert r.figures["tc.power.mma.s8_s32.m16n8k32.zero_tflops"].unit == "TOPS"


class LdsmDevice(FakeDevice):
    """Runs tensor_ldmatrix.cu: ldsm_base reports a shared-memory base, ldsm_ilp<i> chases with ldmatrix
    by its definition (_ldmatrix) through the uploaded image. A dependent load takes `lat` cycles, an SM
    moves at most 128 bytes per clock; `fixed` cycles between the clock reads do not grow with the chain."""

    BASE = 0x400

    def __init__(self):
        super().__init__(sm_count=4)
        self.lat, self.fixed = 30, 0
        self.out_cache: dict[tuple, np.ndarray] = {}

    def k_ldsm_base(self, launch, base_out):
        self.buf(base_out)[:4] = np.frombuffer(np.uint32(self.BASE).tobytes(), np.uint8)

    def _ldsm(self, ilp, launch, image, words, start, iters, out, rec, base_out):
        n, trans = launch.spec.defines["LDSM_N"], bool(launch.spec.defines["LDSM_TRANS"])
        img = self.buf(image)[: 4 * words]
        starts = self.buf(start)[: ilp * 32 * 4].view(np.uint32).reshape(ilp, 32)
        key = (img.tobytes(), starts.tobytes(), iters, n, trans)
        if key not in self.out_cache:
            res = np.zeros((ilp, 32, 2), np.uint32)
            for j in range(ilp):
                addrs = [int(x) for x in starts[j]]
                xor = list(addrs)
                for _ in range(2 * (iters + 1)):
                    regs = _ldmatrix(img, addrs, self.BASE, n, trans)
                    for lane in range(32):
                        for x in regs[lane]:
                            xor[lane] ^= x
                    addrs = [regs[lane][0] for lane in range(32)]
                res[j, :, 0], res[j, :, 1] = addrs, xor
            self.out_cache[key] = res
        warps = launch.block // 32
        got = np.broadcast_to(self.out_cache[key], (launch.grid * warps, ilp, 32, 2))
        self.buf(out)[: got.nbytes] = np.ascontiguousarray(got).reshape(-1).view(np.uint8)
        self.k_ldsm_base(launch, base_out)
        cycles = self.fixed + 2 * iters * max(self.lat, warps * ilp * n * 128 / 128)
        _write_records(self, rec, launch.grid, warps, cycles)


for _i in range(1, 7):
    setattr(LdsmDevice, f"k_ldsm_ilp{_i}", lambda self, launch, *a, _i=_i: self._ldsm(_i, launch, *a))


def test_ldmatrix_end_to_end(run_bench):
    dev = LdsmDevice()
    dev.fixed = 250
    r = run_bench("tensor/ldmatrix", {}, dev)
    assert r.status == "ok", r.message
    assert not r.twice and dev.mem == {}
    assert r.value("tc.ldmatrix.x1.latency_cycles") == pytest.approx(30.0, abs=1e-6)
    assert r.value("tc.ldmatrix.x4.latency_fixed_cycles") == pytest.approx(250.0)
    assert r.value("tc.ldmatrix.x2_trans.latency_span_cycles") == pytest.approx(30 + 250 / 256, abs=0.01)
    # the grid's rate keeps the fixed cost in its span (250 cycles on top of 2 x 128 steps)
    assert r.value("tc.ldmatrix.x4_trans.bytes_per_clk_sm") == pytest.approx(128.0, rel=5e-3)


# ---------------------------------------------------------------------------------------
# Every GPU from Volta to Blackwell: which variants run, which are skipped by name and why, and the label
# each figure gets from the SASS that ran (fake SASS: the instructions ptxas emits for that family)
# ---------------------------------------------------------------------------------------
_HMMA = "/*0100*/ HMMA.16816.F32 R4, R8, R12, R4 ;\n"
_QUADPAIR_EMU = "/*0100*/ SHFL.IDX PT, R1, R2, R3, 0x1f ;\n/*0110*/ HADD2.F32 R4, -RZ, R5.H0_H0 ;\n"
_QUADPAIR_EMU += "/*0120*/ CALL.REL.NOINC 0x400 ;\n"
_FP8_EMU = "/*0100*/ F2FP.F16.E4M3.UNPACK_B R1, R2 ;\n" + _HMMA
SASS_BY_FAMILY = {  # family -> variant key -> the SASS of its mma_ilp1 (as NVRTC 13 / 12 emits it)
    "volta": {"f16_f32.m8n8k4": "/*0100*/ HMMA.884.F32.F32.STEP0 R8, R4.reuse.ROW, R2.COL, R8 ;\n"},
    "turing": {"f16_f32.m8n8k4": "/*0100*/ HMMA.884.F32.F32.STEP0 R8, R4.reuse.ROW, R2.COL, R8 ;\n"},
    "ampere": {"f16_f32.m8n8k4": _QUADPAIR_EMU, "f16_f32.m16n8k16": _HMMA},
    "ada": {
        "f16_f32.m8n8k4": _QUADPAIR_EMU,
        "f16_f32.m16n8k16": _HMMA,
        "e4m3_f32.m16n8k32": "/*0100*/ QMMA.16832.F32.E4M3.E4M3 R4, R8, R12, R4 ;\n",
    },
    "hopper": {
        "f16_f32.m16n8k16": _HMMA,
        "e4m3_f32.m16n8k32": _FP8_EMU,
        "f64_f64.m16n8k16": "/*0100*/ DMMA.16x8x16 R4, R8, R12, R4 ;\n",
    },
    "blackwell": {"e4m3_f32.m16n8k32": _FP8_EMU, "f64_f64.m16n8k16": "/*0100*/ DMMA.8x8x4 R4, R8, R12, R4 ;\n" * 8},
    "blackwell-consumer": {
        "e4m3_f32.m16n8k32": "/*0100*/ QMMA.16832.F32.E4M3.E4M3 R4, R8, R12, R4 ;\n",
        "f64_f64.m16n8k16": "/*0100*/ DMMA.8x8x4 R4, R8, R12, R4 ;\n" * 8,
    },
}
ONLY = ("f16_f32.m8n8k4", "f16_f32.m16n8k16", "e4m3_f32.m16n8k32", "f64_f64.m16n8k16")
# compute capability -> (variants of ONLY that run, label of each, skipped ones -> a phrase of the reason)
EVERY_GPU = {
    (7, 0): ({"f16_f32.m8n8k4": "native HMMA.884.F32.F32"}, {"f16_f32.m16n8k16": "mma.sync m16n8k16"}),
    (7, 5): ({"f16_f32.m8n8k4": "native HMMA.884.F32.F32"}, {"e4m3_f32.m16n8k32": "fp8 mma.sync"}),
    (8, 0): (
        {
            "f16_f32.m8n8k4": "emulated: no tensor-core instruction (a subroutine)",
            "f16_f32.m16n8k16": "native HMMA.16816.F32",
        },
        {
            "e4m3_f32.m16n8k32": "fp8 mma.sync (compute capability >= 8.9)",
            "f64_f64.m16n8k16": "compute capability >= 9.0",
        },
    ),
    (8, 9): (
        {"e4m3_f32.m16n8k32": "native QMMA.16832.F32.E4M3.E4M3"},
        {"f64_f64.m16n8k16": "compute capability >= 9.0"},
    ),
    (9, 0): (
        {"e4m3_f32.m16n8k32": "emulated: HMMA.16816.F32 (F2FP unpack)", "f64_f64.m16n8k16": "native DMMA.16x8x16"},
        {},
    ),
    (10, 0): (
        {
            "e4m3_f32.m16n8k32": "emulated: HMMA.16816.F32 (F2FP unpack)",
            "f64_f64.m16n8k16": "native DMMA.8x8x4, 8 per m16n8k16",
        },
        {},
    ),
    (12, 0): (
        {
            "e4m3_f32.m16n8k32": "native QMMA.16832.F32.E4M3.E4M3",
            "f64_f64.m16n8k16": "native DMMA.8x8x4, 8 per m16n8k16",
        },
        {},
    ),
}


@pytest.mark.parametrize("cc", list(EVERY_GPU), ids=[f"{a}.{b}" for a, b in EVERY_GPU])
def test_every_gpu_runs_its_variants_labelled_by_their_sass(run_bench, made_inputs, fake_sass, monkeypatch, cc):
    from fakes import FakeContext
    from gpudissect.capability import Target

    family = Target(*cc).family
    for key, text in SASS_BY_FAMILY[family].items():
        fake_sass[T.SPECS[next(v for v in T.DENSE_VARIANTS if v.key == key)].label] = text
    skipped: list[tuple[str, str]] = []
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, name, why: skipped.append((name, why)))
    runs, skips = EVERY_GPU[cc]
    only = [k for k in ONLY if k in runs or k in skips]
    dev = MmaDevice(made_inputs, cc_major=cc[0], cc_minor=cc[1], name=f"fake sm_{cc[0]}{cc[1]}")
    r = run_bench("tensor/mma_latency_throughput", {"only": ",".join(only)}, dev)
    assert r.status == "ok", r.message
    assert {k.split(".latency")[0] for k in r.figures if k.endswith(".latency_cycles")} == {f"tc.mma.{k}" for k in runs}
    for key, label in runs.items():
        method = r.figures[f"tc.mma.{key}.latency_cycles"].method
        assert f"{Target(*cc).arch} SASS: {label}" in method, method
        xor = "operands XORed" in method
        assert xor == (not label.startswith("native")), method  # the opaque build exactly where ptxas emulates
        # a fake GPU has no record in reference/peaks.py: no fraction of anybody's peak
        assert r.value(f"tc.mma.{key}.pct_peak") == "n/a" and f"tc.mma.{key}.arch_peak_fma_per_clk_sm" not in r.figures
    assert sorted(n for n, _ in skipped) == sorted(f"tensor_mma.cu[mma.{k}]" for k in skips)
    for name, why in skipped:
        key = name.removeprefix("tensor_mma.cu[mma.").removesuffix("]")
        assert skips[key] in why and f"this GPU: sm_{cc[0]}{cc[1]}" in why, why


def test_only_unrunnable_variants_skip_the_benchmark(run_bench, made_inputs):
    r = run_bench(
        "tensor/mma_latency_throughput", {"only": "bf16_f32.m16n8k16"}, MmaDevice(made_inputs, cc_major=7, cc_minor=5)
    )
    assert r.status == "skipped" and "none of the variants asked for runs on sm_75" in r.message


def test_fraction_of_the_run_gpus_own_peak(run_bench, made_inputs):
    """A GPU with a record (a T4: 40 SMs, 512 dense f16 FMA/clk/SM) gets its own rate as the peak."""
    dev = MmaDevice(made_inputs, cc_major=7, cc_minor=5, name="Tesla T4", sm_count=40)
    r = run_bench("tensor/mma_latency_throughput", {"only": "f16_f32.m16n8k8"}, dev)
    assert r.status == "ok", r.message
    peak = r.figures["tc.mma.f16_f32.m16n8k8.arch_peak_fma_per_clk_sm"]
    assert peak.value == 512 and "Tesla T4" in peak.method
    thr = r.value("tc.mma.f16_f32.m16n8k8.peak_fma_per_clk_sm")
    assert r.value("tc.mma.f16_f32.m16n8k8.pct_peak") == pytest.approx(100 * thr / 512, rel=1e-3)
    ratio = r.figures["tc.mma.f16_f32.m16n8k8.peak_ratio"]
    assert ratio.value == pytest.approx(thr / 512, rel=1e-3) and ratio.unit == "ratio" and ratio.note == ""
    assert "Tesla T4" in ratio.method


def test_a_rate_below_the_peak_carries_its_measured_limit(run_bench, made_inputs):
    """Half the T4's 512 FMA/clk/SM: the ratio is 0.5, and its note gives the measured reason: each
    sub-partition's interval between two mma against the one the peak needs, and that the grid saturates."""
    dev = MmaDevice(made_inputs, cc_major=7, cc_minor=5, name="Tesla T4", sm_count=40)
    dev.peak = 256.0
    r = run_bench("tensor/mma_latency_throughput", {"only": "f16_f32.m16n8k8"}, dev)
    assert r.status == "ok", r.message
    ratio = r.figures["tc.mma.f16_f32.m16n8k8.peak_ratio"]
    assert ratio.value == pytest.approx(0.5, rel=1e-3)
    note = ratio.note
    assert note.startswith("50.0% of the peak, a measured limit")
    assert "each of the 4 busy SM sub-partitions completes one mma every 16.00 cycles" in note
    assert "the peak needs one every 8.00 on each of 4" in note
    assert "flat from 4 warps x ILP 2 to the grid's largest cell (16 warps x ILP 4, 100% of the best; 8 of 12" in note
    assert "issue interval" in note and "emulates" not in note
    assert "the long launch at the best cell ran at 256 FMA/clk/SM (50.0%)" in note


def test_limit_note_without_saturation_and_for_an_emulated_instruction():
    cells = {
        (w, i): T.Cell(w, i, 100.0, 10.0 * w * i, 0, 0, 0, 0) for w in (1, 4, 8) for i in (1, 2)
    }  # still rising at the largest cell
    ex = T.Execution(False, "emulated: HMMA.16816.F32 (F2FP unpack)", ("HMMA.16816.F32",))
    note = T.limit_note(4096, cells, 1024.0, ex, 150.0)
    assert note.startswith("15.6% of the peak") and "at the best cell (8 warps, ILP 2)" in note
    assert "the grid's largest cell (8 warps x ILP 2) reaches 100% of the best: the grid does not saturate" in note
    assert "ptxas emulates the instruction on this GPU (emulated: HMMA.16816.F32 (F2FP unpack))" in note
    one = {(1, 1): T.Cell(1, 1, 24.0, 85.0, 0, 0, 0, 0)}
    assert "each of the 1 busy SM sub-partitions completes one mma every 24.09 cycles" in T.limit_note(
        2048, one, 2048.0, T.Execution(True, "native HMMA.16816.F32", ()), 85.0
    )


def test_mma_power_skips_fp8_before_ada(run_bench, made_inputs, monkeypatch):
    from fakes import FakeContext

    skipped: list[tuple[str, str]] = []
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, name, why: skipped.append((name, why)))
    r = run_bench("tensor/mma_power", {"seconds": "0.1"}, MmaDevice(made_inputs, cc_major=8, cc_minor=0))
    assert r.status == "ok", r.message
    assert [n for n, _ in skipped] == ["tensor_mma.cu[mma.e4m3_f32.m16n8k32]"] and "fp8" in skipped[0][1]
    assert "tc.power.mma.bf16_f32.m16n8k16.rand_tflops" in r.figures
    assert not any(".e4m3_" in k for k in r.figures)


# ---------------------------------------------------------------------------------------
# The dependent chain as ptxas builds it for sm_90a (what latency_cycles' method says about it)
# ---------------------------------------------------------------------------------------
FILLER = re.compile(r"^(NOP|@!UPT UIADD3 URZ, URZ, URZ, URZ)$")  # padding: a never-executed uniform add
LOOP_CONTROL = re.compile(r"^(VIADD R\d+, R\d+, 0x[0-9a-f]+|ISETP\.\S+ P\d, PT, R\d+, \S+, \S+|PLOP3\.LUT .*)$")


@pytest.mark.sass
@pytest.mark.parametrize(
    "key,op,schedule",
    [
        ("f16_f32.m16n8k16", "HMMA.16816.F32", 24),
        ("f16_f32.m16n8k8", "HMMA.1688.F32", 16),
        ("s8_s32.m8n8k16", "IMMA.8816.S8.S8", 14),
    ],
)
def test_the_chain_is_back_to_back_mma_scheduled_at_the_compilers_latency(key, op, schedule):
    """mma_ilp1 on sm_90a: the timed loop (LATENCY_UNROLL = 64 iterations unrolled: 128 mma per loop-back, where
    the compiler's own unroll gave 32) holds the dependent mma writing the accumulators they read, and between two of
    them nothing but padding and the loop's own counter, test and branch; the stall counts between two mma add
    up to the compiler's fixed latency of the instruction (24 cycles for m16n8k16, 16 for m16n8k8, 14 for
    m8n8k16: the paper's and the reproduction's figures), the loop's branch inside that budget. The first clock
    read comes before the loop's entry (the iteration count loaded and tested, the branches past the loop and
    into the remainder loop) and the last after the stores of D: the fixed cost that latency_cycles'
    chain-length sweep removes."""
    from gpudissect.device.compiler import compile_spec
    from gpudissect.sass.control import default_layout
    from gpudissect.sass.corpus import cubin_functions
    from gpudissect.sass.disasm import find_tool

    if find_tool("nvdisasm") is None:
        pytest.skip("nvdisasm not installed")
    v = next(v for v in T.DENSE_VARIANTS if v.key == key)
    fn = next(f for f in cubin_functions("mma", compile_spec(T.SPECS[v], "sm_90a"), "SM90a") if f.name == "mma_ilp1")
    layout = default_layout("sm_90a")
    rows = [(16 * i, (t or "").rstrip(" ;"), layout.decode(w)) for i, (t, w) in enumerate(zip(fn.texts, fn.words))]
    loops = []  # (start, end) of every backward branch
    for addr, text, _ in rows:
        m = re.fullmatch(r"@P\d BRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            loops.append((int(m.group(1), 16), addr))
    body = max(([r for r in rows if a <= r[0] <= b] for a, b in loops), key=lambda rs: sum(op in r[1] for r in rs))
    mmas = [i for i, r in enumerate(body) if r[1].startswith(op)]
    assert T.LATENCY_UNROLL == 64 and T.SPECS[v].defines["LATENCY_UNROLL"] == T.LATENCY_UNROLL
    assert len(mmas) == 2 * T.LATENCY_UNROLL and mmas[0] == 0, [r[1] for r in body[:3]]
    for i in mmas:  # D is C: each mma accumulates into the registers it reads
        d, *_, c = re.findall(r"R\d+", body[i][1])
        assert d == c, body[i][1]
    between = [r[1] for r in body if not r[1].startswith(op)]
    assert all(FILLER.match(t) or LOOP_CONTROL.match(t) for t in between[:-1]), between
    assert re.fullmatch(r"@P\d BRA 0x[0-9a-f]+", between[-1])  # one branch per LATENCY_UNROLL iterations
    assert sum(1 for t in between if LOOP_CONTROL.match(t)) <= 3  # the counter, its test and PLOP3 at most
    # stall counts from each mma to the next (the last: around the loop, the branch included) = the latency
    ends = mmas[1:] + [len(body)]
    assert [sum(r[2].stall for r in body[a:b]) for a, b in zip(mmas, ends)] == [schedule] * len(mmas)
    texts = [r[1] for r in rows]
    t0 = next(i for i, t in enumerate(texts) if "SR_CLOCKLO" in t)
    t1 = max(i for i, t in enumerate(texts) if "SR_CLOCKLO" in t)
    first = next(i for i, r in enumerate(rows) if r[0] == body[0][0])
    entry = texts[t0 + 1 : first]
    assert any(t.startswith("LDC R") for t in entry) and sum(" BRA " in f" {t}" for t in entry) >= 2, entry
    assert sum(t.startswith("STG.E ") for t in texts[first:t1]) >= 1  # D stored before the last clock read


@pytest.mark.parametrize("sparse", [False, True])
def test_d_values_reads_back_every_fragment_of_a_batch(sparse):
    """d_values unpacks a whole download at once: packed accumulators read back as the values they hold, for
    every variant, with leading dimensions (launches x chains) kept."""
    from gpudissect.bench.tensor.mma.variants import all_variants, make_inputs

    rng = np.random.default_rng(3)
    for v in all_variants(sparse):
        inp = make_inputs(v, rng, "exact")
        words = np.stack([inp.c_words, inp.c_words[::-1]])  # [2, chains, regs, 32]
        got = inp.d_values(words)
        assert got.shape == (2, *inp.c.shape), v
        assert np.array_equal(got[0], inp.c) and np.array_equal(got[1], inp.c[::-1]), v
