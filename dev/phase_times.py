"""Where a benchmark's seconds go: run benchmarks in this process (as the runner's child would) and print every
progress message with the seconds since the benchmark started and since the message before, then each
benchmark's total. For finding what to cut in the quick run (issue 24) and which phase a stall sits in.

    PYTHONPATH=src python3 dev/phase_times.py llm icache [--full] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any


def main() -> None:
    from gpudissect.bench.registry import load_all, resolve_params, select
    from gpudissect.runner import probe_device
    from gpudissect.worker import bench_main

    ap = argparse.ArgumentParser()
    ap.add_argument("benches", nargs="+")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--json", help="write the phases here as well")
    args = ap.parse_args()
    mode = "full" if args.full else "quick"
    load_all()
    benches = select(None, args.benches)
    facts = probe_device() if any(b.needs_gpu for b in benches) else {}  # parameter checks need the device
    out: dict[str, Any] = {}
    for bench in benches:
        t0 = last = time.monotonic()
        phases: list[tuple[float, float, str]] = []

        class Conn:
            def send(self, msg: tuple[str, Any]) -> None:
                nonlocal last
                kind, payload = msg
                if kind in ("progress", "done", "variant_skipped"):
                    now = time.monotonic()
                    text = payload[-1] if kind == "progress" else payload
                    phases.append((round(now - t0, 2), round(now - last, 2), f"{kind}: {text}"))
                    print(f"{bench.name:<22} {now - t0:8.2f} s  +{now - last:7.2f} s  {kind}: {text}", flush=True)
                    last = now

        bench_main(bench.key, mode, resolve_params(bench, {}, facts), Conn())
        total = time.monotonic() - t0
        print(f"{bench.name:<22} total {total:.1f} s", flush=True)
        out[bench.name] = {"total_s": round(total, 2), "phases": phases}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
