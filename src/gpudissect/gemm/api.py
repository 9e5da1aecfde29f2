"""`matmul(a, b, out=None)` on torch tensors, on our best rung (or a named one)."""

from __future__ import annotations

from typing import Any

from ..capability import Target
from . import small
from .plans import Plan, PlanCache
from .variants import AUTO, DTYPES, RUNGS, check_dims, check_rung_runs, public_rung

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "e4m3"}


def default_rung(dtype: str, target: Target | None = None) -> int:
    """The rung matmul uses when none is named: AUTO (per shape: variants.pick_rung; fp8 too). With the GPU's
    `target`, one it can run: rung 1 where the TMA rungs cannot (ValueError where none can)."""
    if target is not None and dtype in DTYPES:
        return public_rung(target, dtype)
    return AUTO


def plan_layout(
    a_shape: tuple[int, ...],
    a_strides: tuple[int, ...],
    b_shape: tuple[int, ...],
    b_strides: tuple[int, ...],
    dtype: str,
    rung: int | None = None,
) -> tuple[int, int, int, bool]:
    """(M, N, K, b_is_column_major) for A (M x K) and B (K x N) given as shapes and element strides;
    raises ValueError with the rule that is broken. Torch-free so CPU tests cover it."""
    if dtype not in DTYPES:
        raise ValueError(
            f"dtype {dtype} is not supported; supported: bfloat16, float16, float8_e4m3fn (with scale_a and scale_b)"
        )
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ValueError(f"matmul takes 2-D matrices, got A {tuple(a_shape)} and B {tuple(b_shape)}")
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: A is {m} x {k}, B is {k2} x {n}")
    if rung == small.SMALL:  # the small-M path: the dtypes it is built for, and the TMA rules of the ladder
        small.check_small(dtype)
        check_dims(m, n, k, AUTO, dtype)
    else:
        check_dims(m, n, k, default_rung(dtype) if rung is None else rung, dtype)
    if tuple(a_strides) != (k, 1):
        raise ValueError(f"A must be row-major and contiguous (strides ({k}, 1)), got strides {tuple(a_strides)}")
    if tuple(b_strides) == (1, k):
        return m, n, k, True
    if tuple(b_strides) == (n, 1):
        return m, n, k, False
    raise ValueError(
        f"B must be contiguous row-major (strides ({n}, 1)) or column-major (strides (1, {k})), "
        f"got strides {tuple(b_strides)}"
    )


def check_scales(dtype: str, scales: tuple[Any, Any], device: Any) -> None:
    """fp8 needs both per-tensor scales (one float32 each on A's device, as torch._scaled_mm takes
    them); 16-bit inputs take none."""
    import torch

    if dtype != "e4m3":
        if any(s is not None for s in scales):
            raise ValueError("scale_a / scale_b apply to float8_e4m3fn inputs only")
        return
    for name, s in zip(("scale_a", "scale_b"), scales):
        if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or s.numel() != 1 or s.device != device:
            raise ValueError(
                f"float8_e4m3fn inputs need {name}: a one-element float32 tensor on {device} "
                "(the per-tensor scale, as torch._scaled_mm takes it)"
            )


_CACHE = PlanCache()
_TORCH: Any = None  # torch, once the first call imported it
_RAW_STREAM: Any = None  # device index -> the current stream's handle, without making a Stream object
_COMPILING: Any = None  # torch.compiler.is_compiling (False where this torch has none)
_DEVICE: Any = None  # the current device's index (torch._C._cuda_getDevice: current_device without its checks)
_ONE_DEVICE = False  # one visible CUDA device: the current device is the tensors' (fixed once CUDA started)
_EMPTY_LIKE: Any = None  # torch.empty_like


