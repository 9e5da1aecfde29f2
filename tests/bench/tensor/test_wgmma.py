"""wgmma host logic on the CPU: validity table, descriptor, operand/fragment/metadata layouts against
an element-by-element model of the ISA, the kernels' SASS, and the benchmarks driven end to end by a
fake device that executes the kernels' contract with the simulator."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fakes import BenchRun, FakeDevice, run_bench
from gpudissect.bench.registry import REGISTRY, resolve_params
from gpudissect.bench.tensor import wgmma as w
from gpudissect.errors import CompileError, GpuDissectError


# ---------------------------------------------------------------------------------------
# What the ISA allows
# ---------------------------------------------------------------------------------------
def test_invalid_combinations_name_the_valid_ones():
    with pytest.raises(GpuDissectError, match=r"N=40 is not a valid wgmma N for s8_s32.*valid: 8, 16, 24, 32, 48"):
        w.validate("s8_s32", 40)
    with pytest.raises(GpuDissectError, match=r"N=12 .* f16_f32.*valid: 8, 16, 24"):
        w.validate("f16_f32", 12)
    with pytest.raises(GpuDissectError, match=r"wgmma.sp has no b1 variant; sparse types: f16_f16"):
        w.validate("b1_s32", 256, sparse=True)
    with pytest.raises(GpuDissectError, match=r"only .f16/.bf16 wgmma can transpose.*f16_f16, f16_f32, bf16_f32"):
        w.validate("tf32_f32", 256, trans_b=True)
    with pytest.raises(GpuDissectError, match=r"cannot be transposed"):
        w.validate("f16_f32", 256, mode="rs", trans_a=True)
    with pytest.raises(GpuDissectError, match=r"selector 1 is not valid; valid: 0"):
        w.validate("s8_s32", 256, sparse=True, selector=1)
    with pytest.raises(GpuDissectError, match=r"no type 'bf16_f16'; valid: f16_f16"):
        w.validate("bf16_f16")  # .bf16 accumulates in .f32 only
    with pytest.raises(GpuDissectError, match=r"mode 'sr'.*valid: ss"):
        w.validate("f16_f32", mode="sr")
    # what the ISA does allow: RS for every type, transposes for 16-bit SS, selector 1 for 16/32-bit
    for t in w.TYPES:
        w.validate(t, 256, mode="rs")
    w.validate("bf16_f32", 8, trans_a=True, trans_b=True)
    w.validate("tf32_f32", 256, sparse=True, selector=1)
    assert w.valid_ns("b1_s32") == w.valid_ns("u8_s32") != w.valid_ns("e5m2_f16")


def test_parameters_reject_invalid_choices():
    reg = REGISTRY  # this module registered them on import
    with pytest.raises(GpuDissectError, match=r"N=36 not valid for f16_f32 wgmma; valid: 8, 16"):
        resolve_params(reg["tensor/wgmma_n_sweep"], {"ns": "8,36"}, {})
    with pytest.raises(GpuDissectError, match=r"no sparse wgmma for b1_s32; valid: f16_f16"):
        resolve_params(reg["tensor/wgmma_sparse"], {"types": "f16_f32,b1_s32"}, {})
    with pytest.raises(GpuDissectError, match=r"unknown wgmma type"):
        resolve_params(reg["tensor/wgmma_throughput"], {"types": "f16"}, {})
    assert resolve_params(reg["tensor/wgmma_n_sweep"], {"ns": "8,248"}, {})["ns"] == (8, 248)


@pytest.mark.sass
def test_integer_n_table_agrees_with_ptxas():
    """N=40 exists for f16 but not for s8 (ptxas rejects it); N=48 exists for both."""
    from gpudissect.device.compiler import compile_kernel_file

    spec = w.variant_spec("s8_s32", 48)
    compile_kernel_file(spec.file, "sm_90a", spec.defines)
    bad = dict(spec.defines, WG_N=40, WG_NACC=20)
    with pytest.raises(CompileError):
        compile_kernel_file(spec.file, "sm_90a", bad)


# ---------------------------------------------------------------------------------------
# Descriptor and shared-memory layout
# ---------------------------------------------------------------------------------------
def test_descriptor_bits():
    d = w.make_desc(0x410, 1024, 128)
    assert d == 0x41 | (1024 >> 4) << 16 | (128 >> 4) << 32
    assert w.desc_fields(d) == {"start": 0x410, "lbo": 1024, "sbo": 128, "base_offset": 0, "swizzle": 0}
    assert w.desc_fields(w.make_desc(0, 16, 16, base_offset=5, swizzle=1)) == {
        "start": 0,
        "lbo": 16,
        "sbo": 16,
        "base_offset": 5,
        "swizzle": 1,
    }
    assert w.make_desc(0, 16, 16, swizzle=1) >> 62 == 1  # 128B swizzle code sits in bits 62-63
    for bad in ((8, 16, 16), (0, 24, 16), (1 << 18, 16, 16)):
        with pytest.raises(ValueError):
            w.make_desc(*bad)
    # the device ORs (address >> 4) into the template: the template's start field must be empty
    assert w.operand_desc(0, 64) & 0x3FFF == 0


def test_hand_worked_addresses():
    """Byte (row 9, K byte 17) of A (64 rows, 32 bytes): K chunk 1 at LBO = 1024, row group 1 at SBO =
    128, row 1 of the core matrix at +16, byte 1 -> 1024 + 128 + 16 + 1; of a 256-row B: 4096 + ..."""
    for rows, addr in ((64, 1169), (256, 4096 + 128 + 16 + 1)):
        m = np.zeros((rows, 32), np.uint8)
        m[9, 17] = 0xAB
        img = w.pack_operand(m)
        assert np.flatnonzero(img).tolist() == [addr]


@pytest.mark.parametrize("rows,row_bytes", [(64, 32), (8, 32), (256, 32), (256, 64), (8, 64), (136, 64)])
def test_packer_round_trips_through_the_hardware_model(rows, row_bytes):
    rng = np.random.default_rng(rows + row_bytes)
    m = rng.integers(0, 256, (rows, row_bytes), dtype=np.uint8)
    img = np.concatenate([np.zeros(48, np.uint8), w.pack_operand(m)])  # image at a 16-byte offset
    got = w.sim_read_operand(img, w.operand_desc(48, rows), rows, row_bytes)
    assert np.array_equal(got, m)
    # the other reading of the two byte offsets sees different data: the test can fail
    other = w.make_desc(48, w.SBO, w.lbo_for(rows))
    if rows > 8:
        with pytest.raises((AssertionError, IndexError)):
            assert np.array_equal(w.sim_read_operand(img, other, rows, row_bytes), m)


# ---------------------------------------------------------------------------------------
# Element encodings
# ---------------------------------------------------------------------------------------
def test_fp8_tables():
    e4, e5 = w.FP8["e4m3"], w.FP8["e5m2"]
    assert e4[0x38] == 1.0 and e4[0x7E] == 448.0 and np.isnan(e4[0x7F]) and e4[0x01] == 2.0**-9
    assert e5[0x3C] == 1.0 and e5[0x7B] == 57344.0 and np.isnan(e5[0x7C]) and e5[0x01] == 2.0**-16
    assert e4[0xB8] == -1.0 and np.isfinite(e4).sum() == 254 and np.isfinite(e5).sum() == 248


@pytest.mark.parametrize("a", ["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1"])
def test_encode_decode(a):
    rng = np.random.default_rng(1)
    bits = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b1": 1}[a]
    k = 256 // bits
    if a in ("s8", "u8", "b1"):
        x = {
            "s8": rng.integers(-128, 128, (8, k)),
            "u8": rng.integers(0, 256, (8, k)),
            "b1": rng.integers(0, 2, (8, k)),
        }[a]
        assert np.array_equal(w.decode(a, w.encode(a, x)), x)
    else:
        x = rng.integers(-2, 3, (8, k)).astype(float)  # exactly representable in every float type
        assert np.array_equal(w.decode(a, w.encode(a, x)), x)
        y = rng.standard_normal((8, k))
        z = w.decode(a, w.encode(a, y))  # rounding is idempotent and close
        assert np.array_equal(w.decode(a, w.encode(a, z)), z)
        assert np.allclose(z, y, rtol=0.13, atol=2**-8)
    assert w.encode(a, x).shape == (8, 32)
    if a == "bf16":
        assert w.encode("bf16", np.array([[1.0]])).view(np.uint16)[0, 0] == 0x3F80
    if a == "b1":  # element k is bit k % 8 of byte k // 8
        one = np.zeros((1, 256), int)
        one[0, 9] = 1
        assert w.encode("b1", one)[0].tolist()[:2] == [0, 2]


# ---------------------------------------------------------------------------------------
# Register fragments and sparse metadata
# ---------------------------------------------------------------------------------------
def test_a_fragment():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (64, 32), dtype=np.uint8)
    frag = w.pack_a_frag(a)
    assert np.array_equal(w.sim_a_from_frag(frag), a)
    # thread 37 = warp 1, lane 5 (g=1, q=1): a0 holds row 17, bytes 4..7; a3 row 25, bytes 20..23
    assert frag[37, 0] == int.from_bytes(a[17, 4:8].tobytes(), "little")
    assert frag[37, 3] == int.from_bytes(a[25, 20:24].tobytes(), "little")


@pytest.mark.parametrize("tname", ["f16_f16", "f16_f32", "s8_s32"])
@pytest.mark.parametrize("n", [8, 24, 48, 256])
def test_d_fragment(tname, n):
    if n not in w.valid_ns(tname):
        pytest.skip("N not valid for the type")
    rng = np.random.default_rng(n)
    d = rng.integers(-1000, 1000, (64, n)).astype(np.float64)
    regs = w.sim_d_regs(d, tname, n)
    assert regs.shape == (128, w.TYPES[tname].nacc(n))
    assert np.array_equal(w.read_d(regs, tname, n), d)
    assert np.array_equal(w.read_d(np.stack([regs, regs]), tname, n)[1], d)
    # thread 5 (g=1, q=1): element 0 is D[1, 2], element 3 is D[9, 3], element 4 is D[1, 10]
    el = w.read_d(regs, tname, n)
    rows, cols = w.d_coords(n)
    assert (rows[5, 0], cols[5, 0], rows[5, 3], cols[5, 3]) == (1, 2, 9, 3)
    if n > 8:
        assert (rows[5, 4], cols[5, 4]) == (1, 10)
    assert el[1, 2] == d[1, 2]


@pytest.mark.parametrize("tname", w.SPARSE_TYPES)
def test_sparse_metadata(tname):
    rng = np.random.default_rng(3)
    k = w.kdim(tname, True)
    vals = rng.integers(1, 5, (64, k)).astype(float)  # no zeros: pruned positions are the zeros
    logical, comp, nib = w.sparsify(vals, tname, rng)
    assert comp.shape == (64, k // 2)
    group = 2 if w.TYPES[tname].a == "tf32" else 4
    assert ((logical != 0).reshape(64, -1, group).sum(axis=2) == group // 2).all()
    meta = w.pack_meta(nib, tname)
    assert np.array_equal(w.sim_unsparsify(comp, meta, tname, k), logical)
    if w.TYPES[tname].elem_bits in (16, 32):  # both selectors find the same metadata
        q = np.arange(128) % 4
        assert np.array_equal(meta[q >= 2], meta[q < 2])
    valid = {0x4, 0xE} if w.TYPES[tname].a == "tf32" else {i0 | i1 << 2 for i0, i1 in w._PAIRS}
    assert set(np.unique(nib)) <= valid


def test_sparse_metadata_layout_by_hand():
    """f16: thread 1 (g=0, q=1) holds nibbles 4..7 of row 0 in bits 0-15 and of row 8 in bits 16-31;
    s8: thread 2 (g=0, q=2) holds nibbles 8..15 of row 0, thread 1 nibbles 0..7 of row 8."""
    nib = np.arange(64 * 8, dtype=np.uint8).reshape(64, 8) % 16
    m = w.pack_meta(nib, "f16_f32")
    assert m[1] == sum(int(nib[0, 4 + i]) << 4 * i for i in range(4)) | sum(
        int(nib[8, 4 + i]) << 16 + 4 * i for i in range(4)
    )
    nib16 = np.arange(64 * 16, dtype=np.uint8).reshape(64, 16) % 16
    m8 = w.pack_meta(nib16, "s8_s32")
    assert m8[2] == sum(int(nib16[0, 8 + i]) << 4 * i for i in range(8))
    assert m8[1] == sum(int(nib16[8, i]) << 4 * i for i in range(8))


# ---------------------------------------------------------------------------------------
# The whole host pipeline against the simulator, for every type / N / mode
# ---------------------------------------------------------------------------------------
CASES = (
    [(t, 256, False) for t in w.TYPES]
    + [(t, 256, True) for t in w.SPARSE_TYPES]
    + [("f16_f32", n, False) for n in w._FLOAT_NS if n != 256]
    + [(t, 8, True) for t in ("f16_f32", "tf32_f32", "s8_s32")]
    + [("s8_s32", 48, False), ("b1_s32", 24, False)]
)


@pytest.mark.parametrize("tname,n,sparse", CASES)
def test_emulated_wgmma_equals_reference(tname, n, sparse):
    for data in ("exact", "rand"):
        ops = w.make_operands(tname, n, sparse, data, seed=n)
        ref = ops.reference()
        for mode in ("ss", "rs"):
            for count in (1, 1 + w.unroll_for(n)):
                got = w.read_d(w.emulate(ops, mode, count), tname, n)
                want = count * ref
                if data == "exact":  # exact: no rounding anywhere, whatever the accumulator type
                    assert not w.compare(got, want), (mode, count, w.compare(got, want))
                else:
                    assert np.allclose(got, want, rtol=2e-3, atol=1e-2), (mode, count)


@pytest.mark.parametrize("tname", list(w.TYPES))
def test_exact_operands_stay_exact(tname):
    """The check compares exactly: (1 + unroll) * |A| x |B| must fit the accumulator's integers."""
    t = w.TYPES[tname]
    for sparse in (False, True) if t.sparse_ok else (False,):
        ops = w.make_operands(tname, 256, sparse, "exact", seed=1)
        bound = (1 + w.unroll_for(256)) * (np.abs(ops.a) @ np.abs(ops.b)).max()
        limit = {"f16": 2**11, "f32": 2**24, "s32": 2**31 - 1}[t.d]
        assert bound <= limit
        assert np.array_equal(ops.a, np.round(ops.a)) and np.abs(ops.a).max() > 0


