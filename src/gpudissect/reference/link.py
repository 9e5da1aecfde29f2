"""Published interconnect figures, transcribed from Jia et al., *Dissecting the NVIDIA Volta GPU
Architecture via Microbenchmarking* (seed ``"002"``), chapter 5:

* §5.1 text: NVLink 2.0 gives a V100 up to 6 sub-links at 25 GB/s per direction each, "up to
  300 GB/s interconnect bandwidth";
* Table 5.1: peer-to-peer "unidirection bandwidth" (GB/s) and "latency within same PCIe switch"
  (us) on V100 PCIe (PCIe Gen 3), P100 NVLink (NVLink 1.0) and V100 NVLink (NVLink 2.0); NVLink
  pairs joined by two sub-links, peer access enabled;
* Table 5.2: host-to-device and device-to-host bandwidth (MB/s), one GPU talking to its closest
  CPU through x16 Gen 3 PCIe.

Values are as printed, except that Table 5.2's MB/s are given here in GB/s (MB = 10^6 bytes;
the paper does not say which MB it means, see the note). The paper names no tool or copy engine:
its numbers match what CUDA's bandwidthTest and p2pBandwidthLatencyTest print (pinned memory,
cudaMemcpy/cudaMemcpyPeerAsync issued by the source GPU, latency as the time of a tiny copy), so
they are keyed to our copy-engine figures with that assumption said in ``note``.

GPU labels: ``"V100"`` is the PCIe card, ``"V100-NVLink"`` the SXM2 card, ``"P100-NVLink"``.
"""

from __future__ import annotations

from .memory import Published

_ASSUMED_P2P = ("Jia names no tool; the numbers match p2pBandwidthLatencyTest's unidirectional P2P "
                "matrix (cudaMemcpyPeerAsync issued by the source GPU: a copy-engine write)")
_ASSUMED_LAT = ("latency within one PCIe switch; Jia names no method: p2pBandwidthLatencyTest times a tiny "
                "cudaMemcpyPeerAsync, our link.p2p.ce_latency_us is the same kind of figure")
_MB = ("printed as {v:,} MB/s; converted with MB = 10^6 bytes (bandwidthTest of CUDA 9 divided by 2^20: "
       "then the value is {g:.2f} GB/s); pinned memory assumed (bandwidthTest's default)")


def _table52(key: str, values: dict[str, float]) -> list[Published]:
    return [Published(key, gpu, round(v / 1000, 4), "GB/s", "002", "Table 5.2",
                      _MB.format(v=v, g=v * 2**20 / 1e9)) for gpu, v in values.items()]


LINK: tuple[Published, ...] = (
    Published("link.nvlink.peak_gbps_theoretical", "V100-NVLink", 300, "GB/s", "002", "§5.1 (text)",
              "6 sub-links x 25 GB/s per direction; the paper's 'up to 300 GB/s' counts both directions"),
    *[Published("link.p2p.ce_write_gbps", gpu, v, "GB/s", "002", "Table 5.1",
                _ASSUMED_P2P + ("; NVLink pairs joined by two sub-links" if "NVLink" in gpu else "; PCIe Gen 3"))
      for gpu, v in {"V100": 10.63, "P100-NVLink": 36.72, "V100-NVLink": 47.99}.items()],
    *[Published("link.p2p.ce_latency_us", gpu, v, "us", "002", "Table 5.1", _ASSUMED_LAT)
      for gpu, v in {"V100": 7.21, "P100-NVLink": 9.47, "V100-NVLink": 8.55}.items()],
    *_table52("link.h2d_pinned_gbps", {"V100": 12152.4, "P100-NVLink": 12135.9, "V100-NVLink": 12147.8}),
    *_table52("link.d2h_pinned_gbps", {"V100": 12881.1, "P100-NVLink": 12845.9, "V100-NVLink": 12858.0}),
)


def published(key: str, gpu: str | None = None) -> list[Published]:
    return [p for p in LINK if p.key == key and (gpu is None or p.gpu == gpu)]


def gpus() -> list[str]:
    return sorted({p.gpu for p in LINK})


def keys() -> list[str]:
    return sorted({p.key for p in LINK})