def _torch() -> Any:
    global _TORCH, _RAW_STREAM, _COMPILING, _DEVICE, _ONE_DEVICE, _EMPTY_LIKE
    if _TORCH is None:
        import torch

        _EMPTY_LIKE = torch.empty_like
        if torch.cuda.is_available():
            torch.cuda.init()  # _DEVICE below skips the lazy initialisation current_device() would do
            _ONE_DEVICE = torch.cuda.device_count() == 1
        _DEVICE = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
        _COMPILING = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _RAW_STREAM = raw if raw is not None else (lambda i: torch.cuda.current_stream(i).cuda_stream)
        from . import torch_op

        torch_op.register(matmul, torch)
        _TORCH = torch
    return _TORCH


def cache_info() -> dict[str, int]:
    """The plan cache: plans held, its limit, hits and misses since the process started (or clear_cache)."""
    return _CACHE.info()


def plan_for(a: Any, b: Any, rung: int | None = None) -> Plan | None:
    """The cached plan `matmul(a, b, rung=rung)` runs (its rung, M, N, K, B's layout); None before the first
    call of that signature."""
    return _CACHE.peek((a.device, b.device, a.dtype, b.dtype, a.shape, a.stride(), b.shape, b.stride(), rung))


def clear_cache() -> None:
    """Forget every plan (kernels stay loaded): the next call of each signature prepares again."""
    _CACHE.clear()


def _make_plan(torch: Any, a: Any, b: Any, rung: int | None) -> Plan:
    """Everything `matmul` decides from the signature alone: the rules checked (ValueError naming the broken
    one), the rung, and a Launch prepared on the first call's tensors (later calls re-point it)."""
    from .launch import OUT_DTYPE, prepare

    if a.device.type != "cuda" or b.device != a.device:
        raise ValueError(f"A and B must be on the same CUDA device, got {a.device} and {b.device}")
    if a.dtype != b.dtype:
        raise ValueError(f"A and B must have the same dtype, got {a.dtype} and {b.dtype}")
    name = str(a.dtype).removeprefix("torch.")
    dtype = _TORCH_DTYPES.get(name, name)
    target = Target(*torch.cuda.get_device_capability(a.device))
    r = default_rung(dtype, target) if rung is None else rung
    if r in RUNGS:  # a named rung this GPU cannot run: say so before compiling anything
        check_rung_runs(r, target)
    elif r == small.SMALL:
        small.check_small(dtype, target)
    try:
        m, n, k, b_colmajor = plan_layout(
            tuple(a.shape), tuple(a.stride()), tuple(b.shape), tuple(b.stride()), dtype, r
        )
    except ValueError as e:
        if rung is None and r == 1:  # the default fell back to rung 1: say why its tile rules apply
            raise ValueError(f"{e} (on {target.arch}, without wgmma, the default is rung 1)") from None
        raise
    out_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[OUT_DTYPE[dtype]]
    # a throwaway C and, for fp8, scales: the launch is prepared on real addresses and re-pointed per call
    c = torch.empty((m, n), dtype=out_dtype, device=a.device)
    one = torch.ones((), dtype=torch.float32, device=a.device) if dtype == "e4m3" else None
    sa = sb = one.data_ptr() if one is not None else 0
    bt = b.t() if b_colmajor else torch.empty((n, k), dtype=a.dtype, device=a.device)
    variant = None
    if r == small.SMALL or (rung is None and r == AUTO):
        props = torch.cuda.get_device_properties(a.device)
        l2 = int(getattr(props, "L2_cache_size", 0))  # 0: unknown, the weight-size clause of the rule left out
        variant = small.variant_for(m, n, dtype, props.multi_processor_count, r == small.SMALL, k, l2)
    if variant is not None:
        from .small_launch import prepare_small

        launch = prepare_small(
            dtype, a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, variant, small.SMALL_PROMOTION, sa, sb
        )
    else:
        launch = prepare(r, dtype, a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, sa, sb)
    plan = Plan(m, n, k, b_colmajor, dtype, out_dtype, launch, a.device.index)
    if plan.fast:
        plan.go = launch.runner(plan.lock)
        plan.like = _template(torch, m, n, out_dtype, a.device)
    return plan


