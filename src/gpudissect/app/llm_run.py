"""LLM inference (000 Table XV) with its roofline: ceilings measured first in the same process, then
per (model size, type) transformers' generate and our CUDA-graph decode, each checked, and prefill /
decode put against the bounds the ceilings allow. Called by bench/app/workloads.py with torch imported."""

from __future__ import annotations

import gc
import statistics
from typing import Any

from ..analysis import roofline
from ..models import Point
from . import llm
from .deps import set_tf32
from .timing import dram_copy_gbps, matmul_tflops

TYPES = ("fp32", "bf16", "fp8")
# The teacher-forced check. A random-weight model's logits are nearly flat (top-2 gaps of a fraction of
# a standard deviation), so the rounding of the decode path (8 rows a GEMM, its own activation scales)
# against the full forward (2040 rows) flips the argmax at some positions. The flips grow with the
# format's rounding: the run of 2026-11-23 saw at most 0 (FP32), 0.14-0.20 (BF16, 2^-8) and 2.1-4.2
# (FP8 e4m3, 2^-4, 16 x BF16's) logit standard deviations, with 100%, 89-90% and 9-30% exact argmax.
# Tokens unrelated to the model would be the argmax with probability 1/32000. So: FP32/BF16 bound the
# largest gap; FP8, whose noise is too large for a gap bound that tells garbage apart, needs the exact
# argmax at least 1000 times more often than chance (3%).
GAP_TOL = {"fp32": 0.05, "bf16": 0.5}
MIN_EXACT = {"fp32": 0.99, "bf16": 0.5, "fp8": 0.03}


def check_tokens(kind: str, exact: float, gap: float) -> tuple[bool, str]:
    """Whether teacher-forced agreement (exact-argmax share, largest logit gap in std) passes for `kind`."""
    need = MIN_EXACT[kind]
    tol = GAP_TOL.get(kind)
    ok = exact >= need and (tol is None or gap <= tol)
    rule = f"exact argmax >= {need:.0%}" + (f" and largest gap <= {tol} std" if tol is not None else "")
    return ok, f"{exact:.1%} exact argmax, largest gap {gap:.3g} logit std (needs {rule})"


LINEAR_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp8": 1.0}
OTHER_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp8": 2.0}  # LM head, norms, KV cache, activations
GEMM_CEILING = {"fp32": "fp32", "bf16": "bf16", "fp8": "fp8"}  # linear layers' rate
ATTN_CEILING = {"fp32": "fp32", "bf16": "bf16", "fp8": "bf16"}


# the CUDA-graph decode in quick mode: only where a README headline key needs it (7b bf16 graph tokens/s and
# decode fraction, 13b bf16 decode fraction; tests/bench/app checks this against dev/headline_keys/app.txt).
# Each other model's graph path (capture, a warm and two timed decodes, its check) stays in full mode.
QUICK_GRAPHS = frozenset({("7b", "bf16"), ("13b", "bf16")})
# quick mode's warm-ups: transformers' generate stopped after 8 new tokens (the prefill and 7 decode steps), our
# decode 7 replays after its prefill, where full mode runs each whole (3-8 s of the eager generate a model: ~20 s of
# the quick run). Each decode step is of the same shapes: llm.hf_generate and GraphDecoder.time say why.
QUICK_WARM_TOKENS = 8


def default_plan(quick: bool) -> dict[str, list[str]]:
    if quick:  # the headline keys' models only: FP32 for 3B, FP8 for 7B (55 s of the 151 s went to 3B and 13B FP8)
        return {"3b": ["fp32", "bf16"], "7b": ["bf16", "fp8"], "13b": ["bf16"]}
    return {s: list(TYPES) for s in ("3b", "7b", "13b")}


def _ceilings(ctx: Any, torch: Any, reps: int, fp8: bool = True) -> dict[str, float]:
    """DRAM copy and GEMM ceilings; the FP8 one only where the GPU has FP8 tensor cores (`fp8`)."""
    out: dict[str, float] = {}
    gbps, spread, how = dram_copy_gbps(torch, reps)
    out["dram"] = gbps
    ctx.figure("app.ceiling.dram_copy_gbps", round(gbps, 1), "GB/s", "measured", how, spread=spread)
    for kind in ("fp32", "bf16", "fp8") if fp8 else ("fp32", "bf16"):
        v, spread, how = matmul_tflops(torch, kind, reps)
        out[kind] = v
        ctx.figure(f"app.ceiling.matmul_{kind}_tflops", round(v, 1), "TFLOPS", "measured", how, spread=spread)
    ctx.progress(0, 1, f"ceilings: DRAM {gbps:.0f} GB/s, bf16 {out['bf16']:.0f} TFLOPS")
    return out


