"""The atomics suite's kernel spec: every kernel of kernels/atomics.cu with the SASS it must hold.

All atomics are inline PTX at addresses ptxas cannot prove warp-uniform: for a uniform address ptxas
aggregates a full warp's adds itself (VOTE + SHFL scan + one atom), which would hide what the
hardware does. The SASS checks say so for every kernel.
"""

from __future__ import annotations

import numpy as np

from ..registry import KernelSpec
from ..shared import PRE_HOPPER, by_family

_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
OPS = {
    "add_u32": "ADD",
    "add_f32": r"ADD\.F32",
    "add_f64": r"ADD\.F64",
    "cas": "CAS",
    "exch": "EXCH",
    "max": "MAX",
    "min": "MIN",
}
# no compiler-side warp aggregation anywhere; an instruction predicated @!PT never runs (Volta's ptxas puts an
# `@!PT SHFL.IDX PT, RZ, RZ, RZ, RZ` filler near the start of every function): such a line does not count
_NO_AGG = r"\A(?![\s\S]*^(?![^\n]*@!PT\s)[^\n]*\b(VOTE|VOTEU|POPC|UPOPC|SHFL)\b)"

# the ops whose word holds a float: its dtype, to read the final value back
FLOAT_OPS = {"add_f32": np.float32, "add_f64": np.float64}


def _required(family: str) -> dict[str, list[str]]:
    red = "RED" if family in PRE_HOPPER else "REDG"  # a global reduction prints as RED before sm_90
    req: dict[str, list[str]] = {}
    for op, sass in OPS.items():
        req[f"lat_global_{op}"] = [rf"ATOMG\.E\.{sass}", _CLOCK, _NO_AGG]
        # sm_90 has no shared-memory float add: ptxas emits an LDS + ATOMS.CAST.SPIN retry loop
        shared = r"ATOMS\.CAST\.SPIN" + (r"\.64" if op == "add_f64" else "") if op in FLOAT_OPS else rf"ATOMS\.{sass}"
        req[f"lat_shared_{op}"] = [shared, _CLOCK, _NO_AGG]
    req["red_ld_global"] = [rf"{red}\.E\.ADD", r"LDG\.E\.STRONG\.GPU", _NO_AGG]
    req["ld_chain_global"] = [r"LDG\.E\.STRONG\.GPU", _CLOCK]
    req["probe_lines"] = [r"LDG\.E\.STRONG\.GPU", r"ATOMG\.E\.ADD", _CLOCK, r"SR_VIRTUALSMID", _NO_AGG]
    req["alu_chain"] = [r"LOP3\.LUT R\d+, R\d+, R\d+, R\d+, 0xea", _CLOCK]
    req["red_contend_u32"] = [rf"{red}\.E\.ADD\.STRONG\.GPU", _CLOCK, _NO_AGG]
    req["red_contend_f32"] = [rf"{red}\.E\.ADD\.F32", _CLOCK, _NO_AGG]
    return req


ATOMICS = KernelSpec("atomics.cu", _required("hopper"), required_by_family=by_family(_required))
