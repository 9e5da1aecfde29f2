"""The memory suite on every GPU from Volta to Blackwell: what `plan` runs per target; simulated (CPU only):
`bandwidth` on a Turing and an A100-like GPU runs what their builds hold and records what it skips, the L2 matrix
on a GPU whose blocks get 64 KiB of shared memory, the TLB chases within a small shared-memory limit, and the
index chase labelled from its SASS; compiled and disassembled: every variant each target runs holds its family's
SASS there, and the bandwidth builds leave out the copies a GPU lacks."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_l2 import L2Device
from test_tlb import TlbDevice

from fakes import FakeContext, FakeDevice, run_bench
from gpudissect.bench.memory import bandwidth as bw
from gpudissect.bench.memory import latency
from gpudissect.bench.memory import tlb as memory_tlb
from gpudissect.bench.memory.bandwidth import BW
from gpudissect.bench.memory.dram_copy import COPY_NEEDS
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import load_all
from gpudissect.bench.shared import FAMILIES, PCHASE, family_has
from gpudissect.capability import CI_ARCHES, Target
from helpers import missing_sass, skip_unless_readable

# what a GPU's build of memory_bandwidth.cu lacks (the file guards these kernels by compute capability)
GUARDED = {"dram_copy_stream": (8, 0), "dram_copy_flat_keep": (8, 0), "dram_copy_bulk": (9, 0)}
TURING = {"cc_major": 7, "cc_minor": 5, "smem_per_sm": 65536, "smem_per_block_optin": 65536}
A100 = {"cc_major": 8, "cc_minor": 0, "smem_per_sm": 167936, "smem_per_block_optin": 166912}


def record_skips(monkeypatch) -> list[tuple[str, str]]:
    """The variants a run records as skipped (fakes.run_bench keeps figures, series and progress only)."""
    skipped: list[tuple[str, str]] = []
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, name, why: skipped.append((name, why)))
    return skipped


class BandwidthDevice(FakeDevice):
    """memory_bandwidth.cu on a small GPU: every kernel leaves the sums and copies it must, every block records
    10^6 cycles in 1 ms; a launch of a kernel the build lacks, or with more shared memory than a block may
    have, fails as it would on the GPU."""

    def __init__(self, **props):
        super().__init__(sm_count=4, l2_bytes=4 << 20, **props)
        self.arch = Target(self.props["cc_major"], self.props["cc_minor"]).arch

    def __getattribute__(self, name):
        if name.startswith("k_") and name[2:] in GUARDED:
            cc = (self.props["cc_major"], self.props["cc_minor"])
            assert cc >= GUARDED[name[2:]], f"{name[2:]} is not in the {self.arch} build"
        return super().__getattribute__(name)

    @staticmethod
    def _vec(launch) -> int:
        return int(launch.spec.defines["VEC"])

    def _scalars(self, launch, ptr, count) -> np.ndarray:
        return self.buf(ptr).view(np.float64 if self._vec(launch) == 2 else np.float32)[:count].astype(np.float64)

    def _sums(self, launch, ptr, per_thread) -> None:
        dtype = np.float64 if self._vec(launch) == 2 else np.float32
        self.buf(ptr)[: per_thread.size * np.dtype(dtype).itemsize] = per_thread.astype(dtype).view(np.uint8)

    def _rec(self, rec, blocks) -> None:  # 1 ms windows: long enough for the clock meter (no calibration chase)
        r = np.zeros((blocks, 5), np.uint64)
        r[:, 1], r[:, 2], r[:, 4] = 1_000_000, np.arange(blocks) % self.props["sm_count"], 1_000_000
        self.buf(rec)[: r.nbytes] = r.view(np.uint8).reshape(-1)

    def k_fill(self, launch, data, n):
        vals = bw.hash_values(0, n).astype(np.float64 if self._vec(launch) == 2 else np.float32)
        self.buf(data)[: vals.nbytes] = vals.view(np.uint8)

    def _rows(self, launch, data, iters, sums, rec, warm):
        assert launch.smem <= self.props["smem_per_block_optin"], "too much shared memory for one block"
        lanes, block = self._lanes(launch), launch.block
        region = bw.ROWS * block * lanes
        per = []
        for b in range(launch.grid):  # thread t reads column t of every row it is asked to
            rows = self._scalars(launch, data + 0, (b + 1) * region)[b * region :].reshape(bw.ROWS, block, lanes)
            per.append(bw.rotation_reads(iters, warm) @ rows.sum(axis=2))
        self._sums(launch, sums, np.concatenate(per))
        self._rec(rec, launch.grid)

    @staticmethod
    def _w(launch) -> str:
        return {1: "fp32", 2: "fp64", 4: "fp32v4"}[int(launch.spec.defines["VEC"])]

    def _lanes(self, launch) -> int:
        """Scalars per access (VEC 2 is one double)."""
        return bw.LANES_BYTES[self._w(launch)][0]

    def k_l1_read(self, launch, data, iters, rmask, sums, rec):
        self._rows(launch, data, iters, sums, rec, True)

    def k_smem_read(self, launch, data, iters, rmask, sums, rec):
        self._rows(launch, data, iters, sums, rec, False)

    def k_l2_read(self, launch, data, n, iters, sums, rec):
        lanes = self._lanes(launch)
        col = self._scalars(launch, data, n * lanes).reshape(-1, launch.block, lanes).sum(axis=(0, 2)) * iters
        self._sums(launch, sums, np.tile(col, launch.grid))
        self._rec(rec, launch.grid)

    def k_dram_read(self, launch, data, n, sums):
        threads, lanes = launch.grid * launch.block, self._lanes(launch)
        vals = self._scalars(launch, data, n * lanes)
        self._sums(launch, sums, np.pad(vals, (0, -vals.size % threads)).reshape(-1, threads).sum(axis=0))

    def _copy(self, src, dst, nbytes):
        self.buf(dst)[:nbytes] = self.buf(src)[:nbytes]

    def _copy_n(self, launch, src, dst, n):
        self._copy(src, dst, n * 4 * bw.VEC[self._w(launch)])

    k_dram_copy = k_dram_copy_stream = k_dram_copy_chunked = _copy_n
    k_dram_copy_flat = k_dram_copy_flat_keep = _copy_n

    def k_dram_copy_bulk(self, launch, src, dst, nbytes, chunk):
        self._copy(src, dst, nbytes)


def _bandwidth(monkeypatch, props):
    skipped = record_skips(monkeypatch)
    run = run_bench("bandwidth", {"dram_bytes": "8M"}, BandwidthDevice(**props))
    assert run.status == "ok", run.message
    return run, dict(skipped)


def test_bandwidth_on_turing_skips_what_its_build_and_shared_memory_lack(monkeypatch):
    run, skipped = _bandwidth(monkeypatch, TURING)
    assert sorted(skipped) == [
        "memory_bandwidth.cu[fp32v4]: dram_copy_bulk",
        "memory_bandwidth.cu[fp32v4]: dram_copy_flat_keep",
        "memory_bandwidth.cu[fp32v4]: dram_copy_stream",
        "memory_bandwidth.cu[fp32v4]: smem_read",
        "memory_bandwidth.cu[fp64]: smem_read",
    ]
    assert "needs TMA, cp.async.bulk" in skipped["memory_bandwidth.cu[fp32v4]: dram_copy_bulk"]
    assert skipped["memory_bandwidth.cu[fp64]: smem_read"].startswith("needs 122880 B of shared memory per block")
    # the rest ran and passed its checks: fp32 shared memory, every L1, L2 and DRAM figure, the copy comparison
    f = run.figures
    assert "mem.bw.shared.fp32_bytes_per_clk_sm" in f and "mem.bw.shared.fp64_bytes_per_clk_sm" not in f
    assert all(f"mem.bw.l1.{w}_bytes_per_clk_sm" in f for w in bw.BW)
    assert all(f"mem.bw.dram.{w}_gbps" in f for w in bw.BW)
    assert "dram_copy_bulk" not in f["mem.bw.dram.copy_gbps"].method
    launched = {x.name for x in run.device.launches}
    assert not launched & set(GUARDED) and {"dram_copy", "dram_copy_flat"} <= launched


def test_bandwidth_on_an_a100_skips_the_bulk_copy_only(monkeypatch):
    run, skipped = _bandwidth(monkeypatch, A100)
    assert list(skipped) == ["memory_bandwidth.cu[fp32v4]: dram_copy_bulk"]
    assert all(f"mem.bw.shared.{w}_bytes_per_clk_sm" in run.figures for w in bw.BW)
    assert {"dram_copy_stream", "dram_copy_flat_keep"} <= {x.name for x in run.device.launches}


def test_bandwidth_on_hopper_runs_every_copy(monkeypatch):
    run, skipped = _bandwidth(monkeypatch, {})
    assert skipped == {} and "dram_copy_bulk" in {x.name for x in run.device.launches}


class TuringL2(L2Device):
    """The simulated two-partition L2 of test_l2 on a GPU whose blocks get 64 KiB of shared memory."""

    def __init__(self):
        super().__init__()
        self.props |= TURING | {"sm_count": 8}

    def k_chase_on_sm(self, launch, *args):
        assert launch.smem <= self.props["smem_per_block_optin"], "too much shared memory for one block"
        super().k_chase_on_sm(launch, *args)


def test_l2_matrix_leaves_out_the_third_touch_one_launch_cannot_hold():
    r = run_bench("l2_fine_pchase", device=TuringL2())
    assert r.status == "ok", r.message
    assert r.value("mem.l2.partition_hash_agreement") == pytest.approx(1.0)
    touches = {s.name for s in r.series if s.figure == "l2_access_host_memcpy"}
    assert touches == {"first read", "second read", "separate launch"}
    matrix = next(s for s in r.series if s.figure == "l2_copy_matrix")
    assert not any("third read" in p.extra["label"] for p in matrix.points) and len(matrix.points) == 4 * 3 * 2
    assert "leaves a copy in the reader's near partition" in r.value("mem.l2.far_copy_finding")


class SmallSharedTlb(TlbDevice):
    def __init__(self, optin: int):
        super().__init__()
        self.props["smem_per_block_optin"] = optin

    def k_chase_on_sm(self, launch, *args):
        assert launch.smem <= self.props["smem_per_block_optin"], "too much shared memory for one block"
        super().k_chase_on_sm(launch, *args)


def test_tlb_chases_fit_the_shared_memory_of_a_block(monkeypatch):
    monkeypatch.setattr(memory_tlb, "MAX_ELEMENTS", 96)
    r = run_bench("tlb", {"max_footprint": "1G"}, SmallSharedTlb(8 * 150))  # 150 accesses: every element once
    assert r.status == "ok", r.message
    assert max(x.smem for x in r.device.launches if x.name == "chase_on_sm") <= 8 * 150
    assert r.value("mem.tlb.l1_entries") == 16
    # the forced walk's 2 x 64 accesses fit, its 2 x 512 do not: that figure says why instead
    assert isinstance(r.value("mem.tlb.walk_penalty_cycles"), float)
    walks = r.figures["mem.tlb.walks_2mib_stride"]
    assert walks.value == "n/a" and "8192 B of shared memory per block (this GPU: 1200 B)" in walks.method


class ChaseDevice(FakeDevice):
    """The shared-memory chases of memory_pchase.cu: 30 cycles a pointer hop, 32 an index hop."""

    def __init__(self, **props):
        super().__init__(**props)
        self.arch = Target(self.props["cc_major"], self.props["cc_minor"]).arch

    def _chase(self, chain, n, steps, out, per_hop, ns=True):
        nxt, j = self.buf(chain).view(np.uint32)[:n], 0
        for _ in range((n + steps) % n):
            j = int(nxt[j])
        self.buf(out).view(np.uint64)[:3] = (
            [j, per_hop * steps, per_hop * steps // 2] if ns else [j, per_hop * steps, 0]
        )

    def k_smem_pchase(self, launch, chain, n, steps, out):
        self._chase(chain, n, steps, out, 30)

    def k_smem_ichase(self, launch, chain, n, steps, out):
        self._chase(chain, n, steps, out, 32, ns=False)

    def k_chain_init(self, launch, base, perm, n, stride):
        order = self.buf(perm).view(np.uint32)[:n]
        for i in range(n):
            self.at(base + int(order[i]) * stride)[:8] = np.array(
                [base + int(order[(i + 1) % n]) * stride], "<u8"
            ).view(np.uint8)

    def k_chain_init_seq(self, launch, base, n, stride):  # the clock's calibration chain
        for i in range(n):
            self.at(base + i * stride)[:8] = np.array([base + (i + 1) % n * stride], "<u8").view(np.uint8)

    def k_pchase(self, launch, start, warm, steps, out):
        total, path, seen, p = warm + steps, [], {}, start
        while p not in seen and len(path) < total:  # walk to the end, or to the chain's cycle
            seen[p] = len(path)
            path.append(p)
            p = self.read_u64(p)
        if len(path) < total:  # on the cycle: the calibration chase's 2M steps need not be walked
            first = seen[p]
            p = path[first + (total - first) % (len(path) - first)]
        self.buf(out).view(np.uint64)[:4] = [p, 40 * steps, 0, 20 * steps]

    def k_ichase(self, launch, a, warm, steps, out):
        idx, j = self.buf(a).view(np.uint32), 0
        for _ in range(warm + steps):
            j = int(idx[32 * j])
        self.buf(out).view(np.uint64)[:4] = [j, 44 * steps, 0, 22 * steps]

    def k_paper_l1_lat(self, launch, a, warm, out):
        """The papers' l1_lat: writes element i -> i + 1 itself, then element 0 and the timed hops; 41 cycles a
        hop with the first pass timed, 32 after a warm pass."""
        n, iters = latency.PAPER_L1_N, latency.PAPER_L1_ITERS
        assert (launch.grid, launch.block) == (1, 1) and self.buf(a).size >= n * 8
        chain = self.buf(a).view(np.uint64)
        chain[:n] = a + (np.arange(n, dtype=np.uint64) + 1) % n * 8
        p = int(chain[0])
        for _ in range((warm + iters) % n):
            p = int(chain[(p - a) // 8])
        self.buf(out).view(np.uint64)[:2] = [p, (32 if warm >= n else 41) * iters]


@pytest.mark.parametrize(
    ("props", "sass", "folded"),
    [
        ({"cc_major": 8, "cc_minor": 6}, "/*02d0*/ LDS R2, [R2.X4]\n", True),
        ({"cc_major": 7, "cc_minor": 5}, None, True),  # no disassembler: the SASS its family declares
        ({"cc_major": 7, "cc_minor": 0}, None, False),  # Volta shifts the index by its own instruction
        ({"cc_major": 7, "cc_minor": 0}, "/*0320*/ IMAD.SHL.U32 R5, R4, 0x4, RZ\n/*0330*/ LDS.U R5, [R5]\n", False),
        ({}, "/*0300*/ LEA R5, R5, UR4, 0x2\n/*0310*/ LDS R5, [R5]\n", False),
    ],
)
def test_index_chase_says_how_the_shared_hop_compiled(monkeypatch, props, sass, folded):
    monkeypatch.setattr(latency, "sass_of", lambda ctx, spec, fn: sass)
    r = run_bench("index_chase", device=ChaseDevice(**props))
    assert r.status == "ok", r.message
    method = r.figures["mem.latency.shared_index_chase_cycles"].method
    assert method.endswith(latency.INDEX_FOLDED if folded else latency.INDEX_VS_POINTER)
    # no LDG in these snippets: the L1 hops are the declared ones
    l1 = r.figures["mem.latency.l1_hit_index_chase_cycles"].method
    assert "ichase IMAD.WIDE.U32 -> the u32 load (declared SASS" in l1


# the unrolled timed loops as sm_90a builds them (memory_pchase.cu, CUDA 13)
ICHASE_SM90 = """/*0300*/ VIADD R2, R2, 0xfffffff0
/*0310*/ IMAD.WIDE.U32 R10, R9, 0x80, R4
/*0320*/ LDG.E.STRONG.SM R11, desc[UR4][R10.64]
/*0330*/ ISETP.GT.AND P1, PT, R2, 0xc, PT
/*0340*/ IMAD.WIDE.U32 R4, R11, 0x80, R4
/*0350*/ LDG.E.STRONG.SM R19, desc[UR4][R4.64]
/*0360*/ @P1 BRA 0x130
"""
PAPER_SM90 = """/*2460*/ S2UR UR4, SR_CLOCKLO
/*2480*/ IMAD.MOV.U32 R0, RZ, RZ, RZ
/*2490*/ LDG.E.64.STRONG.SM R4, desc[UR32][R4.64]
/*24a0*/ LDG.E.64.STRONG.SM R2, desc[UR32][R4.64]
/*24b0*/ LDG.E.64.STRONG.SM R2, desc[UR32][R2.64]
/*3480*/ IADD3 R0, R0, 0x100, RZ
/*3490*/ ISETP.NE.AND P0, PT, R0, 0x8000, PT
/*34a0*/ LDG.E.64.STRONG.SM R4, desc[UR32][R2.64]
/*34b0*/ @P0 BRA 0x2490
"""


def test_chase_hop_keeps_what_carries_the_loaded_value_into_the_next_address():
    assert latency.chase_hop(ICHASE_SM90) == (["IMAD.WIDE.U32"], "LDG.E.STRONG.SM")
    assert latency.chase_hop(PAPER_SM90) == ([], "LDG.E.64.STRONG.SM")
    # off the chain: a store of the loaded value, a rebuilt base; loads that do not depend on each other
    sass = """/*0000*/ LDG.E R7, desc[UR4][R6.64]
