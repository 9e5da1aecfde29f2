"""Instruction-cache probes: the generator gives straight-line code of the asked length, and icache runs end
to end on a fake device (CPU only)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fakes import FakeDevice, FakeModule, run_bench
from gpudissect.bench.cache import icache, icache_probe
from gpudissect.bench.cache import sources as src
from gpudissect.bench.registry import KernelSpec, load_all
from gpudissect.device.compiler import compile_spec, kernel_source
from gpudissect.sass.disasm import disassemble, find_tool

needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def test_body_text():
    body = src.ffma_body(3)
    assert body.count("fma.rn.f32") == 3
    assert '"fma.rn.f32 %2, %2, %8, %9;\\n\\t"' in body
    with pytest.raises(ValueError):
        src.icache_prelude(12)  # not a multiple of 8: the chains would hold unequal counts


@needs_cuobjdump
@pytest.mark.parametrize("n,t", [(64, 8), (1024, 256), (8192, 64)])
@pytest.mark.sass
def test_generated_sequences_are_straight_line(n, t):
    funcs = disassemble(compile_spec(icache_probe.icache_spec(n, t), "sm_90a"))
    assert src.straight_line_problems(funcs["icache_seq"], n) == []
    assert src.straight_line_problems(funcs["icache_observe"], n) == []
    assert src.thrash_problems(funcs["icache_thrash"], t) == []
    assert src.thrash_problems(funcs["icache_thrash"], t + 8)  # a wrong count is caught
    assert len(re.findall(r"\bFFMA\b", funcs["icache_seq"])) == n


def test_checker_rejects_a_rolled_loop_and_a_short_run():
    clock = "/*0000*/ CS2R R4, SR_CLOCKLO"
    ffma = "/*0010*/ FFMA R0, R0, R2, R3"
    loop = "\n".join([clock, ffma, ffma, "/*0030*/ @P0 BRA 0x10", clock])
    assert src.straight_line_problems(loop, 64)  # 2 FFMA in a loop are not 64 straight-line ones
    ok = "\n".join([clock] + [ffma] * 16 + [clock])
    assert src.straight_line_problems(ok, 16) == []
    split = "\n".join([clock] + [ffma] * 8 + ["/*0100*/ BRA 0x200"] + [ffma] * 8 + [clock])
    assert src.straight_line_problems(split, 16)


def test_ffma_runs():
    text = "\n".join(["A", "FFMA x", "FFMA y", "B", "FFMA z"])
    assert src.ffma_runs(text) == [(1, 2, 2), (4, 4, 1)]
    assert src.ffma_total(text) == 3


def test_declared_builds_are_the_generated_ones():
    """The smallest and the middle sequence of the quick grid are declared (so `gpudissect sass icache` checks
    them): the generated #defines, then cache_icache.cu."""
    sizes = icache.staircase_sizes(True)
    kernels = {k.name: k for k in load_all()["cache/icache"].kernels}
    for n in (sizes[0] // 16, sizes[len(sizes) // 2] // 16):
        spec = kernels[f"cache_icache.cu[{n}+8]"]
        assert spec.source == src.icache_prelude(n, 8) + kernel_source("cache_icache.cu")
    assert (sizes[0], sizes[-1]) == (2048, 1 << 20)


# ---- icache end to end on a fake device: L0 of 16 KiB (4 stages of 128 B), L1 of 128 KiB (8 stages of 512 B);
# a thrasher past L0 slows the observers of its sub-core (%warpid % 4), one past L1 those of its TPC
class IcacheDevice(FakeDevice):
    def __init__(self, overlap: bool = True):
        super().__init__()
        self.overlap, self.evicted = overlap, None

    @staticmethod
    def _count(launch, macro: str) -> int:
        line = next(x for x in launch.spec.prelude.splitlines() if x.startswith(f"#define {macro} "))
        return line.count("fma.rn.f32")

    @staticmethod
    def _per_ffma(nbytes: int) -> float:
        return 1 + min(1, max(0, (nbytes - 16384) / 512)) + 2 * min(1, max(0, (nbytes - 131072) / 4096))

    def _put(self, ptr: int, values, dtype=np.int64, at: int = 0) -> None:
        raw = np.asarray(values, dtype).view(np.uint8)
        self.buf(ptr)[at : at + raw.size] = raw

    def load(self, cubin: bytes) -> FakeModule:  # the test's "cubins" are source text: a spec stands for it
        return FakeModule(self, KernelSpec("cache_icache.cu", {}, prelude=cubin.decode()), cubin)

    def k_icache_seq(self, launch, b, c, reps, cycles, out):
        n = self._count(launch, "ICACHE_MEASURE")
        passes = [int(self._per_ffma(16 * n) * n * (1.5 if k == 0 else 1)) for k in range(reps)]
        self._put(cycles, [*passes, sum(passes), sum(passes) // 2])
        self._put(out, np.arange(8) + reps * n / 8, np.float32)

    def k_block_smid(self, launch, out):
        self._put(out, [(5 * i) % launch.grid for i in range(launch.grid)], np.uint32)

    def k_cluster_smid(self, launch, out):  # GPCs of 18 SMs (the last one of 6 hosts no cluster of 8 or 16)
        cs, sms = launch.cluster[0], self.props["sm_count"]
        gpcs = [g for g in (list(range(s, min(s + 18, sms))) for s in range(0, sms, 18)) if len(g) >= cs]
        picks = [gpcs[i % len(gpcs)][:cs] for i in range(launch.grid // cs)]
        self._put(out, [s for p in picks for s in p], np.uint32)

    def k_icache_observe(self, launch, b, c, o_sm, o_warp, passes, flag, res, out):
        n, o_wid = self._count(launch, "ICACHE_MEASURE"), o_warp + 4 * (len(self.launches) % 2)
        vals = []
        for k in range(passes):
            y = self._per_ffma(16 * n)
            if self.evicted and k == (1 if flag else 0):
                t_sm, t_wid, t = self.evicted
                y += 1.0 if o_sm == t_sm and o_wid % 4 == t_wid % 4 and t * 16 > 16384 else 0.0
                y += 2.0 if o_sm in (t_sm, t_sm ^ 1) and t * 16 > 131072 else 0.0
            vals.append(int(y * n))
        self.evicted = None
        self._put(res, [*vals, *[0] * (16 - passes), o_sm, o_wid, int(bool(flag) and not self.overlap)])
        self._put(out, np.arange(8) + passes * n / 8, np.float32)

    def k_icache_thrash(self, launch, b, c, t_sm, t_warp, claim, flag, res, out):
        t, t_wid = self._count(launch, "ICACHE_THRASH"), [0, 4, 1][len(self.launches) % 3]
        self._put(res, [t_sm, t_wid, 0, 1])
        self._put(out, np.arange(8) + t / 8, np.float32, 32)
        self.evicted = (t_sm, t_wid, t)


class FakeStream:
    """Both kernels of the concurrent method: the thrasher runs first (the observer waits for it)."""

    pending: list = []

    def __init__(self, dev):
        pass

    def launch(self, fn, grid, block, args, smem=0):
        self.pending.append((fn, grid, block, args, smem))
        if len(self.pending) == 2:
            for f, g, b, a, s in reversed(self.pending):
                f(g, b, a, smem=s)
            self.pending.clear()

    def close(self):
        pass


@pytest.mark.parametrize("overlap", [True, False])
def test_icache_on_a_fake_device(monkeypatch, overlap):
    # no NVRTC and no SASS here (the tests above check both): a build's "cubin" is its source text
    monkeypatch.setattr(icache_probe, "compile_spec", lambda spec, arch: spec.source.encode())
    monkeypatch.setattr(icache_probe, "is_cached", lambda spec, arch: True)  # no compile pool of real NVRTC
    monkeypatch.setattr(icache_probe, "find_tool", lambda tool: None)
    monkeypatch.setattr(icache_probe, "Stream", FakeStream)
    run = run_bench("icache", device=IcacheDevice(overlap))
    assert run.status == "ok", run.message
    assert run.value("cache.icache.l0_bytes") == 16384 and run.value("cache.icache.l1_bytes") == 131072
    assert run.value("cache.icache.l0_stages") == 4 and run.value("cache.icache.l0_line_bytes") == 128
    assert run.value("cache.icache.l1_stages") == 8 and run.value("cache.icache.l1_line_bytes") == 512
    assert run.value("cache.icache.l0_reused_code_evicted_by").startswith("sub-core")
    privacy = [s.name for s in run.series if s.figure.startswith("icache_privacy_l0_")]
    if overlap:
        assert run.value("cache.icache.l0_private_to") == "sub-core (both methods agree)"
        assert len(privacy) == 3 * 8  # fresh, reused, concurrent: 5 warps of the thrasher's SM and 3 other SMs
    else:  # the concurrent method is inconclusive from its first trial on: no series of it
        assert (
            run.value("cache.icache.l0_private_to")
            == "sub-core (the sequential method; the concurrent one is inconclusive)"
        )
        assert len(privacy) == 2 * 8 and "did not overlap" in run.figures["cache.icache.l0_private_to"].note


def test_cold_builds_go_to_a_process_pool_with_progress(monkeypatch):
    """NVRTC and the SASS parse of a big build hold the GIL in part: the cold builds of a scan are made by a
    pool of processes (one pool per benchmark, normal priority), then read from the cache and checked."""
    made: list[tuple[str, bool, int]] = []

    class Pool:
        def __init__(self, arch, workers=None, fn=None, low_priority=True):
            made.append((arch, low_priority, workers))
            self.specs = []

        def queue(self, key, specs):
            self.specs = list(specs)
            return len(self.specs)

        def wait(self, key, progress=None):
            for i, s in enumerate(self.specs, 1):
                progress(i, len(self.specs), s.variant)

        def close(self):
            made.append(("closed", False, 0))

    monkeypatch.setattr(icache_probe, "CompilePool", Pool)
    monkeypatch.setattr(icache_probe, "is_cached", lambda spec, arch: False)
    monkeypatch.setattr(icache_probe, "compile_spec", lambda spec, arch: spec.source.encode())
    monkeypatch.setattr(icache_probe, "find_tool", lambda tool: None)

    class Ctx:
        class device:
            arch = "sm_90a"

    b = icache_probe.Builder(Ctx())
    seen = []
    out = b.many([(64, 8), (128, 8), (256, 8)], lambda d, t: seen.append((d, t)))
    assert sorted(out) == [(64, 8), (128, 8), (256, 8)]
    assert seen == [(1, 3), (2, 3), (3, 3)]
    b.many([(512, 8), (1024, 8)], None)
    b.close()
    assert [m[1] for m in made] == [False, False] and made[-1][0] == "closed"  # one pool, at normal priority
