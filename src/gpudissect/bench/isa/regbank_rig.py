"""isa_regbank's rig (bench/isa/regbank.py has the benchmark): the kernels' spec, the compiled cubin with its
patcher and buffers, the patched variants (kept in the cache by what they derive from) and `prepare`, the
runner's head start that makes the variants and their nvdisasm text before the benchmark comes up."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...analysis.regbank import Triple, Variant, plan_variants, pool_registers, timed_block
from ...capability import Target
from ...device.compiler import cached_json, compile_kernel_file
from ...device.cuda import Arg, Buffer, Function
from ...models import Point
from ...sass.control import ControlLayout, default_layout
from ...sass.cubin import Cubin
from ...sass.disasm import disassemble_raw_cached
from ...sass.patch import Patch, Patcher
from ..context import BenchContext
from ..registry import KernelSpec
from ..shared import PRE_AMPERE, PRE_HOPPER, by_family
from .corpus import raw_words_why

NPOOL, NACC, NBODY = 24, 8, 128


def _required(family: str) -> dict[str, list[str]]:
    # the last store of the pool (out[blockDim * NACC + 23], 0x5c off the base) as the family prints it: the
    # pool's registers are read off these stores (analysis.regbank.pool_registers)
    if family in PRE_AMPERE:
        store = r"STG\.E\.SYS \[R\d+\+0x5c\], R\d+"
    elif family in PRE_HOPPER:
        store = r"STG\.E \[R\d+\.64\+0x5c\], R\d+"
    else:
        store = r"STG\.E desc\[UR\d+\]\[R\d+\.64\+0x5c\], R\d+"
    return {
        "regbank_ffma": [r"FFMA R\d+, R\d+, R\d+, R\d+", r"SR_CLOCKLO", store],
        "stall_chain": [r"FFMA (R\d+), R\d+, \1, R\d+", r"SR_CLOCKLO"],
    }


SPEC = KernelSpec(
    "isa_regbank.cu",
    _required("hopper"),
    {"NPOOL": NPOOL, "NBODY": NBODY},
    required_by_family=by_family(_required),
)
# every patched FFMA of the bank experiments: stall 1, yield, no barriers; reuse per variant
CONTROL_OFF = {"stall": 1, "yield": 1, "reuse": 0, "wbar": 7, "rbar": 7, "wait": 0}


@dataclass(frozen=True)
class Kernel:
    """One function of the compiled cubin: its words, nvdisasm's text of each, the timed FFMA block."""

    name: str
    words: list[int]
    texts: list[str | None]
    body: list[int]


@dataclass(frozen=True)
class Row:
    """One patched variant of regbank_ffma, measured."""

    group: str  # "sweep" (Fig. 3.8), "grid" (no reuse), "reuse" (all three slots), "mask" (each reuse mask)
    regs: Triple
    reuse: int  # bit k: source slot k reads the reuse cache
    cycles: float  # per FFMA, median over the launches
    spread: float  # max - min over the launches

    def point(self, x: float, reps: int, extra: dict | None = None) -> Point:
        return Point(x, self.cycles, self.cycles - self.spread / 2, self.cycles + self.spread / 2, reps, extra or {})