def test_image_and_descriptors_of_operands():
    ops = w.make_operands("f16_f32", 256, True, "exact")
    assert ops.img.size == w.OFF_B + 256 * 64 and w.OFF_B % 16 == 0
    assert w.desc_fields(ops.tpl_a)["lbo"] == 1024 and w.desc_fields(ops.tpl_b)["lbo"] == 4096


# ---------------------------------------------------------------------------------------
# SASS and the compiler's view of the kernels
# ---------------------------------------------------------------------------------------
def test_specs_are_distinct_and_cover_the_issue():
    specs = w.DENSE_SPECS + w.SWEEP_SPECS + w.SPARSE_SPECS
    assert len({s.name for s in specs}) == len(specs) == 11 + 31 + 10
    pats = [p for s in w.DENSE_SPECS for p in s.required["wg_ss"]]
    for want in (
        r"HGMMA\.64x256x16\.F32 R",
        r"HGMMA\.64x256x16\.F16 R",
        r"HGMMA\.64x256x16\.F32\.BF16 R",
        r"HGMMA\.64x256x8\.F32\.TF32 R",
        r"QGMMA\.64x256x32\.F32\.E4M3\.E4M3 R",
        r"QGMMA\.64x256x32\.F16\.E5M2\.E5M2 R",
        r"IGMMA\.64x256x32\.S8\.S8 R",
        r"IGMMA\.64x256x32\.U8\.U8 R",
        r"BGMMA\.64x256x256\.AND\.POPC R",
    ):
        assert any(p.startswith(want) for p in pats), want
    rs = w.variant_spec("f16_f32", 256, sparse=True).required["wg_rs"][0]
    assert rs.startswith(r"HGMMA\.SP\.64x256x32\.F32 R\d+, R\d+, gdesc") and rs.endswith(r", R\d+, 0x0")


