"""The app suite: tensor cores above the instruction level (000 §6.3-6.4), explained by the measured
ceilings: linear layers, a Llama decoder layer and Llama text generation (workloads.py). torch and
transformers are optional extras; without them the benchmarks are stored as skipped.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("workloads",)
