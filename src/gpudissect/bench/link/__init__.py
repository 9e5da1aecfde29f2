"""The link suite (Jia ch. 5): host <-> device over PCIe, bandwidth through the copy engine and the SM
(host_bandwidth.py) and latency (host_latency.py); between GPUs, peer-to-peer matrices (peer.py) and
NCCL collectives (nccl.py). The kernels and the per-device Rig they all use: rig.py, kernels/link.cu.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("host_bandwidth", "host_latency", "peer", "nccl")
