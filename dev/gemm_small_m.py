"""On the GPU machine: how our GEMM should split small-M shapes (decode and small prefill batches against a
large weight), issue 30 §2. For Llama-3 projection shapes at 16-512 tokens, the public default and forced
splits (the stream-K kernels take the data-parallel unit count as an argument: dp = 0 spreads every unit's
k-blocks over all clusters), and the small-M path (gemm.small: swap-AB, split-K; "small" picks the token tile
for M, "small16".."small128" force it; experiments: "small-c1" one CTA per SM with a deeper pipeline,
"small-ef" the weight loaded evict-first, "small-x64" 64 weight rows per CTA, "small-p256" the weight's tensor
map with 256-byte L2 promotion), each checked and timed against cuBLAS in alternation (bench/gemm/cases.py).
Prints one line per shape and variant (the small path's split and grid after it) and writes JSON to
$OUT/small_m.json (with our and cuBLAS's median times, and the weight's bytes over our time in TB/s: the DRAM
bound is ~3.35 TB/s on an H100 SXM).

Usage: PYTHONPATH=src python3 dev/gemm_small_m.py [--only NAME,NAME...] [tokens ...]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from typing import Any

import torch

from gpudissect.bench.gemm.cases import Case, SmallCase
from gpudissect.bench.gemm.vs_cublas import LLAMA
from gpudissect.gemm.launch import prepare
from gpudissect.gemm.small import VARIANTS as SMALL_VARIANTS
from gpudissect.gemm.small import SmallVariant, pick_mp

L2 = 50 << 20


class SplitCase(Case):
    """A Case whose launches run `rung` with `dp` data-parallel units (None: the rung's own rule)."""

    def __init__(self, rung: int, dp: int | None, dtype: str, m: int, n: int, k: int):
        self.dp = dp
        super().__init__(torch, rung, dtype, m, n, k, L2)

    def _prepare(self, a: Any, bt: Any, c: Any, sa: Any, sb: Any) -> Any:
        return prepare(
            self.rung, self.dtype, a.data_ptr(), bt.data_ptr(), c.data_ptr(), self.m, self.n, self.k, dp_units=self.dp
        )


VARIANTS: list[tuple[str, int, int | None]] = [
    ("default", 0, None),
    ("r10 split-all", 10, 0),
    ("r9 split-all", 9, 0),
    ("r9", 9, None),
    ("r7", 7, None),
]
# the small-M path: name -> variant (None: pick_mp per M)
SMALL: dict[str, SmallVariant | None] = {"small": None} | {v.name: v for v in SMALL_VARIANTS.values()}


def _small_experiments(m: int) -> dict[str, tuple[SmallVariant, str]]:
    """name -> (variant, the tensor maps' L2 promotion) for M tokens"""
    mp = pick_mp(m)
    return {
        "small-c1": (SmallVariant(mp, ctas_per_sm=1), "NONE"),
        "small-ef": (SmallVariant(mp, evict_first=True), "NONE"),
        "small-x64": (SmallVariant(mp, bw=64, ctas_per_sm=4), "NONE"),
        "small-p256": (SmallVariant(mp), "L2_256B"),
    }


def main() -> None:
    args = sys.argv[1:]
    only: set[str] | None = None
    if args[:1] == ["--only"]:
        only, args = set(args[1].split(",")), args[2:]
    tokens = [int(t) for t in args] or [16, 128, 512]
    rows = []
    for model, projs in LLAMA.items():
        for proj, (n, k) in projs.items():
            for m in tokens:
                todo: list[tuple[str, Any]] = [(name, (rung, dp)) for name, rung, dp in VARIANTS]
                todo += [(name, (v, "NONE")) for name, v in SMALL.items()] + list(_small_experiments(m).items())
                for name, how in todo:
                    if only is not None and name not in only:
                        continue
                    ladder = isinstance(how[0], int)
                    rung = how[0] if ladder else 20
                    case: Case | None = None
                    times: dict[str, float] = {}
                    try:
                        if ladder:
                            case = SplitCase(how[0], how[1], "bf16", m, n, k)
                        else:
                            case = SmallCase(torch, how[0], "bf16", m, n, k, L2, how[1])
                        out = case.compare(5, 10.0, None)
                        r = round(out.ratio, 3) if out.ok else None
                        why = "" if out.ok else out.why
                        if out.ok:  # times, and the weight's bytes over our time (the DRAM bound's measure)
                            us, cus = statistics.median(out.ours_ms) * 1e3, statistics.median(out.cublas_ms) * 1e3
                            times = {"ours_us": round(us, 2), "cublas_us": round(cus, 2)}
                            times["weight_tbps"] = round(2 * n * k / (us * 1e-6) / 1e12, 2)
                        ran = case.rung
                        sl = case.launches[0]
                        if hasattr(sl, "splits"):  # the small path: its token tile, split and grid
                            why = f"{sl.variant.name}, {sl.variant.stages} stages, splits {sl.splits}, grid {sl.grid}"
                            why += "" if out.ok else f"; {out.why}"
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
                            **times,
                        }
                    )
                    t = f"{times['ours_us']:7.1f} us ({times['weight_tbps']:.2f} TB/s of weight)" if times else ""
                    print(f"{model:>3} {proj:>7} M={m:<5} {name:<14} rung {ran:<2} x{r} {t}  {why[:110]}", flush=True)
                    del case
                    torch.cuda.empty_cache()
    path = os.path.join(os.environ.get("OUT", "."), "small_m.json")
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
