"""The native-instruction table (isa suite, Jia et al. 002 §4.1 Table 4.1): for every instruction its SASS
pattern, the chain type, the CPU model of one chain step x <- op(x, b[k], c[k]), the helper chains
whose latency is subtracted, and the operands and start values the chains run with. Pure numpy:
native_replay.py replays the chains, native.py builds one kernel per row (kernels/isa_native.cu) and
measures it.

The table is spread over native_op.py (the Op record, the loop constants), native_operands.py (operand
and start-value makers) and native_rows.py (the rows, ops()); this module is its public face and
re-exports them."""

from __future__ import annotations

from .native_op import BODY as BODY
from .native_op import ILPS as ILPS
from .native_op import NOPS as NOPS
from .native_op import TABLE as TABLE
from .native_op import Op as Op
from .native_operands import REUSE_BODY as REUSE_BODY
from .native_operands import UNIT_PROD as UNIT_PROD
from .native_operands import ZERO_SUM as ZERO_SUM
from .native_rows import ops as ops


def op(key: str) -> Op:
    for o in ops():
        if o.key == key:
            return o
    raise KeyError(key)


def table_group(key: str) -> str:
    """Which bar chart of the report an instruction goes to (one chart of 47 bars is unreadable)."""
    if key.startswith("mufu_") or key in ("f2i", "i2fp", "f2f", "f2fp"):
        return "mufu_conversions"
    if key in ("shfl", "vote", "redux", "match", "lds", "sts", "bar"):
        return "warp_shared_barrier"
    if key[0] in "fhd" and key != "flo":
        return "floating_point"
    return "integer_dpx"
