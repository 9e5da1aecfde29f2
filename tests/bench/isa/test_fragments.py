"""Fragment-map discovery (isa suite, 002 §4.3 / 004 §IV-B), CPU only: the mma.sync probe analysis on
products computed from a known layout (and on a layout with two rows swapped, which it must reject),
the wmma code decoding, and the SASS of the probe kernels."""

import numpy as np
import pytest

from fakes import FakeDevice, run_bench
from gpudissect.bench.isa import fragments as fr
from gpudissect.device.cuda import Buffer
from gpudissect.sass.disasm import find_tool


def simulate(layout_a=fr.ptx_a, layout_b=fr.ptx_b, layout_c=fr.ptx_c) -> np.ndarray:
    """What the GPU returns for the probes if its registers follow the given layouts."""
    a, b, c, n_a, n_c = fr.probe_inputs()
    n = n_a + n_c
    d = np.zeros((n, 4, 32))
    for p in range(n):
        A = np.zeros((16, 16))
        B = np.zeros((16, 8))
        C = np.zeros((16, 8))
        ha, hb = fr.decode_halves(a[p]), fr.decode_halves(b[p])
        for lane in range(32):
            for r in range(4):
                for h in range(2):
                    A[layout_a(lane, r, h)] = ha[r, lane, h]
                C[layout_c(lane, r)] = c[p, r, lane].view(np.float32)
            for r in range(2):
                for h in range(2):
                    B[layout_b(lane, r, h)] = hb[r, lane, h]
        D = A @ B + C
        for lane in range(32):
            for r in range(4):
                d[p, r, lane] = D[layout_c(lane, r)]
    return d


def test_probes_recover_the_ptx_layout():
    a, b, c, n_a, n_c = fr.probe_inputs()
    assert (n_a, n_c) == (256, 128)
    maps, problems = fr.infer_mma(simulate(), n_a)
    assert problems == []
    assert all(maps["a"][s] == fr.ptx_a(*s) for s in fr.a_slots())
    assert all(maps["b"][s] == fr.ptx_b(*s) for s in fr.b_slots())
    assert all(maps["d"][s] == fr.ptx_c(*s) for s in fr.d_slots())


def test_probes_reject_a_different_layout():
    # hardware whose A rows 0 and 1 were split differently between lanes: rows mix with k
    def odd_a(lane, reg, half):
        r, k = fr.ptx_a(lane, reg, half)
        return (k, r) if reg == 0 else (r, k)

    _, problems = fr.infer_mma(simulate(layout_a=odd_a), 256)
    assert problems


def test_probes_reject_c_not_equal_d():
    def shifted_c(lane, reg, half=0):
        r, col = fr.ptx_c(lane, reg)
        return r, (col + 1) % 8

    def read_c(lane, reg, half=0):
        return fr.ptx_c(lane, reg)

    d = simulate(layout_c=shifted_c)
    _, problems = fr.infer_mma(d, 256)
    assert any("C probe" in p or "disagrees" in p or "match" in p for p in problems)


def test_wmma_code_decoding_and_holders():
    codes = np.arange(1, 257, dtype=np.float64).reshape(16, 16)
    words = fr.f16_code(codes).reshape(-1).view(np.uint32).reshape(8, 16)  # any packing of the codes
    words = np.concatenate([words, words], axis=1)  # 8 registers x 32 lanes, every element twice
    m = fr.map_from_codes(fr.decode_halves(words), 16)
    inv = fr.holders(m)
    assert len(inv) == 256 and {len(v) for v in inv.values()} == {2}
    assert m[(0, 0, 0)] == (0, 0) and m[(0, 0, 1)] == (0, 1)


def test_tile_points_cover_one_register():
    m = {s: fr.ptx_a(*s) for s in fr.a_slots()}
    pts, origin = fr.tile_points(m, 1)
    assert origin == (8, 0) and len(pts) == 64
    assert {p.extra["row"] for p in pts} == set(range(8, 16))


@pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")
@pytest.mark.sass
def test_probe_kernels_use_the_tensor_cores():
    from gpudissect.sasscheck import check_spec

    funcs: dict[str, str] = {}
    for spec in fr.SPECS:  # one build, three variants: each checks its own function
        got, checks = check_spec(spec)
        assert all(c.found for c in checks), spec.name
        funcs |= got
    assert funcs["frag_mma_probe"].count("HMMA.16816.F32") == 1
    assert funcs["frag_wmma"].count("HMMA.16816.F32") == 2  # 16x16x16 = two m16n8k16


def simulate_wgmma(layout_a=fr.ptx_wg_a, layout_d=fr.ptx_wg_d) -> np.ndarray:
    from gpudissect.bench.tensor.wgmma import sim_read_operand

    img, tpl = fr.wg_b_image()
    rows = sim_read_operand(img, tpl, fr.WG_N)  # (n, 32 bytes): B^T
    B = rows.view(np.float16).astype(np.float64).T  # [k][n]
    a = fr.wg_probe_inputs()
    d = np.zeros((a.shape[0], 4, 128))
    for p in range(a.shape[0]):
        A = np.zeros((64, 16))
        h = fr.decode_halves(a[p])
        for t in range(128):
            for r in range(4):
                for hh in range(2):
                    A[layout_a(t, r, hh)] = h[r, t, hh]
        D = A @ B
        for t in range(128):
            for r in range(4):
                d[p, r, t] = D[layout_d(t, r)]
    return d


