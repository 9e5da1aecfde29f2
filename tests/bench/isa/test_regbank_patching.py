"""isa_regbank on the CPU: the kernel's timed block and register pool in its real SASS, and the whole
benchmark against a fake device that executes the patched FFMA block the way a GPU with a chosen bank
function would time it. The pure helpers are tested in test_analysis_regbank.py."""

from __future__ import annotations

import numpy as np
import pytest

from gpudissect.sass.disasm import find_tool

pytestmark = pytest.mark.skipif(find_tool("nvdisasm") is None, reason="nvdisasm not installed")

from gpudissect.analysis.regbank import bank_reads, pool_registers, timed_block  # noqa: E402
from gpudissect.bench.isa.regbank import NACC, NBODY, NPOOL, SPEC  # noqa: E402
from gpudissect.device.compiler import compile_kernel_file  # noqa: E402
from gpudissect.sass.cubin import Cubin  # noqa: E402
from gpudissect.sass.disasm import disassemble_raw  # noqa: E402
from gpudissect.sass.text import parse, register_number  # noqa: E402


@pytest.mark.sass
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"])
def test_kernel_block_and_pool_are_found(arch):
    """Every family prints the pool's stores in its own form (STG.E.SYS [R], STG.E [R.64], STG.E desc[UR][R.64]):
    the block and the pool are found in each."""
    cubin = compile_kernel_file(SPEC.file, arch, SPEC.defines)
    c = Cubin(cubin)
    raw = "SM" + arch.removeprefix("sm_")
    texts = disassemble_raw(c.words("regbank_ffma"), raw)
    body = timed_block(texts)
    assert len(body) == NBODY
    pool = pool_registers(texts, body[-1], NPOOL)
    assert sorted(pool.values()) == list(range(NPOOL))
    srcs = {register_number(o) for i in body for o in parse(texts[i]).operands[1:3]}
    assert srcs <= set(pool)
    chain = timed_block(disassemble_raw(c.words("stall_chain"), raw))
    assert len(chain) == NBODY


class _FakeFn:
    def __init__(self, dev, cubin, name):
        self.dev, self.cubin, self.name = dev, Cubin(cubin), name

    def __call__(self, grid, block, args):
        self.dev.last = (self, args)


class _FakeModule:
    def __init__(self, dev, cubin):
        self.dev, self.cubin = dev, cubin

    def function(self, name):
        return _FakeFn(self.dev, self.cubin, name)