/*0010*/ STS [UR5], R7
/*0020*/ LDC.64 R4, c[0x0][0x210]
/*0030*/ SHF.L.U32 R8, R7, 0x7, RZ
/*0040*/ IADD3 R6, P0, R8, R4, RZ
/*0050*/ IADD3.X R7, RZ, R5, RZ, P0, !PT
/*0060*/ LDG.E R7, desc[UR4][R6.64]
"""
    assert latency.chase_hop(sass) == (["SHF.L.U32", "IADD3"], "LDG.E")
    assert latency.chase_hop("/*0000*/ LDG.E R7, desc[UR4][R2.64]\n/*0010*/ LDG.E R9, desc[UR4][R2.64+0x8]\n") is None


def test_index_chase_runs_the_papers_l1_code_cold_and_warm(monkeypatch):
    """The papers' l1_lat form runs in the same alternation as the other L1 chases, once as written (first pass
    timed) and once after a warm pass; the methods name each form's hop from the SASS that ran."""
    sass = {"ichase": ICHASE_SM90, "paper_l1_lat": PAPER_SM90, "pchase": PAPER_SM90}
    monkeypatch.setattr(latency, "sass_of", lambda ctx, spec, fn: sass.get(fn, ""))
    r = run_bench("index_chase", device=ChaseDevice())
    assert r.status == "ok", r.message
    names = [x.name for x in r.device.launches if x.name in ("pchase", "ichase", "paper_l1_lat")]
    assert names[:4] == ["pchase", "ichase", "paper_l1_lat", "paper_l1_lat"] and names.count("paper_l1_lat") == 14
    f = r.figures
    cold, warm = f["mem.latency.l1_papers_code_cycles"], f["mem.latency.l1_papers_code_warm_cycles"]
    assert (cold.value, warm.value) == (41.0, 32.0)
    assert "paper_l1_lat LDG.E.64.STRONG.SM, no address arithmetic" in cold.method
    assert "RegularUnits/l1_lat/l1_lat.cu" in cold.method and "first pass" in cold.method
    assert "40.7" in cold.note and "41.1" in cold.note and "+9.0 cycles per timed hop" in cold.note
    assert "288 cycles for each of its 1024 32 B sectors" in cold.note  # 9 x 32768 / 1024
    assert "4096 untimed hops" in warm.method
    index = f["mem.latency.l1_hit_index_chase_cycles"].method
    hops = "ichase IMAD.WIDE.U32 -> LDG.E.STRONG.SM; pchase LDG.E.64.STRONG.SM; paper_l1_lat LDG.E.64.STRONG.SM"
    assert hops in index
    assert f["mem.latency.l1_hit_index_chase_cycles"].value == 44.0  # unchanged: the same figure as before
    assert {s.name for s in r.series if s.figure == "index_vs_pointer_chase"} >= {"l1 paper code", "l1 paper code warm"}


