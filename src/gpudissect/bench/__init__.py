"""The benchmarks. One package per suite (bench/<suite>/), each a set of short declarations; beside
them the framework: registry.py (declarations, selection, parameters), context.py (what a benchmark
receives) and shared.py (the pieces more than one suite uses).

SUITES is the reader's order (and the run order): the memory hierarchy first, then the caches and the
instruction level, the tensor cores and their numerics, Hopper's own features, and the layers above.
"""

SUITES = ("memory", "cache", "atomics", "isa", "tensor", "numerics", "hopper", "gemm", "app", "link")
