"""The tensor-core CPU model against exact rational arithmetic, crafted corner cases and the presets file."""

from __future__ import annotations

import dataclasses
import json
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from gpudissect.numerics import TCParams, dot, encode, exact, is_verified, known_instructions, model
from gpudissect.numerics.formats import FORMATS
from gpudissect.numerics.presets import PRESETS_PATH, UnknownInstructionError, load_presets

F32_NAN = 0x7FFFFFFF


def _round(x: Fraction, fmt: str, mode: str) -> Fraction:
    """Exactly rounded value of x in fmt (rne or rtz), written independently of the model; no overflow."""
    f = FORMATS[fmt]
    if x == 0:
        return Fraction(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    ulp = Fraction(2) ** (max(e, f.emin) - f.man_bits)
    q = a / ulp
    fl = q.numerator // q.denominator
    rem = q - fl
    if mode == "rne" and (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2 == 1)):
        fl += 1
    r = fl * ulp
    return r if x > 0 else -r


def _value(fmt: str, bits: int) -> Fraction:
    return exact(fmt, bits)


def _random_bits(fmt: str, shape: tuple[int, ...], rng: np.random.Generator, spread: int) -> np.ndarray:
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape).astype(np.float64))
    return encode(fmt, x)


CASES = [
    ("f16", 16, "f32"),
    ("bf16", 16, "f32"),
    ("tf32", 8, "f32"),
    ("e4m3", 32, "f32"),
    ("e5m2", 32, "f32"),
    ("f16", 16, "f16"),
    ("e4m3", 32, "f16"),
]


