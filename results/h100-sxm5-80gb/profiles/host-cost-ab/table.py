"""Print the A/B's host-cost figures from the exports beside this file (python3 table.py)."""

import gzip
import json
from pathlib import Path

KEYS = ("gemm.api.host_us_per_call", "gemm.api.host_us_per_call_2048", "gemm.api.torch_host_us_per_call")
here = Path(__file__).parent
print("arm  " + "  ".join(k.removeprefix("gemm.api.") for k in KEYS))
for p in sorted(here.glob("*.json.gz")):
    figs = {f["key"]: f for f in json.load(gzip.open(p))["figures"]}
    row = [f"{figs[k]['value']} ({figs[k]['spread'][0]:.1f}..{figs[k]['spread'][1]:.1f})" for k in KEYS if k in figs]
    print(p.name.removesuffix(".json.gz").ljust(4), "  ".join(row))
