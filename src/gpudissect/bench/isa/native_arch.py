"""The native-instruction table on other architectures than Hopper's (whose SASS native_ops.py names): what
an instruction needs to compile, how ptxas names it on another family, what it emits instead where it
does not use the instruction (emulated), and the native/emulated label read from the SASS of the timed loop.

From disassembly of NVRTC's output for sm_70 (NVRTC 12) .. sm_120a: Volta makes a 32-bit min/max a compare
and a select (ISETP.LT + SEL, no IMNMX); DPX's three-operand and add-fused min/max exist only on sm_90 and
sm_100 (elsewhere IMNMX or VIMNMX.S32 with an add); before sm_80 vote.all becomes a ballot (VOTE.ANY R)
compared with the active mask.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TypeVar

from ...analysis import issue_rate as ir
from ...capability import ANY, Needs
from ..shared import PRE_AMPERE, PRE_HOPPER
from .native_ops import Op

BLACKWELL = ("blackwell", "blackwell-consumer")
_NOT_IN = r"(?<![\w.])"  # a mnemonic, not the tail of a longer one (IADD3 must not count UIADD3)

# what the instruction's PTX needs (the others compile everywhere)
NEEDS: dict[str, Needs] = {
    "hmnmx2": Needs((8, 0)),  # max/min.f16x2
    "hfma2_bf16": Needs((8, 0)),  # fma.rn.bf16x2
    "mufu_tanh": Needs((7, 5)),  # tanh.approx
    "f2fp": Needs((8, 0)),  # cvt.rn.f16x2.f32
    "redux": Needs(features=("redux",)),
}


T = TypeVar("T")


def _on(families: tuple[str, ...], value: T) -> dict[str, T]:
    return dict.fromkeys(families, value)


# family -> the instruction's SASS regex there, where ptxas names it otherwise than on sm_90 (Op.sass)
NAMED: dict[str, dict[str, str]] = {
    "hadd2": _on(BLACKWELL, r"(HADD2|HFMA2) "),  # the other half as HFMA2 x*1+b
    "hmul2": _on(BLACKWELL, r"(HMUL2|HFMA2) "),
    # before Hopper the loop counter is an IADD3 too (an immediate): the chain's have 3 register sources
    "iadd3": _on(PRE_HOPPER, r"IADD3 R\d+, R\d+(\.reuse)?, R\d+(\.reuse)?, R\d+"),
    "vimnmx": _on(PRE_HOPPER, r"IMNMX ") | {"blackwell-consumer": r"VIMNMX\.S32 "},
    "i2fp": {"volta": r"I2F ", "turing": r"I2F ", "ampere": r"I2F(P\.F32\.S32)? "},  # I2FP from sm_86
    "f2fp": {"ampere": r"F2FP\.PACK_AB "},
    "lds": _on(PRE_AMPERE, r"LDS\.U "),
}

# family -> what ptxas emits instead of the instruction (the first regex picks the timed loop)
EMULATED: dict[str, dict[str, tuple[str, ...]]] = {
    "vimnmx": {"volta": (r"SEL R\d+, R\d+", r"ISETP\.LT\.AND ")},
    "viaddmnmx": _on(("turing", "ampere", "ada"), (r"IMNMX ", r"IMAD\.IADD "))
    | {
        "volta": (r"SEL R\d+, R\d+", r"ISETP\.LT\.AND ", r"IMAD\.IADD "),
        "blackwell-consumer": (r"VIMNMX\.S32 ", r"IADD "),
    },
    "vimnmx3": _on(("turing", "ampere", "ada"), (r"IMNMX ",))
    | {"volta": (r"SEL R\d+, R\d+", r"ISETP\.LT\.AND "), "blackwell-consumer": (r"VIMNMX\.S32 ",)},
    "vote": _on(PRE_AMPERE, (r"VOTE\.ANY R\d+, PT, !?P\d", r"LOP3\.LUT ")),
}
# native only where these are in the timed loop too (vote: VOTE.ALL beside VOTE.ANY)
NATIVE_ALSO: dict[str, tuple[str, ...]] = {"vote": (r"VOTE\.ALL ",)}


def needs(o: Op) -> Needs:
    return NEEDS.get(o.key, ANY)


def native_pattern(o: Op, family: str) -> str:
    """The instruction's own SASS regex on a family."""
    return _NOT_IN + NAMED.get(o.key, {}).get(family, o.sass)


def required(o: Op, family: str) -> list[str]:
    """The SASS each isa_ilp<i> of the instruction holds on a family: the instruction, or its emulation."""
    emulation = EMULATED.get(o.key, {}).get(family)
    return [_NOT_IN + p for p in emulation] if emulation else [native_pattern(o, family)]


def families_apart(o: Op) -> set[str]:
    """The families whose required SASS differs from Hopper's."""
    return set(NAMED.get(o.key, {})) | set(EMULATED.get(o.key, {}))


# a backward branch: BRA 0x.., @P0 BRA 0x.., and sm_100+'s uniform BRA.U UP0, 0x..
_BACK = re.compile(r"BRA(?:\.U)?\s+(?:!?U?P\w+,\s*)?0x([0-9a-f]+)")


def timed_loop_body(text: str, pattern: str) -> list[str]:
    """The instructions of the loop of a function's SASS that holds the most matches of `pattern` (the timed
    loop; of equal loops the innermost)."""
    ins = ir.parse_sass(text)
    rx = re.compile(pattern)
    best: list[str] = []
    hits = 0
    for end, last in ins:
        m = _BACK.search(last)
        if not m or int(m.group(1), 16) > end:
            continue
        body = [t for a, t in ins if int(m.group(1), 16) <= a <= end]
        n = sum(bool(rx.search(t)) for t in body)
        if n > hits:
            best, hits = body, n
    return best


def mnemonics(body: list[str]) -> Counter[str]:
    """The loop's instructions counted by mnemonic with its modifiers (a guard predicate dropped)."""
    return Counter(t.split()[1 if t.startswith("@") else 0] for t in body)


def _name(pattern: str) -> str:
    return re.sub(r"\\(.)", r"\1", pattern.removeprefix(_NOT_IN)).strip()


def sass_label(text: str | None, o: Op, family: str, arch: str) -> str:
    """Native or emulated, read from the timed loop of isa_ilp1 as built for this GPU, with the instructions of
    a quarter of its steps or more (not the loop's counter and branch); `text` None (no disassembler): from
    the SASS the variant declares for the family (checked wherever a disassembler runs)."""
    if text is None:
        kind = "emulated" if family in EMULATED.get(o.key, {}) else "native"
        return f"{kind} on {arch} by its declared SASS (not disassembled here)"
    body = timed_loop_body(text, required(o, family)[0])
    if not body:
        return ""
    ran = ", ".join(f"{n} {name}" for name, n in mnemonics(body).most_common() if n >= o.body // 4)
    missing = [p for p in (native_pattern(o, family), *NATIVE_ALSO.get(o.key, ())) if not _found(p, body)]
    if missing:
        return f"emulated on {arch}: no {_name(missing[0])} in the timed loop, which runs {ran} per {o.body} steps"
    return f"native on {arch}: the timed loop runs {ran} per {o.body} steps"


def _found(pattern: str, body: list[str]) -> bool:
    rx = re.compile(pattern if pattern.startswith(_NOT_IN) else _NOT_IN + pattern)
    return any(rx.search(t) for t in body)
