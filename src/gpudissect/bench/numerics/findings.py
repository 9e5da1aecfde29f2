"""What the probes of one instruction found: Findings (the decided parameters, and their
gpudissect.numerics.model.TCParams fields) and probe_instruction, which runs the probe stages of
probes.py and multiblock.py in order, each stage built on what the earlier ones decided."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from .common import FMT, Instr
from .evaluator import Hyp
from .multiblock import (
    c_add_probes,
    decide_layout,
    in_convert_probes,
    inter_prefer,
    inter_probes,
    interleave_of,
    layout_probes,
)
from .probe_kit import Probe, _pick, pick_preferred, run_probes
from .probes import (
    acc_bits_probes,
    align_probes,
    align_ref_probes,
    block_probes,
    c_probes,
    c_ref_probes,
    decide_acc_bits,
    decide_align_bits,
    decide_block,
    fp8_probes,
    normalize_probes,
    out_rounding_probes,
    rounding_probes,
    special_probes,
    subnormal_probes,
    tf32_probes,
)
from .runner import Runner


@dataclass
class Findings:
    ins: Instr
    hyp: Hyp
    decided: dict[str, Any] = field(default_factory=dict)  # param -> value (str/int) or None
    notes: dict[str, str] = field(default_factory=dict)
    probes: list[Probe] = field(default_factory=list)
    specials: dict[str, str] = field(default_factory=dict)
    perm: list[int] | None = None  # k index of each block-ordered position (None: contiguous)

    def params(self) -> dict[str, Any]:
        """Fields of gpudissect.numerics.model.TCParams (its names: floor alignment = truncation toward
        -inf; C added after the products = c_in_first_block False; rounding rup/rdown = ru/rd)."""
        d, h, ins = self.decided, self.hyp, self.ins
        rmap = {"rne": "rne", "rtz": "rtz", "rup": "ru", "rdown": "rd"}
        out_r = rmap.get(d.get("out_rounding") or "", "rne")
        p: dict[str, Any] = {
            "in_fmt": ins.a,
            "acc_fmt": ins.c,
            "k": ins.k,
            "block_size": h.block_size,
            "c_in_first_block": h.c_position == "first",
            "align_frac_bits": h.align_frac_bits + (1 if d.get("align_ref") == "nominal" else 0),
            "align_rounding": "rne" if h.align_rounding == "rne" else "truncate",
            "align_truncation": "toward_minus_inf" if h.align_rounding == "floor" else "toward_zero",
            "normalize": h.normalize,
            "out_rounding": out_r,
            "inter_block_rounding": rmap.get(h.inter_rounding or "", out_r),
            # the model counts bits below the nominal exponent (ea + eb + 1), one above a power of two's
            "align_ref": "nominal" if d.get("align_ref") == "nominal" else "exact",
            "subnormal_in": d.get("subnormal_in") or "keep",
            "subnormal_out": d.get("subnormal_out") or "keep",
            # between blocks: what the inter_block probes found (one block: never used; f32 as the
            # evaluator assumes)
            "inter_fmt": h.inter_fmt if h.inter_fmt in ("f32", "f16", "e8m13") else "f32",
            # the probe evaluator aligns C to its exact leading bit + c_ref_shift; the model's nominal
            # reference of a product is ea + eb + 1, so C aligned like a product is c_ref_offset 1 there
            "c_ref_offset": (d.get("c_ref_shift") or 0) + (1 if d.get("align_ref") == "nominal" else 0),
        }
        if d.get("out_man_bits") is not None:
            p["out_man_bits"] = d["out_man_bits"]
        if d.get("block_interleave"):
            p["block_interleave"] = d["block_interleave"]
        if h.c_position == "separate" and d.get("c_add") == "ieee_rne":  # C by one FADD/HADD2 after the products
            p["c_add"], p["out_rounding"] = "ieee", "rne"
        if d.get("in_convert") == "f16":
            p["in_convert"] = "f16"
        sub_c = next((pr for pr in self.probes if pr.param == "subnormal_out" and "C" in pr.label), None)
        if sub_c is not None and d.get("subnormal_out"):
            p["subnormal_c"] = d["subnormal_out"]
        nan = next(
            (pr for pr in self.probes if pr.label in ("inf*0", "NaN*1") and pr.got is not None and math.isnan(pr.got)),
            None,
        )
        if nan is not None:
            p["nan_out"] = nan.got_bits
        ovf = next((pr for pr in self.probes if "(overflow" in pr.label), None)
        if ovf is not None and ovf.matches():
            # Hopper: inf also under rtz (IEEE would give max finite): the model's "inf_always"
            p["overflow"] = ("inf" if out_r == "rne" else "inf_always") if ovf.matches() == ["inf"] else "saturate"
        z = next((pr for pr in self.probes if pr.label == "(-0)*1 + (-0)"), None)
        if z is not None and z.got_bits is not None:
            # matches() lists the hypotheses the answer fits ("ieee" -0 or "positive" +0): a non-empty
            # list does not mean ieee (the H100 gives +0, and +0 for every zero result)
            p["zero_sign"] = "positive" if z.matches() == ["positive"] else "ieee"
        return p


def probe_instruction(runner: Runner, ins: Instr) -> Findings:
    """All probes of one instruction, each stage using what the previous ones found. The first stage finds
    which k indices share a block; every later probe places its terms by block (f.perm)."""
    f = Findings(ins, Hyp(block_size=ins.k))
    stage = layout_probes(ins)
    run_probes(runner, ins, stage)
    f.probes += stage
    perm, note = decide_layout(stage, ins.k)
    f.notes["layout"] = note
    f.perm = perm if perm is not None and perm != list(range(ins.k)) else None

    def run(stage: list[Probe]) -> list[Probe]:
        run_probes(runner, ins, stage, f.perm)
        f.probes += stage
        return stage

    stage = run(align_probes(ins, f.hyp))
    bits, note = decide_align_bits(stage)
    f.decided["align_frac_bits"], f.notes["align_frac_bits"] = bits, note
    if bits is not None:
        f.hyp = replace(f.hyp, align_frac_bits=bits)
        stage = run(align_ref_probes(ins, bits)[: bits + 1])
        f.decided["align_ref"], f.notes["align_ref"] = _pick(stage, "align_ref")
    for param, make in (("align_rounding", rounding_probes), ("normalize", normalize_probes)):
        stage = run(make(ins, f.hyp))
        val, note = _pick(stage, param)
        f.decided[param], f.notes[param] = val, note
        if val is not None:
            f.hyp = replace(f.hyp, **{param: val})
    stage = run(block_probes(ins, f.hyp))
    blk, note = decide_block(stage, ins.k) if stage else (None, "no probe possible")
    f.decided["block_size"], f.notes["block_size"] = blk, note
    if blk is not None:
        f.hyp = replace(f.hyp, block_size=blk)
        g = interleave_of(perm, ins.k, blk) if perm is not None else None
        f.decided["block_interleave"] = g
        f.notes["block_interleave"] = (
            "ok" if g is not None else "the layout fits no interleave"
        ) + f" ({f.notes['layout']})"
    if f.hyp.block_size < ins.k:  # the sum carried between blocks (before anything that reads D's last bits)
        stage = run(inter_probes(ins, f.hyp))
        val, note = pick_preferred(stage, inter_prefer(ins, f.hyp)) if stage else (None, "no probe possible")
        f.decided["inter_block"], f.notes["inter_block"] = val, note
        if val is not None and val != "exact":
            fmt, r = val.split("/")
            f.hyp = replace(f.hyp, inter_fmt=fmt, inter_rounding=r)
        elif val == "exact":
            f.hyp = replace(f.hyp, inter_fmt="exact")
    # how many fraction bits D keeps (before out_rounding: its probes' predictions depend on it)
    stage = run(acc_bits_probes(ins, f.hyp))
    mb, note = decide_acc_bits(stage, FMT[ins.c][1])
    f.decided["out_man_bits"], f.notes["out_man_bits"] = mb, note
    if mb is not None:
        f.hyp = replace(f.hyp, out_man_bits=mb)
    for param, make in (("c_position", c_probes), ("c_add", c_add_probes), ("out_rounding", out_rounding_probes)):
        stage = run(make(ins, f.hyp))
        if param == "c_add":
            if not stage:
                continue
            val, note = pick_preferred(stage, ["ieee_rne", "fused", "ieee_rtz"])
        else:
            val, note = _pick(stage, param)
        if (
            param == "c_position"
            and val is None
            and f.hyp.block_size >= ins.k
            and {"first", "last"} <= set(stage[0].matches() if stage else ())
        ):
            val, note = "first", "one block: C is fused with all K products (first = last)"
        if param == "out_rounding" and not stage:
            note = (
                f"n/a: the product sum is rounded as between blocks ({f.decided.get('inter_block')}), then C added "
                f"({f.decided.get('c_add')})"
                if f.hyp.c_position == "separate"
                else f"n/a: no sum of one block needs rounding to {ins.c} (align_frac_bits {f.hyp.align_frac_bits})"
            )
        f.decided[param], f.notes[param] = val, note
        if val is not None:
            f.hyp = replace(f.hyp, **{param: val})
    # how C aligns when it is the largest term (after out_rounding: the probes read D's last ulp)
    stage = run(c_ref_probes(ins, f.hyp))
    val, note = _pick(stage, "c_ref_shift")
    if val is None and stage and all(len(set(p.predictions.values())) == 1 for p in stage):
        note = "n/a: no probe tells the hypotheses apart"
    f.decided["c_ref_shift"], f.notes["c_ref_shift"] = (int(val) if val is not None else None), note
    if val is not None:
        f.hyp = replace(f.hyp, c_ref_shift=int(val))
    if ins.a in ("e4m3", "e5m2"):  # do subnormal fp8 inputs align by fp8's nominal exponent or as f16?
        stage = run(in_convert_probes(ins, f.hyp, f.decided.get("align_ref") == "nominal"))
        why = (
            "its subnormals are f16 subnormals, with the same nominal exponent"
            if ins.a == "e5m2"
            else f"no input within e4m3's range tells them apart at alignment width {f.hyp.align_frac_bits + 1}"
        )
        val, note = _pick(stage, "in_convert") if stage else (None, f"n/a: {why}; either gives the same D")
        f.decided["in_convert"], f.notes["in_convert"] = val, note
    sub = run(subnormal_probes(ins))
    for param in ("subnormal_in", "subnormal_out"):
        f.decided[param], f.notes[param] = _pick([p for p in sub if p.param == param], param)
    extra = run(special_probes(ins) + tf32_probes(ins) + fp8_probes(ins))
    for p in extra:
        m = p.matches()
        f.specials[p.label] = f"0x{p.got_bits:0{FMT[ins.c][3] // 4}X} ({p.got!r})" + (
            f" = {'/'.join(m)}" if m else " (no prediction)"
        )
    for param in ("tf32_low_bits",):
        ps = [p for p in extra if p.param == param]
        if ps:
            f.decided[param], f.notes[param] = _pick(ps, param)
    return f