@dataclass
class Rig:
    """The compiled cubin, its patcher and the buffers both kernels take (in, out, the timing words)."""

    ctx: BenchContext
    iters: int
    reps: int
    layout: ControlLayout
    raw_arch: str
    patcher: Patcher
    base: bytes
    cubin: Cubin
    d_in: Buffer | None = None
    d_out: Buffer | None = None
    d_t: Buffer | None = None

    @classmethod
    def start(cls, ctx: BenchContext | Unchecked, arch: str, params: dict[str, Any]) -> Rig:
        layout = default_layout(arch)
        raw_arch = "SM" + arch.removeprefix("sm_")
        base = compile_kernel_file(SPEC.file, arch, SPEC.defines)
        iters, reps = int(params["iters"]), int(params["reps"])
        return cls(ctx, iters, reps, layout, raw_arch, Patcher(layout, raw_arch), base, Cubin(base))  # type: ignore[arg-type]

    def kernel(self, name: str) -> Kernel:
        """The function `name`, its timed block checked to hold the NBODY FFMAs of the source."""
        words = self.cubin.words(name)
        texts = disassemble_raw_cached(words, self.raw_arch)
        body = timed_block(texts)
        self.ctx.check(len(body) == NBODY, f"{name}: {len(body)} FFMAs in the timed block, expected {NBODY}")
        return Kernel(name, words, texts, body)

    def patched(
        self, k: Kernel, idx: list[int], regs: dict[int, int], control: dict[str, int]
    ) -> tuple[bytes, dict[int, str]]:
        """A cubin with the instructions `idx` of `k` patched, and the text each patched word must read as."""
        new, want = self.patcher.apply(k.words, k.texts, [Patch(i, regs, control) for i in idx])
        return self.cubin.with_words(k.name, new), want

    def patched_texts(self, k: Kernel, variants: list[tuple[bytes, dict[int, str]]]) -> list[list[str | None]]:
        """nvdisasm's text of every patched word of every variant (one batch), in the order of its `want`."""
        words: list[int] = []
        for cb, want in variants:  # each variant's words read once (per patched word was 18k ELF reads)
            ws = Cubin(cb).words(k.name)
            words += [ws[i] for i in sorted(want)]
        got = disassemble_raw_cached(words, self.raw_arch)
        out, at = [], 0
        for _, want in variants:
            out.append(got[at : at + len(want)])
            at += len(want)
        return out

    def launch(self, f: Function) -> None:
        f(1, 32, [Arg.ptr(self.d_in), Arg.ptr(self.d_out), Arg.ptr(self.d_t), Arg.i32(self.iters)])

    def time_block(self, cubin: bytes, expect: float | None) -> tuple[float, float, bool, float]:
        """regbank_ffma of `cubin`, one warp: (cycles per FFMA median, spread, output right, ns median)
        over `reps` launches after a warm-up launch (code into the caches)."""
        dev = self.ctx.device
        f = dev.load(cubin).function("regbank_ffma")
        self.launch(f)
        cyc, ns, ok = [], [], True
        for _ in range(self.reps):
            self.launch(f)
            dev.sync("regbank_ffma")
            t = dev.download(self.d_t, np.int64, 2)
            cyc.append(t[0] / (self.iters * NBODY))
            ns.append(float(t[1]))
            if expect is not None:
                out = dev.download(self.d_out, np.float32, 32 * NACC)
                ok &= bool(np.all(out == np.float32(expect)))
        return float(np.median(cyc)), float(max(cyc) - min(cyc)), ok, float(np.median(ns))


class Unchecked:
    """The context of `prepare`, which runs no kernel: a failed check is the benchmark's to report."""

    def check(self, ok: bool, msg: str) -> bool:
        return ok


def pool_of(k: Kernel) -> list[int]:
    return pool_registers(k.texts, k.body[-1] if k.body else 0, NPOOL)


def variants_of(rig: Rig, k: Kernel, todo: list[Variant]) -> list[tuple[bytes, dict[int, str]]]:
    """Every FFMA of the timed block patched, per variant: its cubin and the text each patched word must read as.
    The patches (new words, expected texts: ~2 s of Python for ~700 variants) are kept in the cache by what
    they derive from, so `prepare` makes them ahead; a damaged entry is made again."""
    key = hashlib.sha256(repr((rig.base, rig.raw_arch, rig.layout, k.name, k.body, todo)).encode()).hexdigest()

    def make() -> list:
        return [
            [sorted(new.items()), sorted(want.items())]
            for new, want in (
                rig.patcher.apply(
                    k.words,
                    k.texts,
                    [Patch(i, {1: tri[0], 2: tri[1], 3: tri[2]}, dict(CONTROL_OFF, reuse=reuse)) for i in k.body],
                )
                for _, tri, reuse in todo
            )
        ]

    def load(stored: list) -> list[tuple[dict[int, int], dict[int, str]]]:
        if len(stored) != len(todo):
            raise ValueError("not this plan's variants")
        return [({int(i): int(w) for i, w in new}, {int(i): str(t) for i, t in want}) for new, want in stored]

    patches = cached_json(f"{key[:32]}.regbank.json", make, load)
    return [(rig.cubin.with_words(k.name, new), want) for new, want in patches]


def stall_variants(rig: Rig, k: Kernel) -> list[tuple[int, bytes, dict[int, str]]]:
    """The dependent chain with each stall count (stall 0 is left out: what it means is not established, and a
    hang would cost shared device time); the first FFMA reads the loaded start value and keeps its control."""
    return [(s, *rig.patched(k, k.body[1:], {}, {"stall": s})) for s in (6, 5, 4, 3, 2, 1)]


def prepare(target: Target, mode: str, params: dict[str, Any]) -> None:
    """The runner's head start (no GPU): the patched variants' nvdisasm text into the cache, the benchmark's
    own steps, while the benchmarks before it run (7.5 s of a fresh H100 machine's quick run went to them)."""
    if raw_words_why(target.arch, ""):
        return
    rig = Rig.start(Unchecked(), target.arch, params)
    k = rig.kernel("regbank_ffma")
    todo, _ = plan_variants(sorted(pool_of(k)), int(params["residues"]))
    rig.patched_texts(k, variants_of(rig, k, todo))
    chain = rig.kernel("stall_chain")
    for _, cb, want in stall_variants(rig, chain):
        rig.patched_texts(chain, [(cb, want)])
