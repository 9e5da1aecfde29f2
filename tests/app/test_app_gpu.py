"""The app suite's pieces on a CUDA GPU at small sizes (the lent H100); skipped without torch + CUDA."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for torch")


def _rel(a, b) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_float8_linear_forward_backward_on_cuda():
    from gpudissect.app import float8

    torch.manual_seed(0)
    x = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(384, 512, device="cuda", dtype=torch.bfloat16) / math.sqrt(512)
    lin = float8.Float8Linear(w.clone())
    y = lin(x)
    assert y.dtype == torch.bfloat16 and y.shape == (256, 384)
    assert _rel(y, x.detach().double() @ w.double().t()) < 0.08
    g = torch.randn_like(y)
    y.backward(g)
    assert _rel(x.grad, g.double() @ w.double()) < 0.12
    assert _rel(lin.weight.grad, g.double().t() @ x.detach().double()) < 0.12


def test_float8_inference_linear_decode_rows():
    """8 rows, as one decode step of batch 8: _scaled_mm either takes them or the rows get padded."""
    from gpudissect.app import float8

    w = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16) / math.sqrt(512)
    x = torch.randn(8, 1, 512, device="cuda", dtype=torch.bfloat16)
    y = float8.Float8InferenceLinear(w)(x)
    assert y.shape == (8, 1, 1024)
    assert _rel(y, x.double() @ w.double().t()) < 0.08
    print("rows padded:", float8.rows_padded())


def test_linear_case_checks_and_graph_timing():
    from gpudissect.app.linear_run import TOL, LinearCase
    from gpudissect.app.timing import time_call

    for kind in ("bf16", "fp8"):
        case = LinearCase(torch, kind, 512, seed=1)
        ef, eb = case.check()
        assert ef <= TOL[kind][0] and eb <= TOL[kind][1], (kind, ef, eb)
        tf = time_call(torch, case.forward, 2, 2.0)
        tb = time_call(torch, case.fwd_bwd, 2, 2.0)
        print(kind, "forward:", tf.how, tf.median, "fwd+bwd:", tb.how, tb.median)
        assert tf.median > 0 and tb.median > 0


def test_ceilings_small():
    from gpudissect.app.timing import dram_copy_gbps, matmul_tflops

    gbps, _, _ = dram_copy_gbps(torch, 2, nbytes=256 << 20)
    assert gbps > 100
    for kind in ("fp32", "tf32", "bf16", "fp8"):
        v, _, how = matmul_tflops(torch, kind, 2, n=1024)
        assert v > 1, how


@pytest.mark.parametrize("kind", ["bf16", "fp8"])
def test_tiny_llama_generate_and_graph_decode(kind):
    transformers = pytest.importorskip("transformers")
    from gpudissect.analysis.roofline import LlamaShape
    from gpudissect.app import llm

    shape = LlamaShape("tiny", 256, 2, 4, 4, 512, vocab=1024)
    model = llm.build_model(torch, transformers, shape, torch.bfloat16, "cuda")
    if kind == "fp8":
        assert llm.to_fp8(torch, model) == 2 * 7
    ids = llm.prompt_ids(torch, shape.vocab, 8, 32, "cuda")
    hf = llm.hf_generate(torch, transformers, model, ids, 16, 1, warm_tokens=4)  # quick mode's short warm-up
    assert tuple(hf.tokens.shape) == (8, 16)
    exact, gap = llm.teacher_forced_gap(torch, model, ids, hf.tokens)
    print(kind, "generate: exact", exact, "gap", gap)
    gd = llm.GraphDecoder(torch, transformers, model, ids, 16)
    why = gd.capture()
    assert why is None, why
    gt = gd.time(1, 3)
    exact2, gap2 = llm.teacher_forced_gap(torch, model, ids, gt.tokens)
    print(
        kind, "graph: exact", exact2, "gap", gap2, "agree with generate", float((gt.tokens == hf.tokens).float().mean())
    )
    assert gap2 < 0.75 and gap < 0.75
