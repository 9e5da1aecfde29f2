"""The app suite: tensor cores above the instruction level (000 §6.3-6.4), explained by measured ceilings.

* linear: te.Linear's FP8 recipe rebuilt in the open (gpudissect.app.float8) beside FP32/TF32/FP16/BF16
  linear layers, n = 1024 .. 16384, forward and forward + backward; the FP8 forward split into
  amax/scale, cast and GEMM (Figs. 6-7); the fused form (gpudissect.app.float8_fused: delayed scaling,
  one kernel of ours per cast, kernels/app_fp8cast.cu) split into casts and GEMM against one DRAM pass.
* layer: a Llama decoder layer at Table XIV's hidden sizes, FP32 / BF16 / FP8 linears (Fig. 8), the FP8
  ones with weights cast on every forward (unfused current scaling, and fused delayed scaling on
  torch._scaled_mm or on our GEMM) or once.
* llm: Llama 3B/7B/13B text generation with transformers, batch 8, 128 + 128 tokens (Table XV),
  prefill and decode apart, and each put against the bound of the DRAM and GEMM ceilings measured
  in the same process (what neither paper does).

torch and transformers are optional (`pip install gpudissect[app]`) and imported only inside the
benchmarks: without them a benchmark ends with one line naming what is missing.

Every GPU with BF16 tensor cores (compute capability 8.0 on) runs the suite; the FP8 types (torch._scaled_mm
on e4m3) need FP8 tensor cores (8.9 on), and a GPU without them skips those types by name, with the reason.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ...analysis.roofline import LAYER_TABLE_XIV, LLAMA
from ...app.fp8cast import SPEC as FP8CAST
from ...errors import BenchSkipped
from ..context import BenchContext
from ..registry import Facts, Needs, Param, benchmark, comma_ints, comma_names

LINEAR_TYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp8_fused")
LAYER_TYPES = ("fp32", "tf32", "bf16", "fp8", "fp8_eager", "fp8_cached", "fp8_fused", "fp8_fused_ours")
LLM_TYPES = ("fp32", "bf16", "fp8")
LINEAR_FULL = (1024, 2048, 4096, 8192, 16384)
LINEAR_QUICK = (1024, 4096, 16384)
LAYER_FULL = (1024, 2048, 4096, 5120, 8192)
LAYER_QUICK = (4096, 5120, 8192)
# BF16 (and TF32) tensor-core GEMMs through cuBLAS: the suite's gate; the FP8 types need FP8 tensor cores on
# top, which torch._scaled_mm checks as compute capability 8.9 or newer
NEEDS = Needs(features=("mma_bf16",))
FP8_NEEDS = Needs((8, 9))
FP8_TYPES = ("fp8", "fp8_eager", "fp8_cached", "fp8_fused", "fp8_fused_ours")
# the fused types' cast kernel (our app_fp8cast.cu) needs 8.9 as _scaled_mm does; our FP8 GEMM needs wgmma
OURS_NEEDS = Needs((8, 9), features=("wgmma",))
OUR_GEMM_TYPES = ("fp8_fused_ours",)


def _fp8_parts(types: tuple[str, ...]) -> dict[str, Needs]:
    """A benchmark's types for `plan`, the FP8 ones with what they need (the benchmark skips them by name)."""
    return {t: OURS_NEEDS if t in OUR_GEMM_TYPES else FP8_NEEDS if t in FP8_TYPES else Needs() for t in types}


def fp8_why(ctx: BenchContext) -> str | None:
    """Why this GPU cannot run the FP8 types (None: it can)."""
    why = FP8_NEEDS.why_not(ctx.target)
    return f"torch._scaled_mm (FP8 tensor cores) {why}" if why else None


def type_why(ctx: BenchContext, kind: str) -> str | None:
    """Why this GPU cannot run type `kind` (None: it can)."""
    if kind not in FP8_TYPES:
        return None
    why = fp8_why(ctx)
    if why is None and kind in OUR_GEMM_TYPES and (ours := OURS_NEEDS.why_not(ctx.target)):
        why = f"our FP8 GEMM (gpudissect.gemm, e4m3 on wgmma) {ours}"
    return why