TEMPLATE_BYTES = 4 << 20  # outputs up to this size are allocated by torch.empty_like of a template (below)
_TEMPLATES: dict[tuple[Any, Any], Any] = {}  # (device, dtype) -> the buffer the templates are views of


def _template(torch: Any, m: int, n: int, dtype: Any, device: Any) -> Any:
    """A contiguous m x n view of a buffer shared by the plans of `device` and `dtype`, for outputs of at most
    TEMPLATE_BYTES; None for larger ones, or while the stream captures a graph (the buffer would come from the
    graph's pool). torch.empty_like of it allocates C faster than new_empty((m, n)) parses a size (1.8 against 3.0
    us, results/h100-sxm5-80gb/profiles/gemm-host-floor/): small GEMMs, whose host cost is not hidden behind the
    GPU's, pay less; the buffer costs 4 MiB per device and type, whatever the number of plans."""
    if m * n * 2 > TEMPLATE_BYTES or torch.cuda.is_current_stream_capturing():
        return None
    key = (device, dtype)
    if key not in _TEMPLATES:
        _TEMPLATES[key] = torch.empty(TEMPLATE_BYTES // 2, dtype=dtype, device=device)
    return _TEMPLATES[key][: m * n].view(m, n)


def _run2d(torch: Any, a: Any, b: Any, out: Any, rung: int | None, scale_a: Any, scale_b: Any) -> Any:
    """One 2-D GEMM: the plan of its signature (made on the first call), then re-point and launch."""
    dev = a.device
    key = (dev, b.device, a.dtype, b.dtype, a.shape, a.stride(), b.shape, b.stride(), rung)
    plan = _CACHE.get(key)
    if plan is None:
        with torch.cuda.device(dev):
            # loading, allocating and zeroing the workspace are not stream work: let them be under a capture
            if torch.cuda.is_current_stream_capturing():
                from ..device.fastlaunch import relaxed_capture

                with relaxed_capture():
                    plan = _CACHE.build(key, lambda: _make_plan(torch, a, b, rung))
            else:
                plan = _CACHE.build(key, lambda: _make_plan(torch, a, b, rung))
    if plan.dtype == "e4m3":
        check_scales("e4m3", (scale_a, scale_b), dev)
        sa, sb = scale_a.data_ptr(), scale_b.data_ptr()
    elif scale_a is not None or scale_b is not None:
        raise ValueError("scale_a / scale_b apply to float8_e4m3fn inputs only")
    else:
        sa = sb = 0
    if plan.b_colmajor:
        bt = b  # B^T's rows are B's columns: the same address
    elif plan.dtype == "e4m3":  # transpose the bytes: copy kernels need not exist for float8
        bt = b.view(torch.uint8).t().contiguous().view(b.dtype)
    else:
        bt = b.t().contiguous()
    m, n = plan.m, plan.n
    if out is None:
        out = a.new_empty((m, n), dtype=plan.out_dtype)
    elif out.shape != (m, n) or out.dtype != plan.out_dtype or out.device != dev or out.stride() != (n, 1):
        raise ValueError(f"out must be a contiguous {m} x {n} {plan.out_dtype} tensor on {dev}")
    idx = dev.index
    if _DEVICE() == idx:
        plan.run(a.data_ptr(), bt.data_ptr(), out.data_ptr(), sa, sb, _RAW_STREAM(idx))
    else:
        with torch.cuda.device(idx):
            plan.run(a.data_ptr(), bt.data_ptr(), out.data_ptr(), sa, sb, _RAW_STREAM(idx))
    return out


def matmul(a: Any, b: Any, out: Any = None, rung: int | None = None, scale_a: Any = None, scale_b: Any = None) -> Any:
    """C = A @ B with fp32 accumulation. bf16/fp16: C in A's dtype. float8_e4m3fn: C = scale_a * scale_b
    * (A @ B) in bfloat16 (scales: one-element float32 tensors). A row-major; B column-major runs as is,
    a row-major B is transposed into a column-major copy first (one extra pass over B). Any M >= 1; K and N
    multiples of 8 (fp8: K of 16), the 16-byte rows TMA needs. Batches: A of shape (batch, M, K) with a 2-D
    B runs as one (batch x M) x K GEMM (A contiguous); with a 3-D B, one GEMM per batch entry.
    rung: None for the default (per shape, gemm.pick_rung: rung 10 or 6, rung 9 where its tiles fill the waves
    better, a wide tile (rungs 11-13) where one fills them, fp8 alike; or the small-M path where
    gemm.small.default_variant picks one, up to 512 tokens, fp8 too; on a GPU without wgmma, i.e. any but
    sm_90a, rung 1, whose M and N must be multiples of 128 and K of 32, and no fp8);
    gemm.small.SMALL (20) forces the small-M path (swap-AB split-K, bf16/fp16/e4m3).

    The first call of a signature (device, dtypes, shapes, strides, rung) prepares a plan; later calls
    re-point it at their tensors and launch on torch's current stream (a few microseconds of host time).
    Works under CUDA graph capture (the first call of a signature may be inside the capture) and under
    torch.compile (as the custom op gpudissect::matmul; `out=` is not taken there)."""
    torch = _TORCH if _TORCH is not None else _torch()
    if _COMPILING():
        if out is not None:
            raise ValueError("out= is not supported under torch.compile: use the returned tensor")
        return torch.ops.gpudissect.matmul(a, b, -1 if rung is None else rung, scale_a, scale_b)
    if out is None and scale_a is None:
        # the common call, in this one frame: a 16-bit signature seen before, B column-major, a new output
        try:
            key = (a.device, b.device, a.dtype, b.dtype, a.shape, a.stride(), b.shape, b.stride(), rung)
        except AttributeError:
            key = None  # not tensors: the general path says so
        plan = _CACHE.fast(key)
        if plan is not None and (_ONE_DEVICE or _DEVICE() == plan.device):
            like = plan.like
            c = a.new_empty(plan.mn) if like is None else _EMPTY_LIKE(like)
            plan.go(a.data_ptr(), b.data_ptr(), c.data_ptr(), _RAW_STREAM(plan.device))
            return c
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError("matmul takes torch tensors")
    if a.dim() == 2 and b.dim() == 2:
        return _run2d(torch, a, b, out, rung, scale_a, scale_b)
    return _batched(torch, a, b, out, rung, scale_a, scale_b)


def _batched(torch: Any, a: Any, b: Any, out: Any, rung: int | None, scale_a: Any, scale_b: Any) -> Any:
    if a.dim() != 3 or b.dim() not in (2, 3):
        raise ValueError(
            f"matmul takes 2-D matrices or a batch (3-D A with a 2-D or 3-D B), got A {tuple(a.shape)} "
            f"and B {tuple(b.shape)}"
        )
    bs, m, k = a.shape
    n = b.shape[-1]
    if out is not None and (out.dim() != 3 or tuple(out.shape[:2]) != (bs, m) or not out.is_contiguous()):
        raise ValueError(f"out must be a contiguous {bs} x {m} x {n} tensor for a batch of {bs}")
    if b.dim() == 2:
        if not a.is_contiguous():
            raise ValueError(f"a batched A must be contiguous, got strides {tuple(a.stride())}")
        flat = None if out is None else out.view(bs * m, out.shape[-1])
        return _run2d(torch, a.view(bs * m, k), b, flat, rung, scale_a, scale_b).view(bs, m, -1)
    if b.shape[0] != bs:
        raise ValueError(f"batch sizes differ: A has {bs}, B has {b.shape[0]}")
    if out is None:
        out_dtype = torch.bfloat16 if a.dtype == torch.float8_e4m3fn else a.dtype
        out = torch.empty((bs, m, n), dtype=out_dtype, device=a.device)
    for i in range(bs):
        _run2d(torch, a[i], b[i], out[i], rung, scale_a, scale_b)
    return out


__all__ = ["matmul", "plan_layout", "default_rung", "cache_info", "clear_cache", "plan_for", "RUNGS"]
