"""The memory suite: latency, throughput and geometry of every level (Luo §4, Jia ch. 3, Sun §7).

latency.py (`pchase_latency`, `shared_latency`, `index_chase`), bandwidth.py (`bandwidth`), geometry.py
(`bank_conflicts`, `l1_carveout`, `cache_lines`), l2.py (`l2_fine_pchase`), tlb.py (`tlb`). The chase
machinery they share with the hopper suite is in bench/shared.py; kernels are kernels/memory_*.cu.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("latency", "bandwidth", "geometry", "l2", "tlb")
