"""Recover an L2 partition hash from per-access miss latencies (pure numpy).

Each miss is labelled near (0) or far (1) by its latency. The hash is searched as an XOR of
address bits inside one page (the bits a virtual address shares with the physical one) plus one
free bit per page (the physical page-frame bits software cannot see). For every candidate mask
of the in-page bits the Walsh-Hadamard transform of each page's +-1 label table gives the
agreement of that mask with the page's best constant, so all 2**k masks are scored at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PartitionHash:
    bits: tuple[int, ...]  # address bits XORed inside a page
    page_bits: int  # log2 of the page: bits at and above it are physical and unknown
    page_const: dict[int, int]  # page index (offset >> page_bits) -> fitted constant bit
    agreement: float  # fraction of labelled accesses the hash predicts
    runner_up: float  # agreement of the best other mask (what chance and overfitting reach)

    def partition(self, offsets: np.ndarray) -> np.ndarray:
        """Home partition (0/1) of each byte offset; -1 for a page the fit never saw."""
        o = np.asarray(offsets, dtype=np.int64)
        h = np.zeros(len(o), dtype=np.int64)
        for b in self.bits:
            h ^= (o >> b) & 1
        c = np.array([self.page_const.get(int(p), -1) for p in (o >> self.page_bits)], dtype=np.int64)
        return np.where(c < 0, -1, h ^ np.maximum(c, 0))

    def describe(self) -> str:
        return (
            f"XOR of address bits {', '.join(map(str, self.bits))} within each {1 << self.page_bits >> 20} MiB "
            f"page, XOR one bit per page (physical frame bits, fitted per page)"
        )


def walsh_hadamard(a: np.ndarray) -> np.ndarray:
    """Unnormalised fast Walsh-Hadamard transform of a length-2**k vector."""
    a = np.asarray(a, dtype=np.float64).copy()
    n, h = len(a), 1
    if n & (n - 1):
        raise ValueError("length must be a power of two")
    while h < n:
        v = a.reshape(-1, 2 * h)
        x, y = v[:, :h].copy(), v[:, h:].copy()
        v[:, :h], v[:, h:] = x + y, x - y
        a = v.reshape(-1)
        h *= 2
    return a


def recover_hash(offsets: np.ndarray, labels: np.ndarray, low_bit: int = 7, page_bits: int = 21) -> PartitionHash:
    """Best in-page XOR mask over bits low_bit..page_bits-1 with one constant per page.

    offsets: byte offsets of the accessed lines from a page-aligned base; labels: 0 near, 1 far.
    """
    o = np.asarray(offsets, dtype=np.int64)
    y = np.asarray(labels, dtype=np.int64)
    if o.shape != y.shape or o.size == 0:
        raise ValueError("offsets and labels must be non-empty and of one length")
    if not 0 <= low_bit < page_bits <= 30:
        raise ValueError("need 0 <= low_bit < page_bits <= 30")
    k = page_bits - low_bit
    idx = (o >> low_bit) & ((1 << k) - 1)
    pages = o >> page_bits
    score = np.zeros(1 << k)
    per_page: dict[int, np.ndarray] = {}
    for p in np.unique(pages):
        on = pages == p
        t = np.zeros(1 << k)
        np.add.at(t, idx[on], np.where(y[on] == 1, -1.0, 1.0))
        w = walsh_hadamard(t)
        per_page[int(p)] = w
        score += np.abs(w)
    order = np.argsort(-score)
    best, second = int(order[0]), int(order[1])
    # a page's constant: 1 when the mask's parity disagrees with most of its labels
    const = {p: int(w[best] < 0) for p, w in per_page.items()}
    bits = tuple(low_bit + i for i in range(k) if best >> i & 1)
    n = len(y)
    return PartitionHash(bits, page_bits, const, 0.5 + score[best] / n / 2, 0.5 + score[second] / n / 2)


def side_of(miss_latency: np.ndarray, partition: np.ndarray) -> int:
    """Which partition (0/1) is near for the SM that measured these misses: the one whose
    lines it misses on faster."""
    m = np.asarray(miss_latency, dtype=np.float64)
    p = np.asarray(partition)
    a, b = m[p == 0], m[p == 1]
    if a.size == 0 or b.size == 0:
        raise ValueError("both partitions need accesses")
    return 0 if np.median(a) < np.median(b) else 1
