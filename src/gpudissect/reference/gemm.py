"""Published figures of Yan et al., *Demystifying Tensor Cores to Optimize Half-Precision Matrix
Multiply* (seed 004), transcribed exactly as printed (RTX2070 and T4, CUDA/cuBLAS 10.1).

Keys follow the gemm suite's names where the quantity is the same (``gemm.*``); instruction CPIs
keep the paper's SASS names. Table VI rows are the model's check (analysis/gemm_model.yan_table_vi
reproduces them from Tables I, III and IV).
"""

from __future__ import annotations

from .memory import Published

P = "004"
PUBLISHED: list[Published] = [
    Published("cpi.hmma1688_f16", "RTX2070", 8.06, "cycles", P, "Table I", "measured; theoretical 8.00"),
    Published("cpi.ldg128_l2", "RTX2070", 15.95, "cycles", P, "Table III", "LDG.128, data in L2"),
    Published("cpi.ldg128_l1", "RTX2070", 8.00, "cycles", P, "Table III", "LDG.128, data in L1"),
    Published("cpi.lds32", "RTX2070", 2.11, "cycles", P, "Table IV"),
    Published("cpi.lds128", "RTX2070", 8.00, "cycles", P, "Table IV"),
    Published("cpi.sts128", "RTX2070", 10.00, "cycles", P, "Table IV"),
    Published("mem.bw.dram_gbps", "RTX2070", 380.0, "GB/s", P, "Table II"),
    Published("mem.bw.dram_gbps", "T4", 238.0, "GB/s", P, "Table II"),
    Published("mem.bw.l2_gbps", "RTX2070", 750.0, "GB/s", P, "Table II"),
    Published("mem.bw.l2_gbps", "T4", 910.0, "GB/s", P, "Table II"),
    Published("gemm.peak_tflops", "RTX2070", 59.7, "TFLOPS", P, "Table II", "tensor-core throughput"),
    Published("gemm.peak_tflops", "T4", 65.0, "TFLOPS", P, "Table II", "tensor-core throughput"),
    Published("gemm.fp16.max_tflops", "RTX2070", 60.37, "TFLOPS", P, "§VII-A (text)", "ours, square"),
    Published("gemm.fp16.max_tflops", "T4", 49.71, "TFLOPS", P, "§VII-A (text)", "ours, square"),
    Published("gemm.cublas.fp16.max_tflops", "RTX2070", 52.75, "TFLOPS", P, "§VII-A (text)", "at W = 4096"),
    Published("gemm.cublas.fp16.max_tflops", "T4", 45.43, "TFLOPS", P, "§VII-A (text)", "at W = 2560"),
    Published("gemm.square.mean_vs_cublas", "RTX2070", 1.55, "ratio", P, "§VII-A (text)", "average speedup, square"),
    Published("gemm.square.mean_vs_cublas", "T4", 1.53, "ratio", P, "§VII-A (text)", "average speedup, square"),
    Published("gemm.rect.mean_vs_cublas", "RTX2070", 1.77, "ratio", P, "§VII-B (text)", "average, rectangular"),
    Published("gemm.rect.mean_vs_cublas", "T4", 1.45, "ratio", P, "§VII-B (text)", "average, rectangular"),
    Published("gemm.mean_vs_cublas", "RTX2070", 1.73, "ratio", P, "Abstract", "average over all shapes"),
    Published("gemm.mean_vs_cublas", "T4", 1.46, "ratio", P, "Abstract", "average over all shapes"),
]

# Table VI: (bm, bn, bk), (wm, wn, wk) -> (HMMA cycles, memory-I/O cycles) per CTA and k-block.
TABLE_VI: list[tuple[tuple[int, int, int], tuple[int, int, int], int, int]] = [
    ((128, 128, 32), (64, 64, 8), 1031, 1370),
    ((128, 128, 32), (128, 64, 8), 1031, 1235),
    ((256, 128, 32), (64, 64, 8), 2063, 2325),
    ((256, 128, 32), (128, 64, 8), 2063, 2055),
    ((256, 256, 32), (64, 64, 8), 4126, 3821),
    ((256, 256, 32), (128, 64, 8), 4126, 3281),
]

# Table VII: the two kernels compared
TABLE_VII = {
    "ours": {"block": (256, 256, 32), "warp": (128, 64, 8), "smem_kb": 36, "ctas_per_sm": 1, "warps_per_sm": 8},
    "cublas_10.1": {"block": (128, 128, 64), "warp": (64, 64, 8), "smem_kb": 32, "ctas_per_sm": 2, "warps_per_sm": 8},
}

# §VII shapes: square W from 1024 to 16384 in steps of 256; rectangular families (M, N, K) in units of W.
RECT_FAMILIES: list[tuple[int, int, int]] = [(2, 1, 1), (1, 2, 1), (1, 1, 2), (4, 1, 1), (1, 4, 1), (1, 1, 4)]
