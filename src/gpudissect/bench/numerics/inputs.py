"""Corner-stressing random inputs of the model agreement (and the probes' monotonicity check)."""

from __future__ import annotations

import numpy as np

from .common import FMT, Instr, _nan_bits, in_bits

SCENARIOS = ("wide", "narrow", "cancel", "subnormal", "overflow", "special")


def random_codes(
    fmt: str, shape: tuple[int, ...], rng: np.random.Generator, scenario: str, center: int | None = None
) -> np.ndarray:
    """Codes of fmt drawn for one scenario: wide (every finite exponent, subnormals included),
    narrow (exponents within +-3 of `center`: cancellation), subnormal (exponent field 0 or 1),
    overflow (the top exponents), special (a few inf/NaN among wide values)."""
    ebits, fbits, bias, _ = FMT[fmt]
    emax_field = (1 << ebits) - 1
    top = emax_field if fmt == "e4m3" else emax_field - 1  # largest field of finite values
    sign = rng.integers(0, 2, shape).astype(np.uint64)
    man = rng.integers(0, 1 << fbits, shape).astype(np.uint64)
    if scenario in ("wide", "special", "cancel"):
        ex = rng.integers(0, top + 1, shape)
    elif scenario == "narrow":
        c = bias if center is None else center
        ex = np.clip(c + rng.integers(-3, 4, shape), 1, top)
    elif scenario == "subnormal":
        ex = rng.integers(0, 2, shape)
    else:  # overflow
        ex = rng.integers(max(1, top - 2), top + 1, shape)
    code = (sign << np.uint64(ebits + fbits)) | (ex.astype(np.uint64) << np.uint64(fbits)) | man
    if fmt == "e4m3":  # S.1111.111 is NaN: keep it out except in "special"
        code = np.where((code & np.uint64(0x7F)) == 0x7F, code - np.uint64(1), code)
    if scenario == "special":
        hit = rng.random(shape) < 0.02
        spec = np.array(
            [_nan_bits(fmt) >> (13 if fmt == "tf32" else 0)]
            + (
                []
                if fmt == "e4m3"
                else [((1 << ebits) - 1) << fbits, (1 << (ebits + fbits)) | (((1 << ebits) - 1) << fbits)]
            ),
            np.uint64,
        )
        code = np.where(hit, spec[rng.integers(0, spec.size, shape)], code)
    if fmt == "tf32":
        code = code << np.uint64(13)  # tf32 lives in the top 19 bits of an fp32 container
    return code.astype(np.uint32)


def _cancel(a: np.ndarray, b: np.ndarray, fmt: str, rng: np.random.Generator) -> np.ndarray:
    """Second half of each K row: the negated first half with the lowest fraction bit flipped at random
    (near-total cancellation)."""
    k = a.shape[-1]
    h = k // 2
    sign_bit = np.uint32(1 << (in_bits(fmt) - 1))
    lsb = np.uint32(1 << 13) if fmt == "tf32" else np.uint32(1)
    flip = (rng.random(a[..., :h].shape) < 0.5).astype(np.uint32) * lsb
    a = a.copy()
    a[..., h : 2 * h] = (a[..., :h] ^ sign_bit) ^ flip
    if fmt == "e4m3":  # flipping into S.1111.111 would make a NaN
        a = np.where((a & np.uint32(0x7F)) == 0x7F, a - np.uint32(1), a)
    return a


def agreement_inputs(
    ins: Instr, n_inst: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, C, scenario index per instance): instances cycle through SCENARIOS."""
    sc = np.arange(n_inst) % len(SCENARIOS)
    A = np.zeros((n_inst, ins.m, ins.K), np.uint32)
    B = np.zeros((n_inst, ins.K, ins.n), np.uint32)
    C = np.zeros((n_inst, ins.m, ins.n), np.uint32)
    bias = FMT[ins.a][2]
    for s, name in enumerate(SCENARIOS):
        idx = np.flatnonzero(sc == s)
        if idx.size == 0:
            continue
        center = int(rng.integers(1, 2 * bias)) if name == "narrow" else None
        A[idx] = random_codes(ins.a, (idx.size, ins.m, ins.K), rng, name, center)
        B[idx] = random_codes(ins.a, (idx.size, ins.K, ins.n), rng, "narrow" if name == "cancel" else name, center)
        if name == "cancel":
            # B rows mirrored too so that a_j b_j and a_{j+h} b_{j+h} nearly cancel
            h = ins.K // 2
            B[idx, h : 2 * h, :] = B[idx, :h, :]
            A[idx] = _cancel(A[idx], B[idx], ins.a, rng)
        cs = "narrow" if name == "cancel" else ("wide" if name == "special" else name)
        C[idx] = random_codes(ins.c, (idx.size, ins.m, ins.n), rng, cs, None)
        zero_c = rng.random((idx.size, ins.m, ins.n)) < 0.25
        C[idx] = np.where(zero_c, 0, C[idx])
    return A, B, C, sc


def flatten_dots(ins: Instr, A: np.ndarray, B: np.ndarray, C: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every D[i, m, n] as a dot product (a = A[i, m, :], b = B[i, :, n], c = C[i, m, n])."""
    count = A.shape[0]
    a = np.broadcast_to(A[:, :, None, :], (count, ins.m, ins.n, ins.K)).reshape(-1, ins.K)
    b = np.broadcast_to(np.swapaxes(B, 1, 2)[:, None, :, :], (count, ins.m, ins.n, ins.K)).reshape(-1, ins.K)
    return a, b, C.reshape(-1), D.reshape(-1)
