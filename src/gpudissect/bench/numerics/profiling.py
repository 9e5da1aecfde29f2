"""The `tc_profiling` benchmark, Sun et al. (001) §8: element-wise errors of multiplication, inner-product
addition and accumulation (Tables 12-15) and chain matrix multiplication (Fig. 17), on mma and wgmma, plus
fp8 on wgmma."""

from __future__ import annotations

import math

import numpy as np

from ...models import Point
from ..context import BenchContext
from ..registry import Needs, benchmark
from .common import SINGLE_BLOCK_INSTRS, SPECS, Instr, fmt_max, round_values, to_values
from .runner import Runner
from .targets import runnable_instrs

PROFILE_SEED = 0  # the paper uses one fixed seed for every type; its value is not stated
OPS = ("mul", "add", "acc")  # a0*b0 | a0*b0 + a1*b1 | a0*b0 + c0


def profile_inputs(op: str, trials: int, seed: int = PROFILE_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fp32 normal(0, 1) values (the same sequence for every type): a (trials, 2), b (trials, 2), c (trials,)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((trials, 2)).astype(np.float32)
    b = rng.standard_normal((trials, 2)).astype(np.float32)
    c = rng.standard_normal(trials).astype(np.float32)
    if op == "mul":
        a[:, 1] = b[:, 1] = c[:] = 0
    elif op == "add":
        c[:] = 0
    else:
        a[:, 1] = b[:, 1] = 0
    return a, b, c


def cpu_fp32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The paper's CPU baseline: fp32 arithmetic, products then sums in order."""
    p = a.astype(np.float32) * b.astype(np.float32)
    return (p[:, 0] + p[:, 1]) + c.astype(np.float32)


def profile_stats(gpu: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    err = np.abs(gpu.astype(np.float64) - ref.astype(np.float64))
    return {
        "mean_abs_err": float(np.mean(err)),
        "max_abs_err": float(np.max(err)),
        "frac_nonzero": float(np.mean(err > 0)),
    }


def profile_case(runner: Runner, ins: Instr, op: str, init: str, trials: int) -> dict[str, dict[str, float]]:
    a32, b32, c32 = profile_inputs(op, trials)
    ab, bb, cb = round_values(ins.a, a32), round_values(ins.a, b32), round_values(ins.c, c32)
    if init == "low":  # values initialised in the low-precision type: the CPU sees the same values
        a32, b32 = to_values(ins.a, ab).astype(np.float32), to_values(ins.a, bb).astype(np.float32)
        c32 = to_values(ins.c, cb).astype(np.float32)
    K = ins.k
    a = np.zeros((trials, K), np.uint32)
    b = np.zeros((trials, K), np.uint32)
    a[:, :2], b[:, :2] = ab, bb
    d = to_values(ins.c, runner.dots(ins, a, b, cb))
    ref = cpu_fp32(a32, b32, c32)
    out = {"vs_fp32": profile_stats(d, ref)}
    if ins.c == "f16":
        out["vs_fp32cvtf16"] = profile_stats(d, ref.astype(np.float16))
    return out


def chain_run(
    runner: Runner, ins: Instr, init: str, trials: int, n_max: int, seed: int = 1
) -> tuple[list[float], list[float]]:
    """D_{i+1} = D_i x B_i (Fig. 17): D (M x 8) becomes the first 8 columns of the next A (converted to
    the input type, RNE; fp8 saturates). Returns per N: mean relative l2 error over the finite trials,
    fraction of trials that overflowed (inf/NaN, or fp8 saturation)."""
    rng = np.random.default_rng(seed)
    m, k, n = ins.m, ins.k, ins.n
    a_val = rng.standard_normal((trials, m, k)).astype(np.float32)
    a_bits = round_values(ins.a, a_val)
    ref = to_values(ins.a, a_bits).astype(np.float32) if init == "low" else a_val
    errs, over = [], []
    bad = np.zeros(trials, bool)
    for step in range(n_max):
        b_val = rng.standard_normal((trials, k, n)).astype(np.float32)
        if step > 0:
            b_val[:, n:, :] = 0  # A holds D in its first 8 columns only
        b_bits = round_values(ins.a, b_val)
        b_ref = to_values(ins.a, b_bits).astype(np.float32) if init == "low" else b_val
        c_bits = np.zeros((trials, m, n), np.uint32)
        d = to_values(ins.c, runner.run(ins, a_bits, b_bits, c_bits))
        ref = np.matmul(ref, b_ref, dtype=np.float32)
        bad |= ~np.isfinite(d).all(axis=(1, 2))
        num = np.sqrt(((d - ref) ** 2).sum(axis=(1, 2)))
        den = np.sqrt((d**2).sum(axis=(1, 2)))
        ok = ~bad & (den > 0)
        errs.append(float(np.mean(num[ok] / den[ok])) if ok.any() else float("nan"))
        over.append(float(bad.mean()))
        nxt = np.zeros((trials, m, k), np.float64)
        nxt[:, :, :n] = d
        if ins.a in ("e4m3", "e5m2"):
            bad |= (np.abs(nxt) > fmt_max(ins.a)).any(axis=(1, 2))
        a_bits = round_values(ins.a, nxt)
        ref_next = np.zeros((trials, m, k), np.float32)
        ref_next[:, :, :n] = ref
        ref = ref_next
    return errs, over


PROFILE_INSTRS = [i for i in SINGLE_BLOCK_INSTRS if i.a in ("f16", "bf16", "tf32") or i.c == "f32"]


@benchmark(
    name="tc_profiling",
    title="Element-wise error profiling (Tables 12-15) and chain matrix multiplication (Fig. 17), mma and wgmma",
    axes={
        "instruction": "mma m16n8k16/k8 (compute capability 8.0), wgmma m64n8k* (sm_90a only; skipped elsewhere)",
        "op": "mul | add | acc",
        "init": "low | fp32",
        "N": "chain length 1..12 (quick) / 1..20 (full)",
    },
    kernels=[SPECS[i] for i in PROFILE_INSTRS],
    timeout_s=300,
    needs=Needs((8, 0)),
    paper="001 §8 (Sun et al.): Tables 12-15, Fig. 17",
)
def tc_profiling(ctx: BenchContext) -> None:
    runner = Runner(ctx)
    trials = 1000 if ctx.quick else 10000
    chain_trials, n_max = (200, 12) if ctx.quick else (1000, 20)
    todo = runnable_instrs(ctx, PROFILE_INSTRS)  # the others are recorded as skipped, with the reason
    for idx, ins in enumerate(todo):
        ctx.progress(idx, len(todo), f"profiling {ins.key}")
        for init in ("low", "fp32"):
            iname = f"init_{ins.a}" if init == "low" else "init_fp32"
            pts = []
            for j, op in enumerate(OPS):
                res = profile_case(runner, ins, op, init, trials)
                for ref, st in res.items():
                    for stat, v in st.items():
                        key = f"num.profile.{ins.family}.{ins.tname}.{iname}.{op}.{stat}" + (
                            "" if ref == "vs_fp32" else f".{ref}"
                        )
                        ctx.figure(
                            key,
                            v,
                            "abs error" if "err" in stat else "fraction",
                            "measured",
                            f"{trials} trials, normal(0,1) fp32 values (seed {PROFILE_SEED}), error vs CPU fp32"
                            + (" converted to f16" if ref != "vs_fp32" else ""),
                        )
                pts.append(
                    Point(
                        j,
                        res["vs_fp32"]["mean_abs_err"],
                        extra={"label": op, **{f"{r}.{s}": v for r, st in res.items() for s, v in st.items()}},
                    )
                )
            ctx.series(
                f"profile.{ins.key}.{iname}",
                "operation",
                "",
                "mean |error|",
                "abs",
                pts,
                plot="bar",
                figure=f"profile.{ins.family}",
            )
            errs, over = chain_run(runner, ins, init, chain_trials, n_max)
            # the line stops where every trial has overflowed (Fig. 17's fp16 line stops at N = 10)
            cpts = [
                Point(i + 1, e, extra={"overflow_fraction": o})
                for i, (e, o) in enumerate(zip(errs, over))
                if math.isfinite(e)
            ]
            ctx.series(
                f"chain.{ins.key}.{iname}",
                "chain length N",
                "",
                "relative l2 error",
                "",
                cpts,
                plot="logy",
                figure=f"chain.{ins.family}",
            )
            first_over = next((i + 1 for i, o in enumerate(over) if o > 0), None)
            ctx.figure(
                f"num.chain.{ins.key}.{iname}.rel_err_n1",
                errs[0] if math.isfinite(errs[0]) else "overflow",
                "",
                "measured",
                f"mean over {chain_trials} trials of the relative l2 error (Sun eq. 1) after one step",
            )
            last = errs[-1] if math.isfinite(errs[-1]) else "all trials overflowed"
            ctx.figure(
                f"num.chain.{ins.key}.{iname}.rel_err_n{n_max}",
                last,
                "",
                "measured",
                f"mean over the {chain_trials} trials still finite",
            )
            ctx.figure(
                f"num.chain.{ins.key}.{iname}.first_overflow_n",
                first_over if first_over else "none",
                "",
                "measured",
                "smallest N at which a trial overflowed (inf/NaN in D; fp8: D beyond the input range)",
            )