def run_llm(
    ctx: Any,
    torch: Any,
    transformers: Any,
    plan: dict[str, list[str]],
    batch: int,
    prompt: int,
    new: int,
    reps: int,
    graphs: bool,
    hf_compile: bool,
    fp8: bool = True,
    graph_only: frozenset[tuple[str, str]] | None = None,
) -> None:
    """`fp8`: the GPU runs FP8 GEMMs (the plan then may hold fp8; without, it holds none). `graph_only`: the
    (size, type) pairs that time the CUDA-graph decode too (None: all, with `graphs`)."""
    set_tf32(torch, False)
    ceil = _ceilings(ctx, torch, 5 if ctx.quick else 9, fp8)
    ver = f"torch {torch.__version__}, transformers {transformers.__version__}"
    tps: dict[str, list[Point]] = {}
    frac: dict[str, list[Point]] = {"prefill (generate)": [], "decode (generate)": [], "decode (CUDA graph)": []}
    total, done = sum(len(v) for v in plan.values()), 0
    for size, kinds in plan.items():
        shape = roofline.LLAMA[size]
        model, model_kind = None, None
        order = sorted(kinds, key=TYPES.index)  # fp32 first, then bf16, which fp8 converts in place
        for kind in order:
            done += 1
            base = f"app.llm.{size}.{kind}"
            try:
                if kind == "fp8" and model_kind == "bf16":
                    llm.to_fp8(torch, model)
                else:
                    model = None
                    gc.collect()
                    torch.cuda.empty_cache()
                    model = llm.build_model(
                        torch, transformers, shape, torch.float32 if kind == "fp32" else torch.bfloat16, "cuda", seed=0
                    )
                    if kind == "fp8":
                        llm.to_fp8(torch, model)
                model_kind = kind
                torch.cuda.reset_peak_memory_stats()  # from here: weights + what inference adds
                weights_gib = torch.cuda.memory_allocated() / 2**30
                ctx.progress(done - 1, total, f"{size} {kind}: model built ({weights_gib:.1f} GiB)")
                _measure(
                    ctx,
                    torch,
                    transformers,
                    model,
                    shape,
                    size,
                    kind,
                    batch,
                    prompt,
                    new,
                    reps,
                    graphs and (graph_only is None or (size, kind) in graph_only),
                    hf_compile,
                    ceil,
                    ver,
                    tps,
                    frac,
                )
            except torch.OutOfMemoryError as e:
                msg = str(e).splitlines()[0][:200]
                ctx.figure(
                    f"{base}.tokens_per_s",
                    "OOM",
                    "tokens/s",
                    "measured",
                    f"random-weight Llama {size} in {kind}: out of device memory",
                    note=msg,
                )
                model, model_kind = None, None
            except Exception as e:  # noqa: BLE001 - one model's failure must not hide the others
                ctx.soft_check(
                    False, f"llm {size} {kind}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                )
                model, model_kind = None, None
            finally:
                gc.collect()
                torch.cuda.empty_cache()
            ctx.progress(done, total, f"{size} {kind}")
        model = None
        gc.collect()
        torch.cuda.empty_cache()
    for groups, x_label, y_label, y_unit, figure in (
        (tps, "model", "tokens/s (prompt + generated)", "tokens/s", "llm_tokens_per_s"),
        (frac, "model and type", "fraction of the roofline bound", "fraction", "llm_roofline_fraction"),
    ):
        for name, pts in groups.items():
            if pts:  # a type's throughput list is never empty; a fraction's may be
                ctx.series(name, x_label, "", y_label, y_unit, pts, plot="bar", figure=figure)


def _measure(
    ctx: Any,
    torch: Any,
    transformers: Any,
    model: Any,
    shape: roofline.LlamaShape,
    size: str,
    kind: str,
    batch: int,
    prompt: int,
    new: int,
    reps: int,
    graphs: bool,
    hf_compile: bool,
    ceil: dict[str, float],
    ver: str,
    tps: dict[str, list[Point]],
    frac: dict[str, list[Point]],
) -> None:
    from .float8 import rows_padded

    base = f"app.llm.{size}.{kind}"
    label = f"{size} {kind}"
    ids = llm.prompt_ids(torch, shape.vocab, batch, prompt, "cuda")
    precision = (
        "FP32 (TF32 off)"
        if kind == "fp32"
        else "BF16"
        if kind == "bf16"
        else "BF16 with every decoder nn.Linear as Float8InferenceLinear (e4m3 weights cast once, activations scaled "
        "per call), LM head BF16"
    )
    desc = (
        f"random-weight LlamaForCausalLM {size} (hidden {shape.hidden}, {shape.layers} layers, {shape.heads} heads, "
        f"MLP {shape.intermediate}) in {precision}; "
        f"batch {batch}, {prompt} random prompt tokens, {new} greedy new tokens; {ver}"
    )

    # the whole generate is timed `reps` times in quick mode too: with one timed generate (quick-m) the
    # 3B fp32 rate read 542 tokens/s, below the 646-832 of the earlier quick runs' median of two; whether one
    # run is biased or the machine differed is not settled, so the median of two stays
    warm = QUICK_WARM_TOKENS if ctx.quick else None
    hf = llm.hf_generate(torch, transformers, model, ids, new, reps, compile=hf_compile, warm_tokens=warm)
    ok_len = ctx.soft_check(
        tuple(hf.tokens.shape) == (batch, new),
        f"{label}: generate returned {tuple(hf.tokens.shape)} new tokens, asked ({batch}, {new})",
    )
    exact, gap = llm.teacher_forced_gap(torch, model, ids, hf.tokens)
    passed, why = check_tokens(kind, exact, gap)
    ok = ctx.soft_check(ok_len and passed, f"{label}: generate's tokens fail the teacher-forced check: {why}")
    ctx.figure(
        f"{base}.check_logit_gap_std",
        round(gap, 4),
        "logit std",
        "measured",
        "teacher-forced check of generate's tokens: largest (max logit - logit of the generated token) / std of "
        f"the logits over all positions; {why}",
    )
    ctx.figure(
        f"{base}.check_exact_argmax",
        round(exact, 4),
        "fraction",
        "measured",
        "share of generate's tokens that are the argmax of one full forward over prompt + generated tokens",
    )
    check = "ok" if ok else "failed"
    note = f"teacher-forced check: {why}"
    res = _figures(ctx, base, "", hf, batch, prompt, new, desc + f"; {hf.how}", check, note)
    peak = torch.cuda.max_memory_allocated() / 2**30
    ctx.figure(
        f"{base}.peak_mem_gib",
        round(peak, 2),
        "GiB",
        "measured",
        "torch.cuda.max_memory_allocated over generate and its check (weights + static KV cache + activations "
        "+ logits of the teacher-forced check); the build's transient is not included",
    )
    if ok:
        tps.setdefault(kind, []).append(Point(0, res["tokens_per_s"], extra={"label": size}))

    lin_b, oth_b = LINEAR_BYTES[kind], OTHER_BYTES[kind]
    pre_b, dec_b = roofline.generation_bounds(
        shape,
        batch,
        prompt,
        new,
        prefill_tps=res["prefill_tokens_per_s"],
        decode_tps=res["decode_tokens_per_s"],
        linear_bytes=lin_b,
        other_bytes=oth_b,
        linear_tflops=ceil[GEMM_CEILING[kind]],
        attn_tflops=ceil[ATTN_CEILING[kind]],
        dram_gbps=ceil["dram"],
    )
    step_gb = roofline.weight_bytes_per_step(shape, lin_b, oth_b) / 1e9
    ctx.figure(
        f"{base}.decode_bound_tokens_per_s",
        round(dec_b.bound, 1),
        "tokens/s",
        "derived",
        f"batch x {new - 1} decode steps / (bytes to read / measured DRAM copy {ceil['dram']:.0f} GB/s); bytes per "
        f"step = weights {step_gb:.2f} GB (linear {lin_b:g} B, LM head and norms {oth_b:g} B per parameter) + KV "
        f"cache of the positions so far ({oth_b:g} B per element)",
    )
    ctx.figure(
        f"{base}.prefill_bound_tokens_per_s",
        round(pre_b.bound, 1),
        "tokens/s",
        "derived",
        f"batch x prompt / (linear flops / measured {GEMM_CEILING[kind]} GEMM {ceil[GEMM_CEILING[kind]]:.0f} TFLOPS "
        f"+ causal attention flops / measured {ATTN_CEILING[kind]} GEMM {ceil[ATTN_CEILING[kind]]:.0f} TFLOPS)",
    )
    for b, name in ((dec_b, "decode_bw_fraction"), (pre_b, "prefill_gemm_fraction")):
        ctx.figure(
            f"{base}.{name}",
            round(b.fraction, 4),
            "fraction",
            "derived",
            f"measured {b.phase} tokens/s (transformers generate) / its bound ({b.limiter})",
            check=check,
        )
    if ok:
        frac["prefill (generate)"].append(Point(0, pre_b.fraction, extra={"label": label}))
        frac["decode (generate)"].append(Point(0, dec_b.fraction, extra={"label": label}))

    if graphs:
        try:
            _graph(ctx, torch, transformers, model, ids, base, label, kind, batch, prompt, new, reps, desc, dec_b, frac)
        except torch.OutOfMemoryError as e:
            ctx.figure(
                f"{base}.graph.tokens_per_s",
                "OOM",
                "tokens/s",
                "measured",
                desc,
                note=f"CUDA-graph decode: {str(e).splitlines()[0][:200]}",
            )
    if rows_padded():
        ctx.figure(
            f"{base}.fp8_rows_padded",
            1,
            "flag",
            "measured",
            "_scaled_mm refused a row count that is not a multiple of 16: FP8 GEMM rows were zero-padded",
        )


def _graph(
    ctx: Any,
    torch: Any,
    transformers: Any,
    model: Any,
    ids: Any,
    base: str,
    label: str,
    kind: str,
    batch: int,
    prompt: int,
    new: int,
    reps: int,
    desc: str,
    dec_b: roofline.Bound,
    frac: dict[str, list[Point]],
) -> None:
    gd = llm.GraphDecoder(torch, transformers, model, ids, new)
    try:
        why = gd.capture()
        if why is not None:
            ctx.figure(f"{base}.graph.tokens_per_s", f"n/a: capture failed ({why[:120]})", "tokens/s", "measured", desc)
        else:
            gt = gd.time(reps, QUICK_WARM_TOKENS - 1 if ctx.quick else None)
            exact, gap = llm.teacher_forced_gap(torch, model, ids, gt.tokens)
            passed, why = check_tokens(kind, exact, gap)
            gok = ctx.soft_check(passed, f"{label} CUDA-graph decode: tokens fail the teacher-forced check: {why}")
            gnote = f"teacher-forced check: {why}"
            gres = _figures(
                ctx, base, ".graph", gt, batch, prompt, new, desc + f"; {gt.how}", "ok" if gok else "failed", gnote
            )
            gfrac = gres["decode_tokens_per_s"] / dec_b.bound
            ctx.figure(
                f"{base}.graph_decode_bw_fraction",
                round(gfrac, 4),
                "fraction",
                "derived",
                f"CUDA-graph decode tokens/s / decode bound ({dec_b.limiter})",
                check="ok" if gok else "failed",
            )
            if gok:
                frac["decode (CUDA graph)"].append(Point(0, gfrac, extra={"label": label}))
    finally:
        gd.release()


def _figures(
    ctx: Any,
    base: str,
    tag: str,
    t: llm.GenTiming,
    batch: int,
    prompt: int,
    new: int,
    method: str,
    check: str,
    note: str,
) -> dict[str, float]:
    tot = statistics.median(t.total_ms)
    pre = statistics.median(t.prefill_ms)
    e2e = [batch * (prompt + new) / (m * 1e-3) for m in t.total_ms]
    dec = [batch * (new - 1) / ((m - pre) * 1e-3) for m in t.total_ms if m > pre]
    pf = [batch * prompt / (m * 1e-3) for m in t.prefill_ms]
    out = {
        "tokens_per_s": batch * (prompt + new) / (tot * 1e-3),
        "prefill_tokens_per_s": batch * prompt / (pre * 1e-3),
        "decode_tokens_per_s": batch * (new - 1) / ((tot - pre) * 1e-3) if tot > pre else float("nan"),
    }
    reps = len(t.total_ms)

    def rate(name: str, rates: list[float], what: str, note: str = "") -> None:
        # only the decode rates can be empty (every total at or under the prefill time)
        spread = (min(rates), max(rates)) if rates else None
        ctx.figure(f"{base}{tag}.{name}", round(out[name], 1), "tokens/s", "measured", what, spread, check, note)

    rate(
        "tokens_per_s",
        e2e,
        f"{method}; Table XV's throughput: batch x (prompt + generated) / end-to-end time, median of {reps}",
        note,
    )
    rate(
        "prefill_tokens_per_s",
        pf,
        f"batch x prompt / time to the first new token (generate with one new token), median of {reps}",
    )
    rate(
        "decode_tokens_per_s",
        dec,
        f"batch x {new - 1} / (end-to-end - prefill time): the decode steps after the first token",
    )
    ctx.figure(
        f"{base}{tag}.end_to_end_ms",
        round(tot, 2),
        "ms",
        "measured",
        "prompt to the last new token, median",
        spread=(min(t.total_ms), max(t.total_ms)),
        check=check,
    )
    return out
