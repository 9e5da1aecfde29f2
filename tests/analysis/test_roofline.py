"""Roofline arithmetic of the app suite (pure Python, no torch)."""

from __future__ import annotations

import math

import pytest

from gpudissect.analysis import roofline as rl


def test_llama_parameter_counts_match_the_published_sizes():
    # Meta's Llama-2 7B / 13B: 6,738,415,616 and 13,015,864,320 parameters; OpenLLaMA 3B: 3,426,473,600
    assert rl.LLAMA["7b"].total_params == 6_738_415_616
    assert rl.LLAMA["13b"].total_params == 13_015_864_320
    assert rl.LLAMA["3b"].total_params == 3_426_473_600


def test_head_dim_and_layer_params():
    m = rl.LlamaShape("t", hidden=64, layers=2, heads=4, kv_heads=2, intermediate=96, vocab=100)
    assert m.head_dim == 16
    # q 64x64, k and v 64x32 each, o 64x64, gate/up/down 3 x 64x96
    assert m.layer_linear_params == 4096 + 2 * 2048 + 4096 + 3 * 6144
    assert m.total_params == 2 * m.layer_linear_params + (2 * 2 + 1) * 64 + 2 * 100 * 64


def test_linear_flops_and_tflops():
    assert rl.linear_flops(1024, False) == 2 * 1024**3
    assert rl.linear_flops(1024, True) == 3 * rl.linear_flops(1024, False)
    assert rl.tflops(2e12, 1000.0) == pytest.approx(2.0)


def test_outside_fraction():
    assert rl.outside_fraction(4.0, 1.0) == pytest.approx(0.75)
    assert rl.outside_fraction(1.0, 1.2) == 0.0  # a GEMM timed alone can come out slower: never negative
    with pytest.raises(ValueError):
        rl.outside_fraction(0.0, 1.0)


def test_tensor_peak_reproduces_the_h100_dense_fp16_figure():
    # NVIDIA: 989.4 dense FP16 TFLOPS = 132 SMs x 1830 MHz x 2048 FMA/clk/SM x 2
    assert rl.tensor_peak_tflops(2048, 132, 1830) == pytest.approx(989.4, abs=0.1)


def test_layer_flops_counts_causal_pairs():
    h, f, b, s = 64, 96, 2, 8
    linear = 2 * b * s * (4 * h * h + 3 * h * f)
    attn = 2 * 2 * b * h * s * (s + 1) / 2
    assert rl.layer_flops(h, f, 4, b, s) == pytest.approx(linear + attn)
    assert rl.layer_flops(h, f, 4, b, s, causal=False) > rl.layer_flops(h, f, 4, b, s)


def test_prefill_flops_and_bound():
    m = rl.LLAMA["7b"]
    lin, attn = rl.prefill_flops(m, 8, 128)
    assert lin == pytest.approx(2 * 8 * 128 * m.linear_params + 2 * 8 * m.lm_head_params)
    assert attn == pytest.approx(4 * 8 * 32 * 4096 * 128 * 129 / 2)
    t = rl.prefill_bound_s(m, 8, 128, 500.0, 250.0)
    assert t == pytest.approx(lin / 500e12 + attn / 250e12)


def test_decode_bytes_by_hand():
    m = rl.LlamaShape("t", hidden=8, layers=1, heads=2, kv_heads=2, intermediate=16, vocab=10)
    w = m.linear_params * 1.0 + (m.lm_head_params + m.norm_params) * 2.0
    assert rl.weight_bytes_per_step(m, 1.0, 2.0) == w
    # prompt 4, 3 generated: decode forwards see 5 and 6 positions
    kv = lambda n: 2 * 1 * 2 * 2 * 4 * n * 2.0
    assert rl.decode_bytes(m, 2, 4, 3, 1.0, 2.0, 2.0) == pytest.approx(2 * w + kv(5) + kv(6))
    bound = rl.decode_bound_tokens_per_s(m, 2, 4, 3, 1.0, 2.0, 2.0, dram_gbps=1.0)
    assert bound == pytest.approx(2 * 2 / ((2 * w + kv(5) + kv(6)) / 1e9))
    with pytest.raises(ValueError):
        rl.decode_bound_tokens_per_s(m, 2, 4, 1, 1.0, 2.0, 2.0, 1.0)


def test_decode_bound_7b_bf16_is_weight_dominated():
    m = rl.LLAMA["7b"]
    b = rl.decode_bound_tokens_per_s(m, 8, 128, 128, 2.0, 2.0, 2.0, dram_gbps=3000.0)
    step_bytes = rl.weight_bytes_per_step(m, 2.0, 2.0)
    assert step_bytes == (6_738_415_616 - 32000 * 4096) * 2  # every parameter but the embedding, 2 bytes each
    weights_only = 8 / (step_bytes / 3000e9)
    assert 0.9 * weights_only < b < weights_only  # the KV cache adds a few percent


def test_generation_bounds_fractions():
    m = rl.LLAMA["3b"]
    pre, dec = rl.generation_bounds(
        m,
        8,
        128,
        128,
        prefill_tps=1000.0,
        decode_tps=500.0,
        linear_bytes=2.0,
        other_bytes=2.0,
        linear_tflops=600.0,
        attn_tflops=600.0,
        dram_gbps=3000.0,
    )
    assert pre.phase == "prefill" and dec.phase == "decode"
    assert pre.fraction == pytest.approx(1000.0 / pre.bound)
    assert dec.fraction == pytest.approx(500.0 / dec.bound)
    assert math.isnan(rl.Bound("decode", 1.0, 0.0, "").fraction)


def test_table_xiv_shapes():
    for h, (ffn, heads) in rl.LAYER_TABLE_XIV.items():
        assert h % heads == 0 and h // heads == 128
        assert ffn % 16 == 0
