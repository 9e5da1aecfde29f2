"""The L2-partition benchmark end to end on a simulated two-partition L2 (CPU only): a planted
partition hash, SMs on alternating sides, copies made by far reads and by writes on the writer's
side, host copies that keep lines at home only, and 8-byte writes that leave the sector invalid."""

import numpy as np
import pytest

from fakes import FakeDevice
from gpudissect.device.cuda import Buffer

SMS = 8
BITS = (12, 13, 16, 17, 19)
NEAR_HIT, FAR_HIT, COPY_HIT, NEAR_MISS, FAR_MISS = 280, 465, 288, 575, 760


def side_of_sm(sm):
    return (sm // 2) % 2


class L2Device(FakeDevice):
    """Small buffers (parameters, permutations, results) are the base class's; the probe region and
    the flush scratch hold no bytes: the chain's words and each line's L2 state are kept sparsely."""

    def __init__(self):
        super().__init__(sm_count=SMS, smem_per_block_optin=227 << 10)
        self.next = 1 << 33
        self.words: dict[int, int] = {}
        self.lines: dict[int, dict] = {}  # line address -> {"valid": bool, "copies": set of sides}
        self.page_bit = {}
        self.rng = np.random.default_rng(0)
        self.region = None

    def alloc(self, nbytes):
        va = self.next
        self.next += (nbytes + (4 << 20)) // (2 << 20) * (2 << 20) + (2 << 20)
        if nbytes <= 4 << 20:
            self.mem[va] = np.zeros((nbytes + 7) // 8 * 8, np.uint8)
        elif self.region is None:
            self.region = va  # the probe buffer (the first large one)
        return Buffer(va, nbytes)

    def free(self, buf):
        self.mem.pop(buf.ptr, None)

    def home(self, addr):
        h = 0
        for b in BITS:
            h ^= (addr >> b) & 1
        page = addr >> 21
        if page not in self.page_bit:
            self.page_bit[page] = int(self.rng.integers(0, 2))
        return h ^ self.page_bit[page]

    def upload(self, arr, buf=None, offset=0):
        if buf is None or buf.ptr in self.mem:
            return super().upload(arr, buf, offset)
        raw = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        words = raw.view(np.uint64)  # the host image of the probe region: whole lines written at home
        base = buf.ptr + offset
        for idx in np.flatnonzero(words):
            self.words[base + 8 * int(idx)] = int(words[idx])
        for a in list(self.lines):
            if base <= a < base + raw.size and self.lines[a]["valid"]:
                self.lines[a] = {"valid": True, "copies": set()}  # over resident lines: home only
        return buf

    # kernels
    def k_chain_write_lines(self, launch, base, perm, n, stride, writers):
        order = self.buf(perm).view(np.uint32)[:n]
        blocks = n // 256
        sms = [(3 * b) % SMS for b in range(blocks)]
        self.buf(writers).view(np.uint32)[:blocks] = sms
        for i in range(n):
            a = base + int(order[i]) * stride
            self.words[a] = base + int(order[(i + 1) % n]) * stride
            self.lines[a] = {"valid": True, "copies": {side_of_sm(sms[i // 256])}}

    def k_chain_init(self, launch, base, perm, n, stride):
        order = self.buf(perm).view(np.uint32)[:n]
        for i in range(n):
            a = base + int(order[i]) * stride
            self.words[a] = base + int(order[(i + 1) % n]) * stride
            self.lines[a] = {"valid": False, "copies": set()}  # 8 bytes of a sector: a read must fill it

    def k_chain_init_seq(self, launch, base, n, stride):  # the flush
        self.lines.clear()

    def read(self, a, sm):
        s, line = side_of_sm(sm), self.lines.get(a)
        near = self.home(a) == s
        if line is None or not line["valid"]:
            self.lines[a] = {"valid": True, "copies": set() if near else {s}}
            return NEAR_MISS if near else FAR_MISS
        if near:
            return NEAR_HIT
        if s in line["copies"]:
            return COPY_HIT
        line["copies"].add(s)
        return FAR_HIT

    def k_chase_on_sm(self, launch, start, warm, count, target, claim, lat, out):
        p, got = start, []
        for _ in range(count):
            got.append(self.read(p, target) + int(self.rng.integers(-6, 7)))
            p = self.words[p]
        self.buf(claim).view(np.uint32)[0] = 1
        self.buf(lat).view(np.uint32)[:count] = got
        self.buf(out).view(np.uint64)[:5] = [p, target, 2000 * sum(got), 1000 * sum(got), 0]


def test_l2_partitions_end_to_end_on_a_simulated_l2(run_bench):
    r = run_bench("l2_fine_pchase", device=L2Device())
    assert r.status == "ok", r.message
    f = {k: fig.value for k, fig in r.figures.items()}
    assert f["mem.l2.partition_hash_bits"].startswith("XOR of address bits 12, 13, 16, 17, 19 ")
    assert f["mem.l2.partition_hash_agreement"] == pytest.approx(1.0)
    assert f["mem.latency.l2_near_hit_cycles"] == pytest.approx(NEAR_HIT, abs=1)
    assert f["mem.latency.l2_far_hit_cycles"] == pytest.approx(FAR_HIT, abs=1)
    assert f["mem.latency.l2_far_copy_hit_cycles"] == pytest.approx(COPY_HIT, abs=1)
    assert f["mem.latency.l2_near_miss_cycles"] == pytest.approx(NEAR_MISS, abs=1)
    assert f["mem.latency.l2_far_miss_cycles"] == pytest.approx(FAR_MISS, abs=1)
    assert f["mem.l2.sms_near_partition_of_sm0"] == SMS // 2
    text = f["mem.l2.far_copy_finding"]
    assert "leaves a copy in the reader's near partition" in text and "reader's side only" in text
    assert "a write leaves a copy on the writer's side" in text and "the first read misses" in text
    assert f["clock.l2_fine_pchase.sm_mhz"] == pytest.approx(2000)
    assert {"l2_per_sm", "l2_copy_matrix", "l2_access_host_memcpy", "l2_access_home"} <= {s.figure for s in r.series}