def _nvrtc(spec):
    from cuda.bindings import nvrtc

    from gpudissect.device.compiler import _headers, kernel_source

    opts = ["-arch=sm_90a", "-std=c++17"] + [f"-D{k}={v}" for k, v in spec.defines.items()]
    _, prog = nvrtc.nvrtcCreateProgram(kernel_source(spec.file).encode(), b"tensor_wgmma.cu", *_headers())
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    nvrtc.nvrtcDestroyProgram(prog)
    assert res == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
    return log.decode(errors="replace")


@pytest.mark.parametrize(
    "spec",
    [w.variant_spec("f16_f32", 256), w.variant_spec("e4m3_f16", 256, True), w.variant_spec("b1_s32", 8)],
    ids=lambda s: s.name,
)
@pytest.mark.sass
def test_wgmmas_are_not_serialized(spec):
    """ptxas serializes wgmma (and says so) when it cannot prove the accumulators untouched; in the
    SASS the unrolled group must be back-to-back GMMAs with no wait in between, and nothing spilled."""
    from gpudissect.sass.disasm import find_tool
    from gpudissect.sasscheck import check_spec

    log = _nvrtc(spec)
    assert "serializ" not in log.lower(), log
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    funcs, checks = check_spec(spec)
    assert all(c.found for c in checks), [c.pattern for c in checks if not c.found]
    for fn in ("wg_ss", "wg_rs"):
        ops = [re.sub(r"^/\*\w+\*/ ", "", line).split(" ")[0] for line in funcs[fn].splitlines()]
        assert not any(o.startswith(("LDL", "STL")) for o in ops), f"{fn} spills to local memory"
        run = best = 0
        for o in ops:
            run = (
                run + 1 if "GMMA" in o else (run if o in ("VIADD", "ISETP.NE.AND", "IADD3", "ISETP.GE.U32.AND") else 0)
            )
            best = max(best, run)
        assert best >= w.unroll_for(spec.defines["WG_N"]), f"{fn}: longest GMMA run {best}"


