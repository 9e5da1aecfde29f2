"""Partition-hash recovery on synthetic misses with a planted mask (CPU only)."""

import numpy as np
import pytest

from gpudissect.analysis import partition


def _planted(bits, n=4096, pages=8, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    offsets = rng.choice(pages * (2 << 20) // 128, n, replace=False).astype(np.int64) * 128
    h = np.zeros(n, np.int64)
    for b in bits:
        h ^= (offsets >> b) & 1
    page_bit = rng.integers(0, 2, pages)  # physical frame bits: unknown, one per 2 MiB page
    labels = h ^ page_bit[offsets >> 21]
    flip = rng.random(n) < noise  # slow DRAM accesses mislabelled near/far
    return offsets, labels ^ flip.astype(np.int64), page_bit


def test_recovers_planted_mask_and_page_bits():
    offsets, labels, page_bit = _planted((9, 12, 16, 17, 20))
    h = partition.recover_hash(offsets, labels)
    assert h.bits == (9, 12, 16, 17, 20)
    assert h.agreement == pytest.approx(0.95, abs=0.02)
    assert h.runner_up < 0.65  # a wrong mask only reaches chance plus the per-page fit
    assert [h.page_const[p] for p in range(8)] == page_bit.tolist()
    pred = h.partition(offsets)
    assert np.mean(pred == labels) == pytest.approx(h.agreement)


def test_random_labels_find_no_convincing_hash():
    rng = np.random.default_rng(3)
    offsets = rng.choice(8 * (2 << 20) // 128, 4096, replace=False).astype(np.int64) * 128
    h = partition.recover_hash(offsets, rng.integers(0, 2, 4096))
    assert h.agreement < 0.65 and h.agreement - h.runner_up < 0.05


def test_side_of_picks_the_faster_partition():
    lat = np.array([550, 560, 750, 760])
    assert partition.side_of(lat, np.array([0, 0, 1, 1])) == 0
    assert partition.side_of(lat, np.array([1, 1, 0, 0])) == 1
    with pytest.raises(ValueError):
        partition.side_of(lat, np.zeros(4, int))


def test_walsh_hadamard_matches_definition():
    a = np.arange(8.0)
    w = partition.walsh_hadamard(a)
    direct = [sum(a[x] * (-1) ** bin(x & m).count("1") for x in range(8)) for m in range(8)]
    assert np.allclose(w, direct)
    with pytest.raises(ValueError):
        partition.walsh_hadamard(np.ones(6))


def test_bad_input():
    with pytest.raises(ValueError):
        partition.recover_hash(np.array([]), np.array([]))
    with pytest.raises(ValueError):
        partition.recover_hash(np.array([0, 128]), np.array([0]))
