"""The isa suite: the instruction level. encoding.py (`isa_encoding`: SASS bit fields and control codes,
no GPU needed), fragments.py (`fragment_maps`: tensor-core register mapping), native.py
(`native_instructions`: latency and throughput per instruction; its table native_ops.py, built on the
single-instruction models of native_steps.py, its CPU replay native_replay.py), scheduler.py
(`scheduler_mapping`: warps to sub-cores), regbank.py (`isa_regbank`: register banks, reuse, stalls; its
analysis in analysis/regbank.py). corpus.py builds every cubin of the project for isa_encoding.
Kernels: kernels/isa_*.cu.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("encoding", "fragments", "native", "scheduler", "regbank")
