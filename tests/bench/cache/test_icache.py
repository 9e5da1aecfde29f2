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
from gpudissect.capability import CI_ARCHES
from gpudissect.device.compiler import compile_spec, kernel_source
from gpudissect.sass.disasm import disassemble, find_tool
from helpers import skip_unless_readable

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


@pytest.mark.parametrize("arch", CI_ARCHES)
@pytest.mark.sass
def test_the_seq_build_is_the_same_icache_seq_alone(arch):
    """The staircase and the fine scans build icache_seq alone (seq_spec): on every CI arch its SASS is the straight
    line asked for, it holds the variant's required SASS and no other function, and its icache_seq is the very one
    of the whole file's build (same instructions at the same offsets, same 128 B section alignment): the timed code
    is unchanged, only icache_observe's second copy of the sequence is no longer compiled."""
    from gpudissect.sass.disasm import check_required

    skip_unless_readable(arch)
    for n in (64, 1024):
        seq = compile_spec(icache_probe.seq_spec(n), arch)
        funcs = disassemble(seq)
        assert list(funcs) == ["icache_seq"]
        assert src.straight_line_problems(funcs["icache_seq"], n) == []
        assert len(re.findall(r"\bFFMA\b", funcs["icache_seq"])) == n
        assert all(c.found for c in check_required(funcs, icache_probe.seq_spec(n).required))
        assert funcs["icache_seq"] == disassemble(compile_spec(icache_probe.icache_spec(n), arch))["icache_seq"]
    assert _text_align(seq, "icache_seq") == 128


def _text_align(cubin: bytes, fn: str) -> int:
    """sh_addralign of the .text.<fn> section of an ELF64 cubin."""
    import struct

    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx][4]
    for sh in sections:
        end = cubin.index(b"\0", names + sh[0])
        if cubin[names + sh[0] : end] == f".text.{fn}".encode():
            return sh[8]
    raise AssertionError(f"no .text.{fn} section")


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


def _fake_builds(monkeypatch, built: set[str]) -> list[str]:
    """The icache builds made by a FIFO stand-in for the benchmark's compile pool: a spec is cached once the pool
    built it (or it is in `built` from the start); waiting for a spec builds everything queued before it too.
    Returns the names queued, in queue order; compiling a cold spec in the benchmark's process fails the test."""
    order: list[str] = []

    class Pool:
        def __init__(self, arch, workers=None, fn=None, low_priority=True):
            self.mine: list[KernelSpec] = []

        def queue(self, key, specs):
            self.mine = [s for s in specs if s.name not in built]
            order.extend(s.name for s in self.mine if s.name not in order)
            return len(self.mine)

        def wait(self, key, progress=None):
            built.update(order[: max((order.index(s.name) + 1 for s in self.mine), default=0)])
            for i, s in enumerate(self.mine, 1):
                if progress:
                    progress(i, len(self.mine), s.variant)

        def close(self):
            pass

    def compile_spec(spec, arch):
        assert spec.name in built, f"{spec.name} compiled in the benchmark's process"
        return spec.source.encode()

    monkeypatch.setattr(icache_probe, "CompilePool", Pool)
    monkeypatch.setattr(icache_probe, "is_cached", lambda spec, arch: spec.name in built)
    monkeypatch.setattr(icache_probe, "compile_spec", compile_spec)
    monkeypatch.setattr(icache_probe, "find_tool", lambda tool: None)
    monkeypatch.setattr(icache_probe, "Stream", FakeStream)
    return order


def test_builds_are_queued_ahead_in_the_order_they_are_needed(monkeypatch):
    """The staircase comes prebuilt (the runner's pool); every other build goes to the benchmark's pool, queued as
    soon as what it depends on is known: the L0 scan's builds, the L1 privacy thrashers (the largest builds), the
    L1 scan's, then the rest of the privacy builds once the L0 scan gave its capacity. The scans build icache_seq
    alone, the privacy experiments the whole file; nothing is compiled twice or in the benchmark's process, and the
    figures are those of the run without a pool."""
    built = {s.name for s in icache.prebuilt(None, "quick")}
    order = _fake_builds(monkeypatch, built)
    ahead: list[str] = []
    thrash_ahead = icache.privacy.thrash_ahead

    def record(l0, l1):
        pairs = thrash_ahead(l0, l1)
        ahead.extend(icache_probe.icache_spec(*p).name for p in pairs)
        return pairs

    monkeypatch.setattr(icache.privacy, "thrash_ahead", record)
    run = run_bench("icache", device=IcacheDevice())
    assert run.status == "ok", run.message
    assert run.value("cache.icache.l0_bytes") == 16384 and run.value("cache.icache.l1_bytes") == 131072
    assert run.value("cache.icache.l0_stages") == 4 and run.value("cache.icache.l1_stages") == 8
    assert run.value("cache.icache.l0_private_to") == "sub-core (both methods agree)"
    assert len(order) == len(set(order))
    launched = {(x.name, x.spec.name) for x in run.device.launches}
    timed = {spec for fn, spec in launched if fn == "icache_seq"}
    assert timed and all(n.startswith("cache_icache.cu[seq") for n in timed)
    assert all("[seq" not in spec for fn, spec in launched if fn != "icache_seq")
    at = {n: i for i, n in enumerate(order)}
    coarse = {int(p.x) for s in run.series if s.name == "ffma_sequence" for p in s.points}  # reused by the scans
    fine = {
        s.name: [at.get(f"cache_icache.cu[seq{int(p.x) // 16}]") for p in s.points if p.x not in coarse]
        for s in run.series
    }
    # queued in vain: only L0 scan builds queued after the first refining round past the range the second round
    # narrowed it to (this step is sharper than an H100's: its committed runs waste none, see the replay below)
    vain = [n for n in order if n not in {spec for _, spec in launched}]
    l0_end = max(int(p.x) for s in run.series if s.name == "l0_fine" for p in s.points)
    assert all(n.startswith("cache_icache.cu[seq") and l0_end < 16 * int(n[19:-1]) < 2 * 16384 for n in vain)
    l0, l1 = ([i for i in fine[f"{lv}_fine"] if i is not None] for lv in ("l0", "l1"))
    thrash = [at[n] for n in ahead]
    rest = [i for n, i in at.items() if "[seq" not in n and n not in ahead]  # observers, L0 thrashers
    assert l0 and l1 and len(thrash) == 5 and len(rest) == 6
    assert max(l0) < min(thrash) and max(thrash) < min(l1) and max(l1) < min(rest)
    assert thrash == sorted(thrash) and ahead[0] == icache_probe.icache_spec(8, max(int(n[18:-1]) for n in ahead)).name


