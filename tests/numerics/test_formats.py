"""Bit-level formats of gpudissect.numerics: exact decode, rounding encode, format corner values."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gpudissect.numerics.formats import FORMATS, decode, encode, exact


@pytest.mark.parametrize("fmt", ["f16", "bf16", "e4m3", "e5m2"])
def test_every_finite_pattern_round_trips(fmt: str) -> None:
    f = FORMATS[fmt]
    bits = np.arange(1 << f.width, dtype=np.int64)
    vals = decode(fmt, bits)
    fin = np.isfinite(vals)
    back = encode(fmt, vals[fin]).astype(np.int64)
    assert back.dtype == np.int64 and np.array_equal(back, bits[fin])
    # also with rtz: exact values need no rounding
    assert np.array_equal(encode(fmt, vals[fin], rounding="rtz").astype(np.int64), bits[fin])


def test_f16_decode_matches_numpy() -> None:
    bits = np.arange(1 << 16, dtype=np.uint16)
    assert np.array_equal(decode("f16", bits), bits.view(np.float16).astype(np.float64), equal_nan=True)


@pytest.mark.parametrize("fmt,dtype", [("f16", np.float16), ("f32", np.float32)])
def test_rne_encode_matches_numpy_cast(fmt: str, dtype: type) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(200_000) * np.exp2(rng.integers(-160, 140, 200_000).astype(np.float64))
    x[:4] = [0.0, -0.0, 1e300, -1e300]
    with np.errstate(over="ignore"):
        ref = x.astype(dtype).view(np.uint16 if dtype is np.float16 else np.uint32)
    assert np.array_equal(encode(fmt, x), ref)


@pytest.mark.parametrize("fmt", ["f16", "bf16", "tf32", "e5m2", "e4m3", "f32"])
def test_rtz_encode_never_increases_magnitude_and_is_within_an_ulp(fmt: str) -> None:
    f = FORMATS[fmt]
    rng = np.random.default_rng(2)
    x = rng.uniform(-2, 2, 2000) * f.max_finite / 4
    d = decode(fmt, encode(fmt, x, rounding="rtz"))
    assert np.all(np.abs(d) <= np.abs(x))
    ulp = np.exp2(np.floor(np.log2(np.abs(x))) - f.man_bits)
    assert np.all(np.abs(x) - np.abs(d) < np.maximum(ulp, f.min_subnormal))


def test_known_values() -> None:
    cases = {  # (format, bits): value
        ("f16", 0x7BFF): 65504.0,
        ("f16", 0x0001): 2.0**-24,
        ("f16", 0x0400): 2.0**-14,
        ("f16", 0x8000): -0.0,
        ("bf16", 0x7F7F): float(Fraction(255, 128) * 2**127),
        ("bf16", 0x0001): 2.0**-133,
        ("e4m3", 0x7E): 448.0,
        ("e4m3", 0x01): 2.0**-9,
        ("e4m3", 0x08): 2.0**-6,
        ("e4m3", 0x78): 256.0,
        ("e4m3", 0xFE): -448.0,
        ("e5m2", 0x7B): 57344.0,
        ("e5m2", 0x01): 2.0**-16,
        ("e5m2", 0x04): 2.0**-14,
        ("tf32", 0x3F800000): 1.0,
        ("tf32", 0x00002000): 2.0**-136,
        ("f32", 0x00000001): 2.0**-149,
    }
    for (fmt, bits), value in cases.items():
        got = decode(fmt, np.array([bits]))[0]
        assert got == value and np.signbit(got) == np.signbit(value), (fmt, hex(bits), got, value)
        assert exact(fmt, bits) == Fraction(value)
        assert int(encode(fmt, [value])[0]) == bits
    assert FORMATS["f16"].max_finite == 65504.0 and FORMATS["e4m3"].max_finite == 448.0
    assert FORMATS["e5m2"].max_finite == 57344.0 and FORMATS["e4m3"].min_subnormal == 2.0**-9


def test_specials_and_saturation_rules() -> None:
    # e4m3: no infinity; only S.1111.111 is NaN
    d = decode("e4m3", np.array([0x7F, 0xFF, 0x7E, 0x78]))
    assert np.isnan(d[0]) and np.isnan(d[1]) and np.all(np.isfinite(d[2:]))
    assert not np.isinf(decode("e4m3", np.arange(256))).any()
    # e4m3 encode saturates by default (satfinite), NaN otherwise
    assert encode("e4m3", [1000.0, -1e9, np.inf, -np.inf, np.nan]).tolist() == [0x7E, 0xFE, 0x7E, 0xFE, 0x7F]
    assert encode("e4m3", [1000.0, np.inf], saturate=False).tolist() == [0x7F, 0x7F]
    assert encode("e4m3", [460.0, 470.0]).tolist() == [0x7E, 0x7E]
    # e5m2: IEEE-like, inf 0x7c, NaN 0x7d..0x7f
    d = decode("e5m2", np.array([0x7C, 0xFC, 0x7D, 0x7F]))
    assert d[0] == np.inf and d[1] == -np.inf and np.isnan(d[2]) and np.isnan(d[3])
    assert encode("e5m2", [1e6, -1e6, 61440.0, 61439.0]).tolist() == [0x7C, 0xFC, 0x7C, 0x7B]
    assert encode("e5m2", [1e6], rounding="rtz").tolist() == [0x7B]
    assert encode("e5m2", [1e6, np.inf], saturate=True).tolist() == [0x7B, 0x7B]
    assert encode("f16", [65520.0, 65519.0, np.inf]).tolist() == [0x7C00, 0x7BFF, 0x7C00]
    assert encode("f16", [1e9], rounding="rtz").tolist() == [0x7BFF]
    assert int(encode("f32", [np.nan])[0]) == 0x7FC00000
    with pytest.raises(ValueError, match="not finite"):
        exact("f16", 0x7C00)
    with pytest.raises(ValueError, match="known"):
        decode("fp4", np.array([0]))


def test_tf32_ignores_low_13_bits() -> None:
    assert decode("tf32", np.array([0x3F801FFF]))[0] == 1.0
    assert decode("tf32", np.array([0x3F802000]))[0] == 1.0 + 2.0**-10
    bits = encode("tf32", [1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-11 + 2.0**-30])
    assert bits.dtype == np.uint32 and bits.tolist() == [0x3F800000, 0x3F804000, 0x3F802000]
    assert encode("tf32", [1 + 3 * 2.0**-11], rounding="rtz").tolist() == [0x3F802000]
    assert (encode("tf32", np.random.default_rng(3).standard_normal(1000)) & 0x1FFF == 0).all()
