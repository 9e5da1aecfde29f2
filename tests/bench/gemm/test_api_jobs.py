"""api_vs_cublas's job list and its Llama-3 summaries (CPU): the projections in bf16 and e4m3, fp8 last (a trap
poisons the CUDA context), and the median / minimum figures per dtype named for their shapes."""

from __future__ import annotations

from typing import Any

from gpudissect.bench.gemm import api


def test_jobs_put_every_projection_in_bf16_and_e4m3_and_fp8_last():
    for quick, tokens in ((True, api.FP8_TOKENS_QUICK), (False, api.TOKENS)):
        jobs = api._jobs(quick)
        groups = [j[0] for j in jobs]
        assert groups.count("llama") == 8 * len(api.TOKENS)  # every bf16 projection in either mode
        assert groups.count("llama_e4m3") == 8 * len(tokens)
        first_fp8 = next(i for i, j in enumerate(jobs) if j[1] == "e4m3")
        assert all(j[1] == "e4m3" for j in jobs[first_fp8:])
        fp8 = [j for j in jobs if j[0] == "llama_e4m3"]
        assert {j[3] for j in fp8} == set(tokens) and all(j[5] % 16 == 0 for j in fp8)  # fp8's K rule holds
    assert ("llama_e4m3", "e4m3", "70b.down.16", 16, 8192, 28672) in api._jobs(True)


class _Ctx:
    def __init__(self) -> None:
        self.figs: dict[str, tuple[Any, str, dict[str, Any]]] = {}

    def figure(self, key: str, value: Any, unit: str, kind: str, method: str, **kw: Any) -> None:
        self.figs[key] = (value, method, kw)


def test_llama_summaries_per_dtype():
    ctx = _Ctx()
    shapes = [("8b.qkv.16", 1.2), ("8b.down.128", 0.9), ("70b.o.16", 1.05)]
    api._llama_figures(ctx, "llama_e4m3", shapes, 0)  # type: ignore[arg-type]
    value, method, kw = ctx.figs["gemm.api.llama_e4m3.median_vs_cublas"]
    assert value == 1.05 and kw["spread"] == (0.9, 1.2)
    assert "3 Llama-3 projection shapes in e4m3 (against torch._scaled_mm) (8B and 70B, 16, 128 tokens)" in method
    value, method, _ = ctx.figs["gemm.api.llama_e4m3.min_vs_cublas"]
    assert value == 0.9 and method.endswith(": 8b.down.128")
    api._llama_figures(ctx, "llama", shapes[:2], 4)  # type: ignore[arg-type]
    _, method, _ = ctx.figs["gemm.api.llama.median_vs_cublas"]
    assert "2 Llama-3 projection shapes (8B" in method and "4 shapes left out" in method
