"""Roofline arithmetic for the app suite: what the measured ceilings allow a linear layer, a
decoder layer and LLM text generation, so that a measurement can be put as a fraction of its bound.

Pure Python (no torch): the counts follow the module structure of Llama (no biases, RMSNorm,
SwiGLU MLP, rotary positions without weights) and are tested on the CPU.

Conventions, said once here and in the suite's method lines:
* FLOPs count a multiply-add as 2; a linear layer of an (M, K) input and (N, K) weight is 2MNK.
* Causal attention counts only the unmasked scores: 2 products x 2 flops x heads x head_dim x
  S(S+1)/2 per sequence and layer.
* Prefill runs the LM head on the last prompt position only (transformers' generate asks for
  one position of logits).
* A decode step reads every weight once (linear weights at their stored width, the LM head and
  the norms at the model's width; the embedding contributes one row per sequence, ignored) and the
  keys and values of every position seen so far, including the new one; activations are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LlamaShape:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int = 32000

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def layer_linear_params(self) -> int:
        h, kv = self.hidden, self.kv_heads * self.head_dim
        return h * h + 2 * h * kv + h * h + 3 * h * self.intermediate  # q, k, v, o; gate, up, down

    @property
    def linear_params(self) -> int:
        return self.layers * self.layer_linear_params

    @property
    def norm_params(self) -> int:
        return (2 * self.layers + 1) * self.hidden

    @property
    def lm_head_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def total_params(self) -> int:  # untied embedding and LM head, as Llama
        return self.linear_params + self.norm_params + 2 * self.lm_head_params


# Table XV's models. llama-3B is taken as OpenLLaMA 3B (the open 3B Llama of the paper's time: hidden
# 3200, 26 layers, 32 heads, MLP 8640); llama-2-7B and -13B as published by Meta.
LLAMA: dict[str, LlamaShape] = {
    "3b": LlamaShape("3b", 3200, 26, 32, 32, 8640),
    "7b": LlamaShape("7b", 4096, 32, 32, 32, 11008),
    "13b": LlamaShape("13b", 5120, 40, 40, 40, 13824),
}

# 000 Table XIV: te.TransformerLayer parameters per hidden size (ffn_hidden_size, heads).
LAYER_TABLE_XIV: dict[int, tuple[int, int]] = {
    1024: (2816, 8),
    2048: (5632, 16),
    4096: (11008, 32),
    5120: (13824, 40),
    8192: (22016, 64),
}


# ---- linear layer -----------------------------------------------------------------------
def linear_flops(n: int, backward: bool) -> float:
    """A square n x n x n linear layer: 2n^3 forward; forward + backward adds dgrad and wgrad."""
    return (6.0 if backward else 2.0) * n**3


def tflops(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12


def outside_fraction(total_ms: float, gemm_ms: float) -> float:
    """Share of a forward's time spent outside its GEMM (amax, scale, casts, launch gaps)."""
    if total_ms <= 0:
        raise ValueError("total time must be positive")
    return max(0.0, (total_ms - gemm_ms) / total_ms)


def tensor_peak_tflops(fma_per_clk_sm: float, sms: int, clock_mhz: float) -> float:
    """Dense tensor-core peak at a given clock: 2 flops per FMA."""
    return 2.0 * fma_per_clk_sm * sms * clock_mhz * 1e6 / 1e12


# ---- decoder layer ------------------------------------------------------------------------
def layer_flops(hidden: int, ffn: int, heads: int, batch: int, seq: int, causal: bool = True) -> float:
    """Forward flops of one decoder layer (fused QKV, attention, output, SwiGLU MLP)."""
    tokens = batch * seq
    linear = 2.0 * tokens * (4 * hidden * hidden + 3 * hidden * ffn)
    pairs = seq * (seq + 1) / 2 if causal else seq * seq
    attn = 2 * 2.0 * batch * hidden * pairs  # QK^T and PV over all heads: heads x head_dim = hidden
    return linear + attn


