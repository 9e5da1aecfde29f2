"""The SASS a rung of our GEMM ladder (rungs.py, kernels/gemm.cu) must compile to: the regexes its
KernelSpec requires, per rung and dtype (gemm.variants re-exports them)."""

from __future__ import annotations

from typing import Protocol


class Rung(Protocol):
    """What the SASS rules read of a rungs.Rung (a protocol: rungs.py imports this module, not the reverse)."""

    number: int
    bn: int
    cluster: int
    cluster_n: int
    epi_whole: bool
    no_zero: bool
    stream_k: bool


def _wgmma_sass(bn: int, dtype: str) -> str:
    """The m64n{bn} wgmma from shared-memory descriptors as ptxas writes it for `dtype` (QGMMA ...E4M3.E4M3
    for fp8; the fp16 form has no type suffix after .F32)."""
    if dtype == "e4m3":
        return rf"QGMMA\.64x{bn}x32\.F32\.E4M3\.E4M3 R\d+, gdesc\[UR\d+\], R\d+"
    suffix = r"\.BF16" if dtype == "bf16" else ""
    return rf"HGMMA\.64x{bn}x16\.F32{suffix} R\d+, gdesc\[UR\d+\], R\d+"


def required_sass(rung: Rung, dtype: str) -> list[str]:
    if rung.number >= 6:
        return required_sass_ws(rung, dtype)
    if rung.number == 1:
        mma = r"HMMA\.16816\.F32\.BF16" if dtype == "bf16" else r"HMMA\.16816\.F32 "
        return [
            mma,
            r"LDSM\.16\.M88\.4",
            r"LDGSTS\.E\.BYPASS\.128",
            r"LDGDEPBAR",
            r"DEPBAR\.LE SB0",
            r"\A(?![\s\S]*\bLDL\b)",
        ]
    req = [
        _wgmma_sass(rung.bn, "bf16" if dtype == "bf16" else "fp16"),  # rungs 2-5: 16-bit builds only
        r"UTMALDG\.2D",
        r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT",
        WAIT_SLEEP_SASS,
        r"SYNCS\.ARRIVE\.TRANS64",
        r"WARPGROUP\.ARRIVE",
        r"\A(?![\s\S]*\bLDL\b)",
    ]
    if rung.number >= 3:
        req += [r"USETMAXREG\.DEALLOC\.CTAPOOL 0x28", r"USETMAXREG\.TRY_ALLOC\.CTAPOOL"]
    if rung.number == 3:
        req += [r"SYNCS\.ARRIVE\.TRANS64\.A1T0", r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1"]
    if rung.cluster > 1:  # multicast TMA, remote mbarrier arrives, cluster barriers
        req += [r"UTMALDG\.2D\.MULTICAST", r"SYNCS\.ARRIVE\.TRANS64\.RED\.A1T0", r"UCGABAR_ARV", r"UCGABAR_WAIT"]
    return req


def required_sass_ws(rung: Rung, dtype: str) -> list[str]:
    """Rungs 6+: the wgmma of the dtype from descriptors (QGMMA ...E4M3.E4M3 for fp8), TMA loads with
    the multicast of the shared operand, the stmatrix epilogue (STSM), its TMA store (UTMASTG) and the
    bulk-group waits (DEPBAR on SB0), the per-warpgroup named barrier (bar.sync id, 128 threads), the
    proxy fence between the generic writes and the TMA read, and no local memory."""
    mma = _wgmma_sass(rung.bn, dtype)
    # a 1-D cluster multicasts one operand and loads the other plainly; a 2 x 2 cluster multicasts both
    plain = [r"\A(?![\s\S]*UTMALDG\.2D )"] if rung.cluster > 1 and rung.cluster_n > 1 else [r"UTMALDG\.2D "]
    # the two-slot epilogue waits for the store two boxes back (SB0 <= 1); a whole-tile staging only for all
    stores = [r"\A(?![\s\S]*DEPBAR\.LE SB0, 0x1)"] if rung.epi_whole else [r"DEPBAR\.LE SB0, 0x1"]
    if rung.no_zero:  # the tile's first wgmma takes scale-d from a predicate: D = A B, old values ignored
        stores.append(mma + r", !?UP\d")
    return [
        mma,
        r"UTMALDG\.2D\.MULTICAST",
        *plain,
        r"UTMASTG\.2D",
        r"UTMACMDFLUSH",
        r"STSM\.16\.M88\.4",
        *stores,
        r"DEPBAR\.LE SB0, 0x0",
        r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x80",
        r"FENCE\.VIEW\.ASYNC\.S",
        r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT",
        WAIT_SLEEP_SASS,
        r"SYNCS\.ARRIVE\.TRANS64\.RED\.A1T0",
        r"USETMAXREG\.DEALLOC\.CTAPOOL 0x28",
        r"USETMAXREG\.TRY_ALLOC\.CTAPOOL",
        r"UCGABAR_ARV",
        r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1",
        r"\A(?![\s\S]*\b(?:LDL|STL)\b)",
        *PDL_SASS,
    ] + (SK_SASS if rung.stream_k else [])


# Programmatic dependent launch: the tensor maps prefetched, then griddepcontrol.wait (ACQBULK) before any global
# access (PDL_WAIT_SASS), and on the ladder griddepcontrol.launch_dependents (PREEXIT) after it; the order is tested
# (tests/gemm/test_gemm_sass.py, tests/gemm/test_small.py)
PDL_WAIT_SASS = [r"UTMACCTL\.PF", r"\bACQBULK\b"]
PDL_SASS = [*PDL_WAIT_SASS, r"\bPREEXIT\b"]


# the hinted mbarrier wait: a failed try_wait sleeps until the barrier wakes it, then checks again
WAIT_SLEEP_SASS = r"@!P\d NANOSLEEP\.SYNCS 0x989680[^\n]*\n[^\n]*@!P\d SYNCS\.PHASECHK\.TRANS64 P\d"

# stream-K fix-up: the partial sums stored and loaded past L1 (.cg: STG/LDG ... .STRONG.GPU), the flag
# published with a gpu-scope release (a MEMBAR before the strong store) and polled with acquire loads
SK_SASS = [
    r"STG\.E\.STRONG\.GPU desc\[UR\d+\]\[R\d+\.64\+0x200\]",
    r"LDG\.E\.STRONG\.GPU R\d+, desc\[UR\d+\]\[R\d+\.64\+0x200\]",
    r"MEMBAR\.ALL\.GPU[^\n]*\n[^\n]*ERRBAR[^\n]*\n[^\n]*CGAERRBAR[^\n]*\n[^\n]*STG\.E\.STRONG\.GPU",
    r"LDG\.E\.STRONG\.GPU[^\n]*\n[^\n]*CCTL\.IVALL",
]