# ---------------------------------------------------------------------------------------
# The benchmarks end to end on a fake device that honours the kernels' contract
# ---------------------------------------------------------------------------------------
class WgmmaDevice(FakeDevice):
    """Executes the kernels' contract (wg_ss, wg_rs) with the simulator, and a clock model: each wgmma
    of a warpgroup's chain takes `lat` cycles alone, `fixed` cycles of a launch do not grow with the chain, and
    an SM reaches `frac` (98%) of the assumed peak when busy (what the figures must report back)."""

    def __init__(self, sms: int = 3, swap_offsets: bool = False, fixed: float = 0.0, frac: float = 0.98):
        super().__init__(sm_count=sms)
        self.swap_offsets, self.lat, self.mhz, self.last_ms = swap_offsets, 140.0, 1755.0, 0.0
        self.fixed, self.frac = fixed, frac
        self.cache: dict[tuple, np.ndarray] = {}

    def occupancy(self, fn, block, smem=0):
        regs = 40 + fn.spec.defines["WG_NACC"]
        return int(block * regs <= 65536 and smem <= self.props["smem_per_block_optin"])

    def k_wg_ss(self, launch, *args):
        self._wgmma(launch, *args)

    def k_wg_rs(self, launch, *args):
        self._wgmma(launch, *args)

    def _wgmma(self, launch, img, img_bytes, off_a, off_b, tpl_a, tpl_b, afrag, meta, iters, dout, rec):
        d = launch.spec.defines
        tname = f"{d['WG_AT']}_{d['WG_DT']}"
        n, sparse, unroll = d["WG_N"], bool(d["WG_SPARSE"]), d["WG_UNROLL"]
        grid, block, smem = launch.grid, launch.block, launch.smem
        assert block % 128 == 0 and smem >= img_bytes and img_bytes % 16 == 0
        assert smem <= self.props["smem_per_block_optin"]
        base = 0x400  # where dynamic shared memory starts on the device; the kernel adds it
        shared = np.zeros(base + 232448, np.uint8)  # the whole window: a wrong descriptor reads stale bytes
        shared[base : base + img_bytes] = self.buf(img)[:img_bytes]
        da, db = tpl_a | ((base + off_a) >> 4 & 0x3FFF), tpl_b | ((base + off_b) >> 4 & 0x3FFF)
        if self.swap_offsets:  # a hardware that reads the two byte offsets the other way round
            da = w.make_desc(base + off_a, w.desc_fields(tpl_a)["sbo"], w.desc_fields(tpl_a)["lbo"])
            db = w.make_desc(base + off_b, w.desc_fields(tpl_b)["sbo"], w.desc_fields(tpl_b)["lbo"])
        count = 1 + iters * unroll
        a_regs, m_regs = self.buf(afrag)[:2048], self.buf(meta)[:512]
        key = (launch.name, tname, n, sparse, shared.tobytes(), da, db, count, a_regs.tobytes(), m_regs.tobytes())
        if key not in self.cache:
            self.cache[key] = w.emulate_raw(
                tname,
                n,
                sparse,
                launch.name[-2:],
                shared,
                da,
                db,
                a_regs.view(np.uint32).reshape(128, 4),
                m_regs.view(np.uint32),
                count,
            )
        wgs = block // 128
        out = np.tile(self.cache[key][None], (grid * wgs, 1, 1)).reshape(-1).view(np.uint8)
        self.buf(dout)[: out.size] = out
        peak = w.peak_fma(self, tname, sparse) or 4096  # peak_fma reads only .props
        fma = 64 * n * w.kdim(tname, sparse)
        cycles = self.fixed + (count * max(self.lat, wgs * fma / (self.frac * peak)) if grid > 1 else count * self.lat)
        r = np.zeros((grid, 3), np.uint64)
        r[:, 0], r[:, 1], r[:, 2] = 1000, 1000 + round(cycles), np.arange(grid)
        self.buf(rec)[: r.nbytes] = r.reshape(-1).view(np.uint8)
        self.last_ms = cycles / (self.mhz * 1e3)


