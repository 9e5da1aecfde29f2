"""The TLB benchmark end to end on a simulated GPU: a 16-entry LRU first level whose entries cover
16 MiB, a second level that never misses, and walks for translations never used (CPU only)."""

import bisect
from collections import OrderedDict

import numpy as np
import pytest

from fakes import FakeDevice
from gpudissect.bench.memory import tlb as memory_tlb
from gpudissect.device.cuda import Buffer

MiB = 2**20
REACH, ENTRIES, MISS, WALK = 16 * MiB, 16, 10, 1300


class TlbDevice(FakeDevice):
    """Buffers up to 1 MiB are the base class's; larger ones hold no bytes: the chains' words live in
    a sparse map of physical addresses, and a second mapping (alloc_aliased) reaches the same ones."""

    def __init__(self):
        super().__init__(sm_count=4, free_mem=8 << 30)
        self.words: dict[int, int] = {}  # sparse u64 memory of the big buffers (physical addresses)
        self.alias: dict[int, tuple[int, int]] = {}  # va -> (physical base, size)
        self.next = 1 << 40
        self.l1: OrderedDict[int, None] = OrderedDict()
        self.l2: set[int] = set()
        self._bases: list[int] = []

    def _va(self, nbytes):
        va = self.next
        self.next += (nbytes + (1 << 30)) // (1 << 30) * (1 << 30) + (1 << 30)
        return va

    def alloc(self, nbytes):
        va = self._va(nbytes)
        if nbytes <= 1 << 20:
            self.mem[va] = np.zeros((nbytes + 7) // 8 * 8, np.uint8)
        self.alias[va] = (va, nbytes)
        return Buffer(va, nbytes)

    def free(self, buf):
        self.mem.pop(buf.ptr, None)

    def alloc_aliased(self, nbytes):
        a = self.alloc(nbytes)
        vb = self._va(nbytes)
        self.alias[vb] = (a.ptr, nbytes)
        return a, Buffer(vb, nbytes)

    def phys(self, addr):
        if len(self._bases) != len(self.alias):
            self._bases = sorted(self.alias)
        bases = self._bases
        base = bases[bisect.bisect_right(bases, addr) - 1]
        p, size = self.alias[base]
        assert addr - base < size, "access outside every buffer"
        return p + addr - base

    # kernels
    def k_chain_init_alias(self, launch, write_base, value_base, perm, n, stride):
        order = self.buf(perm).view(np.uint32)[:n] if perm else np.arange(n)
        for i in range(n):
            self.words[self.phys(write_base + int(order[i]) * stride)] = value_base + int(order[(i + 1) % n]) * stride

    def latency(self, va):
        region = va // REACH
        if region in self.l1:
            self.l1.move_to_end(region)
            extra = 0
        else:
            extra = MISS if region in self.l2 else WALK
            self.l2.add(region)
            self.l1[region] = None
            if len(self.l1) > ENTRIES:
                self.l1.popitem(last=False)
        own = 260 + (self.phys(va) // 4096 * 2654435761 >> 7) % 60  # per-line L2 latency (slices)
        return own + extra

    def k_chase_on_sm(self, launch, start, warm, count, target, claim, lat, out):
        p = start
        for _ in range(warm):
            self.latency(p)
            p = self.words[self.phys(p)]
        got = []
        for _ in range(count):
            got.append(self.latency(p))
            p = self.words[self.phys(p)]
        self.buf(lat).view(np.uint32)[:count] = got
        # cycles at 2 GHz over >= 1 ms windows (the meter ignores shorter ones)
        self.buf(out).view(np.uint64)[:5] = [p, 0, 1000 * sum(got), 500 * sum(got), 0]


def test_tlb_end_to_end_on_a_simulated_tlb(monkeypatch, run_bench):
    monkeypatch.setattr(memory_tlb, "MAX_ELEMENTS", 96)
    r = run_bench("tlb", {"max_footprint": "1G"}, TlbDevice())
    assert r.status == "ok", r.message
    f = {k: fig.value for k, fig in r.figures.items()}
    assert f["mem.tlb.l1_entries"] == ENTRIES
    assert f["mem.tlb.entry_reach_bytes"] == REACH
    assert f["mem.tlb.l1_coverage_bytes"] == ENTRIES * REACH
    assert f["mem.tlb.l1_miss_penalty_cycles"] == pytest.approx(MISS, abs=0.5)
    assert str(f["mem.tlb.l2_coverage_bytes"]).startswith(">= ")
    assert f["mem.tlb.walk_penalty_cycles"] == pytest.approx(WALK - MISS, abs=1)
    assert f["mem.tlb.walks_2mib_stride"] == 64  # one walk per 16 MiB region of the 1 GiB range
    assert f["clock.tlb.sm_mhz"] == pytest.approx(2000, abs=0.5)
