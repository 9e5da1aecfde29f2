"""On the GPU machine, under ncu: where the small-M path's token tiles re-read the weight from. The rule's clause for
weights of at least twice the L2 (gemm.small.STREAM_L2_FACTOR) rests on a guess: with a weight far larger than the
L2, the re-reads of four token tiles go past the L2 to DRAM. One launch of each (dtype, variant) on Llama-3-8B down
at 128 tokens is profiled after 20 unprofiled ones, cold (after 0.3 s idle) and hot (after 0.5 s of 8192^3 GEMMs);
ncu reports DRAM bytes read, L2 bytes read by the SMs and the kernel's time. The weight alone is 117 MB (bf16) or
59 MB (e4m3): DRAM bytes well above it are re-reads that missed the L2.

Usage (on the device):
  ncu --profile-from-start off --cache-control none --clock-control none \
      --metrics dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,gpu__time_duration.sum,\
              smsp__cycles_elapsed.avg.per_second \
      --csv python3 dev/gemm_small_dram.py > $OUT/small_dram.csv
"""

from __future__ import annotations

import time

import torch

from gpu_conditions import heat
from gpudissect.bench.gemm.cases import SmallCase
from gpudissect.gemm.small import ONE_PER_SM

L2 = 50 << 20
M, N, K = 128, 4096, 14336
CASES = [(dt, ONE_PER_SM[mp]) for dt in ("bf16", "e4m3") for mp in (32, 64)]


def main() -> None:
    for dt, v in CASES:
        case = SmallCase(torch, v, dt, M, N, K, L2)
        ok, why, _, _ = case.check()
        print(f"# {dt} {v.name}: check {'ok' if ok else 'FAILED'} ({why})", flush=True)
        launch = case.launches[0]
        for cond in ("cold", "hot"):
            for _ in range(20):
                launch(case.stream)
            torch.cuda.synchronize()
            if cond == "hot":
                heat(torch)
            else:
                time.sleep(0.3)
            print(f"# profiled: {dt} {v.name} {cond}", flush=True)
            torch.cuda.profiler.start()
            launch(case.stream)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        del case
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