@pytest.fixture
def h100_peaks(monkeypatch):
    """The fake device (3 SMs, named "fake H100") stands for an H100 SXM5: its record gives the peaks (the
    real lookup, reference.peaks.peaks_for, matches no fake)."""
    from gpudissect.bench.tensor.wgmma import throughput
    from gpudissect.reference import peaks

    monkeypatch.setattr(throughput, "peaks_for", lambda props: peaks.H100_SXM5)


def _run(name: str, overrides: dict[str, str], **dev_kw) -> BenchRun:
    r = run_bench(f"tensor/{name}", overrides, WgmmaDevice(**dev_kw))
    assert not r.twice, f"figures emitted twice: {r.twice}"
    assert r.device.mem == {}, "device buffers left after the benchmark"
    return r


def test_throughput_benchmark_end_to_end(h100_peaks):
    r = _run("wgmma_throughput", {"types": "f16_f32,s8_s32,b1_s32"})
    assert r.status == "ok", r.message
    figs = r.figures
    base = "tc.wgmma.f16_f32.m64n256k16"
    for k in ("latency_cycles", "ss_zero_tflops", "ss_rand_tflops", "rs_rand_tflops", "ss_zero_pct_peak"):
        assert figs[f"{base}.{k}"].check == "ok", k
    assert figs[f"{base}.latency_cycles"].value == pytest.approx(140.0)  # the fake chain latency
    assert figs[f"{base}.ss_zero_pct_peak"].value == pytest.approx(98.0, abs=0.05)
    assert figs[f"{base}.ss_zero_fma_per_clk_sm"].value == pytest.approx(0.98 * 2048, rel=1e-3)
    # TFLOPS from events: 98% of 2048 FMA/clk/SM x 2 x 3 SMs x 1755 MHz
    assert figs[f"{base}.ss_rand_tflops"].value == pytest.approx(0.98 * 2048 * 2 * 3 * 1755e6 / 1e12, rel=1e-3)
    assert figs["tc.wgmma.s8_s32.m64n256k32.ss_rand_tops"].unit == "TOPS"
    assert "tc.wgmma.b1_s32.m64n256k256.ss_rand_pct_peak" not in figs  # no published .b1 peak
    assert figs["tc.wgmma.peak.f16_dense_fma_per_clk_sm"].kind == "assumed"
    assert {s.name for s in r.series} == {"ss_zero", "ss_rand", "rs_zero", "rs_rand"}


