"""ldmatrix latency and bytes/clk/SM (Sun et al. §7, Table 9)."""

from __future__ import annotations

import numpy as np

from ....device.cuda import Arg
from ...context import BenchContext
from ...registry import KernelSpec, Needs, benchmark
from ...shared import one_block_per_sm_smem
from .common import REC, chain_cycles, chain_iters, convergence, grid, measure_chain, per_block
from .mma import (
    LATENCY_UNITS,
    convergence_figure,
    failed_figures,
    heatmaps,
    iters_for,
    latency_figures,
    peak_figure,
    sweep,
)
from .variants import CHAINS

# ---------------------------------------------------------------------------------------
# ldmatrix (Sun et al. §7, Table 9)
# ---------------------------------------------------------------------------------------
LDSM_SLOTS, LDSM_SLOT_BYTES = 64, 512  # a slot holds 4 matrices of 8 rows x 16 bytes
LDSM_VARIANTS = [(n, tr) for n in (1, 2, 4) for tr in (False, True)]
SMEM_BYTES_PER_CLK = 128  # 32 banks x 4 bytes: the architectural shared-memory bandwidth per SM


def ldsm_key(n: int, trans: bool) -> str:
    return f"x{n}{'_trans' if trans else ''}"


def ldsm_spec(n: int, trans: bool) -> KernelSpec:
    count = "" if n == 1 else rf"\.{n}"
    pat = rf"LDSM\.16\.M{'T' if trans else ''}88{count} "
    return KernelSpec(
        "tensor_ldmatrix.cu",
        {f"ldsm_ilp{i}": [pat] for i in range(1, 7)},
        {"LDSM_N": n, "LDSM_TRANS": int(trans)},
        label=f"tensor_ldmatrix.cu[{ldsm_key(n, trans)}]",
    )


LDSM_SPECS = {nt: ldsm_spec(*nt) for nt in LDSM_VARIANTS}


