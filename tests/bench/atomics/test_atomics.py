"""Atomics: the host's expected final values, the SASS of every kernel, and both benchmarks run on a
simulated GPU (tests/fakes.py) (CPU only)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fakes import FakeDevice
from gpudissect.bench.atomics import latency, model, spec, throughput
from gpudissect.bench.atomics.model import split_lines
from gpudissect.device.cuda import Buffer
from gpudissect.reference.atomics import ATOMICS, published
from gpudissect.sass.disasm import check_required, find_tool
from gpudissect.sasscheck import check_spec, describe

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def _kernel_semantics(op: str, steps: int) -> int:
    """The chains as written in atomics.cu, one lane, interpreted step by step."""
    word = 0xFFFFFFFF if op == "min" else 0
    o = 1 if op == "cas" else (0xFFFFFFFF if op == "min" else 0)
    for _ in range(steps):
        old = word
        if op == "cas":
            if word == o ^ 1:
                word = o
        elif op == "exch":
            word = o ^ 1
        elif op == "max":
            word = max(word, (o & 0) | 1)
        elif op == "min":
            word = min(word, (o & 0) | 1)
        else:
            word = word + 1
        o = old
    return word


@pytest.mark.parametrize("op", ["add_u32", "cas", "exch", "max", "min"])
@pytest.mark.parametrize("steps", [0, 1, 2, 3, 7, 1088])
def test_simulate_matches_kernel_semantics(op, steps):
    assert model.simulate(op, 1, steps) == _kernel_semantics(op, steps)


def test_simulate_contended_adds_and_rejects_contended_cas():
    assert model.simulate("add_f32", 32, 100) == 3200
    with pytest.raises(ValueError):
        model.simulate("cas", 2, 10)


def test_no_aggregation_pattern_fails_when_ptxas_aggregates():
    aggregated = "/*0000*/ VOTE.ANY R7, PT, PT\n/*0010*/ ATOMG.E.ADD.STRONG.GPU PT, R6, desc[UR4][R2.64], R9\n"
    plain = (
        "/*0000*/ LOP3.LUT R9, R6, 0x1, R5, 0xec, !PT\n/*0010*/ ATOMG.E.ADD.STRONG.GPU PT, R6, desc[UR4][R2.64], R9\n"
    )
    assert not re.search(spec._NO_AGG, aggregated, re.MULTILINE)
    assert re.search(spec._NO_AGG, plain, re.MULTILINE)
    # Volta's never-executed filler is no aggregation; a shuffle under a real predicate is
    filler = "/*0000*/ IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]\n/*0010*/ @!PT SHFL.IDX PT, RZ, RZ, RZ, RZ\n"
    assert re.search(spec._NO_AGG, filler + plain, re.MULTILINE)
    assert not re.search(spec._NO_AGG, filler + "/*0020*/ @!P0 SHFL.IDX PT, R3, R4, RZ, 0x1f\n", re.MULTILINE)
    assert not re.search(spec._NO_AGG, "/*0020*/ @P1 VOTEU.ANY UR4, UPT, PT\n", re.MULTILINE)
    # the failure names the aggregating instruction, not the filler
    funcs = {"f": filler + aggregated}
    (check,) = check_required(funcs, {"f": [spec._NO_AGG]})
    assert not check.found and "VOTE.ANY R7" in describe(check, funcs)


@needs_cuobjdump
@pytest.mark.sass
def test_every_atomics_kernel_has_its_sass():
    funcs, checks = check_spec(spec.ATOMICS)
    missing = [(c.function, c.pattern) for c in checks if not c.found]
    assert not missing
    # every latency chain's timed loop holds exactly one atomic per iteration (no unrolled copies)
    for op in spec.OPS:
        body = funcs[f"lat_global_{op}"]
        lines = body.splitlines()
        clocks = [i for i, x in enumerate(lines) if "SR_CLOCKLO" in x]
        timed = lines[clocks[0] : clocks[1]]
        assert sum("ATOMG" in x for x in timed) == 1, op


def test_reference_values_transcribed():
    assert published("atom.shared.add_u32.latency_cycles", "V100")[0].value == 6
    assert published("atom.global.add_u32.contended_32_latency_cycles", "K80")[0].value == 488
    assert len(ATOMICS) == 2 * 5 * 6
    assert all(p.paper == "002" and p.table == "Table 4.2" for p in ATOMICS)


def test_split_lines_finds_near_and_far_modes():
    rng = np.random.default_rng(3)
    far = {i for i in range(64) if bin(i & 0b101101).count("1") % 2}
    per = [[(480.0 if i in far else 300.0) + float(e) for e in rng.normal(0, 0.5, 3)] for i in range(64)]
    near_i, far_i, nc, fc, thr = split_lines(per)
    assert near_i not in far and far_i in far
    assert abs(nc - 300) < 2 and abs(fc - 480) < 2 and thr < 20


def test_split_lines_reports_no_split_for_noise_alone():
    rng = np.random.default_rng(4)
    per = [[300.0 + float(e) for e in rng.normal(0, 0.5, 3)] for _ in range(64)]
    near_i, far_i, nc, fc, thr = split_lines(per)
    assert far_i is None and fc is None and abs(nc - 300) < 2


# ---- both benchmarks on a simulated GPU ----------------------------------------------------------
NEAR, FAR = 300, 480  # cycles per dependent atom.add step on a line whose home L2 partition is near / far


def _far(line: int) -> bool:
    return bin(line & 0b101101).count("1") % 2 == 1


class AtomicsDevice(FakeDevice):
    """The atomics kernels from one SM (7): an atom.add chain costs NEAR or FAR cycles a step by its line's
    home partition, each contending lane 10 more, a shared chain 30 + 10 a lane, a LOP3 link 1; a load chain
    200 (near) or 350 (far), red+load 250; clock64 runs at 1.5 cycles per %globaltimer ns (red_contend: 1.8).
    Final values are model.simulate's (`wrong_op`: one op leaves 5), red_contend's every word's count.
    The chains' words lie inside a buffer: any address in one works as its start."""

    def __init__(self, wrong_op: str | None = None, sms: int = 40, **props):
        super().__init__(sm_count=sms, **props)
        self.wrong_op = wrong_op

    def buf(self, ptr):
        addr = ptr.ptr if isinstance(ptr, Buffer) else ptr
        base = max(p for p in self.mem if p <= addr)
        return self.mem[base][addr - base :]

    def upload(self, arr, buf=None, offset=0):
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        buf = buf or self.alloc(raw.size)
        self.buf(buf)[offset : offset + raw.size] = raw
        return buf

    def line(self, addr: int) -> int:
        return (addr - max(p for p in self.mem if p <= addr)) // 128

    def res(self, ptr: int, *words: int) -> None:
        self.buf(ptr).view(np.uint64)[: len(words)] = words

    def k_probe_lines(self, launch, base, m, stride, n, steps, atomic, res):
        per = [(FAR if _far(i) else NEAR) * steps if atomic else 200 * steps for i in range(n)]
        self.res(res, *per, 7, *[steps - 1 if atomic else 0] * n)

    def __getattr__(self, name):  # k_lat_<space>_<op>
        if name.startswith("k_lat_"):
            space, op = name[len("k_lat_") :].split("_", 1)
            return lambda launch, *args: self.lat(launch.block, space, op, *args)
        raise AttributeError(name)

    def lat(self, lanes, space, op, word, m, warm, steps, res):
        v = 5 if op == self.wrong_op else model.simulate(op, lanes, warm + steps)
        dtype = spec.FLOAT_OPS.get(op, np.uint32)
        self.buf(word)[: np.dtype(dtype).itemsize] = np.array([v], dtype).view(np.uint8)
        step = (FAR if _far(self.line(word)) else NEAR) if space == "global" else 30
        cycles = (step + 10 * lanes + 1) * steps
        self.res(res, cycles, *[0] * 32, cycles * 2 // 3, 7)

    def k_alu_chain(self, launch, inp, steps, res):
        self.res(res, 4 * steps + 50, 1)  # four LOP3 a step

    def k_red_ld_global(self, launch, word, m, warm, steps, res):
        self.res(res, 0, 250 * steps, warm + steps, 7)

    def k_ld_chain_global(self, launch, word, m, warm, steps, res):
        self.res(res, 0, (350 if _far(self.line(word)) else 200) * steps, 0, 7)

    def contend(self, launch, dtype, base, share, stride, iters, val, times):
        idx = (np.arange(launch.grid * launch.block, dtype=np.int64) // share) * stride
        counts = np.bincount(idx) * iters
        self.buf(base)[: 4 * counts.size] = counts.astype(dtype).view(np.uint8)
        ns = 50_000 + int(counts.max()) // 4 + idx.size * iters // 1000  # one word's updates, then the GPU's
        self.buf(times).view(np.int64)[: 4 * launch.grid] = [0, int(1.8 * ns), 0, ns] * launch.grid

    def k_red_contend_u32(self, launch, *args):
        self.contend(launch, np.uint32, *args)

    def k_red_contend_f32(self, launch, *args):
        self.contend(launch, np.float32, *args)


@pytest.fixture
def declared_sass(monkeypatch):
    """The shared float note reads the SASS its family declares (as with no disassembler): no NVRTC here."""
    monkeypatch.setattr(latency, "sass_of", lambda ctx, spec, fn: None)


def test_atomic_latency_on_a_simulated_gpu(run_bench, declared_sass):
    r = run_bench("atomic_latency", {}, AtomicsDevice())
    assert r.status == "ok", r.message
    f = {k: fig.value for k, fig in r.figures.items()}
    assert f["atom.link_lop3_cycles"] == 1.0 and r.figures["atom.link_lop3_cycles"].spread == (1.0, 1.0)
    # the word sits on the first near line (0), the far figure on the first far one (1)
    assert f["atom.global.timing_sm"] == 7 and _far(1) and not _far(0)
    assert f["atom.global.add_u32.latency_cycles"] == NEAR + 10
    assert r.figures["atom.global.add_u32.latency_cycles"].spread == (NEAR + 10, NEAR + 10)
    assert f["atom.global.add_u32.far_latency_cycles"] == FAR + 10
    assert f["atom.global.add_u32.contended_32_latency_cycles"] == NEAR + 320
    assert f["atom.shared.cas.latency_cycles"] == 40 and f["atom.shared.add_u32.contended_4_latency_cycles"] == 70
    assert f["atom.global.load_relaxed_gpu_cycles"] == 200 and f["atom.global.load_relaxed_gpu_far_cycles"] == 350
    assert f["atom.global.red_add_u32.extra_cycles"] == 50
    assert f["clock.atomic_latency.sm_mhz"] == pytest.approx(1500, abs=0.1)
    assert f["atom.global.word_placement"].startswith("SM 7: 32 of 64 lines near-home")
    lanes = next(s for s in r.series if s.name == "global" and s.figure == "atomic_latency_contention")
    assert [(p.x, p.y) for p in lanes.points] == [(n, NEAR + 10 * n) for n in (1, 2, 4, 8, 16, 32)]
    assert r.device.mem == {}  # every buffer the context's, freed when the benchmark ended
    note = r.figures["atom.shared.add_f32.latency_cycles"].note
    assert note.startswith("sm_90 has no shared-memory float add: ptxas emits an LDS + ATOMS.CAST.SPIN retry loop")


@pytest.mark.parametrize(
    ("sass", "spin"),
    [("/*0100*/ ATOMS.CAST.SPIN P0, [R2], R4, R5 ;\n", True), ("/*0100*/ ATOMS.ADD.F32 RZ, [R2], R4 ;\n", False)],
)
def test_the_shared_float_note_follows_the_sass_that_ran(run_bench, monkeypatch, sass, spin):
    monkeypatch.setattr(latency, "sass_of", lambda ctx, spec, fn: sass)
    r = run_bench("atomic_latency", {}, AtomicsDevice(cc_major=8, cc_minor=6))
    note = r.figures["atom.shared.add_f64.latency_cycles"].note
    assert note.startswith("sm_86 has no shared-memory float add" if spin else "sm_86 adds floats in shared memory")


def test_a_wrong_final_value_fails_atomic_latency(run_bench, declared_sass):
    r = run_bench("atomic_latency", {}, AtomicsDevice(wrong_op="exch"))
    assert r.status == "failed" and "lat_global_exch with 1 lanes left 5" in r.message
    assert r.device.mem == {}


def test_atomic_throughput_on_a_simulated_gpu(run_bench):
    r = run_bench("atomic_throughput", {}, AtomicsDevice())
    assert r.status == "ok", r.message
    f = {k: fig.value for k, fig in r.figures.items()}
    assert f["clock.atomic_throughput.sm_mhz"] == 1800.0
    assert f["atom.global.distinct_address.ops_per_clk_sm"] > f["atom.global.same_address_gpu.ops_per_clk"] / 40
    merge = r.figures["atom.global.merge.warp_same_word_cycles_per_instr"]
    assert merge.value > f["atom.global.merge.one_lane_cycles_per_instr"] and merge.spread[0] <= merge.spread[1]
    assert f["atom.global.same_address_warp.merged"].split(":")[0] in ("yes", "no")
    assert {s.name for s in r.series} >= {"s1_neighbouring", "s3_one_address", "distinct_neighbouring"}
    assert r.device.mem == {}


def test_atomic_throughput_on_a_gpu_of_fewer_than_32_sms(run_bench):
    """The fixed block counts (up to 64) exceed 2 x SMs there: the timing buffer holds the largest launch (the
    fake's buffers end where they were allocated, so a record past the end fails the launch)."""
    r = run_bench("atomic_throughput", {}, AtomicsDevice(sms=20))
    assert r.status == "ok", r.message
    grids = {x.grid for x in r.device.launches}
    assert max(grids) == 64 and {10, 20, 40} <= grids
    assert throughput.scenario_blocks(20) == [1, 2, 4, 8, 10, 16, 20, 32, 40, 64]
    assert throughput.scenario_blocks(132)[-3:] == [66, 132, 264]