def test_latency_net_of_the_fixed_cost_and_the_ratio_to_peak(h100_peaks):
    """A launch whose span holds 200 cycles that do not grow with the chain: the latency is the slope over the
    chain lengths, the 200 its intercept, the span over the longest chain the old form; at 98% of the peak the
    ratio carries no note."""
    r = _run("wgmma_throughput", {"types": "f16_f32"}, fixed=200.0)
    assert r.status == "ok", r.message
    base = "tc.wgmma.f16_f32.m64n256k16"
    assert r.value(f"{base}.latency_cycles") == pytest.approx(140.0, abs=1e-6)
    assert r.value(f"{base}.rs_rand_latency_cycles") == pytest.approx(140.0, abs=1e-6)
    assert r.value(f"{base}.latency_fixed_cycles") == pytest.approx(200.0)
    longest = 1 + w.lat_iters(quick=True)[-1] * w.unroll_for(256)
    assert r.value(f"{base}.latency_span_cycles") == pytest.approx(140.0 + 200.0 / longest, abs=0.01)
    lat = r.figures[f"{base}.latency_cycles"]
    assert "net of the loop" in lat.method and "chains of 129, 257, 513 wgmmas" in lat.method
    assert "fixed cost 200 cycles" in r.figures[f"{base}.ss_zero_latency_cycles"].note
    assert f"{base}.ss_zero_latency_fixed_cycles" not in r.figures  # the headline's only
    ratio = r.figures[f"{base}.ss_zero_peak_ratio"]
    assert ratio.unit == "ratio" and ratio.value == pytest.approx(0.98, abs=1e-3) and ratio.note == ""


