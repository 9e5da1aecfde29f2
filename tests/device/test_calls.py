"""What the device layer hands the driver, on the CPU: cuda.bindings with its calls recorded and answered
(types and enums are the real ones). Launches with and without clusters, the launch configuration, the
cluster occupancy queries, tensor maps, module globals, streams, and the context torch made current, each
as the callers use them (gemm/launch.py, bench/hopper/dsm, bench/hopper/tma, bench/cache)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest
from cuda.bindings import driver as DRV

from gpudissect.bench.hopper.dsm import common as dsm
from gpudissect.bench.hopper.tma import plans
from gpudissect.device import current, fastlaunch, tensormap
from gpudissect.device import driver as driver_mod
from gpudissect.device import launch as launch_mod
from gpudissect.device.cuda import Arg, Buffer, CudaError, Device, Function, Module
from gpudissect.device.launch import launch_config, launch_kernel, max_active_clusters, max_cluster_size, param_array
from gpudissect.device.stream import Stream
from gpudissect.errors import GpuDissectError
from gpudissect.gemm import launch as gemm
from gpudissect.gemm.variants import RUNGS

OK = DRV.CUresult.CUDA_SUCCESS


class FakeDriver:
    """cuda.bindings.driver whose cu* calls are recorded; `answers[name]`: the values after the status,
    or a function of the call's arguments giving them; calls named in `fail` return an error status."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.answers: dict[str, tuple[Any, ...] | Callable[..., tuple[Any, ...]]] = {
            "cuGetErrorName": (b"CUDA_ERROR_INVALID_VALUE",),
            "cuGetErrorString": (b"invalid argument",),
        }
        self.fail: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("cu") or name.startswith("cuuint"):
            return getattr(DRV, name)

        def call(*args: Any) -> tuple[Any, ...]:
            self.calls.append((name, args))
            if name in self.fail:
                return (DRV.CUresult.CUDA_ERROR_INVALID_VALUE,)
            ans = self.answers.get(name, ())
            return (OK, *(ans(*args) if callable(ans) else ans))

        return call

    def called(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.calls if n == name]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    f = FakeDriver()
    for mod in (driver_mod, launch_mod, current, tensormap):
        monkeypatch.setattr(mod, "driver", lambda: f)
    return f


