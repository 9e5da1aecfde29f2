"""On the GPU machine: how our GEMM should split small-M shapes (decode and small prefill batches against a
large weight), issue 30 §2. For Llama-3 projection shapes at 16-512 tokens, the public default and forced
splits (the stream-K kernels take the data-parallel unit count as an argument: dp = 0 spreads every unit's
k-blocks over all clusters), each checked and timed against cuBLAS in alternation (bench/gemm/cases.py).
Prints one line per shape and variant and writes JSON to $OUT/small_m.json.

Usage: PYTHONPATH=src python3 dev/gemm_small_m.py [tokens ...]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import torch

from gpudissect.bench.gemm.cases import Case
from gpudissect.bench.gemm.vs_cublas import LLAMA
from gpudissect.gemm.launch import prepare

L2 = 50 << 20


class SplitCase(Case):
    """A Case whose launches run `rung` with `dp` data-parallel units (None: the rung's own rule)."""

    def __init__(self, rung: int, dp: int | None, dtype: str, m: int, n: int, k: int):
        self.dp = dp
        super().__init__(torch, rung, dtype, m, n, k, L2)

    def _launches(self) -> list[Any]:
        return [
            prepare(
                self.rung,
                self.dtype,
                a.data_ptr(),
                bt.data_ptr(),
                c.data_ptr(),
                self.m,
                self.n,
                self.k,
                dp_units=self.dp,
            )
            for a, bt, c in zip(self.a, self.bt, self.c)
        ]


VARIANTS = [("default", 0, None), ("r10 split-all", 10, 0), ("r9 split-all", 9, 0), ("r9", 9, None), ("r7", 7, None)]


def main() -> None:
    tokens = [int(t) for t in sys.argv[1:]] or [16, 128, 512]
    rows = []
    for model, projs in LLAMA.items():
        for proj, (n, k) in projs.items():
            for m in tokens:
                for name, rung, dp in VARIANTS:
                    try:
                        case = SplitCase(rung, dp, "bf16", m, n, k)
                        out = case.compare(5, 10.0, None)
                        r = round(out.ratio, 3) if out.ok else None
                        why = "" if out.ok else out.why
                        ran = case.rung
                    except Exception as e:  # noqa: BLE001 - one variant failing must not hide the rest
                        r, why, ran = None, f"{type(e).__name__}: {e}", rung
                    rows.append(
                        {
                            "model": model,
                            "proj": proj,
                            "m": m,
                            "n": n,
                            "k": k,
                            "variant": name,
                            "rung": ran,
                            "ratio": r,
                            "why": why,
                        }
                    )
                    print(f"{model:>3} {proj:>7} M={m:<5} {name:<14} rung {ran:<2} x{r}  {why[:120]}", flush=True)
                    del case
                    torch.cuda.empty_cache()
    path = os.path.join(os.environ.get("OUT", "."), "small_m.json")
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