# ---- the committed quick runs replayed: each size's three launches give the committed cycles per FFMA
# H100 runs with icache in quick mode (quick-m and quick-p, registered before, are kept among the profiles)
QUICK_RUNS = {
    name: f"results/h100-sxm5-80gb/runs/{name}/export.json.gz"
    for name in ("quick-u", "quick-i", "quick-after", "quick-refactor-a", "cache-atomics-2")
} | {
    "quick-m": "results/h100-sxm5-80gb/profiles/quick-traces/quick-m.json.gz",
    "quick-p": "results/h100-sxm5-80gb/profiles/quick-runs-evening/quick-p.json.gz",
}
PRIVACY = ("_private_to", "_evicted_by")  # the privacy figures: the fake's observers, not the committed ones


class ReplayDevice(IcacheDevice):
    """icache_seq as measured in a committed run: the staircase's (and refining rounds') values for a size's first
    three launches, the fine scan's for the next three (the scans measure again sizes the staircase did)."""

    def __init__(self, export: dict):
        super().__init__()
        series = {s["name"]: s["points"] for s in export["series"] if s["bench"] == "icache"}
        self.values: dict[int, list[float]] = {}
        for name in ("ffma_sequence", "l0_fine", "l1_fine"):
            for p in series[name]:
                self.values.setdefault(int(p["x"]), []).extend([p["y_min"], p["y"], p["y_max"]])
        self.asked: list[int] = []

    def k_icache_seq(self, launch, b, c, reps, cycles, out):
        n = self._count(launch, "ICACHE_MEASURE")
        self.asked.append(16 * n)
        y = self.values[16 * n][self.asked.count(16 * n) - 1]  # KeyError: a size the committed run did not measure
        passes = [round(y * n)] * reps
        self._put(cycles, [*passes, sum(passes), sum(passes) // 2])
        self._put(out, np.arange(8) + reps * n / 8, np.float32)


@pytest.mark.parametrize("name", QUICK_RUNS)
def test_committed_quick_runs_replay_to_the_same_sizes_and_figures(monkeypatch, name):
    """The benchmark fed each committed quick run's measurements asks for exactly the sizes that run measured (the
    staircase, both refining rounds, both fine scans) and derives the same staircase and geometry figures; the L0
    scan's builds queued after the first refining round (on the workers the second leaves idle) are exactly the
    scan's on every one of these runs: none queued in vain, none queued late."""
    import gzip
    import json

    from helpers import ROOT

    export = json.loads(gzip.decompress((ROOT / QUICK_RUNS[name]).read_bytes()))
    committed = {f["key"]: f["value"] for f in export["figures"] if f["bench"] == "icache"}
    order = _fake_builds(monkeypatch, {s.name for s in icache.prebuilt(None, "quick")})
    dev = ReplayDevice(export)
    run = run_bench("icache", device=dev)
    assert run.status == "ok", run.message
    assert sorted(set(dev.asked)) == sorted(dev.values)
    assert all(dev.asked.count(x) == len(v) for x, v in dev.values.items())  # each committed launch replayed once
    derived = {k: f.value for k, f in run.figures.items() if k.startswith("cache.icache.") and not k.endswith(PRIVACY)}
    assert derived == {k: v for k, v in committed.items() if k.startswith("cache.icache.") and not k.endswith(PRIVACY)}
    launched = {x.spec.name for x in dev.launches}
    assert [n for n in order if n not in launched] == []


@pytest.mark.parametrize("mode", ["quick", "full"])
def test_the_prebuilt_specs_are_the_staircase_builds(monkeypatch, mode):
    """The runner compiles icache.prebuilt ahead: the very specs the staircase then asks for (equal sources, so
    equal cubin cache keys), so that it finds every one built and queues nothing."""
    prebuilt = icache.prebuilt(None, mode)
    order = _fake_builds(monkeypatch, {s.name for s in prebuilt})
    asked: list[tuple[list[KernelSpec], int]] = []
    seqs = icache_probe.Builder.seqs

    def record(self, ns, progress=None):
        queued = len(order)
        out = seqs(self, ns, progress)
        asked.append((list(out.values()), len(order) - queued))
        return out

    monkeypatch.setattr(icache_probe.Builder, "seqs", record)
    run = run_bench("icache", device=IcacheDevice(), mode=mode)
    assert run.status == "ok", run.message
    staircase, queued = asked[0]
    assert staircase == prebuilt and queued == 0
    assert [s.source for s in staircase] == [s.source for s in prebuilt]
    assert len(prebuilt) == len(icache.staircase_sizes(mode == "quick"))
