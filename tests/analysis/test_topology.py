"""PCIe peak from generation and width, NVML topology records to a path matrix, `nvidia-smi topo -m`
text, pair matrices; the transcribed Jia ch. 5 values."""

import math

import pytest

from gpudissect.analysis import topology
from gpudissect.reference import link as ref

# Recorded on the lent H100 (one GPU): the GPU row only, no pairs.
H100_TOPO = """\
\t\x1b[4mGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m
GPU0\t X \t0-15\t0\t\tN/A

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks
"""

# A 4-GPU box: two NVLink pairs, PCIe between the pairs.
FOUR = """\
        GPU0    GPU1    GPU2    GPU3    NIC0    CPU Affinity    NUMA Affinity
GPU0     X      NV12    SYS     SYS     PIX     0-31            0
GPU1    NV12     X      SYS     SYS     PIX     0-31            0
GPU2    SYS     SYS      X      NV12    SYS     32-63           1
GPU3    SYS     SYS     NV12     X      SYS     32-63           1
NIC0    PIX     PIX     SYS     SYS      X

Legend:
"""


@pytest.mark.parametrize(
    "gen,width,gbps", [(3, 16, 15.754), (4, 16, 31.508), (5, 16, 63.015), (5, 8, 31.508), (1, 1, 0.25), (6, 16, 121.0)]
)
def test_pcie_peak(gen, width, gbps):
    assert topology.pcie_peak_gbps(gen, width) == pytest.approx(gbps, rel=1e-3)


@pytest.mark.parametrize("gen,width", [(7, 16), (0, 16), (5, 3), (5, 0)])
def test_pcie_peak_rejects_impossible_links(gen, width):
    with pytest.raises(ValueError):
        topology.pcie_peak_gbps(gen, width)


def test_tlp_efficiency():
    assert topology.tlp_efficiency(256, 24) == pytest.approx(256 / 280)
    with pytest.raises(ValueError):
        topology.tlp_efficiency(0)


def _dgx(n=8, links=18):
    """Synthetic NVML records: every GPU pair through NVSwitch shows up as links to the switches,
    so emulate the direct-NVLink case: each GPU's links point at its neighbour's bus id."""
    bus = [f"00000000:{0x18 + 0x10 * i:02X}:00.0" for i in range(n)]
    recs = []
    for i in range(n):
        partner = i ^ 1
        recs.append(
            {
                "index": i,
                "uuid": f"GPU-{i}",
                "pci_bus_id": bus[i],
                "nvlinks": [bus[partner].lower().replace("00000000", "0000")] * links,
                "levels": {j: (20 if j // 4 == i // 4 else 50) for j in range(n) if j != i},
            }
        )
    return recs


def test_path_matrix_from_nvml_records():
    m = topology.path_matrix(_dgx())
    assert m[0][0] == "X" and m[0][1] == "NV18" and m[1][0] == "NV18"
    assert m[0][2] == "PXB" and m[0][5] == "SYS"
    assert topology.link_kind(m[0][1]) == ("nvlink", 18)
    assert topology.link_kind(m[0][5]) == ("pcie", 50)
    assert topology.link_kind("X") == ("self", 0)
    with pytest.raises(ValueError):
        topology.link_kind("FOO")
    with pytest.raises(ValueError):
        topology.path_label(35, 0)


def test_parse_topo_text():
    labels, rows = topology.parse_topo_text(FOUR)
    assert labels == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert rows[0] == ["X", "NV12", "SYS", "SYS"] and rows[3][2] == "NV12"
    labels, rows = topology.parse_topo_text(H100_TOPO.replace("\x1b[4m", "").replace("\x1b[0m", ""))
    assert labels == ["GPU0"] and rows == [["X"]]
    with pytest.raises(ValueError):
        topology.parse_topo_text("no matrix here")
    with pytest.raises(ValueError):
        topology.parse_topo_text(FOUR.replace("NV12    SYS     SYS     PIX", "NV12    ???     SYS     PIX", 1))


def test_pair_matrix_median_and_table():
    vals = {(0, 1): 400.0, (1, 0): 390.0, (0, 2): 50.0, (2, 0): 52.0, (1, 2): 51.0}
    m = topology.pair_matrix(vals, 3)
    assert math.isnan(m[0, 0]) and math.isnan(m[2, 1]) and m[0, 1] == 400.0
    assert topology.offdiag_median(m) == 52.0
    assert math.isnan(topology.offdiag_median(topology.pair_matrix({}, 2)))
    t = topology.matrix_table(m, ["GPU0", "GPU1", "GPU2"])
    assert "| GPU0 | - | 400.0 | 50.0 |" in t and "| GPU2 | 52.0 | - | - |" in t
    with pytest.raises(ValueError):
        topology.pair_matrix({(0, 3): 1.0}, 3)


def test_reference_link_values():
    assert [p.value for p in ref.published("link.p2p.ce_write_gbps")] == [10.63, 36.72, 47.99]
    h2d = ref.published("link.h2d_pinned_gbps", "V100")[0]
    assert h2d.value == pytest.approx(12.1524) and h2d.table == "Table 5.2" and "MB/s" in h2d.note
    assert ref.published("link.d2h_pinned_gbps", "V100-NVLink")[0].value == pytest.approx(12.858)
    assert {p.unit for p in ref.LINK} <= {"GB/s", "us"}
    assert all(p.paper == "002" for p in ref.LINK)
    assert ref.gpus() == ["P100-NVLink", "V100", "V100-NVLink"]


def test_path_matrix_through_nvswitch():
    # DGX H100: every GPU's 18 links end at NVSwitches; NVML reports NVLink P2P between all pairs
    recs = [
        {
            "index": i,
            "pci_bus_id": f"0000:{0x18 + i:02x}:00.0",
            "nvlinks": [],
            "switch_links": 18,
            "nvlink_p2p": {j: True for j in range(4) if j != i},
            "levels": {j: 50 for j in range(4) if j != i},
        }
        for i in range(4)
    ]
    m = topology.path_matrix(recs)
    assert m[0][3] == "NV18" and m[2][1] == "NV18" and m[1][1] == "X"
    recs[0]["nvlink_p2p"][3] = False  # no NVLink P2P for this pair: its PCIe level shows
    assert topology.path_matrix(recs)[0][3] == "SYS"


def test_nvlink_peak_from_links_and_speed():
    assert topology.nvlink_peak_gbps("NV18", 26562.5) == pytest.approx(478.125)
    assert topology.nvlink_peak_gbps("NV2", 25000) == 50.0
    assert topology.nvlink_peak_gbps("PIX", 26562.5) is None  # a PCIe path has no NVLink peak
    assert topology.nvlink_peak_gbps("NV18", None) is None
    assert topology.nvlink_peak_gbps("NV18", 26.5) is None  # GB/s passed where MB/s belongs: refused