def runnable_types(ctx: BenchContext, kinds: list[str], prefix: str = "") -> list[str]:
    """The types of `kinds` this GPU runs; each FP8 type it cannot is skipped by name (`prefix` + type) with
    the reason."""
    out = []
    for k in kinds:
        why = type_why(ctx, k)
        if why:
            ctx.skip_variant(f"{prefix}{k}", why)
        else:
            out.append(k)
    return out


def _nothing_left(ctx: BenchContext, asked: list[str]) -> NoReturn:
    """Every type asked for was skipped: the benchmark is skipped, saying why (never an empty result)."""
    whys = list(dict.fromkeys(w for k in asked if (w := type_why(ctx, k))))
    raise BenchSkipped(f"every type asked for ({', '.join(asked)}) is FP8, and {'; '.join(whys)}")


def _names(valid: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        names = [s.lower() for s in comma_names(text)]
        bad = [s for s in names if s not in valid]
        if bad or not names:
            raise ValueError(f"unknown {', '.join(bad) or '(none)'}; valid: {', '.join(valid)}")
        return names

    return parse


def _ints(valid: tuple[int, ...] | None = None, multiple: int = 16) -> Any:
    def parse(text: str) -> list[int]:
        vals = list(comma_ints(text))
        bad = [v for v in vals if v < multiple or v % multiple or (valid is not None and v not in valid)]
        if bad or not vals:
            allowed = ", ".join(map(str, valid)) if valid else f"multiples of {multiple}"
            raise ValueError(f"bad size(s) {bad or text!r}; allowed: {allowed}")
        return vals

    return parse


def _range(lo: int, hi: int) -> Any:
    def check(v: int, _facts: Facts) -> str | None:
        return None if lo <= v <= hi else f"must lie in {lo} .. {hi}"

    return check


def _flag(text: str) -> bool:
    t = text.strip().lower()
    if t not in {"0", "1", "true", "false", "yes", "no"}:
        raise ValueError("expected 0 or 1")
    return t in {"1", "true", "yes"}


def _torch() -> Any:
    from ...app.deps import import_torch

    torch = import_torch()
    torch.cuda.set_device(0)
    return torch


@benchmark(
    name="linear",
    title="Linear layers by type and size; the FP8 forward split (te.Linear recipe)",
    axes={
        "type": ", ".join(LINEAR_TYPES),
        "n": "square 1024 .. 16384 (quick: 1024, 4096, 16384)",
        "pass": "forward, forward + backward",
    },
    kernels=[FP8CAST],
    params={
        "sizes": Param(
            None, "comma-separated n (multiples of 16; default quick 1024,4096,16384, full 1024..16384)", _ints()
        ),
        "types": Param(None, f"comma-separated types (default all: {','.join(LINEAR_TYPES)})", _names(LINEAR_TYPES)),
    },
    timeout_s=900,
    needs=NEEDS,
    part_needs=_fp8_parts(LINEAR_TYPES),
    paper="000 §6.3.1, Figs. 6-7 (te.Linear)",
    torch=True,
)
def linear(ctx: BenchContext) -> None:
    from ...app.linear_run import run_linear
    from ...app.timing import gc_frozen

    asked = ctx.params.get("types") or list(LINEAR_TYPES)
    kinds = runnable_types(ctx, asked) or _nothing_left(ctx, asked)
    torch = _torch()
    sizes = ctx.params.get("sizes") or list(LINEAR_QUICK if ctx.quick else LINEAR_FULL)
    with gc_frozen():  # the gc.collect() after each case walks only what the cases made
        run_linear(ctx, torch, sizes, kinds, reps=3 if ctx.quick else 7)


@benchmark(
    name="layer",
    title="Llama decoder layer latency: FP32, BF16, FP8 linears (te.TransformerLayer)",
    axes={"hidden": "Table XIV: 1024 .. 8192 (quick: 4096, 5120, 8192)", "type": ", ".join(LAYER_TYPES)},
    kernels=[FP8CAST],
    params={
        "hiddens": Param(
            None,
            f"comma-separated hidden sizes of Table XIV ({','.join(map(str, LAYER_TABLE_XIV))})",
            _ints(tuple(LAYER_TABLE_XIV)),
        ),
        "types": Param(None, f"comma-separated types (default all: {','.join(LAYER_TYPES)})", _names(LAYER_TYPES)),
        "batch": Param(4, "batch size (000: 4)", int, _range(1, 64)),
        "seq": Param(
            512,
            "sequence length (000: 512; a multiple of 16 for the FP8 GEMMs)",
            int,
            lambda v, f: None if 16 <= v <= 8192 and v % 16 == 0 else "a multiple of 16 in 16 .. 8192",
        ),
    },
    timeout_s=600,
    needs=NEEDS,
    part_needs=_fp8_parts(LAYER_TYPES),
    paper="000 §6.3.2, Table XIV, Fig. 8 (te.TransformerLayer)",
    torch=True,
    host_timed=True,
)
def layer(ctx: BenchContext) -> None:
    from ...app.layer_run import run_layers

    asked = ctx.params.get("types") or list(LAYER_TYPES)
    kinds = runnable_types(ctx, asked) or _nothing_left(ctx, asked)
    torch = _torch()
    hiddens = ctx.params.get("hiddens") or list(LAYER_QUICK if ctx.quick else LAYER_FULL)
    run_layers(ctx, torch, hiddens, kinds, ctx.params["batch"], ctx.params["seq"], reps=3 if ctx.quick else 7)


@benchmark(
    name="llm",
    title="Llama text generation (transformers): tokens/s, prefill and decode against their roofline",
    axes={
        "model": ", ".join(LLAMA) + " (Table XV)",
        "type": ", ".join(LLM_TYPES),
        "path": "transformers generate (static cache); CUDA-graph decode",
    },
    kernels=[],
    params={
        "sizes": Param(None, f"comma-separated models ({','.join(LLAMA)}; default all)", _names(tuple(LLAMA))),
        "types": Param(
            None,
            "comma-separated types for every model (default: all, but 13b fp32 only in full mode)",
            _names(LLM_TYPES),
        ),
        "batch": Param(8, "sequences per batch (000: 8)", int, _range(1, 256)),
        "prompt": Param(128, "prompt tokens (000: 128)", int, _range(1, 4096)),
        "new": Param(128, "generated tokens (000: 128)", int, _range(2, 4096)),
        "graphs": Param(True, "also time the CUDA-graph decode (0/1)", _flag),
        "hf_compile": Param(
            False,
            "let transformers' generate torch.compile the decode step (mode "
            "'reduce-overhead', its CUDA graphs; minutes of compile per model) (0/1)",
            _flag,
        ),
    },
    timeout_s=1500,
    needs=NEEDS,
    part_needs=_fp8_parts(LLM_TYPES),
    paper="000 §6.4, Table XV",
    torch=True,
    host_timed=True,
    preload=("transformers.models.llama.modeling_llama",),  # transformers' import is lazy: the model's module
)
def llm(ctx: BenchContext) -> None:
    from ...app.deps import import_transformers
    from ...app.llm_run import QUICK_GRAPHS, default_plan, run_llm
    from ...app.timing import gc_frozen

    plan = default_plan(ctx.quick)
    # quick mode's own plan times the graph decode where a headline key needs it; a plan asked for, all of it
    asked_plan = bool(ctx.params.get("sizes") or ctx.params.get("types"))
    graph_only = QUICK_GRAPHS if ctx.quick and not asked_plan else None
    if ctx.params.get("sizes"):
        plan = {s: plan.get(s, ["fp32", "bf16", "fp8"]) for s in ctx.params["sizes"]}
    if ctx.params.get("types"):
        plan = {s: list(ctx.params["types"]) for s in plan}
    asked = sorted({k for kinds in plan.values() for k in kinds}, key=LLM_TYPES.index)
    plan = {s: kept for s, kinds in plan.items() if (kept := runnable_types(ctx, kinds, f"{s} "))}
    if not plan:
        _nothing_left(ctx, asked)
    torch = _torch()
    transformers = import_transformers()
    # the Llama modules, which transformers imports on first use, imported before the freeze
    _ = transformers.LlamaForCausalLM, transformers.StaticCache, transformers.StoppingCriteriaList
    p = ctx.params
    with gc_frozen():  # the gc.collect() between models walks only what the models made
        run_llm(
            ctx,
            torch,
            transformers,
            plan,
            p["batch"],
            p["prompt"],
            p["new"],
            reps=2 if ctx.quick else 5,
            graphs=p["graphs"],
            hf_compile=p["hf_compile"],
            fp8=fp8_why(ctx) is None,
            graph_only=graph_only,
        )
