import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("GPUDISSECT_EXTRA_SUITES", "fake_suite")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test gets its own store and cubin cache."""
    monkeypatch.setenv("GPUDISSECT_DB", str(tmp_path / "store.sqlite"))
    monkeypatch.setenv("GPUDISSECT_CACHE", str(tmp_path.parent / "cubin-cache"))


def has_gpu() -> bool:
    try:
        from gpudissect.device.cuda import Device

        Device(0)
        return True
    except Exception:
        return False
