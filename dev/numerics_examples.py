"""Uses of the tensor-core model, printed as the docs show them (run: python3 dev/numerics_examples.py;
`--docs` rewrites the generated block of docs/suites/numerics.md from a real run of this script).

1. Predict the error of an fp8 GEMM with reduction length K before running it on the GPU.
2. Explain why a tensor-core dot product differs from a float64 reference.
3. Compare the two fp8 instructions of sm_90 on the same inputs (mma.sync m16n8k32: two f16 blocks;
   wgmma m64n8k32: one block of 32).
"""

from __future__ import annotations

import numpy as np

from gpudissect.numerics import decode, dot, encode, model


def fp8_gemm_error(k: int, rows: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Median relative error of wgmma e4m3 -> f32 dot products of length k (chained over k/32
    instructions, as a GEMM's main loop does): against the exact sum of the fp8 inputs, and against
    the float64 dot product of the unquantised data."""
    rng = np.random.default_rng(seed)
    p = model("sm_90", "wgmma.m64n8k32.f32.e4m3.e4m3")
    x, y = rng.normal(size=(rows, k)), rng.normal(size=(rows, k))
    a, b = encode("e4m3", x), encode("e4m3", y)
    d = decode("f32", dot(p, a, b, encode("f32", np.zeros(rows))))
    exact_fp8 = (decode("e4m3", a) * decode("e4m3", b)).sum(axis=1)
    exact_f64 = (x * y).sum(axis=1)
    return (
        float(np.median(np.abs(d - exact_fp8) / np.abs(exact_fp8))),
        float(np.median(np.abs(d - exact_f64) / np.abs(exact_f64))),
    )


def explain_f16_difference() -> None:
    """One f16 x f16 -> f32 dot product where the tensor core and float64 disagree, and why."""
    p = model("sm_90", "mma.m16n8k16.f32.f16.f16")
    a = np.zeros((1, 16))
    b = np.zeros((1, 16))
    a[0, 0], b[0, 0] = 1.0, 1.0  # a large term, 1.0
    a[0, 1:], b[0, 1:] = 2.0**-14, 2.0**-13  # fifteen tiny terms of 2^-27 each
    abits, bbits = encode("f16", a), encode("f16", b)
    d = decode("f32", dot(p, abits, bbits, encode("f32", np.zeros(1))))[0]
    ref = float((decode("f16", abits) * decode("f16", bbits)).sum())
    print(f"  float64 reference: {ref!r}")
    print(
        f"  model of sm_90 mma: {float(d)!r}  (align_frac_bits={p.align_frac_bits} counted from the "
        f"{p.align_ref} exponent, align_rounding={p.align_rounding}, out_rounding={p.out_rounding})"
    )
    print("  the 2^-27 terms lie below the bits kept when they are aligned to the 1.0 term, so they are")
    print("  dropped before the sum, and the result is rounded toward zero into fp32.")


def fp8_mma_vs_wgmma(rows: int = 20000, seed: int = 1) -> tuple[float, float, float]:
    """e4m3 -> f32 dot products of K = 32 on both sm_90 instructions: (fraction of rows whose D differs,
    median relative error of mma.sync and of wgmma against the exact sum of the fp8 inputs)."""
    rng = np.random.default_rng(seed)
    a, b = encode("e4m3", rng.normal(size=(rows, 32))), encode("e4m3", rng.normal(size=(rows, 32)))
    c = encode("f32", np.zeros(rows))
    exact_fp8 = (decode("e4m3", a) * decode("e4m3", b)).sum(axis=1)
    d_mma = dot(model("sm_90", "mma.m16n8k32.f32.e4m3.e4m3"), a, b, c)
    d_wg = dot(model("sm_90", "wgmma.m64n8k32.f32.e4m3.e4m3"), a, b, c)
    err = [float(np.median(np.abs(decode("f32", d) - exact_fp8) / np.abs(exact_fp8))) for d in (d_mma, d_wg)]
    return float(np.mean(d_mma != d_wg)), err[0], err[1]


def main() -> None:
    print("fp8 (e4m3) GEMM: median relative error of one output element, predicted by the model")
    print("  K      vs exact sum of fp8 inputs   vs float64 of the unquantised data")
    for k in (256, 1024, 4096, 16384):
        e_fp8, e_64 = fp8_gemm_error(k)
        print(f"  {k:<6d} {e_fp8:<28.3e} {e_64:.3e}")
    print("why an f16 tensor-core dot product differs from float64:")
    explain_f16_difference()
    p = model("sm_90", "mma.m16n8k32.f32.e4m3.e4m3")
    differ, e_mma, e_wg = fp8_mma_vs_wgmma()
    print("fp8 (e4m3 -> f32, K = 32) on sm_90: mma.sync vs wgmma on the same 20000 random dot products")
    print(
        f"  mma.sync m16n8k32: blocks of {p.block_size} (interleave {p.block_interleave}), {p.align_frac_bits} "
        f"alignment bits, C added by {'one IEEE add' if p.c_add == 'ieee' else 'the adder'}; median error {e_mma:.3e}"
    )
    q = model("sm_90", "wgmma.m64n8k32.f32.e4m3.e4m3")
    print(
        f"  wgmma m64n8k32:    one block of {q.block_size}, {q.align_frac_bits} alignment bits, D with "
        f"{q.out_man_bits or 23} fraction bits; median error {e_wg:.3e}"
    )
    print(f"  rows whose D differs between the two: {differ:.1%}")


if __name__ == "__main__":
    import contextlib
    import io
    import re
    import sys
    from pathlib import Path

    if "--docs" in sys.argv or "--readme" in sys.argv:  # regenerate the docs block from a real run of this script
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main()
        page = Path(__file__).resolve().parent.parent / "docs" / "suites" / "numerics.md"
        block = "<!-- numerics-examples:start -->\n```text\n" + buf.getvalue() + "```\n<!-- numerics-examples:end -->"
        pat = r"<!-- numerics-examples:start -->.*<!-- numerics-examples:end -->"
        if not re.search(pat, page.read_text(), flags=re.S):
            raise SystemExit(f"{page} has no <!-- numerics-examples:start --> ... <!-- numerics-examples:end --> block")
        page.write_text(re.sub(pat, lambda _: block, page.read_text(), flags=re.S))
    else:
        main()