def test_a_wgmma_below_the_peak_carries_its_measured_limit(h100_peaks):
    """At half the peak, the ratio's note says how long one wgmma holds the SM at that rate against what its
    arithmetic needs, the chain latency, and the other operand source's rate."""
    r = _run("wgmma_throughput", {"types": "f16_f32"}, frac=0.5)
    assert r.status == "ok", r.message
    ratio = r.figures["tc.wgmma.f16_f32.m64n256k16.ss_rand_peak_ratio"]
    assert ratio.value == pytest.approx(0.5, abs=1e-3)
    note = ratio.note
    assert note.startswith("50.0% of the peak, a measured limit: with 3 warpgroups per SM")  # as many as fit
    assert "one wgmma every 256.0 cycles, where its 262144 multiply-accumulates need 128.0 at the peak" in note
    assert "one warpgroup's chain of dependent wgmmas takes 140.0 cycles per wgmma" in note
    assert "the rs form of the same wgmma runs one every 256.0 cycles (50.0%)" in note


def test_limit_note_says_when_the_warpgroups_do_not_overlap():
    """Sparse SS at 128/144 of the peak: one wgmma per SM every 144 cycles, as long as one warpgroup's chain,
    so each wgmma holds the tensor cores for its whole latency, 16 cycles more than its arithmetic."""
    from gpudissect.bench.tensor.mma.common import fit_chain
    from gpudissect.bench.tensor.wgmma.throughput import Measured, Rate, limit_note

    fma, peak = 64 * 256 * 32, 4096.0
    fit = fit_chain([129, 513], [[80 + 144.0 * 129, 80 + 144.0 * 513]])
    ss = Measured(fit, Rate([1300.0], [fma / 144.0], 1755.0), "")
    rs = Measured(fit, Rate([1460.0], [fma / 128.0], 1755.0), "")
    note = limit_note(fma, ss, peak, 4, {"rs": rs, "ss": Measured(None, None, "failed")})
    assert note.startswith("88.9% of the peak") and "one wgmma every 144.0 cycles" in note and "need 128.0" in note
    assert "the warpgroups do not overlap: each wgmma holds the tensor cores for its whole latency, 16.0 cycles" in note
    assert "the rs form of the same wgmma runs one every 128.0 cycles (100.0%)" in note and "ss form" not in note


def test_sparse_and_sweep_end_to_end(h100_peaks):
    r = _run("wgmma_sparse", {"types": "f16_f32,tf32_f32,s8_s32"})
    assert r.status == "ok", r.message
    assert r.figures["tc.wgmma_sp.f16_f32.m64n256k32.rs_zero_tflops"].check == "ok"
    assert r.figures["tc.wgmma_sp.s8_s32.m64n256k64.ss_rand_pct_peak"].value == pytest.approx(98.0, abs=0.05)
    r = _run("wgmma_n_sweep", {"ns": "8,64,256"})
    assert r.status == "ok", r.message
    assert "tc.wgmma.f16_f32.m64n8k16.rs_zero_latency_cycles" in r.figures
    assert not any(k.startswith("tc.wgmma.f16_f32.m64n256k16.") for k in r.figures)  # owned by wgmma_throughput
    tput = next(s for s in r.series if s.name == "ss_zero" and s.y_unit == "TFLOPS")
    assert [p.x for p in tput.points] == [8, 64, 256]