def _cfg(cfg: Any) -> tuple[Any, ...]:
    """A CUlaunchConfig as plain values: grid, block, smem, stream, and the cluster dimension if set."""
    clusters = [
        (a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z)
        for a in cfg.attrs
        if a.id == DRV.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    ]
    return (
        (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
        (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ),
        cfg.sharedMemBytes,
        int(cfg.hStream),
        clusters[0] if clusters else None,
        cfg.numAttrs,
    )


# ---------------------------------------------------------------------------------------
# device/launch.py
# ---------------------------------------------------------------------------------------
def test_param_array_points_at_each_value_in_order():
    holders = [ctypes.c_uint64(7), ctypes.c_int32(-1), Arg.raw(bytes(range(16))).c_value()]
    arr = param_array(holders)
    assert [arr[i] for i in range(3)] == [ctypes.addressof(h) for h in holders]
    assert bytes(holders[2]) == bytes(range(16))
    assert len(param_array([])) == 1  # the driver is never handed an empty array


def test_a_plain_launch_is_cuLaunchKernel_on_the_stream(fake):
    params = param_array([ctypes.c_uint64(1)])
    launch_kernel("fn", (4, 2, 1), (128, 1, 1), 1024, 7, params, "launch k")
    assert fake.called("cuLaunchKernel") == [("fn", 4, 2, 1, 128, 1, 1, 1024, 7, ctypes.addressof(params), 0)]
    assert not fake.called("cuLaunchKernelEx")


def test_a_cluster_launch_is_cuLaunchKernelEx_with_the_cluster_dimension(fake):
    params = param_array([ctypes.c_uint64(1)])
    launch_kernel("fn", (8, 1, 1), (256, 1, 1), 0, 5, params, "launch k", cluster=(4, 1, 1))
    ((cfg, fn, addr, extra),) = fake.called("cuLaunchKernelEx")
    assert (fn, addr, extra) == ("fn", ctypes.addressof(params), 0)
    assert _cfg(cfg) == ((8, 1, 1), (256, 1, 1), 0, 5, (4, 1, 1), 1)


def test_a_failed_launch_names_what_failed(fake):
    fake.fail.add("cuLaunchKernel")
    with pytest.raises(CudaError, match=r"launch k grid=\(1, 1, 1\): CUDA_ERROR_INVALID_VALUE \(invalid argument\)"):
        launch_kernel("fn", (1, 1, 1), (32, 1, 1), 0, 0, param_array([]), "launch k grid=(1, 1, 1)")


def test_launch_config_carries_the_scheduling_policy_and_refuses_other_attributes():
    policy = "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE"
    cfg = launch_config((4, 1, 1), (64, 1, 1), 0, 0, (2, 1, 1), {policy: 2})
    assert cfg.numAttrs == 2 and int(cfg.attrs[1].value.clusterSchedulingPolicyPreference) == 2
    with pytest.raises(CudaError, match="CU_LAUNCH_ATTRIBUTE_PRIORITY is not supported"):
        launch_config((4, 1, 1), (64, 1, 1), attributes={"CU_LAUNCH_ATTRIBUTE_PRIORITY": 1})


def test_cluster_occupancy_queries(fake):
    fake.answers |= {"cuOccupancyMaxActiveClusters": (33,), "cuOccupancyMaxPotentialClusterSize": (8,)}
    assert max_active_clusters("fn", (4, 1, 1), (128, 1, 1), 4096) == 33
    assert max_cluster_size("fn", (16, 1, 1), (128, 1, 1), 4096) == 8
    ((fn, active),) = fake.called("cuOccupancyMaxActiveClusters")
    ((_, potential),) = fake.called("cuOccupancyMaxPotentialClusterSize")
    assert fn == "fn" and _cfg(active) == ((4, 1, 1), (128, 1, 1), 4096, 0, (4, 1, 1), 1)
    assert _cfg(potential) == ((16, 1, 1), (128, 1, 1), 4096, 0, None, 0)


# ---------------------------------------------------------------------------------------
# Device, Module, Function, Stream on the fake driver
# ---------------------------------------------------------------------------------------
def _device(fake: FakeDriver) -> Device:
    dev = Device.__new__(Device)  # no cuInit: only what the calls below use
    dev._drv, dev.ctx = fake, "ctx"
    return dev


def test_module_global_buffer(fake):
    fake.answers["cuModuleGetGlobal"] = (0x7000_0000, 65536)
    assert Module(_device(fake), "mod").global_buffer("cdata") == Buffer(0x7000_0000, 65536)
    assert fake.called("cuModuleGetGlobal") == [("mod", b"cdata")]
    fake.fail.add("cuModuleGetGlobal")
    with pytest.raises(CudaError, match=r"cuModuleGetGlobal\(cf\): CUDA_ERROR_INVALID_VALUE"):
        Module(_device(fake), "mod").global_buffer("cf")


def test_device_launch_with_a_cluster_and_a_policy(fake):
    dev = _device(fake)
    policy = "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE"
    Function(dev, "fn", "k")(
        32, 128, [Arg.u64(1)], smem=64 * 1024, cluster=(16, 1, 1), non_portable_cluster=True, attributes={policy: 1}
    )
    attrs = {a[1].name: a[2] for a in fake.called("cuFuncSetAttribute")}
    assert attrs == {
        "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES": 64 * 1024,
        "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED": 1,
    }
    ((cfg, *_),) = fake.called("cuLaunchKernelEx")
    assert _cfg(cfg) == ((32, 1, 1), (128, 1, 1), 64 * 1024, 0, (16, 1, 1), 2)


def test_a_stream_launches_on_its_own_handle(fake):
    fake.answers["cuStreamCreate"] = ("stream-1",)
    dev = _device(fake)
    s = Stream(dev)
    assert fake.called("cuCtxSetCurrent") == [("ctx",)] and s.handle == "stream-1"
    s.launch(Function(dev, "fn", "k"), 132, 256, [Arg.u64(3), Arg.i32(4)], 100 * 1024)
    ((fn, *dims, smem, stream, _, extra),) = fake.called("cuLaunchKernel")
    assert (fn, dims, smem, stream, extra) == ("fn", [132, 1, 1, 256, 1, 1], 100 * 1024, "stream-1", 0)
    assert fake.called("cuFuncSetAttribute")[0][2] == 100 * 1024  # above 48 KB: opted in first
    s.close()
    assert fake.called("cuStreamDestroy") == [("stream-1",)]


# ---------------------------------------------------------------------------------------
# Tensor maps: the arguments the TMA benchmarks and our GEMM hand cuTensorMapEncodeTiled
# ---------------------------------------------------------------------------------------
def _encoded(fake: FakeDriver) -> list[tuple[Any, ...]]:
    """Each cuTensorMapEncodeTiled call's arguments as plain values (ints; enum names without their prefix)."""
    out = []
    for args in fake.called("cuTensorMapEncodeTiled"):
        dtype, rank, addr, dims, strides, box, estr, inter, swz, prom, oob = args
        ints = [[int(v) for v in lst] for lst in (dims, strides, box, estr)]
        names = [e.name.removeprefix(f"CU_TENSOR_MAP_{p}_") for e, p in ((inter, "INTERLEAVE"), (swz, "SWIZZLE"))]
        names += [prom.name.removeprefix("CU_TENSOR_MAP_L2_PROMOTION_"), oob.name.removeprefix("CU_TENSOR_MAP_")]
        out.append((dtype.name.removeprefix("CU_TENSOR_MAP_DATA_TYPE_"), rank, addr, *ints, *names))
    return out


@pytest.fixture
def encoder(fake: FakeDriver) -> FakeDriver:
    tmap = DRV.CUtensorMap()
    tmap.opaque = list(range(16))
    fake.answers["cuTensorMapEncodeTiled"] = (tmap,)
    return fake


class FakeLib:
    """libcuda as fastlaunch calls it through ctypes: each call recorded with its arguments as plain values
    (a launch configuration read at call time: the caller reuses the structure), CUDA_SUCCESS answered."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> int:
            if name == "cuLaunchKernelEx":
                cfg, fn, params, extra = args
                c = cfg.contents
                at = ctypes.cast(c.attrs, ctypes.POINTER(fastlaunch.LaunchAttribute))
                clusters = [(at[i].id, tuple(at[i].value[:12])) for i in range(c.numAttrs)]
                args = (
                    (
                        (c.gridDimX, c.gridDimY, c.gridDimZ),
                        (c.blockDimX, c.blockDimY, c.blockDimZ),
                        c.sharedMemBytes,
                        c.hStream,
                        c.numAttrs,
                        clusters,
                    ),
                    fn.value,
                    ctypes.addressof(params),
                    extra,
                )
            self.calls.append((name, args))
            return 0

        return call

    def called(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.calls if n == name]


@pytest.fixture
def lib(monkeypatch: pytest.MonkeyPatch) -> FakeLib:
    f = FakeLib()
    monkeypatch.setattr(fastlaunch, "libcuda", lambda: f)
    return f


def _cluster_bytes(x: int, y: int, z: int) -> tuple[int, ...]:
    return tuple(ctypes.c_uint32(v).value.to_bytes(4, "little")[i] for v in (x, y, z) for i in range(4))


def test_launch_structures_match_cuda_h():
    """cuda.h's layouts: CUlaunchConfig 7 unsigned ints, padding, stream, attribute pointer, count (56 bytes on
    x86-64); CUlaunchAttribute an id padded to 8 bytes and a 64-byte union (72)."""
    assert ctypes.sizeof(fastlaunch.LaunchConfig) == 56 and fastlaunch.LaunchConfig.hStream.offset == 32
    assert fastlaunch.LaunchConfig.attrs.offset == 40 and fastlaunch.LaunchConfig.numAttrs.offset == 48
    assert ctypes.sizeof(fastlaunch.LaunchAttribute) == 72 and fastlaunch.LaunchAttribute.value.offset == 8


def test_tma_benchmark_maps_are_encoded_plain(encoder):
    raw = plans.encode_tensor_map(plans.TensorMap("float32", (1024, 256, 32), (16, 16, 8)), 0x10000)
    plans.encode_tensor_map(plans.TensorMap("int64", (1 << 20,), (256,)), 0x20000)
    assert raw == bytes((ctypes.c_uint64 * 16)(*range(16)))
    plain = ("NONE", "NONE", "NONE", "FLOAT_OOB_FILL_NONE")  # interleave, swizzle, promotion, fill
    assert _encoded(encoder) == [
        ("FLOAT32", 3, 0x10000, [1024, 256, 32], [4096, 4096 * 256], [16, 16, 8], [1, 1, 1], *plain),
        ("INT64", 1, 0x20000, [1 << 20], [8 << 20], [256], [1], *plain),
    ]


def test_gemm_maps_are_swizzled_128b_with_the_asked_promotion(encoder):
    gemm.tensor_map("bf16", 0x1000, 512, 1024, 128)
    gemm.tensor_map("e4m3", 0x2000, 256, 2048, 64, promotion="L2_256B")
    assert _encoded(encoder) == [
        ("BFLOAT16", 2, 0x1000, [1024, 512], [2048], [64, 128], [1, 1], "NONE", "128B", "NONE", "FLOAT_OOB_FILL_NONE"),
        ("UINT8", 2, 0x2000, [2048, 256], [2048], [128, 64], [1, 1], "NONE", "128B", "L2_256B", "FLOAT_OOB_FILL_NONE"),
    ]


# ---------------------------------------------------------------------------------------
# The context torch made current, and our GEMM on it
# ---------------------------------------------------------------------------------------
H100 = {
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9,
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
    "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 132,
}


def _torch_context(fake: FakeDriver, handle: int) -> None:
    fake.answers |= {
        "cuCtxGetCurrent": (DRV.CUcontext(handle),),
        "cuCtxGetDevice": (DRV.CUdevice(0),),
        "cuDeviceGetAttribute": lambda attr, dev: (H100[attr.name],),
    }


def test_no_current_context_is_an_error(fake):
    fake.answers["cuCtxGetCurrent"] = (None,)
    with pytest.raises(GpuDissectError, match="no CUDA context is current"):
        current.context()


def test_the_current_context_facts(fake):
    _torch_context(fake, 0x5150)
    assert current.context() == current.Context(0x5150, (9, 0), 132)
    assert not fake.called("cuInit") and not fake.called("cuCtxSetCurrent")  # torch's context, as it is


def test_gemm_prepare_and_launch_on_the_current_context(fake, encoder, lib, monkeypatch):
    """A stream-K cluster rung end to end: kernel loaded once per context, three tensor maps, the
    workspace allocated once for the resident grid, launched as a cluster on the caller's stream."""
    monkeypatch.setattr(gemm, "_FUNCS", {})
    monkeypatch.setattr(gemm, "_WORKSPACE", {})
    monkeypatch.setattr(gemm, "compile_kernel_file", lambda *a: b"cubin")
    _torch_context(fake, 0xC0DE)
    allocs = iter([0x100000, 0x200000])
    fake.answers |= {
        "cuModuleLoadData": ("module",),
        "cuModuleGetFunction": (0xF00,),
        "cuOccupancyMaxActiveClusters": (66,),
        "cuMemAlloc": lambda n: (next(allocs),),
        "cuStreamCreate": ("zeroing stream",),
    }
    rung = RUNGS[8]
    for _ in range(2):
        run = gemm.prepare(8, "bf16", 0x1000, 0x2000, 0x3000, 1024, 1024, 1024)
    assert (run.fn, run.rung, run.cluster, run.grid) == (0xF00, 8, 2, rung.grid(1024, 1024, 66))
    assert fake.called("cuModuleLoadData") == [(b"cubin",)] and fake.called("cuModuleGetFunction") == [
        ("module", rung.function.encode())
    ]
    ((fn, attr, smem),) = fake.called("cuFuncSetAttribute")
    assert (fn, attr.name, smem) == (0xF00, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", rung.smem_bytes)
    part, flags = rung.workspace_bytes(66 * 2)
    assert fake.called("cuMemAlloc") == [(part,), (flags,)]
    # zeroed on a private stream and synchronised there: never the whole context (legal under a graph capture)
    ((ptr, value, count, stream),) = fake.called("cuMemsetD32Async")
    assert (ptr, value, count) == (0x200000, 0, flags // 4) and fake.called("cuStreamSynchronize") == [(stream,)]
    assert not fake.called("cuCtxSynchronize") and not fake.called("cuMemsetD32")
    assert len(_encoded(fake)) == 6  # A, B, C per prepare
    assert [h.value for h in run.holders[3:7]] == [0, 0, 0x100000, 0x200000]  # scales, workspace
    run(stream=9)
    ((cfg, fn, addr, _),) = lib.called("cuLaunchKernelEx")
    assert fn == 0xF00 and addr == ctypes.addressof(run.params)
    grid = rung.grid(1024, 1024, 66)
    # the cluster's shape, and programmatic dependent launch (the kernel waits for its predecessor: gemm.cu)
    ids = DRV.CUlaunchAttributeID
    pdl = (int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION), _cluster_bytes(1, 0, 0))
    cluster = (int(ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), _cluster_bytes(2, 1, 1))
    assert cfg == (grid, (rung.threads, 1, 1), rung.smem_bytes, 9, 2, [cluster, pdl])


def _gemm_driver(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """gemm.prepare against the fake driver: fresh kernel and workspace caches, a stand-in cubin, torch's context,
    66 resident clusters."""
    monkeypatch.setattr(gemm, "_FUNCS", {})
    monkeypatch.setattr(gemm, "_WORKSPACE", {})
    monkeypatch.setattr(gemm, "compile_kernel_file", lambda *a: b"cubin")
    _torch_context(fake, 0xC0DE)
    fake.answers |= {"cuModuleLoadData": ("module",), "cuModuleGetFunction": (0xF00,), "cuMemAlloc": (0x100000,)}
    fake.answers["cuOccupancyMaxActiveClusters"] = (66,)


def test_gemm_rebind_repoints_only_what_moved(fake, encoder, lib, monkeypatch):
    """A cached plan re-pointed: a tensor map whose matrix moved is re-pointed in place, one that did not is
    left alone, pointer arguments are set, a misaligned matrix is refused before the launch."""
    _gemm_driver(fake, monkeypatch)
    run = gemm.prepare(10, "e4m3", 0x1000, 0x2000, 0x3000, 256, 1024, 1024, 0x40, 0x80)
    run.rebind(0x1000, 0x2100, 0x3000, 0x40, 0xC0)
    assert lib.called("cuTensorMapReplaceAddress") == [(ctypes.addressof(run.holders[1]), 0x2100)]
    assert run.holders[4].value == 0xC0 and run.bound == [0x1000, 0x2100, 0x3000, 0x40, 0xC0]
    run.rebind(0x1000, 0x2100, 0x3000, 0x40, 0xC0)
    assert len(lib.called("cuTensorMapReplaceAddress")) == 1  # nothing moved: no driver call
    r1 = gemm.prepare(1, "bf16", 0x1000, 0x2000, 0x3000, 256, 256, 256)
    r1.rebind(0x1010, 0x2000, 0x3000)
    assert r1.holders[0].value == 0x1010
    with pytest.raises(ValueError, match="0x1008 is not 16-byte aligned"):
        r1.rebind(0x1008, 0x2000, 0x3000)
    r1.run(0x1020, 0x2000, 0x3000, 0, 0, 5)  # re-point and launch in one call: the public API's path
    assert r1.holders[0].value == 0x1020 and lib.called("cuLaunchKernelEx")[-1][0][3] == 5
    # a new output per call, the common case: only C re-pointed (a pointer on rung 1, a tensor map on rung 10)
    r1.run(0x1020, 0x2000, 0x3100, 0, 0, 5)
    assert r1.holders[2].value == 0x3100 and r1.bound == [0x1020, 0x2000, 0x3100, 0, 0]
    with pytest.raises(ValueError, match="0x3108 is not 16-byte aligned"):
        r1.run(0x1020, 0x2000, 0x3108, 0, 0, 5)
    n = len(lib.called("cuTensorMapReplaceAddress"))
    run.run(0x1000, 0x2100, 0x3200, 0x40, 0xC0, 7)
    assert lib.called("cuTensorMapReplaceAddress")[n:] == [(ctypes.addressof(run.holders[2]), 0x3200)]
    assert run.bound == [0x1000, 0x2100, 0x3200, 0x40, 0xC0] and lib.called("cuLaunchKernelEx")[-1][0][3] == 7


def test_gemm_runner_is_run_in_one_frame(fake, encoder, lib, monkeypatch):
    """Launch.runner (matmul's cached 16-bit path) does what run does without scales: C alone re-pointed when only it
    moved, everything moved re-pointed through rebind (its alignment rule), the stream set, under the plan's lock,
    and a failed launch raised with the driver's name for it."""
    import threading

    _gemm_driver(fake, monkeypatch)
    run = gemm.prepare(10, "bf16", 0x1000, 0x2000, 0x3000, 256, 1024, 1024)
    lock = threading.Lock()
    go = run.runner(lock)
    go(0x1000, 0x2000, 0x3100, 5)
    assert lib.called("cuTensorMapReplaceAddress") == [(ctypes.addressof(run.holders[2]), 0x3100)]
    assert run.bound[:3] == [0x1000, 0x2000, 0x3100] and lib.called("cuLaunchKernelEx")[-1][0][3] == 5
    go(0x1400, 0x2400, 0x3200, 6)
    assert [a for _, a in lib.called("cuTensorMapReplaceAddress")[1:]] == [0x1400, 0x2400, 0x3200]
    assert lib.called("cuLaunchKernelEx")[-1][0][3] == 6 and not lock.locked()
    with pytest.raises(ValueError, match="0x1408 is not 16-byte aligned"):
        go(0x1408, 0x2400, 0x3200, 6)
    assert not lock.locked()
    monkeypatch.setattr(run.fast, "call", lambda *a: 1)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(
        CudaError, match=r"launch gemm: (CUDA_ERROR_INVALID_VALUE|CUresult 1)"
    ):  # the fake driver: a number
        run.runner(lock)(0x1400, 0x2400, 0x3200, 6)


def test_gemm_plain_launch_and_no_cluster_fitting(fake, lib):
    holders = [ctypes.c_uint64(1)]
    gemm.Launch(0xF00, (8, 8, 1), 128, 65536, holders, param_array(holders))(stream=3)
    ((cfg, fn, _, _),) = lib.called("cuLaunchKernelEx")
    assert fn == 0xF00 and cfg == ((8, 8, 1), (128, 1, 1), 65536, 3, 0, [])
    assert gemm.resident_clusters("fn", RUNGS[4], 132) == 132  # no cluster: every SM
    fake.answers["cuOccupancyMaxActiveClusters"] = (0,)
    with pytest.raises(GpuDissectError, match="rung 5: no cluster of 2 CTAs fits on this GPU"):
        gemm.resident_clusters("fn", RUNGS[5], 132)


# ---------------------------------------------------------------------------------------
# The DSM benchmarks' cluster queries
# ---------------------------------------------------------------------------------------
class _Fn:
    handle = "fn"

    def __init__(self) -> None:
        self.attrs: dict[str, int] = {}

    def set_attribute(self, attr: str, value: int) -> None:
        self.attrs[attr] = value

    def allow_dynamic_smem(self, n: int) -> None:
        self.set_attribute("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", n)


def test_dsm_cluster_queries(fake):
    fake.answers |= {"cuOccupancyMaxActiveClusters": (7,), "cuOccupancyMaxPotentialClusterSize": (16,)}
    fn = _Fn()
    assert dsm._cluster_query(fn, 16, 256, 64 * 1024, "active") == 7
    assert fn.attrs == {
        "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED": 1,
        "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES": 64 * 1024,
    }
    assert dsm._cluster_query(_Fn(), 4, 256, 0, "potential") == 16
    ((_, active),) = fake.called("cuOccupancyMaxActiveClusters")
    ((_, potential),) = fake.called("cuOccupancyMaxPotentialClusterSize")
    assert _cfg(active) == ((16, 1, 1), (256, 1, 1), 64 * 1024, 0, (16, 1, 1), 1)
    assert _cfg(potential) == ((4, 1, 1), (256, 1, 1), 0, 0, None, 0)
    fake.fail.add("cuOccupancyMaxActiveClusters")
    assert dsm._cluster_query(_Fn(), 2, 256, 0, "active") is None  # the driver cannot say: no answer