# ---- what runs where (pure) ------------------------------------------------------------------------------------
BENCHES = {
    "pchase_latency": [f"memory_pchase.cu[{op}]" for op in ("ca", "cg", "default")],
    "shared_latency": ["memory_pchase.cu[ca]"],
    "index_chase": ["memory_pchase.cu[ca]"],
    "bandwidth": [f"memory_bandwidth.cu[{w}]" for w in ("fp32", "fp64", "fp32v4")]
    + ["memory_bandwidth.cu[fp32v4,unroll4]", "memory_bandwidth.cu[fp32v4,unroll16]"],
    "bank_conflicts": ["memory_bank.cu"],
    "l1_carveout": ["memory_pchase.cu[ca]"],
    "cache_lines": ["memory_pchase.cu[ca]", "memory_pchase.cu[cg]"],
    "l2_fine_pchase": [f"memory_pchase.cu[{op}]" for op in ("cg", "ca", "volatile")],
    "tlb": ["memory_pchase.cu[cg]"],
}


def _suite() -> list:
    return [b for b in load_all().values() if b.suite == "memory"]


@pytest.mark.parametrize("arch", CI_ARCHES)
def test_the_whole_memory_suite_runs_on_every_gpu(arch):
    """Every memory benchmark runs on every target with all its variants (Hopper's plan unchanged): a copy kernel
    a GPU lacks is skipped inside `bandwidth` at run time (test_bandwidth_on_turing_... above)."""
    p = {e.bench: e for e in plan(_suite(), Target.parse(arch))}
    assert {b: (e.status, e.reason) for b, e in p.items()} == dict.fromkeys(BENCHES, ("run", ""))
    assert {b: e.variants for b, e in p.items()} == BENCHES
    assert not any(e.skipped_variants for e in p.values())