def test_a_gpu_without_a_peaks_record_gets_no_fraction():
    """The fake H100 is no GPU of reference/peaks.py: no assumed peak and no % of peak (never Hopper's by its
    compute capability), while the measured figures stay."""
    r = _run("wgmma_throughput", {"types": "f16_f32"})
    assert r.status == "ok", r.message
    assert "tc.wgmma.f16_f32.m64n256k16.ss_zero_tflops" in r.figures
    assert not [k for k in r.figures if k.endswith("pct_peak") or k.startswith("tc.wgmma.peak.")]


def test_wgmma_runs_on_sm_90a_only():
    from gpudissect.bench.plan import plan
    from gpudissect.bench.registry import select
    from gpudissect.capability import Target

    for arch in ("sm_80", "sm_89", "sm_100a", "sm_103a", "sm_120a"):
        for e in plan(
            select(None, ["wgmma_throughput", "wgmma_sparse", "wgmma_n_sweep", "wgmma_power"]), Target.parse(arch)
        ):
            assert e.status == "skip" and e.reason == f"needs wgmma (sm_90a only) (this GPU: {Target.parse(arch)})"
    assert all(e.status == "run" for e in plan(select(["tensor"]), Target.parse("sm_90a")))


def test_layout_bug_fails_the_check_and_gives_no_number():
    """If the hardware read the byte offsets the other way round, no throughput figure may survive,
    and the message says which reading matches."""
    r = _run("wgmma_throughput", {"types": "bf16_f32"}, swap_offsets=True)
    assert r.status == "failed" and "leading and stride byte offsets swapped" in r.message
    ss = [f for k, f in r.figures.items() if k.startswith("tc.wgmma.bf16_f32.m64n256k16.ss_")]
    assert ss and all(f.check == "failed" and f.value == "FAILED" for f in ss)
    # RS reads A from registers; B still goes through the descriptor, so RS fails too
    assert r.figures["tc.wgmma.bf16_f32.m64n256k16.rs_rand_tflops"].check == "failed"


def test_power_benchmark_without_nvml(monkeypatch):
    """Without NVML samples the power figures fail loudly instead of inventing a wattage."""
    import gpudissect.device.telemetry as tel

    monkeypatch.setattr(tel, "nvml_handle", lambda uuid=None, index=0: None)
    r = _run("wgmma_power", {"types": "e4m3_f32", "seconds": "0.1"})
    assert r.figures["tc.wgmma.e4m3_f32.m64n256k32.rand_sustained_tflops"].check == "ok"
    assert r.figures["tc.wgmma.e4m3_f32.m64n256k32.rand_power_w"].check == "failed"
    assert r.status == "failed" and "NVML" in r.message


def test_power_benchmark_with_samples(monkeypatch):
    import gpudissect.device.telemetry as tel

    class FakeSampler:
        available = True

        def __init__(self, *a, **k):
            self.samples = [tel.Sample(t, 1600.0, 2619.0, 450.0 + t, 60.0, 0x4) for t in range(5)]

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    monkeypatch.setattr(tel, "Sampler", FakeSampler)
    r = _run("wgmma_power", {"types": "f16_f32", "seconds": "0.1"})
    key = "tc.wgmma.f16_f32.m64n256k16.rand_tflops_per_watt"
    rate = r.value("tc.wgmma.f16_f32.m64n256k16.rand_sustained_tflops")
    assert r.figures[key].check == "ok" and r.figures[key].value == pytest.approx(rate / 452.0, rel=1e-3)
    assert r.value("tc.wgmma.f16_f32.m64n256k16.rand_throttle_reasons") == "sw_power_cap"
    assert "tc.wgmma_sp.f16_f32.m64n256k32.zero_power_w" in r.figures
