"""The isa suite: the instruction level. encoding.py (`isa_encoding`: SASS bit fields and control codes,
no GPU needed), fragments.py (`fragment_maps`: tensor-core register mapping), native.py
(`native_instructions`, `scheduler_mapping`), regbank.py (`isa_regbank`: register banks, reuse, stalls).
Kernels: kernels/isa_*.cu.
"""

from . import encoding, fragments, native, regbank  # noqa: F401 - the order the benchmarks run in
