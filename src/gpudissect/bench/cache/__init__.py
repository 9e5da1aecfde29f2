"""The cache suite: constant caches (const.py, `const_cache`; Jia §3.4) and instruction caches (icache.py,
`icache`; Jia §3.3). sources.py generates the straight-line code both probe with; kernels are
kernels/cache_*.cu.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("const", "icache")
