import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("GPUDISSECT_EXTRA_SUITES", "fake_suite")
os.environ["GPUDISSECT_STRICT_KEYS"] = "1"  # every figure a test emits follows gpudissect/keys.py

# Set at import, before any test module (and its module-scoped fixtures) compiles or opens anything:
# cubins, PTX, the store and matplotlib's font cache all go to one temporary directory of this test run,
# never to ~/.cache or ~/.local/share. Under pytest-xdist the controller makes it and the workers, which
# inherit its environment, share it: a kernel is compiled once per run, not once per worker. Only the
# process that made the directory removes it.
_OWNER = "GPUDISSECT_TEST_TMP" not in os.environ
if _OWNER:
    os.environ["GPUDISSECT_TEST_TMP"] = tempfile.mkdtemp(prefix="gpudissect-tests-")
_SESSION_TMP = os.environ["GPUDISSECT_TEST_TMP"]
os.environ["GPUDISSECT_CACHE"] = os.path.join(_SESSION_TMP, "cache")
os.environ["GPUDISSECT_DB"] = os.path.join(_SESSION_TMP, "store.sqlite")
os.environ["XDG_CACHE_HOME"] = os.path.join(_SESSION_TMP, "xdg-cache")
os.environ["XDG_DATA_HOME"] = os.path.join(_SESSION_TMP, "xdg-data")
os.environ["MPLCONFIGDIR"] = os.path.join(_SESSION_TMP, "matplotlib")
if _OWNER:
    atexit.register(shutil.rmtree, _SESSION_TMP, True)  # also when conftest is imported outside a pytest session


def pytest_sessionfinish(session, exitstatus):
    if _OWNER:
        shutil.rmtree(_SESSION_TMP, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test gets its own store; the cubin cache is the session's (compiling once is enough)."""
    monkeypatch.setenv("GPUDISSECT_DB", str(tmp_path / "store.sqlite"))


@pytest.fixture
def run_bench():
    """fakes.run_bench: a registered benchmark run through a real BenchContext on a fake device."""
    from fakes import run_bench as run

    return run


# ---- speed tiers ------------------------------------------------------------------------------------------
# A test that compiles with NVRTC or runs the disassembler (cuobjdump, nvdisasm) is marked `sass`, so that
# `pytest -m "not sass"` is the pure tier. The spies below see every such call, in the test or in the
# fixtures its setup builds (module-scoped ones included), and a test that used them unmarked fails: the
# tier stays honest. GPUDISSECT_TIER_RECORD=FILE lists those tests in FILE instead of failing them.
_TOOLS_USED: list[str] = []


def _spy(module, name: str, what: str) -> None:
    real = getattr(module, name)

    def spy(*a, **k):
        _TOOLS_USED.append(what)
        return real(*a, **k)

    spy.__wrapped__ = real  # a test can still reach functools.cache's cache_clear
    setattr(module, name, spy)


def _install_spies() -> None:
    from gpudissect.device import compiler
    from gpudissect.sass import disasm

    _spy(compiler, "_cache_path", "NVRTC")  # every compile_cubin, cache hit or not
    _spy(compiler, "nvrtc_compile", "NVRTC")  # PTX too
    _spy(disasm, "find_tool", "the disassembler")  # cuobjdump and nvdisasm are found before every use


_install_spies()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    _TOOLS_USED.clear()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" or not _TOOLS_USED or item.get_closest_marker("sass"):
        return
    used = ", ".join(sorted(set(_TOOLS_USED)))
    record = os.environ.get("GPUDISSECT_TIER_RECORD")
    if record:
        with open(record, "a") as f:
            f.write(f"{item.nodeid}\t{used}\n")
        return
    report.outcome = "failed"
    report.longrepr = f"{item.nodeid} used {used} but is not marked: add @pytest.mark.sass (or pytestmark)"


# ---- the nightly tier ----------------------------------------------------------------------------------
# Every variant of every suite compiled and SASS-checked on every CI arch is ~300 builds more than CI's
# 10 minutes hold: CI runs tests/bench/test_every_arch.py (every kernel file on every arch, the first
# variant the plan runs) and the Hopper set; the per-variant sweep runs when asked for (`pytest -m slow`).
def pytest_collection_modifyitems(config, items):
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="nightly tier: every variant on every arch (run with pytest -m slow)")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)
    # The HTML report of the committed H100 run (tests/report/conftest.py) takes ~80 s of one worker to render:
    # its tests first, so that under xdist the other workers take the rest meanwhile instead of waiting on it at
    # the end (collected in path order, they came last and left one worker alone for the last ~40 s)
    items.sort(key=lambda item: "h100_report" not in getattr(item, "fixturenames", ()))