class FakeDevice:
    """Runs the patched cubin in the way a GPU with 2 banks (reg mod 2) that deliver one value per
    clock each, a reuse cache, and no interlock below 4 stall cycles would."""

    def __init__(self, arch: str = "sm_90a"):
        self.arch = arch
        self.mem: dict[int, np.ndarray] = {}
        self.next = 1 << 20
        self.last = None
        self.values = None

    def alloc(self, n):
        from gpudissect.device.cuda import Buffer

        b = Buffer(self.next, n)
        self.next += 1 << 20
        self.mem[b.ptr] = np.zeros(n, np.uint8)
        return b

    def upload(self, arr, buf=None, offset=0):
        buf = buf or self.alloc(arr.nbytes)
        self.mem[buf.ptr][offset : offset + arr.nbytes] = np.frombuffer(np.ascontiguousarray(arr).tobytes(), np.uint8)
        return buf

    def load(self, cubin):
        return _FakeModule(self, cubin)

    def _layout(self, fn):
        """Timed block and pool of the unpatched kernel (patching moves no instruction)."""
        if fn.name not in self.__dict__.setdefault("blocks", {}):
            texts = disassemble_raw(fn.cubin.words(fn.name), "SM" + self.arch.removeprefix("sm_"))
            body = timed_block(texts)
            self.blocks[fn.name] = (body, pool_registers(texts, body[-1], NPOOL) if fn.name == "regbank_ffma" else {})
        return self.blocks[fn.name]

    def sync(self, what=""):
        fn, args = self.last
        d_in, d_out, d_t, iters = (a.value for a in args)
        inp = self.mem[d_in].view(np.float32)
        words = fn.cubin.words(fn.name)
        body, pool = self._layout(fn)
        from gpudissect.sass.control import default_layout

        lay = default_layout(self.arch)
        n = iters * NBODY
        if fn.name == "regbank_ffma":
            w = words[body[5]]  # FFMA source register fields as the hardware reads them
            a, b, cc = (w >> 24) & 255, (w >> 32) & 255, (w >> 64) & 255
            ctl = lay.decode(w)
            # what the H100 shows: each bank delivers one value per clock, cached slots cost nothing
            cyc = n * max(1, bank_reads((a, b, cc), ctl.reuse if ctl.yield_ else 0, 2))
            val = inp[pool[a]] * inp[pool[b]] + inp[pool[cc]] if cc in pool else -1.0
            self.mem[d_out][: 4 * 32 * NACC] = np.frombuffer(np.full(32 * NACC, val, np.float32).tobytes(), np.uint8)
        else:
            stall = lay.decode(words[body[5]]).stall
            val = float(n) if stall >= 4 else float(n * stall // 4)
            cyc = n * max(stall, 4)
            self.mem[d_out][:4] = np.frombuffer(np.float32(val).tobytes(), np.uint8)
        self.mem[d_t][:16] = np.frombuffer(np.array([int(cyc), int(cyc)], np.int64).tobytes(), np.uint8)

    def download(self, buf, dtype, count, offset=0):
        base = buf.ptr if hasattr(buf, "ptr") else int(buf)
        return self.mem[base][offset:].view(dtype)[:count].copy()


@pytest.mark.sass
@pytest.mark.parametrize("arch", ["sm_75", "sm_90a", "sm_120a"])
def test_benchmark_against_a_fake_device(arch):
    from gpudissect.bench.context import BenchContext
    from gpudissect.bench.registry import load_all

    b = load_all()["isa/isa_regbank"]
    out = []
    ctx = BenchContext(
        b, FakeDevice(arch), "quick", {"iters": 4, "reps": 1, "residues": 4}, lambda k, p: out.append((k, p))
    )
    b.func(ctx)
    figs = {p.key: p for k, p in out if k == "figure"}
    assert figs["isa.regbank.banks"].value == 2
    assert figs["isa.regbank.conflict_penalty_cycles"].value == pytest.approx(1.0)
    assert figs["isa.regbank.reuse_saves_cycles"].value == pytest.approx(2.0)
    assert figs["isa.regbank.reads_per_bank_per_clk"].value == pytest.approx(1.0)
    assert figs["isa.regbank.reuse_model_agreement"].value == 1.0
    assert figs["isa.control.stall_below_latency"].value.startswith("no interlock")
    assert figs["isa.control.ffma_min_right_stall_cycles"].value == 4


def test_an_arch_nvdisasm_cannot_read_is_a_skip(monkeypatch):
    """CUDA 13's nvdisasm reads no raw sm_70 words: the benchmark stores a skip with the reason, before any
    build or launch."""
    from gpudissect.bench.context import BenchContext
    from gpudissect.bench.isa import corpus
    from gpudissect.bench.registry import load_all
    from gpudissect.errors import BenchSkipped

    monkeypatch.setattr(corpus, "raw_arches", lambda: frozenset({"SM75", "SM90a", "SM120a"}))
    b = load_all()["isa/isa_regbank"]
    ctx = BenchContext(b, FakeDevice("sm_70"), "quick", {"iters": 4, "reps": 1, "residues": 4}, lambda k, p: None)
    with pytest.raises(BenchSkipped, match=r"no raw SM70 words \(it knows SM75 .. SM120a\): the FFMA patching"):
        b.func(ctx)


@pytest.mark.sass
def test_prepare_leaves_every_patched_text_the_benchmark_reads_in_the_cache(monkeypatch):
    """The runner's head start: after `prepare`, the whole benchmark runs without one nvdisasm call on patched
    words (a raw disassembly would raise here), and its figures are the same."""
    from gpudissect.bench.context import BenchContext
    from gpudissect.bench.isa import regbank
    from gpudissect.bench.registry import load_all
    from gpudissect.capability import Target

    params = {"iters": 4, "reps": 1, "residues": 2}
    b = load_all()["isa/isa_regbank"]
    assert b.prepare is regbank.prepare
    regbank.prepare(Target(9, 0), "quick", params)

    def no_disasm(words, arch="SM90a", chunk=8192):
        raise AssertionError(f"nvdisasm asked for {len(words)} words the cache should hold")

    monkeypatch.setattr("gpudissect.sass.disasm.disassemble_raw", no_disasm)
    out = []
    ctx = BenchContext(b, FakeDevice("sm_90a"), "quick", params, lambda k, p: out.append((k, p)))
    b.func(ctx)  # the unpatched kernels' own text is read as before (the rig's import of disassemble_raw)
    figs = {p.key: p.value for k, p in out if k == "figure"}
    assert figs["isa.regbank.banks"] == 2