def test_bandwidth_builds_hold_only_the_copies_their_gpu_has():
    """memory_bandwidth.cu guards the copies by compute capability: a family's declared SASS names exactly the
    functions its build holds, and the comparison's needs say the same."""
    for fam in FAMILIES:
        funcs = set(BW["fp32v4"].required_by_family.get(fam, BW["fp32v4"].required))
        lacks = {fn for fn, (need, _) in COPY_NEEDS.items() if not family_has(need, fam)}
        assert not funcs & lacks and "l1_read" in funcs, fam
    fp32 = BW["fp32"]
    assert "dram_copy_bulk" not in fp32.required_for(Target(8, 9))
    assert "dram_copy_stream" not in fp32.required_for(Target(7, 5))
    assert "dram_copy_bulk" in fp32.required_for(Target(12, 0))


# ---- compiled and disassembled ----------------------------------------------------------------------------------


def _sass(spec, arch: str) -> dict[str, str]:
    from gpudissect.device.compiler import compile_spec
    from gpudissect.sass.disasm import disassemble

    skip_unless_readable(arch)
    return disassemble(compile_spec(spec, arch))


# Hopper's builds: tests/bench/test_required_sass.py
VARIANTS = [(a, n) for a in CI_ARCHES if a != "sm_90a" for n in dict.fromkeys(sum(BENCHES.values(), []))]


