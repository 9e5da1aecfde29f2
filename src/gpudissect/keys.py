"""How a figure key is spelled: the lint every new key passes, and the table of stored keys it aliases.

A key is dotted: `<prefix>.<what>...<name>_<unit>`. The prefix names the suite (SUITE_PREFIXES; `clock.`
is shared: the SM clock a benchmark's own kernels measured). When the figure's unit has a suffix in
UNIT_SUFFIXES, the key's last segment ends with it, optionally followed by a normaliser (`_per_instr`,
`_per_sm`) and a variant (`_sm80`, `_4096`, `_min`, `_max`, `_median`): `l1_hit_cycles`,
`dfma_per_clk_sm`, `latency_cycles_sm80`, `cycles_per_ffma`. Dimensionless units (ratio, fraction, %,
x, counts) take no suffix.

Decision on the keys stored before the rule: they are kept, not renamed. Users, the README tables and
`compare` against committed runs read them by name, and a rename would break every export made so far.
Instead the prefixes of the older suites are this table's own (tensor `tc.`, numerics `num.`, atomics
`atom.`, memory `mem.`, hopper `tma.`/`async_copy.`/`dsm.`/`dpx.`/`sw.`), and the few spellings that break
the suffix rule are listed in LEGACY with the reason: those keys stay valid, new keys of the same kind
take the canonical spelling (power is `_w` from now on, not `_watts`).
"""

from __future__ import annotations

import re

# suite -> the first segments its keys may start with (the first one is the canonical prefix)
SUITE_PREFIXES: dict[str, tuple[str, ...]] = {
    "memory": ("mem",),
    "cache": ("cache",),
    "atomics": ("atom",),
    "isa": ("isa",),
    "tensor": ("tc",),
    "numerics": ("num",),
    "hopper": ("tma", "async_copy", "dsm", "dpx", "sw"),
    "gemm": ("gemm",),
    "app": ("app",),
    "link": ("link",),
}
SHARED_PREFIXES = ("clock",)

# figure unit -> the suffix its key ends with (a regex alternative); units not listed take none
UNIT_SUFFIXES: dict[str, str] = {
    "cycles": "cycles",
    "ns": "ns",
    "us": "us",
    "ms": "ms",
    "s": "s",
    "MHz": "mhz",
    "GHz": "ghz",
    "W": "w",
    "bytes": "bytes",
    "GiB": "gib",
    "bits": "bits",
    "GB/s": "gbps",
    "TB/s": "tbps",
    "GFLOP/s": "gflops",
    "TFLOPS": "tflops",
    "TOPS": "tops",
    "TFLOPS/W": "tflops_per_watt",
    "TOPS/W": "tops_per_watt",
    "FMA/clk/SM": "per_clk_sm",
    "instr/clk/SM": "per_clk_sm",
    "calls/clk/SM": "per_clk_sm",
    "bytes/clk/SM": "per_clk_sm",
    "ops/clk/SM": "per_clk_sm",
    "tokens/s": "per_s",
    "elements/s": "per_s",
}
_TAIL = r"(_per_[a-z0-9]+)?(_(sm\d+|\d+|min|max|median))?$"

# Stored before the rule, kept as they are (regex over the key, why).
LEGACY: tuple[tuple[str, str], ...] = (
    (r"^(gemm\.|tc\.cublas\.|tc\.power\.mma\.).*_watts$", "power stored as _watts (canonical: _w) before the rule"),
    (r"^tc\.power\.mma\.s8_s32\..*_tflops(_per_watt)?$", "integer mma power rates named tflops, unit TOPS"),
    (r"^isa\.regbank\.ffma_cycles_compiler_code$", "the variant written after the unit"),
)
_LEGACY = [re.compile(p) for p, _ in LEGACY]


def prefixes(suite: str) -> tuple[str, ...]:
    """The first segments a key of `suite` may start with (a suite outside the table: its own name)."""
    return SUITE_PREFIXES.get(suite, (suite,)) + SHARED_PREFIXES


def is_legacy(key: str) -> bool:
    return any(p.match(key) for p in _LEGACY)


def problems(suite: str, key: str, unit: str) -> list[str]:
    """What is wrong with a key for a figure of `suite` in `unit` (empty: nothing)."""
    if is_legacy(key):
        return []
    out = []
    parts = key.split(".")
    if len(parts) < 2 or not all(re.fullmatch(r"[a-z0-9_]+", p) for p in parts):
        out.append(f"{key!r}: dotted lower-case segments of [a-z0-9_] expected")
    if parts[0] not in prefixes(suite):
        out.append(f"{key!r}: a {suite} key starts with {' or '.join(p + '.' for p in prefixes(suite))}")
    suffix = UNIT_SUFFIXES.get(unit)
    if suffix and not re.search(rf"(^|_)({suffix}){_TAIL}", parts[-1]):
        out.append(f"{key!r}: a figure in {unit} ends with _{suffix} (then optionally _per_X and a variant)")
    return out
