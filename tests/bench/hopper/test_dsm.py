"""Distributed shared memory host logic on the CPU: pattern targets, expected sums, histogram routing,
placement summary, parameter validation, the kernels' SASS, and the three benchmarks driven end to end
by a fake device that executes the kernels' contract (as hopper_dsm.cu documents it) in numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fakes import BenchRun, FakeDevice, Launch, run_bench
from gpudissect.bench.hopper import dsm as d
from gpudissect.bench.registry import REGISTRY, resolve_params
from gpudissect.bench.shared import chain_cycle, walk
from gpudissect.device.cuda import CudaError
from gpudissect.errors import GpuDissectError


# ---------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------
def test_pattern_targets():
    assert d.pattern_targets("ring", 4).tolist() == [1, 2, 3, 0]
    assert d.pattern_targets("pair", 4).tolist() == [1, 0, 3, 2]
    assert d.pattern_targets("broadcast", 4).tolist() == [0, 0, 0, 0]
    assert d.pattern_targets("self", 2).tolist() == [0, 1]
    assert d.pattern_targets("ring", 16)[15] == 0
    with pytest.raises(GpuDissectError, match=r"pair pattern .* even cluster size, not 3"):
        d.pattern_targets("pair", 3)
    with pytest.raises(GpuDissectError, match=r"unknown access pattern 'star'; valid: ring, pair, broadcast, self"):
        d.pattern_targets("star", 2)


def test_cluster_validation_messages():
    assert d.validate_cluster(8, 64) is False
    assert d.validate_cluster(16, 32) is True
    assert d.validate_cluster(16, 32, non_portable=True) is True
    with pytest.raises(GpuDissectError, match=r"grid of 10 blocks is not a multiple of the cluster size 4"):
        d.validate_cluster(4, 10)
    with pytest.raises(GpuDissectError, match=r"cluster size 16 exceeds the portable maximum of 8.*non-portable"):
        d.validate_cluster(16, 16, non_portable=False)
    with pytest.raises(GpuDissectError, match=r"cluster size 17: must be 1 .. 16"):
        d.validate_cluster(17)
    with pytest.raises(GpuDissectError, match=r"cluster size 0"):
        d.validate_cluster(0)


def _brute_sums(pattern: str, cs: int, nblocks: int, j: int, block: int, ilp: int) -> list[int]:
    """The kernel's loops literally: thread t, iteration it, load k reads word (t + (it*ILP + k)*B) % 4096."""
    tgt = {"ring": lambda r: (r + 1) % cs, "pair": lambda r: r ^ 1, "broadcast": lambda r: 0, "self": lambda r: r}[
        pattern
    ]
    out = []
    for b in range(nblocks):
        c, r = divmod(b, cs)
        vals = [(c * 7 + tgt(r) * 13 + i) & 255 for i in range(d.BW_WORDS)]
        total = 0
        for t in range(block):
            w = t
            for _ in range(j // ilp):
                for k in range(ilp):
                    total += vals[(w + k * block) & (d.BW_WORDS - 1)]
                w += ilp * block
        out.append(total)
    return out


@pytest.mark.parametrize("pattern", ["ring", "pair", "broadcast", "self"])
def test_expected_sums_match_the_kernels_loops(pattern):
    # 40 x 128 loads wrap around the 4096 words; 3 x 96 do not
    for j, block, ilp in ((40, 128, 4), (3, 96, 1), (6, 64, 2)):
        got = d.expected_block_sums(pattern, 4, 12, j, block)
        assert got.dtype == np.uint64
        assert got.tolist() == _brute_sums(pattern, 4, 12, j, block, ilp)
    with pytest.raises(GpuDissectError, match="not a multiple of the cluster size"):
        d.expected_block_sums(pattern, 4, 10, 3, 32)


def test_word_read_counts():
    c = d.word_read_counts(3, 1024)
    assert c.sum() == 3 * 1024 and c[:3072].tolist() == [1] * 3072 and c[3072:].sum() == 0
    c = d.word_read_counts(10, 1024)
    assert c.sum() == 10240 and set(c.tolist()) == {2, 3}


def test_histogram_partitioning():
    rng = np.random.default_rng(0)
    vals = rng.integers(0, 1 << 32, 5000, dtype=np.uint32)
    for nbins, cs in ((1024, 1), (2048, 4), (65536, 16), (16, 16)):
        owner, off = d.owner_of(vals, nbins, cs)
        bpb = nbins // cs
        b = vals.astype(np.int64) % nbins
        assert np.array_equal(owner, b // bpb) and np.array_equal(off, b % bpb)
        assert owner.max() < cs and off.max() < bpb
        # the kernel's shift/mask form of the same routing
        log2 = int(np.log2(bpb))
        assert np.array_equal(owner, (vals & (nbins - 1)) >> log2)
        # every bin has exactly one owner slot: counting per (owner, offset) is the histogram
        per_owner = np.zeros((cs, bpb), np.int64)
        np.add.at(per_owner, (owner, off), 1)
        assert np.array_equal(per_owner.reshape(-1), np.bincount(b, minlength=nbins))
    hist = np.bincount(vals & 4095, minlength=4096)
    assert np.array_equal(d.fold_histogram(hist, 1024), np.bincount(vals & 1023, minlength=1024))


def test_histogram_configuration_errors():
    cap = 232448  # H100 opt-in shared memory per block
    assert d.hist_config_error(2, 512, 65536, cap) is None
    msg = d.hist_config_error(1, 512, 65536, cap)
    assert "262144 bytes of shared memory per block" in msg and "at most 32768 bins fit" in msg
    assert "power of two" in d.hist_config_error(3, 128, 1024, cap)
    assert "bins: must be a power of two" in d.hist_config_error(2, 128, 1000, cap)
    assert "multiple of 32" in d.hist_config_error(2, 100, 1024, cap)
    assert "from 32 to 1024" in d.hist_config_error(2, 2048, 1024, cap)
    assert "cannot be split over 16 blocks" in d.hist_config_error(16, 128, 8, cap)


def test_placement_summary():
    smid = np.array([0, 1, 2, 2, 5, 6, 1, 7])
    rank = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    p = d.placement_summary(smid, rank, 2)
    assert (p.sms_used, p.distinct_min, p.distinct_max, p.colocated) == (6, 1, 2, 0.25)
    assert p.groups == [[0, 1, 7], [5, 6], [2]] and p.rank_ok
    assert "6 SMs used" in p.text() and "25% of clusters share an SM" in p.text() and "3 SM group(s)" in p.text()
    assert not d.placement_summary(smid, rank[::-1], 2).rank_ok
    with pytest.raises(GpuDissectError):
        d.placement_summary(smid[:7], rank[:7], 2)


def test_chain_is_one_cycle():
    nxt = chain_cycle(1000, np.random.default_rng(3))
    seen, i = set(), 0
    for _ in range(1000):
        seen.add(i)
        i = int(nxt[i])
    assert i == 0 and len(seen) == 1000
    assert walk(nxt, 1000 + 17) == walk(nxt, 17) != 0


def test_chase_slots_and_element_sizes():
    assert d.chase_slots(1) == [0, 1, 2]
    assert d.chase_slots(4) == [0, 1, 2, 3, 4, 5]
    assert max(d.chase_slots(16)) == d.CHASE_SLOTS - 1
    assert [d.slot_elem_bytes(s) for s in range(4)] == [4, 8, 4, 8]


def test_bw_plan_covers_every_pattern_policy_and_size():
    q = d.bw_plan(True)
    grid = {(c.pattern, c.policy, c.cs) for c in q}
    assert {(p, pol, cs) for p in ("ring", "pair", "broadcast") for pol in d.POLICIES for cs in (2, 4, 8, 16)} <= grid
    ring = {(c.cs, c.block, c.ilp) for c in q if c.pattern == "ring" and c.policy == "default"}
    assert {(cs, b, i) for cs in (2, 4, 8, 16) for b in d.BLOCKS for i in d.ILPS} <= ring
    assert any(c.pattern == "self" for c in q) and len(q) == len(set(q))
    full = d.bw_plan(False)
    assert len(full) == 3 * 3 * 4 * 4 * 3 + 1
    assert d.bw_plan(True, patterns=("pair",), sizes=(2,), blocks=(256,), ilps=(1,)) == [
        d.BwConfig("pair", pol, 2, 256, 1) for pol in d.POLICIES
    ]
    with pytest.raises(GpuDissectError, match="even cluster size"):
        d.bw_plan(True, patterns=("pair",), sizes=(2, 3))


def test_parameters_reject_invalid_choices():
    lat, bw, hist = (REGISTRY[f"hopper/{n}"] for n in ("dsm_latency", "dsm_throughput", "dsm_histogram"))
    facts = {"smem_per_block_optin": 232448, "max_threads_per_block": 1024}
    with pytest.raises(GpuDissectError, match=r"cluster sizes \[1, 17\]: each must be 2 .. 16"):
        resolve_params(lat, {"cluster_sizes": "1,2,17"}, facts)
    with pytest.raises(GpuDissectError, match=r"must be 2 .. 29056"):
        resolve_params(lat, {"elements": "40000"}, facts)
    with pytest.raises(GpuDissectError, match=r"cluster sizes \[3\]: each must be a power of two from 2 to 16"):
        resolve_params(bw, {"cluster_sizes": "2,3"}, facts)
    with pytest.raises(GpuDissectError, match=r"unknown pattern\(s\) star; valid: ring, pair, broadcast, self"):
        resolve_params(bw, {"patterns": "ring,star"}, facts)
    with pytest.raises(
        GpuDissectError, match=r"unknown scheduling policy\(ies\) fast; valid: default, spread, load_balancing"
    ):
        resolve_params(bw, {"policies": "fast"}, facts)
    with pytest.raises(GpuDissectError, match=r"ILP \[3\]: compiled variants are 1, 2, 4"):
        resolve_params(bw, {"ilps": "3"}, facts)
    with pytest.raises(GpuDissectError, match=r"block sizes \[100\]: each must be a multiple of 32"):
        resolve_params(bw, {"block_sizes": "100"}, facts)
    with pytest.raises(GpuDissectError, match=r"bins \[1000\]: each must be a power of two"):
        resolve_params(hist, {"bins": "1000"}, facts)
    with pytest.raises(GpuDissectError, match=r"cluster sizes \[32\]"):
        resolve_params(hist, {"cluster_sizes": "1,32"}, facts)
    with pytest.raises(GpuDissectError, match=r"1024 .. 2\^28"):
        resolve_params(hist, {"elements": "10"}, facts)
    assert resolve_params(bw, {"cluster_sizes": "2,16", "ilps": "4"}, facts)["cluster_sizes"] == (2, 16)
    for b in (lat, bw, hist):
        assert b.min_cc == (9, 0) and b.suite == "hopper"


# ---------------------------------------------------------------------------------------
# SASS structure beyond the required patterns
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sass():
    from gpudissect.sass.disasm import find_tool
    from gpudissect.sasscheck import check_spec

    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    funcs, checks = check_spec(d.DSM)
    assert all(c.found for c in checks), [f"{c.function}: {c.pattern}" for c in checks if not c.found]
    return funcs


def _ops(text: str) -> list[str]:
    return [re.sub(r"^/\*\w+\*/ ", "", line) for line in text.splitlines()]


@pytest.mark.parametrize("ilp", d.ILPS)
@pytest.mark.sass
def test_read_loop_issues_ilp_loads_before_using_them(sass, ilp):
    ops = _ops(sass[f"dsm_read_ilp{ilp}"])
    loads = [i for i, o in enumerate(ops) if re.match(r"LD\.E R\d+, desc", o)]
    assert len(loads) == ilp, "one loop body, ILP generic loads"
    dests = [ops[i].split()[1].rstrip(",") for i in loads]
    # no loaded register is read before the last load of the iteration issued
    between = ops[loads[0] : loads[-1]]
    assert not any(
        re.search(rf"\b{r}\b", o.split(" ", 1)[1]) for o in between[1:] for r in dests if not o.startswith("LD.E")
    ), between
    assert not any(o.startswith(("LDL", "STL")) for o in ops)
    assert sum(o.startswith("UCGABAR_ARV") for o in ops) == 2  # entry and exit barriers


@pytest.mark.sass
def test_chase_loops_hold_nothing_but_the_loads(sass):
    ops = _ops(sass["dsm_chase"])
    # generic chase: LD.E.64 Rk <- [Rk.64] or a register renamed by the unroll, never a move in between
    chain = [o for o in ops if o.startswith("LD.E.64")]
    assert len(chain) >= 8
    for a, b in zip(ops, ops[1:]):
        if a.startswith("LD.E.64") and b.startswith("LD.E.64"):
            dst = a.split()[1].rstrip(",")
            assert f"[{dst}.64]" in b  # back-to-back dependent loads
    assert sum(o.startswith("UCGABAR_WAIT") for o in ops) == 2
    assert any(re.match(r"LDS R(\d+), \[R\1\]", o) for o in ops)


@pytest.mark.sass
def test_histogram_atomic_sits_in_the_element_loop(sass):
    ops = _ops(sass["dsm_hist"])
    atom = next(i for i, o in enumerate(ops) if o.startswith("ATOM.E.ADD"))
    back = next(i for i in range(atom, len(ops)) if re.match(r"@!?P\d BRA", ops[i]))
    assert any(o.startswith("LDG.E") for o in ops[:atom]) and back > atom
    assert any(o.startswith("PRMT") for o in ops[atom - 8 : atom])
    assert any(o.startswith("ATOMS.") for o in _ops(sass["smem_hist"]))


# ---------------------------------------------------------------------------------------
# The benchmarks end to end on a fake device that honours the kernels' contract
# ---------------------------------------------------------------------------------------
GENERIC = 0x7F00_0000_0000  # where the fake shared window lies in the generic address space
LAT = {0: 29.0, 1: 33.0, 2: 36.0}  # fake latency per chase slot; remote rank t: 180 + 2 t


def remote_lat(t: int) -> float:
    return 180.0 + 2 * t


RT = {"global": 1900.0, "dsm": 420.0}
L2_LAT = 262.0


def fake_tbps(c: d.BwConfig) -> float:
    base = {"ring": 3.0, "pair": 3.1, "broadcast": 2.0, "self": 1.5}[c.pattern]
    pol = {"default": 1.0, "spread": 0.98, "load_balancing": 1.03}[c.policy]
    return base * pol / (1 + 0.25 * np.log2(c.cs)) * min(1.0, c.block * c.ilp / 1024)


class ClusterDevice(FakeDevice):
    """36 SMs in 2 GPCs of 18; clusters up to `max_cluster` blocks. `bug` plants one fault: "chase" (a
    remote chase ends one element off), "lost_<kind>" (a ping-pong message lost), "target" (the ring
    reads the wrong rank), "hist" (one bin counted once too often)."""

    def __init__(self, bug: str = "", max_cluster: int = 16, **props):
        super().__init__(sm_count=36, **props)
        self.bug, self.max_cluster, self.gpcs, self.gpc_size, self.last_ms = bug, max_cluster, 2, 18, 0.0

    def shape(self, launch: Launch) -> tuple[int, int, int, int, int]:
        """(grid, block, cluster size, shared memory, scheduling policy) of a launch the hardware accepts."""
        grid, block, smem = launch.grid, launch.block, launch.smem
        assert smem <= self.props["smem_per_block_optin"] and block <= 1024
        cs = 1
        if launch.cluster is not None:
            cs = launch.cluster[0]
            assert launch.cluster[1:] == (1, 1) and grid % cs == 0
            if cs > self.max_cluster:
                raise CudaError(f"launch {launch.name}: CUDA_ERROR_CLUSTER_SIZE_NOT_SUPPORTED")
            assert cs <= 8 or launch.non_portable, "sizes above 8 need the non-portable attribute"
        return grid, block, cs, smem, launch.attributes.get(d.POLICY_ATTR, 0)

    # ---- memory_pchase.cu (the L2 chase) ----
    def k_chain_init(self, launch, base, perm, n, stride):
        self.shape(launch)
        p = self.buf(perm).view(np.uint32)[:n].astype(np.int64)
        mem = self.buf(base).view(np.uint64)
        mem[p * stride // 8] = (base + np.roll(p, -1) * stride).astype(np.uint64)

    def k_pchase(self, launch, start, warm, steps, out):
        self.shape(launch)
        a = start
        for _ in range(warm + steps):
            a = int(self.read_u64(a))
        self.buf(out).view(np.uint64)[:3] = [a, int(steps * L2_LAT), 3]

    # ---- hopper_dsm.cu ----
    def _sms(self, nblocks: int, cs: int, policy: int) -> np.ndarray:
        """Cluster c in GPC c % gpcs; default/spread: one SM per block; load balancing: two blocks per SM."""
        b = np.arange(nblocks)
        c, r = b // cs, b % cs
        g, size = c % self.gpcs, self.gpc_size
        slot = (c * cs + r) // (2 if policy == 2 else 1)
        return g * size + slot % size

    def k_dsm_chase(self, launch, chain, n, warm, steps, res, place):
        grid, block, cs, smem, policy = self.shape(launch)
        assert block == 1 and grid == cs and smem >= 8 * n
        nxt = self.buf(chain).view(np.uint32)[:n]
        idx = walk(nxt, warm + steps)
        out = self.buf(res).view(np.uint64)
        for s in d.chase_slots(cs):
            rank = 0 if s <= 2 else s - 2
            first = (rank << 24) | 0x400 | (GENERIC if s not in (0, 2) else 0)
            end = first + d.slot_elem_bytes(s) * idx
            if self.bug == "chase" and s == 3:
                end += 8
            lat = LAT[s] if s <= 2 else remote_lat(s - 2)
            out[3 * s : 3 * s + 3] = [int(steps * lat), end, first]
        total = sum(int(out[3 * s]) for s in d.chase_slots(cs))
        out[3 * d.CHASE_SLOTS : 3 * d.CHASE_SLOTS + 2] = [total, total * 1000 // 1755]  # a 1755 MHz SM clock
        pl = self.buf(place).view(np.uint32)
        pl[0 : 2 * cs : 2] = self._sms(cs, cs, policy)
        pl[1 : 2 * cs : 2] = np.arange(cs)

    def k_dsm_ichase(self, launch, chain, n, warm, steps, res):
        grid, block, cs, smem, policy = self.shape(launch)
        assert grid == cs == 2 and smem >= 4 * n
        nxt = self.buf(chain).view(np.uint32)[:n]
        self.buf(res).view(np.uint64)[:2] = [int(steps * (LAT[0] + 6)), walk(nxt, warm + steps)]

    def _pingpong(self, launch, kind, rounds, res):
        grid, block, cs, smem, policy = self.shape(launch)
        assert grid == cs == 2
        out = self.buf(res).view(np.uint64)
        lost = self.bug == f"lost_{kind}"
        out[:5] = [int(rounds * RT[kind]), 2 * rounds - (1 if lost else 0), 1 if lost else 0, 4, 5]

    def k_pingpong_global(self, launch, flag, rounds, spin, res):
        self._pingpong(launch, "global", rounds, res)

    def k_pingpong_dsm(self, launch, flag, rounds, spin, res):
        self._pingpong(launch, "dsm", rounds, res)

    def k_dsm_read_ilp1(self, launch, pattern, iters, sums, place):
        grid, block, cs, smem, policy = self.shape(launch)
        ilp = int(launch.name[-1])
        assert smem == 4 * d.BW_WORDS
        pat = {v: k for k, v in d.PATTERNS.items()}[pattern]
        cache: dict[int, int] = {}
        out = self.buf(sums).view(np.uint64)
        w = (np.arange(block)[None, :] + np.arange(iters * ilp)[:, None] * block) & (d.BW_WORDS - 1)
        for b in range(grid):
            c, r = divmod(b, cs)
            t = {"ring": (r + 1) % cs, "pair": r ^ 1, "broadcast": 0, "self": r}[pat]
            if self.bug == "target" and pat == "ring":
                t = (r + 2) % cs
            base = (c * 7 + t * 13) & 255
            if base not in cache:
                cache[base] = int(((base + w) & 255).sum())
            out[b] += np.uint64(cache[base])
        pl = self.buf(place).view(np.uint32)
        pl[0 : 2 * grid : 2] = self._sms(grid, cs, policy)
        pl[1 : 2 * grid : 2] = np.arange(grid) % cs
        cfg = d.BwConfig(pat, {v: k for k, v in d.POLICIES.items()}[policy], cs, block, ilp)
        self.last_ms = grid * block * iters * ilp * 4 / (fake_tbps(cfg) * 1e12) * 1e3

    k_dsm_read_ilp2 = k_dsm_read_ilp4 = k_dsm_read_ilp1  # the ILP comes from the kernel's name

    def k_dsm_hist(self, launch, data, n, mask, bpb_log2, hist):
        grid, block, cs, smem, policy = self.shape(launch)
        bpb = 1 << bpb_log2
        assert smem == 4 * bpb and cs * bpb == mask + 1
        vals = self.buf(data).view(np.uint32)[:n] & np.uint32(mask)
        owner, off = vals >> np.uint32(bpb_log2), vals & np.uint32(bpb - 1)
        h = self.buf(hist).view(np.uint32)
        np.add.at(h, owner.astype(np.int64) * bpb + off, 1)
        if self.bug == "hist" and cs == 2:
            h[0] += 1
        self.last_ms = n / (1e9 * (10 + cs + block / 128 - np.log2(mask + 1) / 4)) * 1e3

    def k_smem_hist(self, launch, data, n, mask, nbins, hist):
        grid, block, cs, smem, policy = self.shape(launch)
        assert smem == 4 * nbins and cs == 1
        h = self.buf(hist).view(np.uint32)
        np.add.at(h, self.buf(data).view(np.uint32)[:n] & np.uint32(mask), 1)
        self.last_ms = n / 8e9 * 1e3


def _run(name: str, overrides: dict[str, str], **dev_kw) -> BenchRun:
    r = run_bench(name, overrides, ClusterDevice(**dev_kw))
    assert not r.twice, f"figures {r.twice} emitted twice"
    return r


def _cluster_sizes(dev: ClusterDevice, kernel: str) -> set[int]:
    return {launch.cluster[0] for launch in dev.launches if launch.name == kernel}


def test_latency_end_to_end():
    r = _run("dsm_latency", {"steps": "256", "elements": "64"})
    assert r.status == "ok", r.message
    figs, series = r.figures, r.series
    v = {k: f.value for k, f in figs.items()}
    assert v["dsm.latency.local_direct_cycles"] == pytest.approx(29.0)
    assert v["dsm.latency.local_direct_index_chase_cycles"] == pytest.approx(35.0)  # the fake adds 6 cycles per hop
    assert v["dsm.latency.local_via_cluster_cycles"] == pytest.approx(33.0)
    assert v["dsm.latency.local_via_cluster_u32_cycles"] == pytest.approx(36.0)
    assert v["dsm.latency.cluster_interface_overhead_cycles"] == pytest.approx(4.0)
    assert v["dsm.latency.remote_cs2_cycles"] == pytest.approx(182.0)
    assert v["dsm.latency.remote_cs16_max_cycles"] == pytest.approx(210.0)
    assert v["dsm.latency.remote_cs16_min_cycles"] == pytest.approx(182.0)
    assert v["dsm.latency.remote_cs16_cycles"] == pytest.approx(196.0)  # median over ranks 1..15
    assert v["dsm.latency.remote_cs8_max_cycles"] == pytest.approx(194.0)
    assert v["dsm.latency.l2_hit_cycles"] == pytest.approx(L2_LAT)
    assert v["dsm.latency.global_roundtrip_cycles"] == pytest.approx(1900.0)
    assert v["dsm.latency.global_sm_to_sm_cycles"] == pytest.approx(950.0)
    assert v["dsm.latency.dsm_sm_to_sm_cycles"] == pytest.approx(210.0)
    assert v["dsm.latency.global_over_dsm_ratio"] == pytest.approx(950.0 / 182.0, rel=1e-3)
    assert v["dsm.latency.remote_cs2_vs_l2_reduction_pct"] == pytest.approx(100 * (1 - 182 / L2_LAT), abs=0.01)
    # the SM clock from clock64 over %globaltimer in the chase launches themselves (the fake's 1755 MHz)
    assert v["clock.dsm_latency.sm_mhz"] == pytest.approx(1755.0, rel=1e-3)
    assert "globaltimer" in figs["clock.dsm_latency.sm_mhz"].method
    assert "SMs" in figs["dsm.latency.remote_cs4_cycles"].note
    cs16 = next(s for s in series if s.name == "cs16")
    assert [p.x for p in cs16.points] == list(range(1, 16)) and "target_sm" in cs16.points[0].extra
    # every cluster size ran (the fake refuses 16 without the non-portable attribute)
    assert _cluster_sizes(r.device, "dsm_chase") == {1, 2, 4, 8, 16}


def test_latency_reports_an_unlaunchable_cluster_size():
    r = _run("dsm_latency", {"steps": "128", "elements": "32"}, max_cluster=8)
    assert r.status == "failed"
    assert re.search(r"cluster size 16 could not be launched[^;]*non-portable", r.message), r.message
    figs = r.figures
    assert figs["dsm.latency.remote_cs16_max_cycles"].check == "failed"
    assert figs["dsm.latency.remote_cs16_max_cycles"].value == "FAILED"
    assert figs["dsm.latency.remote_cs8_max_cycles"].check == "ok"


@pytest.mark.parametrize(
    "bench,params,key",
    [
        ("dsm_latency", {"steps": "128", "elements": "32"}, "dsm.latency.remote_cs{}_cycles"),
        (
            "dsm_throughput",
            {"gbytes": "0.001", "patterns": "ring", "block_sizes": "256", "ilps": "2", "policies": "default"},
            "dsm.bw.ring_cs{}_peak_tbps",
        ),
        (
            "dsm_histogram",
            {"elements": "4096", "block_sizes": "128", "bins": "1024"},
            "dsm.histogram.cs{}_best_elems_per_s",
        ),
    ],
)
def test_a_cluster_size_beyond_the_gpu_is_skipped_not_failed(monkeypatch, bench, params, key):
    """A GPU whose driver places at most 8 blocks per cluster (integrated parts such as sm_121 stop at the
    portable 8): size 16 is recorded once as a skipped variant with the driver's limit and leaves no figure, the
    other sizes run; where the driver does not say so (test_latency_reports_an_unlaunchable_cluster_size), the
    failed launch stays a failure."""
    from fakes import FakeContext

    monkeypatch.setattr(
        d.common, "_cluster_query", lambda fn, cs, block, smem, what: 8 if what == "potential" else None
    )
    skipped = []
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, name, why: skipped.append((name, why)))
    r = _run(bench, params, max_cluster=8, cc_major=12, cc_minor=1)
    assert r.status == "ok", r.message
    assert [name for name, _ in skipped] == ["cluster size 16"]
    assert re.search(r"largest cluster for \d+-thread blocks with \d+ bytes of shared memory is 8", skipped[0][1])
    assert key.format(16) not in r.figures and r.figures[key.format(8)].check == "ok"
    assert 16 in _cluster_sizes(
        r.device, {"dsm_latency": "dsm_chase", "dsm_throughput": "dsm_read_ilp2"}.get(bench, "dsm_hist")
    )


def test_latency_chase_that_ends_elsewhere_fails():
    r = _run("dsm_latency", {"steps": "128", "elements": "32"}, bug="chase")
    assert r.status == "failed" and re.search(r"cluster of 2, slot 3: chase ended", r.message), r.message
    assert not r.figures  # a hard check: the benchmark stopped there


def test_lost_message_fails_the_round_trip_only():
    r = _run("dsm_latency", {"steps": "128", "elements": "32", "cluster_sizes": "2"}, bug="lost_dsm")
    figs = r.figures
    assert figs["dsm.latency.dsm_roundtrip_cycles"].check == "failed"
    assert figs["dsm.latency.global_roundtrip_cycles"].check == "ok"
    assert r.status == "failed" and "dsm ping-pong" in r.message


def test_throughput_end_to_end():
    r = _run("dsm_throughput", {"gbytes": "0.002"})
    assert r.status == "ok", r.message
    figs, series, dev = r.figures, r.series, r.device
    plan = d.bw_plan(True)
    for pat in ("ring", "pair", "broadcast"):
        for cs in (2, 4, 8, 16):
            want = max(fake_tbps(c) for c in plan if c.pattern == pat and c.cs == cs)
            f = figs[f"dsm.bw.{pat}_cs{cs}_peak_tbps"]
            assert f.check == "ok" and f.value == pytest.approx(want, rel=1e-6), (pat, cs)
    assert figs["dsm.bw.ring_cs2_peak_tbps"].note.startswith("best of")
    assert figs["dsm.bw.self_via_cluster_gbps_per_sm"].value == pytest.approx(
        figs["dsm.bw.self_via_cluster_tbps"].value * 1e3 / 36
    )
    # every policy reached the launch attribute
    policies = {launch.attributes[d.POLICY_ATTR] for launch in dev.launches if launch.name.startswith("dsm_read")}
    assert policies == {0, 1, 2}
    assert {s.name for s in series if s.figure == "dsm_bw_patterns"} == {
        f"{p}/{pol}" for p in ("ring", "pair", "broadcast") for pol in d.POLICIES
    }
    assert any(s.figure == "dsm_bw_ring_block_ilp" for s in series)
    place = {s.name: s for s in series if s.figure == "dsm_placement"}
    assert [p.y for p in place["default"].points] == [2, 4, 8, 16]
    assert [p.y for p in place["load_balancing"].points] == [1, 2, 4, 8]
    assert figs["dsm.placement.load_balancing_colocated_share"].value == 1.0
    assert figs["dsm.placement.default_colocated_share"].value == 0.0
    assert figs["dsm.placement.sm_groups"].value == 2 and "[18, 18]" in figs["dsm.placement.sm_groups"].note


def test_throughput_wrong_data_gives_no_number():
    r = _run(
        "dsm_throughput",
        {"gbytes": "0.001", "patterns": "ring,pair", "cluster_sizes": "4", "block_sizes": "128", "ilps": "1"},
        bug="target",
    )
    figs = r.figures
    assert (
        figs["dsm.bw.ring_cs4_peak_tbps"].check == "failed"
        and "block sums differ" in figs["dsm.bw.ring_cs4_peak_tbps"].note
    )
    assert figs["dsm.bw.pair_cs4_peak_tbps"].check == "ok"
    assert r.status == "failed"


def test_throughput_unlaunchable_size_is_a_clear_failure():
    r = _run(
        "dsm_throughput",
        {
            "gbytes": "0.001",
            "patterns": "ring",
            "cluster_sizes": "8,16",
            "block_sizes": "256",
            "ilps": "2",
            "policies": "default",
        },
        max_cluster=8,
    )
    figs = r.figures
    assert figs["dsm.bw.ring_cs8_peak_tbps"].check == "ok"
    assert figs["dsm.bw.ring_cs16_peak_tbps"].check == "failed"
    assert "cluster size 16 could not be launched" in figs["dsm.bw.ring_cs16_peak_tbps"].note


def test_histogram_end_to_end():
    r = _run("dsm_histogram", {"elements": "4096", "block_sizes": "128,512"})
    assert r.status == "ok", r.message
    figs, series = r.figures, r.series
    best = figs["dsm.histogram.best_elems_per_s"]
    # the fake's rate peaks at the largest cluster and block with the fewest bins
    assert best.check == "ok" and best.value == pytest.approx(1e9 * (10 + 16 + 4 - 10 / 4))
    assert "cluster size 16, block 512, 1024 bins" in best.note
    assert "skipped" in best.note and "cs1 b128 65536 bins" in best.note  # 256 KiB of bins in one block
    assert "dsm.histogram.cs1_best_elems_per_s" in figs and "dsm.histogram.local_atoms_best_elems_per_s" in figs
    names = {s.name for s in series}
    assert "block 128 CS=4" in names and "block 512 no cluster (ATOMS)" in names
    assert [p.x for p in next(s for s in series if s.name == "block 128 CS=2").points] == [1024, 2048, 8192, 65536]


def test_histogram_wrong_counts_fail():
    r = _run(
        "dsm_histogram", {"elements": "2048", "block_sizes": "128", "bins": "1024", "cluster_sizes": "1,2"}, bug="hist"
    )
    assert r.figures["dsm.histogram.best_elems_per_s"].check == "failed"
    assert r.status == "failed" and "bins differ from numpy's histogram" in r.message
