"""Published library- and application-level figures of 000 (Luo et al., journal version) §6.3-6.4.

* Table XV: LLM inference throughput, tokens/s, batch 8, input 128, output 128, "Throughput =
  (input_len + output_len) / time" (§6.4), for RTX4090, A100 and H800 in FP32, BF16 and FP8
  (Transformer Engine's te.Linear and te.RMSNorm swapped into Llama). Cells printed "OOM" are kept
  apart in ``OOM_CELLS``; cells printed "-" (A100 has no FP8) are not transcribed.
* Figs. 6-8 are plots: their values are not printed. What the §6.3 text says about them in
  numbers is transcribed with the sentence in ``note``.

The paper's "llama-3B" is not named further; the suite takes OpenLLaMA 3B's shape (see
analysis/roofline.py). Its A100 and H800 are PCIe cards (000 Table II: H800 PCIe, 114 SMs at up to 1755 MHz, 80 GB
HBM2e on a 5120-bit bus at 1593 MHz, about 2 TB/s), so an H100 SXM (132 SMs, HBM3 at 3.35 TB/s)
is expected to be faster wherever bandwidth or tensor throughput bounds a figure.

Keys are the app suite's: ``app.llm.<3b|7b|13b>.<fp32|bf16|fp8>.tokens_per_s``,
``app.linear.fp8_vs_bf16.<n>``, ``app.layer.<hidden>.<a>_vs_<b>`` (speedup ratios).
"""

from __future__ import annotations

from .memory import Published

_T15 = "Table XV"
_T15_NOTE = ("batch 8, max input 128, max output 128 tokens from ShareGPT prompts; (input + output) / time; "
             "Transformer Engine te.Linear + te.RMSNorm for FP8; the BF16 column is headed 'BF16'")
_SIZES = {"llama-3B": "3b", "llama-2-7B": "7b", "llama-2-13B": "13b"}

# (gpu, model, fp32, bf16, fp8) as printed; None: "OOM" or "-"
_TABLE_XV: tuple[tuple[str, str, float | None, float | None, float | None], ...] = (
    ("RTX4090", "llama-3B", 653.33, 638.19, 641.19),
    ("RTX4090", "llama-2-7B", None, 526.65, None),
    ("A100", "llama-3B", 507.67, 539.82, None),
    ("A100", "llama-2-7B", 309.93, 488.06, None),
    ("A100", "llama-2-13B", None, 382.53, None),
    ("H800", "llama-3B", 546.55, 506.28, 505.74),
    ("H800", "llama-2-7B", 359.69, 432.91, 428.15),
    ("H800", "llama-2-13B", 214.06, 344.25, 343.25),
)

# Cells printed "OOM": (key, gpu). 000 Table II: RTX4090 24 GB, A100 PCIe 40 GB, H800 PCIe 80 GB (HBM2e).
OOM_CELLS: tuple[tuple[str, str], ...] = (
    ("app.llm.7b.fp32.tokens_per_s", "RTX4090"),
    ("app.llm.7b.fp8.tokens_per_s", "RTX4090"),
    ("app.llm.13b.fp32.tokens_per_s", "A100"),
)


def _table_xv() -> list[Published]:
    out = []
    for gpu, model, *vals in _TABLE_XV:
        for kind, v in zip(("fp32", "bf16", "fp8"), vals):
            if v is not None:
                out.append(Published(f"app.llm.{_SIZES[model]}.{kind}.tokens_per_s", gpu, float(v), "tokens/s",
                                     "000", _T15, f"{model}; {_T15_NOTE}"))
    return out


_TEXT: list[Published] = [
    Published("app.linear.fp8_vs_bf16.16384", "H800", 2.0, "ratio", "000", "§6.3.1 (text, Fig. 7)",
              "'When N=16384, H800 and 4090 utilizing FP8 achieve almost twice the throughput of FP16' "
              "(approximate; FP16 there, BF16 here: the same tensor-core rate)"),
    Published("app.linear.fp8_vs_bf16.16384", "RTX4090", 2.0, "ratio", "000", "§6.3.1 (text, Fig. 7)",
              "same sentence as for H800 (approximate)"),
]

APP: tuple[Published, ...] = tuple(_table_xv() + _TEXT)

NOT_TRANSCRIBED: tuple[str, ...] = (
    "Fig. 6 (share of te.Linear time per operator), Fig. 7 (te.Linear GFLOPS over n) and Fig. 8 "
    "(te.TransformerLayer latency): plots without printed values",
    "§6.3 qualitative statements: FP8 below FP16/FP32 at small n, gains 'evident' at N = 8192; FP16 'nearly "
    "twice' FP32 for the layer; FP8 faster than FP16 for hidden > 4096 'but does not achieve double'",
    "Table XIV (layer parameters): settings, used by the suite (analysis/roofline.LAYER_TABLE_XIV)",
)

_GPU_ORDER = ("H800", "A100", "RTX4090")


def published(key: str, gpu: str | None = None) -> list[Published]:
    return [p for p in APP if p.key == key and (gpu is None or p.gpu == gpu)]


def gpus() -> list[str]:
    seen = list(dict.fromkeys(p.gpu for p in APP))
    return [g for g in _GPU_ORDER if g in seen] + [g for g in seen if g not in _GPU_ORDER]


def keys() -> list[str]:
    return sorted({p.key for p in APP})
