"""The `tc_model_agreement` benchmark: hardware bits vs gpudissect.numerics.model.dot, with the parameters
the probes of the same run found, on corner-stressing random dot products."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from ...models import Point
from ..context import BenchContext
from ..registry import Needs, Param, benchmark
from .common import CHAIN, SPECS, Instr, in_bits, to_values
from .findings import Findings
from .inputs import SCENARIOS, agreement_inputs, flatten_dots
from .probe_bench import _y, probe_todo, run_all_probes, run_chain_probes
from .runner import Runner


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


def chain_params(single: dict[str, Any], mode: str | None, K: int) -> dict[str, Any]:
    """Model parameters of a chain of instructions from what the probes found: "separate" (each D rounded
    into acc_fmt and passed on as the next C) is the model's own chaining of an instruction of k over a
    longer K; the other modes make the chain one instruction of K with the sum between the k-blocks kept
    in f32 (wide), or one block (fused). None / exact: the model cannot express it, separate is compared."""
    if mode in (None, "separate", "exact"):
        return dict(single)
    out = {**single, "k": K}
    if mode == "fused":
        out["block_size"] = K
    else:
        fmt, r = mode.split(":")[1].split("/")
        out["inter_fmt"], out["inter_block_rounding"] = fmt, {"rup": "ru", "rdown": "rd"}.get(r, r)
    return out


def _seed(ctx: BenchContext) -> int:
    """--set seed=N repeats a run's inputs; by default every run draws a fresh one (recorded)."""
    given = (getattr(ctx, "params", None) or {}).get("seed")
    # below 2^53: the figure store keeps numbers as doubles, and the seed must come back exactly
    return int(given) if given is not None else int(np.random.SeedSequence().entropy % (1 << 53))


def several_blocks(f: Findings) -> bool:
    """Whether the probes found the instruction's K over more than one block."""
    return f.hyp.block_size < f.ins.k


def blocks_text(found: dict[Instr, Findings]) -> str:
    """The instructions of several blocks, with what the probes found: 'mma.e4m3_f32 (2 blocks of 16), ...'."""
    return ", ".join(
        f"{ins.key} ({-(-ins.k // f.hyp.block_size)} blocks of {f.hyp.block_size})"
        for ins, f in found.items()
        if several_blocks(f)
    )


def skipped_note(ctx: BenchContext, found: dict[Instr, Findings], chains: dict[Instr, Any]) -> str:
    """What was not compared on this GPU (its variants are recorded as skipped with the reason)."""
    ran = {SPECS[i].variant for i in (*found, *chains)}
    gone = [s.variant for s in SPECS.values() if s.variant not in ran]
    return f"not run on {ctx.target.arch} (skipped variants): {', '.join(gone)}" if gone else ""


@dataclass
class _Compared:
    rate: float
    dots: int
    bad: int


def _compare(
    ctx: BenchContext,
    runner: Runner,
    ins: Instr,
    params: dict[str, Any],
    n_inst: int,
    rng: np.random.Generator,
    store: dict[str, np.ndarray],
    store_key: str,
    keep_n: int,
    figure: str,
    seed: int,
) -> _Compared:
    """Hardware vs model on n_inst instances of random inputs; figures, a disagreement series and test
    vectors (every disagreement first, then a random sample, keep_n rows)."""
    from ...numerics.model import dot as model_dot  # the package exports a `model` function too

    A, B, C, sc = agreement_inputs(ins, n_inst, rng)
    D = runner.run(ins, A, B, C)
    a, b, c, d = flatten_dots(ins, A, B, C, D)
    scen = np.repeat(sc, ins.per_inst)
    m = model_dot(_tcparams(params), a, b, c).astype(np.uint32)
    eq, nan_payload = same_bits(ins.c, d, m)
    agree = eq | nan_payload
    rate = float(agree.mean())
    bad = np.flatnonzero(~agree)
    pts = []
    for j, i in enumerate(bad[:20]):
        pts.append(
            Point(
                j,
                _y(float(to_values(ins.c, d[i : i + 1])[0])),
                extra={
                    "scenario": SCENARIOS[scen[i]],
                    "a": " ".join(f"{x:X}" for x in a[i]),
                    "b": " ".join(f"{x:X}" for x in b[i]),
                    "c": f"{c[i]:X}",
                    "hardware": f"{d[i]:X}",
                    "model": f"{m[i]:X}",
                },
            )
        )
    ctx.series(
        f"agreement.{ins.key}.disagreements",
        "#",
        "",
        "D (hardware)",
        "value",
        pts,
        plot="bar",
        figure=figure,
        params=json.dumps(params),
        seed=str(seed),
        K=ins.K,
    )
    by_sc = {SCENARIOS[s]: float(agree[scen == s].mean()) for s in range(len(SCENARIOS)) if (scen == s).any()}
    ctx.figure(
        f"num.model.{ins.key}.agreement_rate",
        rate,
        "fraction",
        "measured",
        f"{d.size} dots of K={ins.K} (seed {seed}); by scenario {json.dumps(by_sc)}; NaN payload differences "
        f"counted as agreeing: {int(nan_payload.sum())}",
    )
    ctx.figure(f"num.model.{ins.key}.disagreements", int(bad.size), "dots", "measured", "hardware != model bits")
    keep = np.concatenate([bad, rng.choice(np.flatnonzero(agree), min(keep_n, int(agree.sum())), replace=False)])[
        :keep_n
    ]
    dt_in = {8: np.uint8, 16: np.uint16, 32: np.uint32}[in_bits(ins.a)]
    dt_acc = np.uint16 if ins.c == "f16" else np.uint32
    for nm_, arr, dt in (("a", a, dt_in), ("b", b, dt_in), ("c", c, dt_acc), ("d", d, dt_acc)):
        store[f"{store_key}.{nm_}"] = np.ascontiguousarray(arr[keep]).astype(dt)  # smallest container
    store[f"{store_key}.params"] = np.array(json.dumps(params))  # what the probes of this run found
    return _Compared(rate, int(d.size), int(bad.size))


