"""What connects GPUs: PCIe peak from generation and width, NVML topology as a path matrix (the
`nvidia-smi topo -m` labels), and matrices of per-pair measurements. Pure functions, no NVML."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# Raw signalling rate per lane (GT/s) and line-code efficiency of each PCIe generation.
_GT_PER_LANE = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}  # gen 6: FLIT mode


def pcie_peak_gbps(gen: int, width: int) -> float:
    """Peak of one direction in GB/s (10^9 bytes/s) after the line code, before packet overhead:
    GT/s per lane x encoding efficiency x lanes / 8 bits. Gen 5 x16: 63.0 GB/s."""
    if gen not in _GT_PER_LANE:
        raise ValueError(f"unknown PCIe generation {gen!r} (known: 1..6)")
    if width not in (1, 2, 4, 8, 12, 16, 32):
        raise ValueError(f"impossible PCIe link width x{width}")
    return _GT_PER_LANE[gen] * _ENCODING[gen] * width / 8


def tlp_efficiency(max_payload: int = 256, overhead: int = 24) -> float:
    """Share of link bytes that carry data for posted writes of `max_payload`-byte TLPs with
    `overhead` bytes of header, sequence number, CRC and framing each (an assumed typical value:
    NVML does not report the negotiated payload size)."""
    if max_payload <= 0 or overhead < 0:
        raise ValueError("payload must be positive and overhead non-negative")
    return max_payload / (max_payload + overhead)


# NVML_TOPOLOGY_* common-ancestor levels and the labels nvidia-smi prints for them.
LEVEL_LABELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def path_label(level: int | None, nvlinks: int) -> str:
    """nvidia-smi's label for a GPU pair: NV<n> when n NVLinks join them, else the PCIe level."""
    if nvlinks > 0:
        return f"NV{nvlinks}"
    if level is None:
        return "?"
    if level not in LEVEL_LABELS:
        raise ValueError(f"unknown NVML topology level {level}")
    return LEVEL_LABELS[level]


def path_matrix(gpus: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Labels for every ordered pair from device.hostmem.nvml_topology() records (or recorded
    ones): direct NVLinks counted by matching each link's remote PCI bus id with the other GPU's;
    through NVSwitches (links ending at a switch, and NVML reporting NVLink peer-to-peer for the
    pair) the label counts the GPU's switch links, as nvidia-smi does (NV18 on an 8-GPU H100 board)."""

    def norm(bus: str | None) -> str:
        # NVML prints the domain as 4 or 8 hex digits; compare without leading zeros, any case.
        if not bus:
            return ""
        parts = bus.lower().split(":")
        return ":".join([parts[0].lstrip("0") or "0"] + parts[1:])

    bus_of = [norm(g.get("pci_bus_id")) for g in gpus]
    out = []
    for i, g in enumerate(gpus):
        remote = [norm(b) for b in g.get("nvlinks", [])]
        levels = {int(k): v for k, v in (g.get("levels") or {}).items()}
        via_switch = {int(k): bool(v) for k, v in (g.get("nvlink_p2p") or {}).items()}
        switch_links = int(g.get("switch_links", 0))
        row = []
        for j in range(len(gpus)):
            if i == j:
                row.append("X")
                continue
            n = sum(1 for b in remote if b and b == bus_of[j])
            if n == 0 and switch_links and via_switch.get(j):
                n = switch_links
            row.append(path_label(levels.get(j), n))
        out.append(row)
    return out


_TOPO_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


def parse_topo_text(text: str) -> tuple[list[str], list[list[str]]]:
    """GPU labels and the GPU-to-GPU cells of `nvidia-smi topo -m` output (NIC and CPU-affinity
    columns dropped). Raises ValueError on text that is not such a matrix."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]

    def is_head(ln: str) -> bool:  # "GPU0 GPU1 ... CPU Affinity": GPU0 not followed by a cell
        t = ln.split()
        return t[0] == "GPU0" and (len(t) == 1 or not _TOPO_CELL.match(t[1]))

    head = next((ln for ln in lines if is_head(ln)), None)
    if head is None:
        raise ValueError("no GPU header row (GPU0 GPU1 ...) found")
    cols = [c for c in head.split() if re.fullmatch(r"GPU\d+", c)]
    labels, rows = [], []
    for ln in lines[lines.index(head) + 1 :]:
        parts = ln.split()
        if not parts or not re.fullmatch(r"GPU\d+", parts[0]):
            if labels:
                break
            continue
        cells = parts[1 : 1 + len(cols)]
        if len(cells) < len(cols) or not all(_TOPO_CELL.match(c) for c in cells):
            raise ValueError(f"row {parts[0]}: expected {len(cols)} topology cells, got {cells}")
        labels.append(parts[0])
        rows.append(cells)
    if len(labels) != len(cols):
        raise ValueError(f"{len(cols)} GPU columns but {len(labels)} GPU rows")
    return labels, rows


def link_kind(label: str) -> tuple[str, int]:
    """('self', 0), ('nvlink', links) or ('pcie', NVML level) for one matrix cell."""
    if label == "X":
        return "self", 0
    m = re.fullmatch(r"NV(\d+)", label)
    if m:
        return "nvlink", int(m.group(1))
    inv = {v: k for k, v in LEVEL_LABELS.items()} | {"SOC": 50}
    if label in inv:
        return "pcie", inv[label]
    raise ValueError(f"unknown topology label {label!r}")


def nvlink_peak_gbps(label: str, speed_mbps: float | None) -> float | None:
    """Per-direction peak of a GPU pair joined by NVLink: links x NVML's per-link speed (MB/s =
    10^6 B/s, the signalling rate after line coding, as nvidia-smi nvlink -s prints it; NVIDIA's
    '900 GB/s' for 18 NVLink-4 links counts 25 GB/s a link and both directions). None for a PCIe
    path or an unknown or implausible speed (outside 1..1000 GB/s a link)."""
    kind, links = link_kind(label)
    if kind != "nvlink" or speed_mbps is None or not 1e3 <= speed_mbps <= 1e6:
        return None
    return links * speed_mbps / 1e3


# ---- matrices of per-pair measurements --------------------------------------------------------
def pair_matrix(values: Mapping[tuple[int, int], float], n: int) -> np.ndarray:
    """n x n array from {(src, dst): value}; pairs not measured (and the diagonal) are NaN."""
    m = np.full((n, n), math.nan)
    for (i, j), v in values.items():
        if not (0 <= i < n and 0 <= j < n):
            raise ValueError(f"pair ({i}, {j}) outside {n} GPUs")
        m[i, j] = v
    return m


def offdiag_median(m: np.ndarray) -> float:
    """Median over the measured pairs i != j (NaN when none was measured)."""
    mask = ~np.eye(m.shape[0], dtype=bool) & np.isfinite(m)
    return float(np.median(m[mask])) if mask.any() else math.nan


def matrix_table(m: np.ndarray, labels: Sequence[str], fmt: str = "{:.1f}") -> str:
    """Markdown table of a pair matrix: rows are sources, columns destinations."""
    head = "| src \\ dst | " + " | ".join(labels) + " |"
    sep = "| --- |" + " ---: |" * len(labels)
    rows = [head, sep]
    for i, lab in enumerate(labels):
        cells = ["-" if not math.isfinite(v) else fmt.format(v) for v in m[i]]
        rows.append(f"| {lab} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
