"""The link suite (Jia ch. 5): host <-> device over PCIe, copy engine and SM (host.py), and between GPUs,
peer-to-peer matrices and NCCL collectives (peer.py). Kernels: kernels/link.cu.
"""

from . import host, peer  # noqa: F401 - the order the benchmarks run in