def test_wgmma_probes_recover_the_ptx_layout():
    img, tpl = fr.wg_b_image()
    assert img.size == 256
    maps, problems = fr.infer_wgmma(simulate_wgmma())
    assert problems == []
    assert len(maps["a"]) == 1024 and len(maps["d"]) == 512


def test_wgmma_probes_reject_a_wrong_d_layout():
    def swapped(t, reg, half=0):
        r, c = fr.ptx_wg_d(t, reg)
        return r, c ^ 1

    _, problems = fr.infer_wgmma(simulate_wgmma(layout_d=swapped))
    assert problems


# ---- the benchmark on fake GPUs of each family: the variants it has, the others skipped by name ----------
class FragDevice(FakeDevice):
    """The probe kernels as a GPU following the PTX layouts computes them; wmma's fragments in a made-up
    layout (each A/B element in two slots, C/D one element per lane register), which the benchmark maps as
    found."""

    def k_frag_wmma(self, launch, a, b, c, fa, fb, fc, dst, dmat):
        codes = np.arange(1, 257, dtype=np.float64).reshape(16, 16)
        slot = np.arange(8 * 32 * 2).reshape(8, 32, 2).transpose(1, 0, 2)  # [lane][reg][half]
        idx = (slot[:, :, 0] // 2 * 2 % 256, slot[:, :, 1] // 2 * 2 % 256 + 1)  # two halves, two elements
        for out in (fa, fb):
            halves = np.stack([codes.reshape(-1)[idx[0]], codes.reshape(-1)[idx[1]]], axis=2).astype(np.float16)
            words = halves.view(np.uint32).reshape(32, 8).T  # [reg][lane]
            self.upload(np.ascontiguousarray(words), Buffer(out, 0))
        c_words = codes.reshape(-1).astype(np.float32).reshape(32, 8).T  # lane l, reg r: element 8l + r
        self.upload(np.ascontiguousarray(c_words), Buffer(fc, 0))
        self.upload(np.arange(256, dtype=np.float32), Buffer(dst, 0))  # element e in lane e // 8, reg e % 8
        self.upload((codes @ codes + codes).astype(np.float32), Buffer(dmat, 0))

    def k_frag_mma_probe(self, launch, a, b, c, d):
        self.upload(simulate().astype(np.float32), Buffer(d, 0))

    def k_frag_wgmma_probe(self, launch, a, img, n, tpl, d):
        self.upload(simulate_wgmma().astype(np.float32), Buffer(d, 0))


@pytest.mark.parametrize(
    "cc,variants,mapped",
    [((7, 0), ["wmma"], 4), ((8, 9), ["wmma", "mma"], 7), ((9, 0), ["wmma", "mma", "wgmma"], 9)]
    + [((10, 0), ["wmma", "mma"], 7), ((12, 0), ["wmma", "mma"], 7)],
)
def test_fragment_maps_on_every_family(cc, variants, mapped):
    """Blackwell (sm_100a, sm_120a) has no wgmma (an sm_90a feature): the benchmark maps wmma and mma.sync there
    instead of crashing; before sm_80 wmma alone. The method says which layouts were mapped."""
    run = run_bench("isa/fragment_maps", {}, FragDevice(cc_major=cc[0], cc_minor=cc[1]))
    assert run.status == "ok", run.message
    launched = {launch.name for launch in run.device.launches}
    assert launched == {f"frag_{v}" if v == "wmma" else f"frag_{v}_probe" for v in variants}
    assert run.value("isa.fragment_maps") == mapped
    method = run.figures["isa.fragment_maps"].method
    assert ("wgmma" in method) == ("wgmma" in variants) and ("mma.m16n8k16" in method) == ("mma" in variants)
    assert ("isa.fragments.wgmma_m64n8k16_agrees_ptx" in run.figures) == ("wgmma" in variants)


def test_fragment_variants_skip_by_name():
    from gpudissect.bench.registry import load_all
    from gpudissect.capability import Target

    b = load_all()["isa/fragment_maps"]
    wg, mma = "wgmma_m64n8k16", "mma_m16n8k16"
    for arch, skipped in (
        ("sm_70", {mma, wg}),
        ("sm_89", {wg}),
        ("sm_90a", set()),
        ("sm_100a", {wg}),
        ("sm_120a", {wg}),
    ):
        runs, skips = b.variants(Target.parse(arch))
        assert {s.variant.removeprefix("isa_fragments.cu[").rstrip("]") for s, _ in skips} == skipped
        assert len(runs) == 3 - len(skipped)
        assert all("wgmma (sm_90a only)" in why for s, why in skips if "wgmma" in s.variant)
