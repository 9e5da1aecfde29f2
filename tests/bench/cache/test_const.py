"""Constant-cache probes: chain layout, lane grouping, the SASS of every path, and const_cache end to end on a
fake device (CPU only)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fakes import FakeDevice, run_bench
from gpudissect.bench.cache import const, const_imm
from gpudissect.bench.cache import const_probe as cc
from gpudissect.bench.cache import sources as src
from gpudissect.bench.registry import load_all
from gpudissect.device.compiler import compile_cubin, compile_spec
from gpudissect.errors import GpuDissectError
from gpudissect.sass.disasm import disassemble, find_tool
from gpudissect.sasscheck import check_spec

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def test_seq_chain_visits_every_element():
    words, n = cc.seq_chain(1024, 64)
    assert n == 16
    j, seen = 0, []
    for _ in range(n):
        seen.append(j)
        j = int(words[j])
    assert j == 0 and sorted(seen) == [i * 16 for i in range(16)]
    assert cc.chain_end(n, 64, 3, 20) == ((3 + 20) % 16) * 16


def test_seq_chain_rejects_bad_layouts():
    with pytest.raises(GpuDissectError):
        cc.seq_chain(1024, 6)
    with pytest.raises(GpuDissectError):
        cc.seq_chain(128 * 1024, 64)


@pytest.mark.parametrize("k", [1, 2, 5, 32])
def test_distinct_starts_give_k_addresses_every_step(k):
    n = 256
    starts = cc.distinct_starts(k, n)
    for step in range(3 * n):
        addrs = {(s + step) % n for s in starts}
        assert len(addrs) == k


@needs_cuobjdump
@pytest.mark.sass
def test_const_chase_is_an_indexed_ldc_between_clocks():
    funcs, checks = check_spec(cc.CONST)
    assert all(c.found for c in checks)
    body = funcs["const_chase"]
    timed = src.timed_regions(body)
    assert any(any(re.search(cc._LDC_INDEXED, x) for x in r) for r in timed)
    assert "ULDC R" not in body and not re.search(r"ULDC UR\d+, c\[0x3\]", body)  # no uniform-path constant loads


@needs_cuobjdump
@pytest.mark.sass
def test_const_thrash_keeps_every_ffma():
    for nt in (40, 1000):
        funcs = disassemble(compile_spec(cc.thrash_spec(nt), "sm_90a"))
        assert src.ffma_total(funcs["const_thrash"]) == nt


def test_words_fit_one_bank():
    assert cc.WORDS * 4 == 64 * 1024
    assert np.uint32(cc.WORDS - 1) == cc.WORDS - 1


@pytest.mark.sass
def test_sm90_ptxas_keeps_no_constant_bank_operand_in_ffma():
    """Why the immediate-operand probe is patched: ptxas for sm_90 loads every fixed-offset constant into a
    uniform register (ULDC) and never leaves c[0x3][imm] in the FFMA, while for sm_80 it does."""
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    offsets = [i * 64 for i in range(64)]
    source = const_imm.const_imm_source(offsets)
    sm90 = disassemble(compile_cubin(source, "const_imm_probe.cu", "sm_90a"))["const_imm"]
    sm80 = disassemble(compile_cubin(source, "const_imm_probe.cu", "sm_80"))["const_imm"]
    assert not re.search(r"FFMA [^\n]*c\[0x3\]", sm90) and len(re.findall(r"ULDC UR\d+, c\[0x3\]", sm90)) == 64
    assert len(re.findall(r"FFMA [^\n]*c\[0x3\]", sm80)) == 64


@needs_cuobjdump
@pytest.mark.parametrize("level", ["l1", "l1_5", "l2"])
@pytest.mark.sass
def test_immediate_operand_patch_reads_as_asked(level):
    cubin, offsets = const_imm.imm_build(level, "sm_90a", True)
    sass = disassemble(cubin)["const_imm"]
    assert const_imm.imm_patch_problems(sass, offsets) == []
    assert len(re.findall(r"FFMA R\d+, R\d+, c\[0x3\]", sass)) == len(offsets)
    assert "ULDC" not in "".join(line for line in sass.splitlines() if "c[0x3]" in line)


def test_immediate_operand_checker_rejects_unpatched_and_misordered_code():
    clock = "/*0000*/ CS2R R4, SR_CLOCKLO"
    good = [f"/*{16 * (i + 1):04x}*/ FFMA R0, R0, c[0x3][{hex(64 * i)}], R5" for i in range(4)]
    end = "/*0050*/ CS2R R6, SR_CLOCKLO"
    assert const_imm.imm_patch_problems("\n".join([clock, *good, end]), [0, 64, 128, 192]) == []
    assert const_imm.imm_patch_problems("\n".join([clock, *good, end]), [0, 128, 64, 192])
    ur = "\n".join([clock, "/*0010*/ ULDC UR6, c[0x3][0x0]", "/*0020*/ FFMA R0, R0, UR6, R5", end])
    assert const_imm.imm_patch_problems(ur, [0])


def test_declared_builds_are_the_generated_ones():
    """The thrash and immediate-operand builds are declared (so `gpudissect sass const_cache` checks them):
    their text is the generator's, the kernel file after it where there is one."""
    kernels = {k.name: k for k in load_all()["cache/const_cache"].kernels}
    big = const.thrash_sizes(True)[-1]
    assert kernels[f"cache_const.cu[thrash{big}]"].source.startswith(src.const_prelude(big) + "// ")
    for level, (offsets, reg) in const_imm.IMM_PLANS.items():
        spec = kernels[f"cache_const_imm_{level}.cu"]
        assert spec.source == const_imm.const_imm_source(offsets, reg) and spec.file == f"cache_const_imm_{level}.cu"


