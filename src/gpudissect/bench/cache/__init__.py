"""The cache suite: constant caches (const.py, `const_cache`; Jia §3.4) and instruction caches (icache.py,
`icache`; Jia §3.3). const_probe.py and icache_probe.py hold the probes (kernels, builds, launches),
const_imm.py the immediate-operand experiment, icache_privacy.py the privacy experiments; sources.py
generates the straight-line code they probe with and checks its SASS. Kernels are kernels/cache_*.cu.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("const", "icache")