# ---- LLM generation -----------------------------------------------------------------------
def prefill_flops(m: LlamaShape, batch: int, prompt: int) -> tuple[float, float]:
    """(flops in linear layers incl. the LM head on the last position, flops in attention)."""
    linear = 2.0 * batch * prompt * m.linear_params + 2.0 * batch * m.lm_head_params
    attn = 2 * 2.0 * batch * m.layers * m.heads * m.head_dim * prompt * (prompt + 1) / 2
    return linear, attn


def prefill_bound_s(m: LlamaShape, batch: int, prompt: int, linear_tflops: float, attn_tflops: float) -> float:
    """Shortest prefill the GEMM ceilings allow: linear flops at the linear layers' rate, attention
    flops at the rate of the model's own type."""
    linear, attn = prefill_flops(m, batch, prompt)
    return linear / (linear_tflops * 1e12) + attn / (attn_tflops * 1e12)


def kv_bytes(m: LlamaShape, batch: int, positions: int, elem_bytes: float) -> float:
    return 2.0 * m.layers * batch * m.kv_heads * m.head_dim * positions * elem_bytes


def weight_bytes_per_step(m: LlamaShape, linear_bytes: float, other_bytes: float) -> float:
    """Weights a decode step reads: linear layers at their stored width, LM head and norms at the
    model's (fp8 scales, a few bytes per layer, are ignored)."""
    return m.linear_params * linear_bytes + (m.lm_head_params + m.norm_params) * other_bytes


def decode_steps(generated: int) -> list[int]:
    """Tokens past the prompt that each decode forward sees (its own included): generating g tokens
    takes g - 1 decode forwards, the first token coming from the prefill's logits."""
    return list(range(1, generated))


def decode_bytes(
    m: LlamaShape,
    batch: int,
    prompt: int,
    generated: int,
    linear_bytes: float,
    other_bytes: float,
    kv_elem_bytes: float,
) -> float:
    """Bytes all decode forwards of one generation must read (weights each step + KV so far)."""
    w = weight_bytes_per_step(m, linear_bytes, other_bytes)
    return sum(w + kv_bytes(m, batch, prompt + i, kv_elem_bytes) for i in decode_steps(generated))


def decode_bound_tokens_per_s(
    m: LlamaShape,
    batch: int,
    prompt: int,
    generated: int,
    linear_bytes: float,
    other_bytes: float,
    kv_elem_bytes: float,
    dram_gbps: float,
) -> float:
    """Most decode tokens/s the DRAM bandwidth allows: batch x (g - 1) tokens over bytes / bandwidth."""
    steps = len(decode_steps(generated))
    if steps == 0:
        raise ValueError("need at least 2 generated tokens for a decode step")
    seconds = decode_bytes(m, batch, prompt, generated, linear_bytes, other_bytes, kv_elem_bytes) / (dram_gbps * 1e9)
    return batch * steps / seconds


@dataclass(frozen=True)
class Bound:
    phase: str  # "prefill" | "decode"
    measured: float  # tokens/s
    bound: float  # tokens/s
    limiter: str  # what sets the bound

    @property
    def fraction(self) -> float:
        return self.measured / self.bound if self.bound > 0 else float("nan")


def generation_bounds(
    m: LlamaShape,
    batch: int,
    prompt: int,
    generated: int,
    *,
    prefill_tps: float,
    decode_tps: float,
    linear_bytes: float,
    other_bytes: float,
    linear_tflops: float,
    attn_tflops: float,
    dram_gbps: float,
) -> tuple[Bound, Bound]:
    """Measured prefill and decode tokens/s beside their bounds from the measured ceilings."""
    pre = batch * prompt / prefill_bound_s(m, batch, prompt, linear_tflops, attn_tflops)
    dec = decode_bound_tokens_per_s(m, batch, prompt, generated, linear_bytes, other_bytes, other_bytes, dram_gbps)
    return (
        Bound("prefill", prefill_tps, pre, f"GEMM {linear_tflops:.0f} TFLOPS (linear), {attn_tflops:.0f} (attention)"),
        Bound("decode", decode_tps, dec, f"DRAM {dram_gbps:.0f} GB/s"),
    )