def ldsm_address(base: int, slot: int, lane: int, n: int) -> int:
    """Shared address lane `lane` supplies for a load from `slot`: row lane % 8 of matrix (lane // 8) % n."""
    return base + slot * LDSM_SLOT_BYTES + ((lane // 8) % n) * 128 + (lane % 8) * 16


def ldsm_positions(lane: int, q: int, trans: bool) -> tuple[int, int]:
    """Byte offsets (in a slot) of the low and high 16-bit halves lane `lane` receives of matrix q
    (PTX ISA ldmatrix: row lane/4, columns 2*(lane%4)..+1; transposed: column lane/4 of rows
    2*(lane%4) and 2*(lane%4)+1)."""
    if trans:
        lo = q * 128 + (2 * (lane % 4)) * 16 + (lane // 4) * 2
        return lo, lo + 16
    lo = q * 128 + (lane // 4) * 16 + (lane % 4) * 4
    return lo, lo + 2


def ldsm_image(base: int, nxt: np.ndarray, n: int, trans: bool, rng: np.random.Generator) -> np.ndarray:
    """Shared-memory bytes: random data, except that what each lane receives in its first register
    from slot s is its address in slot nxt[s] (so a chain of loads is a pointer chase)."""
    img = rng.integers(0, 256, LDSM_SLOTS * LDSM_SLOT_BYTES, dtype=np.uint8)
    for s in range(LDSM_SLOTS):
        for lane in range(32):
            addr = ldsm_address(base, int(nxt[s]), lane, n)
            lo, hi = ldsm_positions(lane, 0, trans)
            off = s * LDSM_SLOT_BYTES
            img[off + lo : off + lo + 2] = np.frombuffer(np.uint16(addr & 0xFFFF).tobytes(), np.uint8)
            img[off + hi : off + hi + 2] = np.frombuffer(np.uint16(addr >> 16).tobytes(), np.uint8)
    return img


def ldsm_registers(img: np.ndarray, slot: int, lane: int, n: int, trans: bool) -> list[int]:
    off = slot * LDSM_SLOT_BYTES
    out = []
    for q in range(n):
        lo, hi = ldsm_positions(lane, q, trans)
        out.append(
            int(img[off + lo]) | int(img[off + lo + 1]) << 8 | int(img[off + hi]) << 16 | int(img[off + hi + 1]) << 24
        )
    return out


def ldsm_expected(
    img: np.ndarray, base: int, nxt: np.ndarray, starts: list[int], loads: int, n: int, trans: bool
) -> np.ndarray:
    """[chain, lane] x (last address, XOR of the start address and every register loaded)."""
    x = np.zeros((LDSM_SLOTS, 32), np.int64)
    for s in range(LDSM_SLOTS):
        for lane in range(32):
            v = 0
            for r in ldsm_registers(img, s, lane, n, trans):
                v ^= r
            x[s, lane] = v
    out = np.zeros((len(starts), 32, 2), np.int64)
    for j, s0 in enumerate(starts):
        acc = np.array([ldsm_address(base, s0, lane, n) for lane in range(32)], np.int64)
        s = s0
        for _ in range(loads):
            acc ^= x[s]
            s = int(nxt[s])
        out[j, :, 0] = [ldsm_address(base, s, lane, n) for lane in range(32)]
        out[j, :, 1] = acc
    return out


@benchmark(
    name="ldmatrix",
    title="ldmatrix .x1/.x2/.x4 (.trans): latency and bytes/clk/SM",
    axes={
        "variant": "x1, x2, x4, each with and without .trans",
        "warps": "1,2,4,6,8,12,16 (quick: 1,4,8,16)",
        "ILP": "1..6 (quick: 1,2,4)",
    },
    kernels=list(LDSM_SPECS.values()),
    timeout_s=300,
    needs=Needs(features=("ldmatrix",)),
    paper="001 §7 Fig. 15, Tables 8, 9",
)
def ldmatrix(ctx: BenchContext) -> None:
    dev, p = ctx.device, ctx.props
    sms, smem = p["sm_count"], one_block_per_sm_smem(p)
    ctx.precompile()  # LDSM_SPECS: the declared kernels
    warps_list, ilps = grid(ctx.quick)
    reps, iters = (3 if ctx.quick else 5), iters_for(ctx.quick)
    rng = np.random.default_rng(5)
    order = rng.permutation(LDSM_SLOTS)
    nxt = np.empty(LDSM_SLOTS, np.int64)
    nxt[order] = np.roll(order, -1)  # one cycle through every slot
    starts = [int(order[(10 * j) % LDSM_SLOTS]) for j in range(CHAINS)]
    words = LDSM_SLOTS * LDSM_SLOT_BYTES // 4
    base_buf = ctx.alloc(8)
    out = ctx.alloc(sms * 16 * CHAINS * 32 * 8)
    rec = ctx.alloc(sms * 16 * REC * 8)
    for i, (n, trans) in enumerate(LDSM_VARIANTS):
        key = ldsm_key(n, trans)
        spec = LDSM_SPECS[(n, trans)]
        ctx.progress(i, len(LDSM_VARIANTS), f"ldmatrix.{key}")
        ctx.kernel(spec, "ldsm_base")(1, 32, [Arg.ptr(base_buf)], smem=smem)
        dev.sync("ldsm_base")
        base = int(dev.download(base_buf, np.uint32, 1)[0])
        img = ldsm_image(base, nxt, n, trans, rng)
        with ctx.scratch():  # this variant's image and chain starts
            image = ctx.upload(img.view(np.uint32))
            start = ctx.upload(
                np.array([[ldsm_address(base, s, lane, n) for lane in range(32)] for s in starts], np.uint32)
            )
            want = {}

            def launch(w: int, ilp: int, iters: int, check: bool) -> tuple[np.ndarray, str]:
                """One launch: its timing records and '' or what was wrong with the chains' ends."""
                dev.memset32(out, 0)
                fn = ctx.kernel(spec, f"ldsm_ilp{ilp}")
                fn(
                    sms,
                    32 * w,
                    [
                        Arg.ptr(image),
                        Arg.u32(words),
                        Arg.ptr(start),
                        Arg.u32(iters),
                        Arg.ptr(out),
                        Arg.ptr(rec),
                        Arg.ptr(base_buf),
                    ],
                    smem=smem,
                )
                dev.sync(f"ldmatrix {key}")
                records = dev.download(rec, np.uint64, sms * w * REC)
                err = ""
                if check:
                    if (ilp, iters) not in want:
                        want[(ilp, iters)] = ldsm_expected(img, base, nxt, starts[:ilp], 2 * (iters + 1), n, trans)
                    expect = want[(ilp, iters)]
                    got = dev.download(out, np.uint32, sms * w * ilp * 32 * 2).reshape(sms * w, ilp, 32, 2)
                    bad = got != expect[None].astype(np.uint32)
                    got_base = int(dev.download(base_buf, np.uint32, 1)[0])
                    if got_base != base:
                        err = f"shared-memory base moved: {got_base:#x} != {base:#x}"
                    elif bad.any():
                        where = tuple(int(x) for x in np.argwhere(bad)[0])
                        err = (
                            f"{int(bad.sum())} of {bad.size} chain ends/checksums differ; first at (warp, chain, lane, "
                            f"[addr|xor]) {where}: got {got[where]:#x}, want {int(expect[where[1:]]):#x}"
                        )
                return records, err

            def run(w: int, ilp: int, check: bool) -> tuple[np.ndarray, np.ndarray, str]:
                records, err = launch(w, ilp, iters, check)
                lat, thr, _ = per_block(records, w, 2 * iters, ilp * n * 128)
                return lat, thr, err

            def chain(it: int, check: bool) -> tuple[float, str]:
                records, err = launch(1, 1, it, check)
                return float(np.median(chain_cycles(records, 1))), err

            cells, err = sweep(run, warps_list, ilps, reps)
            fit = None
            if not err:
                fit, err = measure_chain(chain, chain_iters(ctx.quick), lambda it: 2 * it, reps)
        pre = f"tc.ldmatrix.{key}"
        what = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16"
        if err or (1, 1) not in cells or fit is None:
            failed_figures(ctx, pre, (*LATENCY_UNITS, ("bytes_per_clk_sm", "bytes/clk/SM")), what, err)
            ctx.soft_check(False, f"ldmatrix {key}: {err}")
            continue
        heatmaps(ctx, key, f"ldmatrix.{key}", cells, "bytes/clk/SM")
        latency_figures(
            ctx,
            pre,
            fit,
            cells[(1, 1)],
            f"dependent {what} (a pointer chase through the loaded registers)",
            f"1 warp, ILP 1: dependent {what} (pointer chase through the loaded registers, 2 x {iters} "
            "steps, median over SMs)",
        )
        conv = convergence(cells)
        pk = conv["peak"]
        peak_figure(
            ctx,
            f"{pre}.bytes_per_clk_sm",
            pk,
            "bytes/clk/SM",
            f"best cell ({pk.warps} warps, ILP {pk.ilp}); {n * 128} bytes per warp instruction; per-block "
            "clock64 span, one block per SM on all SMs, median over SMs",
            note=f"{100 * pk.thr / SMEM_BYTES_PER_CLK:.1f}% of {SMEM_BYTES_PER_CLK} B/clk/SM (32 banks x 4 B)",
        )
        convergence_figure(ctx, pre, conv, "bytes/clk/SM", "B/clk/SM")
    ctx.progress(len(LDSM_VARIANTS), len(LDSM_VARIANTS), "done")
