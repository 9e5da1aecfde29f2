"""The run (and list) order: suites in the reader's order, each suite's benchmarks as its ORDER says.
Pinned here because nothing else would notice an import reordering that reshuffles a run."""

from gpudissect.bench.registry import load_all

EXPECTED = [
    "memory/pchase_latency", "memory/shared_latency", "memory/index_chase", "memory/bandwidth",
    "memory/bank_conflicts", "memory/l1_carveout", "memory/cache_lines", "memory/l2_fine_pchase", "memory/tlb",
    "cache/const_cache", "cache/icache",
    "atomics/atomic_latency", "atomics/atomic_throughput",
    "isa/isa_encoding", "isa/fragment_maps", "isa/native_instructions", "isa/scheduler_mapping", "isa/isa_regbank",
    "tensor/mma_latency_throughput", "tensor/mma_sparse", "tensor/ldmatrix", "tensor/mma_power",
    "tensor/wgmma_throughput", "tensor/wgmma_sparse", "tensor/wgmma_n_sweep", "tensor/wgmma_power",
    "tensor/cublas_gemm",
    "numerics/tc_probes", "numerics/tc_model_agreement", "numerics/tc_profiling",
    "hopper/tma_latency", "hopper/tma_throughput", "hopper/async_copy_matmul", "hopper/dsm_latency",
    "hopper/dsm_throughput", "hopper/dsm_histogram", "hopper/dpx_latency_throughput", "hopper/smith_waterman",
    "gemm/ladder", "gemm/vs_cublas",
    "gemm/api_vs_cublas", "gemm/power_split",
    "app/linear", "app/layer", "app/llm",
    "link/host_device_ce", "link/host_device_sm", "link/host_device_latency", "link/p2p_matrix",
    "link/nccl_collectives",
]  # fmt: skip


def test_run_order():
    assert [k for k, b in load_all().items() if b.suite != "fake"] == EXPECTED


def test_every_benchmark_that_imports_torch_says_so():
    """The runner starts a torch benchmark's process ahead (and lets it import torch): a benchmark whose
    module reaches torch must declare torch=True, and only such a one."""
    import inspect
    import re

    from gpudissect.bench.registry import load_all

    reaches = re.compile(r"import torch\b|_import_torch\(|\b_torch\(\)|import_transformers\(")
    for b in load_all().values():
        if not b.func.__module__.startswith("gpudissect."):
            continue  # the test suites' stand-ins
        src = inspect.getsource(inspect.getmodule(b.func))
        assert b.torch == bool(reaches.search(src)), b.key


def test_preload_is_only_for_a_torch_benchmark():
    """A process started ahead exists only for a torch benchmark: a preload elsewhere would never be imported."""
    import pytest

    from gpudissect.bench.registry import benchmark

    with pytest.raises(RuntimeError, match="preload"):
        benchmark(suite="fake", name="fake_bad_preload", title="", axes={}, kernels=[], preload=("json",))(
            lambda ctx: None
        )