@pytest.mark.parametrize(("arch", "name"), VARIANTS, ids=[f"{a}-{n}" for a, n in VARIANTS])
@pytest.mark.sass
@pytest.mark.slow  # every variant on every arch: the nightly tier (tests/bench/test_every_arch.py in CI)
def test_every_memory_variant_holds_its_family_sass(arch, name):
    from gpudissect.sasscheck import check_spec

    skip_unless_readable(arch)
    spec = next(s for b in _suite() for s in b.kernels if s.name == name)
    _, checks = check_spec(spec, arch)
    missing = missing_sass(checks)
    assert checks and not missing, missing


@pytest.mark.parametrize(
    ("arch", "absent"),
    [
        ("sm_75", {"dram_copy_stream", "dram_copy_flat_keep", "dram_copy_bulk"}),
        ("sm_80", {"dram_copy_bulk"}),
        ("sm_89", {"dram_copy_bulk"}),
        ("sm_120a", set()),
    ],
)
@pytest.mark.sass
def test_bandwidth_build_leaves_out_what_the_gpu_lacks(arch, absent):
    funcs = _sass(BW["fp32v4"], arch)
    assert not absent & set(funcs) and {"l1_read", "smem_read", "dram_copy", "dram_copy_flat"} <= set(funcs)
    if arch == "sm_80":  # A100 ptxas narrows the 256-byte prefetch
        assert "LDG.E.NA.LTC128B" in funcs["dram_copy_stream"]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80", "sm_100a"])