@pytest.mark.parametrize("in_fmt,k,acc", CASES)
@pytest.mark.parametrize("mode", ["rne", "rtz"])
def test_wide_alignment_one_block_is_the_exactly_rounded_sum(in_fmt: str, k: int, acc: str, mode: str) -> None:
    rng = np.random.default_rng(hash((in_fmt, k, acc, mode)) % 2**32)
    n = 150
    a = _random_bits(in_fmt, (n, k), rng, 6)
    b = _random_bits(in_fmt, (n, k), rng, 6)
    c = _random_bits(acc, (n,), rng, 6)
    c[:10] = 0  # also C = +0
    a[10:20, :] = a[10:20, :1]  # cancellation-prone rows
    b[10:20, : k // 2] = b[10:20, :1]
    b[10:20, k // 2 :] = b[10:20, :1] ^ (1 << (FORMATS[in_fmt].width - 1))
    p = TCParams(in_fmt, acc, k, k, align_frac_bits=60, out_rounding=mode)
    d = dot(p, a, b, c)
    assert d.dtype == FORMATS[acc].container_dtype
    for i in range(n):
        s = sum((_value(in_fmt, int(x)) * _value(in_fmt, int(y)) for x, y in zip(a[i], b[i])), Fraction(0))
        s += _value(acc, int(c[i]))
        want = _round(s, acc, mode)
        assert _value(acc, int(d[i])) == want, (i, float(s), float(want), hex(int(d[i])))


def test_wide_alignment_blocks_round_between_blocks() -> None:
    rng = np.random.default_rng(7)
    n, k, bs = 100, 16, 4
    a = _random_bits("f16", (n, k), rng, 8)
    b = _random_bits("f16", (n, k), rng, 8)
    c = _random_bits("f32", (n,), rng, 8)
    for mode in ("rne", "rtz"):
        p = TCParams("f16", "f32", k, bs, align_frac_bits=60, out_rounding=mode, inter_block_rounding=mode)
        d = dot(p, a, b, c)
        for i in range(n):
            acc = _value("f32", int(c[i]))
            for j in range(0, k, bs):
                s = sum(
                    (_value("f16", int(x)) * _value("f16", int(y)) for x, y in zip(a[i, j : j + bs], b[i, j : j + bs])),
                    Fraction(0),
                )
                acc = _round(acc + s, "f32", mode)
            assert _value("f32", int(d[i])) == acc


def _f16(*xs: float) -> np.ndarray:
    return encode("f16", np.array([xs]))


def _c32(x: float) -> np.ndarray:
    return encode("f32", np.array([x]))


def _run(p: TCParams, a: list[float], b: list[float], c: float, in_fmt: str = "f16") -> int:
    pad = p.k - len(a)
    aa = encode(in_fmt, np.array([list(a) + [0.0] * pad]))
    bb = encode(in_fmt, np.array([list(b) + [0.0] * pad]))
    return int(dot(p, aa, bb, encode(p.acc_fmt, np.array([c])))[0])


def _f32(x: float) -> int:
    return int(encode("f32", [x])[0])


BASE = TCParams("f16", "f32", 16, 16, align_frac_bits=23, out_rounding="rne")


def test_alignment_truncation_versus_rounding() -> None:
    # 1 + 0.75 * 2**-23: the small product's bits are below the kept 23
    a, b = [2.0**-12], [1.5 * 2.0**-12]
    assert _run(BASE, a, b, 1.0) == _f32(1.0)
    assert _run(dataclasses.replace(BASE, align_rounding="rne"), a, b, 1.0) == _f32(1 + 2.0**-23)
    assert _run(dataclasses.replace(BASE, align_frac_bits=25), a, b, 1.0) == _f32(1 + 2.0**-23)  # rne output
    assert _run(dataclasses.replace(BASE, align_frac_bits=25, out_rounding="rtz"), a, b, 1.0) == _f32(1.0)
    # a negative small term: truncation toward zero drops it, toward -inf takes one unit
    nb = [-1.5 * 2.0**-12]
    assert _run(BASE, a, nb, 1.0) == _f32(1.0)
    assert _run(dataclasses.replace(BASE, align_truncation="toward_minus_inf"), a, nb, 1.0) == _f32(1 - 2.0**-23)


def test_block_size_changes_what_small_terms_contribute() -> None:
    # eight products of 2**-26 then 1.0: alone they sum exactly to 2**-23, beside 1.0 each is truncated away
    a = [2.0**-13] * 8 + [1.0]
    b = [2.0**-13] * 8 + [1.0]
    assert _run(BASE, a, b, 0.0) == _f32(1.0)
    assert _run(dataclasses.replace(BASE, block_size=8), a, b, 0.0) == _f32(1 + 2.0**-23)
    # C outside the first block: the products are summed first, C added at the end
    a2, b2 = [2.0**-13] * 8, [2.0**-13] * 8
    assert _run(BASE, a2, b2, 1.0) == _f32(1.0)
    assert _run(dataclasses.replace(BASE, c_in_first_block=False), a2, b2, 1.0) == _f32(1 + 2.0**-23)


def test_per_add_normalisation_truncates_carries() -> None:
    p = dataclasses.replace(BASE, align_frac_bits=2)
    a, b = [1.25, 1.25, 1.25], [1.0, 1.0, 1.0]
    assert _run(p, a, b, 0.0) == _f32(3.75)
    assert _run(dataclasses.replace(p, normalize="per_add"), a, b, 0.0) == _f32(3.5)


def test_alignment_reference_nominal_exponent() -> None:
    # 1.0 * 1.0 has leading bit 2**0 but a nominal (two-integer-bit) exponent of 2**1
    assert _run(BASE, [1.0], [1.0], 2.0**-23) == _f32(1 + 2.0**-23)
    assert _run(dataclasses.replace(BASE, align_ref="nominal"), [1.0], [1.0], 2.0**-23) == _f32(1.0)


def test_subnormals_in_and_out() -> None:
    assert _run(BASE, [2.0**-24], [1.0], 0.0) == 0x33800000
    assert _run(dataclasses.replace(BASE, subnormal_in="flush"), [2.0**-24], [1.0], 0.0) == 0
    one = TCParams("f16", "f32", 1, 1, subnormal_in="flush")
    assert _run(one, [-(2.0**-24)], [1.0], -0.0) == 0x80000000  # flushed to -0, keeping its sign
    pb = TCParams("bf16", "f32", 16, 16)
    assert _run(pb, [2.0**-70], [2.0**-70], 0.0, "bf16") == 0x200  # 2**-140 is an f32 subnormal
    pbf = dataclasses.replace(pb, subnormal_out="flush")
    assert _run(pbf, [2.0**-70], [2.0**-70], 0.0, "bf16") == 0
    assert _run(pbf, [-(2.0**-70)], [2.0**-70], 0.0, "bf16") == 0x80000000
    # an f32 subnormal C
    assert _run(BASE, [0.0], [0.0], 2.0**-149) == 1
    assert _run(dataclasses.replace(BASE, subnormal_c="flush"), [0.0], [0.0], 2.0**-149) == 0


def test_signed_zeros() -> None:
    one = TCParams("f16", "f32", 1, 1)
    assert _run(one, [-0.0], [1.0], -0.0) == 0x80000000
    assert _run(one, [-0.0], [1.0], 0.0) == 0
    assert _run(one, [0.0], [-1.0], -0.0) == 0x80000000
    assert _run(dataclasses.replace(one, out_rounding="rtz"), [-0.0], [1.0], -0.0) == 0x80000000
    assert _run(one, [1.5], [1.0], -1.5) == 0  # x - x = +0 ...
    assert _run(dataclasses.replace(one, out_rounding="rd"), [1.5], [1.0], -1.5) == 0x80000000  # ... but -0 downward
    assert _run(dataclasses.replace(one, zero_sign="positive"), [-0.0], [1.0], -0.0) == 0
    # a k=16 row of negative zeros and -0 C stays -0; one +0 product makes it +0
    assert _run(BASE, [-0.0] * 16, [1.0] * 16, -0.0) == 0x80000000
    assert _run(BASE, [-0.0] * 15 + [0.0], [1.0] * 16, -0.0) == 0


def test_inf_and_nan() -> None:
    inf = float("inf")
    assert _run(BASE, [inf], [1.0], 1.0) == 0x7F800000
    assert _run(BASE, [inf], [-2.0], 1.0) == 0xFF800000
    assert _run(BASE, [inf, inf], [1.0, -1.0], 1.0) == F32_NAN
    assert _run(BASE, [inf], [0.0], 1.0) == F32_NAN
    assert _run(BASE, [float("nan")], [1.0], 1.0) == F32_NAN
    assert _run(BASE, [1.0], [1.0], float("nan")) == F32_NAN
    assert _run(BASE, [1.0], [1.0], inf) == 0x7F800000
    assert _run(BASE, [inf], [-1.0], inf) == F32_NAN
    assert _run(dataclasses.replace(BASE, nan_out=0x7FC00000), [inf], [0.0], 0.0) == 0x7FC00000
    # inf flows through later blocks
    assert _run(dataclasses.replace(BASE, block_size=4), [inf] + [1.0] * 15, [1.0] * 16, 0.0) == 0x7F800000
    e4 = TCParams("e4m3", "f32", 32, 32)
    assert int(dot(e4, np.full((1, 32), 0x7F, np.uint8), np.full((1, 32), 0x38, np.uint8), _c32(0.0))[0]) == F32_NAN
    h = TCParams("f16", "f16", 16, 16)
    assert int(dot(h, _f16(*[float("nan")] + [0.0] * 15), _f16(*[1.0] * 16), _f16(0.0)[0])[0]) == 0x7FFF


def test_overflow() -> None:
    h = TCParams("f16", "f16", 16, 16)
    a, b = [65504.0, 65504.0], [1.0, 1.0]
    assert _run(h, a, b, 0.0) == 0x7C00
    assert _run(h, [-65504.0, -65504.0], b, 0.0) == 0xFC00
    assert _run(dataclasses.replace(h, overflow="saturate"), a, b, 0.0) == 0x7BFF
    assert _run(dataclasses.replace(h, out_rounding="rtz"), a, b, 0.0) == 0x7BFF
    assert _run(h, [65504.0, 65504.0], [1.0, -1.0], 65504.0) == 0x7BFF  # no intermediate overflow in one block
    big = float(FORMATS["f32"].max_finite)
    pb = TCParams("bf16", "f32", 16, 16, align_frac_bits=25)
    assert _run(pb, [2.0**64], [2.0**40], big, "bf16") == 0x7F800000  # max + 1 ulp
    assert _run(pb, [2.0**64], [2.0**38], big, "bf16") == 0x7F7FFFFF  # max + ulp/4
    assert _run(dataclasses.replace(pb, overflow="saturate"), [2.0**64], [2.0**40], big, "bf16") == 0x7F7FFFFF
    assert _run(dataclasses.replace(pb, out_rounding="rtz"), [2.0**64], [2.0**40], big, "bf16") == 0x7F7FFFFF
    assert _run(pb, [-(2.0**64)], [2.0**40], -big, "bf16") == 0xFF800000


def test_order_inside_a_block_does_not_matter_per_block() -> None:
    rng = np.random.default_rng(11)
    n = 2000
    a = _random_bits("f16", (n, 16), rng, 10)
    b = _random_bits("f16", (n, 16), rng, 10)
    c = _random_bits("f32", (n,), rng, 10)
    perm = rng.permutation(16)
    p = dataclasses.replace(BASE, out_rounding="rtz", align_frac_bits=25)
    assert np.array_equal(dot(p, a, b, c), dot(p, a[:, perm], b[:, perm], c))


def test_long_k_chains_instructions() -> None:
    rng = np.random.default_rng(12)
    n = 500
    a = _random_bits("e4m3", (n, 96), rng, 4)
    b = _random_bits("e4m3", (n, 96), rng, 4)
    c = _random_bits("f32", (n,), rng, 4)
    p = model("sm_90", "wgmma.m64n8k32.f32.e4m3.e4m3")
    d = c
    for j in range(0, 96, 32):
        d = dot(p, a[:, j : j + 32], b[:, j : j + 32], d)
    assert np.array_equal(dot(p, a, b, c), d)
    with pytest.raises(ValueError, match="multiple"):
        dot(p, a[:, :40], b[:, :40], c)
    with pytest.raises(ValueError, match="shape"):
        dot(p, a, b[:, :64], c)


def test_interleaved_blocks_c_by_ieee_add_and_converted_inputs() -> None:
    """sm_90 fp8 mma.sync m16n8k32: k indices j mod 4 in (0, 1) form the first block, C joins by one IEEE
    (RNE) addition after both blocks, inputs reach the adder as f16."""
    p = TCParams(
        "e4m3",
        "f32",
        32,
        16,
        block_interleave=2,
        c_in_first_block=False,
        c_add="ieee",
        out_rounding="rne",
        inter_block_rounding="rtz",
        align_frac_bits=26,
        align_ref="nominal",
        c_ref_offset=1,
        in_convert="f16",
    )
    contiguous = dataclasses.replace(p, block_interleave=0)
    # +256, -256 at k = 0, 1 and 2^-18 (below the 26 bits kept) at k = 2: another block (survives) interleaved,
    # the same block (truncated away) contiguous
    a = [16.0, -16.0, 2.0**-9] + [0.0] * 29
    b = [16.0, 16.0, 2.0**-9] + [0.0] * 29
    assert _run(p, a, b, 0.0, "e4m3") == _f32(2.0**-18)
    assert _run(contiguous, a, b, 0.0, "e4m3") == _f32(0.0)
    a4 = [16.0, -16.0, 0.0, 0.0, 2.0**-9] + [0.0] * 27  # k = 4 shares the block of k = 0, 1 when interleaved
    assert _run(p, a4, b[:2] + [0.0, 0.0, 2.0**-9] + [0.0] * 27, 0.0, "e4m3") == _f32(0.0)
    # C = half an ulp of 1 + a far smaller bit: the IEEE add rounds up, a fused two-term block truncates it
    c = 2.0**-24 + 2.0**-40
    one = [1.0] + [0.0] * 31
    assert _run(p, one, one, c, "e4m3") == _f32(1 + 2.0**-23)
    fused = dataclasses.replace(p, c_add="fused")
    assert _run(fused, one, one, c, "e4m3") == _f32(1.0)
    # signed zeros of the IEEE add: (+0 product sum) + (-0) = +0; a NaN C gives the NaN pattern
    assert _run(p, [0.0] * 32, [0.0] * 32, -0.0, "e4m3") == 0
    assert _run(p, one, one, float("nan"), "e4m3") == F32_NAN
    with pytest.raises(ValueError, match="c_add"):
        dataclasses.replace(p, out_rounding="rtz")
    with pytest.raises(ValueError, match="block_interleave"):
        TCParams("e4m3", "f32", 32, 16, block_interleave=3)
    with pytest.raises(ValueError, match="in_convert"):
        TCParams("f16", "f32", 16, 16, in_convert="e4m3")


def test_in_convert_changes_the_nominal_exponent_of_fp8_subnormals() -> None:
    """An e4m3 subnormal (2^-9) counts as emin (-6) natively, as its own exponent once converted to f16:
    with 14 alignment bits a term 13 binades below the product is kept only in the second case."""
    p = TCParams("e4m3", "f32", 32, 32, align_frac_bits=14, align_ref="nominal", out_rounding="rtz")
    a = [2.0**-9, -(2.0**-6)] + [0.0] * 30
    b = [2.0**8, 2.0**-6] + [0.0] * 30  # 2^-1 - 2^-12: ref -6+8+1 = 3 natively (unit 2^-11), 0 converted (2^-14)
    assert _run(p, a, b, 0.0, "e4m3") == _f32(0.5)
    assert _run(dataclasses.replace(p, in_convert="f16"), a, b, 0.0, "e4m3") == _f32(0.5 - 2.0**-12)


def test_model_error_is_close_to_float64() -> None:
    rng = np.random.default_rng(13)
    n = 5000
    a = _random_bits("f16", (n, 16), rng, 2)
    b = _random_bits("f16", (n, 16), rng, 2)
    c = _random_bits("f32", (n,), rng, 2)
    from gpudissect.numerics import decode

    d = decode("f32", dot(BASE, a, b, c))
    ref = (decode("f16", a) * decode("f16", b)).sum(axis=1) + decode("f32", c)
    scale = np.maximum(np.abs(decode("f16", a) * decode("f16", b)).max(axis=1), np.abs(decode("f32", c)))
    # 17 truncations of < 1 unit of 2**-23 * scale each (< 2**-18.9), plus half an ulp of a result < 17 * scale
    err = np.abs(d - ref) / scale
    assert np.all(err < 2.0**-17) and np.median(err) > 2.0**-26  # and truncation does lose something


def test_params_validation() -> None:
    with pytest.raises(ValueError, match="out_rounding"):
        TCParams("f16", "f32", 16, 16, out_rounding="nearest")
    with pytest.raises(ValueError, match="block_size"):
        TCParams("f16", "f32", 16, 0)
    with pytest.raises(ValueError, match="acc_fmt"):
        TCParams("f16", "bf16", 16, 16)
    with pytest.raises(ValueError, match="unknown TCParams field"):
        TCParams.from_dict({"in_fmt": "f16", "acc_fmt": "f32", "k": 16, "block_size": 16, "blok": 1})
    assert (
        TCParams.from_dict(
            {"in_fmt": "f16", "acc_fmt": "f32", "k": 16, "block_size": 16, "nan_out": "0x7fc00000"}
        ).nan_bits
        == 0x7FC00000
    )


REQUIRED = [
    "mma.m16n8k16.f32.f16.f16",
    "mma.m16n8k16.f32.bf16.bf16",
    "mma.m16n8k8.f32.tf32.tf32",
    "mma.m16n8k16.f16.f16.f16",
    "wgmma.m64n8k16.f32.f16.f16",
    "wgmma.m64n8k16.f32.bf16.bf16",
    "wgmma.m64n8k8.f32.tf32.tf32",
    "wgmma.m64n8k32.f32.e4m3.e4m3",
    "wgmma.m64n8k32.f32.e5m2.e5m2",
    "wgmma.m64n8k16.f16.f16.f16",
    "wgmma.m64n8k32.f16.e4m3.e4m3",
    "mma.m16n8k32.f32.e4m3.e4m3",
    "mma.m16n8k32.f16.e4m3.e4m3",
]


def test_presets_load_and_validate(tmp_path: Path) -> None:
    doc = json.loads(PRESETS_PATH.read_text())
    assert isinstance(doc.get("_status"), str)
    for instr in REQUIRED:
        p = model("sm_90", instr)
        assert isinstance(p, TCParams) and p.k == int(instr.split(".")[1].split("k")[1])
        assert is_verified("sm_90", instr) == (doc["sm_90"][instr].get("_verified") is True)
    if doc["_status"].startswith("unverified"):
        assert not any(is_verified("sm_90", i) for i in REQUIRED)
    assert set(REQUIRED) <= set(known_instructions("sm_90"))
    with pytest.raises(UnknownInstructionError, match="known instructions: .*wgmma.m64n8k16.f32.f16.f16"):
        model("sm_90", "mma.m16n8k16.f32.e4m3.e4m3")  # fp8 mma.sync k16: not probed
    with pytest.raises(UnknownInstructionError, match="known archs: .*sm_90"):
        model("sm_75", "mma.m16n8k16.f32.f16.f16")
    # a bad file is rejected naming the entry and field
    bad = {"sm_90": {"mma.m16n8k16.f32.f16.f16": {**doc["sm_90"]["mma.m16n8k16.f32.f16.f16"], "out_rounding": "up"}}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="mma.m16n8k16.f32.f16.f16.*out_rounding"):
        load_presets(str(path))
    wrong_k = {"sm_90": {"mma.m16n8k16.f32.f16.f16": {**doc["sm_90"]["mma.m16n8k16.f32.f16.f16"], "k": 8}}}
    path2 = tmp_path / "wrong_k.json"
    path2.write_text(json.dumps(wrong_k))
    with pytest.raises(ValueError, match="contradicts"):
        load_presets(str(path2))


def test_speed() -> None:
    rng = np.random.default_rng(14)
    n = 200_000
    a = _random_bits("f16", (n, 16), rng, 4)
    b = _random_bits("f16", (n, 16), rng, 4)
    c = _random_bits("f32", (n,), rng, 4)
    p = model("sm_90", "mma.m16n8k16.f32.f16.f16")
    dot(p, a[:100], b[:100], c[:100])
    t0 = time.perf_counter()
    dot(p, a, b, c)
    rate = n / (time.perf_counter() - t0)
    assert rate >= 2e5, f"{rate:.3g} dot products/s"
