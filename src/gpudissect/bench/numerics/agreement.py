"""The `tc_model_agreement` benchmark: hardware bits vs gpudissect.numerics.model.dot, with the parameters
the probes of the same run found, on corner-stressing random dot products."""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from ...models import Point
from ..context import BenchContext
from ..registry import benchmark
from .common import SPECS, SUITE, Runner, in_bits, to_values
from .inputs import SCENARIOS, agreement_inputs, flatten_dots
from .probe_bench import _y, run_all_probes

def same_bits(fmt: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bit-identical, both NaN with different payloads)."""
    eq = x == y
    nan = np.isnan(to_values(fmt, x)) & np.isnan(to_values(fmt, y))
    return eq, nan & ~eq


def write_vectors(store: dict[str, np.ndarray]) -> None:
    path = os.environ.get("GPUDISSECT_VECTORS_OUT")
    if not path or not store:
        return
    p = Path(path)
    if p.suffix != ".npz":
        p.mkdir(parents=True, exist_ok=True)
        p = p / "vectors.npz"
    else:
        p.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(p, **store)


def _tcparams(params: dict[str, Any]) -> Any:
    from ...numerics.model import TCParams  # helper A's model (lazy: the suite must load without it)

    names = {f.name for f in fields(TCParams)}
    return TCParams.from_dict({k: v for k, v in params.items() if k in names})


@benchmark(
    suite=SUITE, name="tc_model_agreement",
    title="gpudissect.numerics model vs hardware, bit for bit, on corner-stressing random dot products",
    axes={"instruction": "every mma/wgmma instruction of tc_probes", "samples": "2^17 (quick) / 2^20 (full) dots each"},
    kernels=list(SPECS.values()), timeout_s=600, min_cc=(8, 0),
    paper="issue 4 §3: parameters from this run's probes, not presets",
)
def tc_model_agreement(ctx: BenchContext) -> None:
    try:
        from ...numerics.model import dot as model_dot  # the package exports a `model` function too
    except ImportError as e:
        ctx.check(False, f"gpudissect.numerics.model is not importable ({e}): the model agreement needs it")
        raise
    runner = Runner(ctx)
    found = run_all_probes(ctx, runner, record=False)
    samples = 1 << (17 if ctx.quick else 20)
    rng = np.random.default_rng(20240)
    rates: list[float] = []
    total = 0
    store: dict[str, np.ndarray] = {}
    for idx, (ins, f) in enumerate(found.items()):
        ctx.progress(idx, len(found), f"agreement {ins.key}")
        n_inst = max(len(SCENARIOS), samples // ins.per_inst)
        A, B, C, sc = agreement_inputs(ins, n_inst, rng)
        D = runner.run(ins, A, B, C)
        a, b, c, d = flatten_dots(ins, A, B, C, D)
        scen = np.repeat(sc, ins.per_inst)
        params = _tcparams(f.params())
        m = model_dot(params, a, b, c).astype(np.uint32)
        eq, nan_payload = same_bits(ins.c, d, m)
        agree = eq | nan_payload
        rate = float(agree.mean())
        rates.append(rate)
        total += d.size
        bad = np.flatnonzero(~agree)
        pts = []
        for j, i in enumerate(bad[:20]):
            pts.append(Point(j, _y(float(to_values(ins.c, d[i:i + 1])[0])), extra={
                "scenario": SCENARIOS[scen[i]], "a": " ".join(f"{x:X}" for x in a[i]), "b": " ".join(f"{x:X}" for x in b[i]),
                "c": f"{c[i]:X}", "hardware": f"{d[i]:X}", "model": f"{m[i]:X}"}))
        ctx.series(f"agreement.{ins.key}.disagreements", "#", "", "D (hardware)", "value", pts, plot="bar",
                   figure="agreement", params=json.dumps(f.params()))
        by_sc = {SCENARIOS[s]: float(agree[scen == s].mean()) for s in range(len(SCENARIOS)) if (scen == s).any()}
        ctx.figure(f"num.model.{ins.key}.agreement_rate", rate, "fraction", "measured",
                   f"{d.size} dots; by scenario {json.dumps(by_sc)}; NaN payload differences counted as agreeing: "
                   f"{int(nan_payload.sum())}")
        ctx.figure(f"num.model.{ins.key}.disagreements", int(bad.size), "dots", "measured", "hardware != model bits")
        # test vectors: every disagreement first, then a random sample, up to 4096
        keep = np.concatenate([bad, rng.choice(np.flatnonzero(agree), min(4096, int(agree.sum())), replace=False)])[:4096]
        dt_in = {8: np.uint8, 16: np.uint16, 32: np.uint32}[in_bits(ins.a)]
        dt_acc = np.uint16 if ins.c == "f16" else np.uint32
        for nm_, arr, dt in (("a", a, dt_in), ("b", b, dt_in), ("c", c, dt_acc), ("d", d, dt_acc)):
            store[f"{ins.ptx}.{nm_}"] = np.ascontiguousarray(arr[keep]).astype(dt)  # smallest container
        store[f"{ins.ptx}.params"] = np.array(json.dumps(f.params()))  # what the probes of this run found
    ctx.figure("num.model.agreement_rate", min(rates) if rates else float("nan"), "fraction", "measured",
               "minimum over instructions of the bit-identical fraction")
    ctx.figure("num.model.samples", total, "dots", "measured", "dot products compared, all instructions")
    write_vectors(store)