@pytest.mark.sass
def test_the_papers_l1_code_hops_with_nothing_between_its_loads(arch):
    """What index_chase's methods say per hop, from the compiled kernels: the papers' l1_lat form (a u64 pointer
    chase) and our pointer chase execute the load alone, the index chase one IMAD.WIDE.U32 (x 128 B + base)
    before it."""
    sass = _sass(PCHASE["ca"], arch)
    assert latency.chase_hop(sass["paper_l1_lat"]) == ([], "LDG.E.64.STRONG.SM")
    assert latency.chase_hop(sass["pchase"]) == ([], "LDG.E.64.STRONG.SM")
    assert latency.chase_hop(sass["ichase"]) == (["IMAD.WIDE.U32"], "LDG.E.STRONG.SM")
    # the papers' form: the 32-bit %clock reads, nothing but loop control between them and the loads
    timed = sass["paper_l1_lat"].split("SR_CLOCKLO")[1]
    assert set(re.findall(r"\*/ (?:@!?P\d )?(\S+)", timed)) <= {
        "LDG.E.64.STRONG.SM",
        "IADD3",
        "VIADD",
        "ISETP.NE.AND",
        "BRA",
        "NOP",
        "IMAD.MOV.U32",
        "MOV",
        "S2UR",
        "CS2UR.32",
        "DEPBAR.LE",  # sm_80: waits for the first clock read
        "HFMA2.MMA",  # the loop counter's zero
        "CALL.REL.NOINC",  # the loop's exit
    }


@pytest.mark.parametrize(("arch", "folded"), [("sm_70", False), ("sm_75", True), ("sm_80", True), ("sm_100a", False)])
@pytest.mark.sass
def test_the_shared_index_hop_folds_into_the_load_from_turing_to_ada(arch, folded):
    """What shared_index_hop reads: Turing to Ada scale the index inside the load (LDS [R.X4]); Volta shifts it
    by an instruction of its own, Hopper and Blackwell add it with a LEA/IMAD."""
    sass = _sass(PCHASE["ca"], arch)["smem_ichase"]
    assert bool(re.search(latency._LDS_X4, sass)) == folded