@benchmark(
    name="tc_model_agreement",
    title="gpudissect.numerics model vs hardware, bit for bit, on corner-stressing random dot products, "
    "one block and several (an instruction of several blocks, e.g. fp8 mma k32 on sm_90; chains of 4 instructions)",
    axes={
        "instruction": "every mma/wgmma instruction of tc_probes this GPU runs (the others skipped by name)",
        "samples": "2^17 (quick) / 2^20 (full) dots each",
        "multi-block": "the instructions whose probes found several blocks, and chains of 4 of the others: "
        "2^14 (quick) / 2^16 (full) dots each",
    },
    kernels=list(SPECS.values()),
    timeout_s=600,
    needs=Needs((8, 0)),
    params={
        "seed": Param(
            None,
            "random seed of the inputs (default: a fresh one per run, recorded as num.model.seed)",
            int,
            lambda v, facts: None if v >= 0 else "seed must be >= 0",
        )
    },
    paper="issue 4 §3 / issue 9 §6: parameters from this run's probes, not presets",
)
def tc_model_agreement(ctx: BenchContext) -> None:
    try:
        from ...numerics.model import dot as _  # noqa: F401
    except ImportError as e:
        ctx.check(False, f"gpudissect.numerics.model is not importable ({e}): the model agreement needs it")
        raise
    runner = Runner(ctx)
    todo_instrs, chains_todo = probe_todo(ctx)  # what this GPU cannot run is recorded as skipped
    found = run_all_probes(ctx, runner, todo_instrs, record=False)
    chains = run_chain_probes(ctx, runner, found, chains_todo, record=False)
    skipped = skipped_note(ctx, found, chains)
    seed = _seed(ctx)
    rng = np.random.default_rng(seed)
    ctx.figure(
        "num.model.seed",
        seed,
        "",
        "measured",
        "random seed of this run's agreement inputs (fresh per run; --set seed=N repeats them)",
    )
    store: dict[str, np.ndarray] = {}
    # only what ran is compared: one block where the probes found the instruction's whole K in one block, several
    # where they found more (on sm_90: fp8 mma.sync m16n8k32, two blocks), and the chains
    single = [(ins, f.params()) for ins, f in found.items() if not several_blocks(f)]
    multi = [(ins, f.params()) for ins, f in found.items() if several_blocks(f)] + [
        (ci, chain_params(found[ci.single].params(), cf.mode, ci.K)) for ci, cf in chains.items()
    ]
    todo = len(single) + len(multi)

    def compare_each(
        todo_here: list[tuple[Instr, dict[str, Any]]], done: int, samples: int, keep_n: int, figure: str
    ) -> list[_Compared]:
        """_compare of each (instruction or chain, its parameters) on about `samples` dot products (at least
        one instance per scenario); progress counted on from `done`."""
        out = []
        for idx, (ins, params) in enumerate(todo_here):
            ctx.progress(done + idx, todo, f"agreement {ins.key}")
            key = f"chain{ins.chain}:{ins.ptx}" if ins.chain > 1 else ins.ptx
            n = max(len(SCENARIOS), samples // ins.per_inst)
            out.append(_compare(ctx, runner, ins, params, n, rng, store, key, keep_n, figure, seed))
        return out

    res = compare_each(single, 0, 1 << (17 if ctx.quick else 20), 4096, "agreement")
    ctx.figure(
        "num.model.agreement_rate",
        min((r.rate for r in res), default=float("nan")),
        "fraction",
        "measured",
        f"minimum over instructions of the bit-identical fraction (one block: K = the instruction's k; seed {seed}): "
        + (", ".join(ins.key for ins, _ in single) or "none ran"),
        note=skipped,
    )
    ctx.figure(
        "num.model.samples", sum(r.dots for r in res), "dots", "measured", "dot products compared, all instructions"
    )
    # on sm_90, 16 instructions and chains: >= 1e6 dots in full mode
    res = compare_each(multi, len(single), 1 << (14 if ctx.quick else 16), 512, "agreement_multi_block")
    dots, bad = sum(r.dots for r in res), sum(r.bad for r in res)
    ctx.figure(
        "num.model.multi_block_agreement_rate",
        (dots - bad) / dots if dots else float("nan"),
        "fraction",
        "measured",
        f"bit-identical fraction over all {dots} dot products whose K spans several blocks: "
        f"{blocks_text(found) or 'no instruction of several blocks'} and chains of {CHAIN} of each of "
        f"{len(chains)} one-block instructions (D -> next C), random corner-stressing inputs (seed {seed}), "
        f"model parameters from this run's probes; lowest per instruction "
        f"{min((r.rate for r in res), default=float('nan')):.6f}",
        note=skipped,
    )
    ctx.figure(
        "num.model.multi_block_samples",
        dots,
        "dots",
        "measured",
        f"dot products with K over several blocks compared ({len(res)} instructions / chains)",
    )
    write_vectors(store)