# ---- const_cache end to end on a fake device: a made-up L1 (2 KiB), L1.5 and L2, and an L1.5 evicted by
# more than 64 KiB of code between the two scans of const_thrash
class ConstDevice(FakeDevice):
    def global_nbytes(self, name: str) -> int:
        return 4 * cc.WORDS

    def _chain(self, launch) -> tuple[np.ndarray, int, int]:
        """The launched module's cdata: its words, chain length and stride."""
        words = self.buf(self.global_of(launch.spec.name, "cdata")).view(np.uint32)
        return words, int(np.count_nonzero(words)) + 1, int(words[0]) * 4

    @staticmethod
    def _walk(words: np.ndarray, j, steps: int) -> np.ndarray:
        j = np.asarray(j, np.int64)
        for _ in range(steps):
            j = words[j].astype(np.int64)
        return j

    @staticmethod
    def _warm(footprint: int, stride: int) -> float:
        return 20.0 if footprint <= 2048 else 20 + 40 * min(stride, 64) / 64

    def _put(self, ptr: int, values, dtype=np.uint64, at: int = 0) -> None:
        raw = np.asarray(values, dtype).view(np.uint8)
        self.buf(ptr)[at : at + raw.size] = raw

    def k_const_chase(self, launch, start, warm, steps, res):
        words, n, stride = self._chain(launch)
        end = int(self._walk(words, start, warm + steps))
        cyc = int(self._warm(n * stride, stride) * steps)
        self._put(res, [end, cyc, 0, cyc // 2])

    def k_const_chase_warp(self, launch, starts, warm, steps, target_sm, res):
        words, n, stride = self._chain(launch)
        lanes = self.buf(starts).view(np.uint32)[:32]
        ends = self._walk(words, lanes, warm + steps)
        lat = 200 + 100 * min(stride, 256) / 256 if warm == 0 else self._warm(n * stride, stride)
        per_load = lat + 1.5 * (len(set(lanes.tolist())) - 1)  # one more cycle and a half per distinct address
        self._put(res, [*ends.tolist(), int(per_load * steps), 1 if target_sm == 0xFFFFFFFF else target_sm])

    def k_const_thrash(self, launch, n, one, res, out):
        words, _, _ = self._chain(launch)
        nt = launch.spec.prelude.count("fma.rn.f32")
        evicted = min(1.0, max(0.0, (nt * 16 - 64 * 1024) / (64 * 1024)))
        self._put(res, [int((60 + 140 * evicted) * n), int(self._walk(words, 0, n)), 0])
        self._put(out, [nt / 2, 1 + nt / 2], np.float32)

    def k_const_imm(self, launch, x0, one, passes, target_sm, res, out):
        # the register plan comes from ctx.module (its spec), a patched plan from a load just before its launches
        source = launch.spec.prelude if launch.spec else self.loaded[-1]
        n, reg = source.count("x = fmaf("), "fmaf(x, m, y)" in source
        self._put(res, [int((4 if reg else 6) * n)] * passes, np.int64)
        self._put(res, [2 if target_sm == 0xFFFFFFFF else target_sm], np.int64, 16 * 8)
        self._put(out, [passes * n], np.float32)

    def load(self, cubin: bytes):
        self.loaded = [*getattr(self, "loaded", []), cubin.decode()]
        return super().load(cubin)


@pytest.mark.sass
def test_const_cache_on_a_fake_device(monkeypatch):
    # no SASS here (the tests above check it): the thrash builds are not disassembled, and the "patched"
    # immediate-operand cubins are their sources
    monkeypatch.setattr(const, "find_tool", lambda tool: None)
    plans = const_imm.IMM_PLANS
    monkeypatch.setattr(
        const_imm, "imm_build", lambda level, arch, check: (const_imm.IMM_SPECS[level].source.encode(), plans[level][0])
    )
    run = run_bench("const_cache", device=ConstDevice())
    assert run.status == "ok", run.message
    assert run.value("cache.const.l1_bytes") == 2048 and run.value("cache.const.l1_hit_cycles") == 20.0
    assert run.value("cache.const.l1_line_bytes") == 64 and run.value("cache.const.l1_5_line_bytes") == 256
    assert run.value("cache.const.l2_hit_cycles") == 300.0
    assert run.value("cache.const.l1_serialisation_per_address_cycles") == 1.5
    assert run.value("cache.const.l1_5_shared_with_icache").startswith("yes")
    assert run.value("cache.const.imm_register_cycles_per_ffma") == 4.0
    assert [run.value(f"cache.const.imm_{lv}_extra_cycles") for lv in ("l1", "l1_5", "l2")] == [2.0, 2.0, 2.0]
    # every thrash size ran in a build of its own (ctx.module of its spec), the immediate plans after them
    thrash = [x.spec.name for x in run.device.launches if x.name == "const_thrash"][::3]
    assert thrash == [f"cache_const.cu[thrash{nt}]" for nt in [2] + const.thrash_sizes(True)]
    assert [s.name for s in run.series][-1] == "second_scan"
