"""ruff, as configured in pyproject.toml: the lint rules and the formatter hold over the whole tree."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

TREES = [p for p in ("src", "tests", "scripts", "dev") if (ROOT / p).exists()]


def _ruff() -> list[str]:
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists():
        pytest.fail("ruff is not installed: it is a test dependency (pip install -e '.[test]')")
    return [exe]


def test_ruff_check():
    r = subprocess.run([*_ruff(), "check", "--no-cache", *TREES], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format():
    r = subprocess.run([*_ruff(), "format", "--check", "--no-cache", *TREES], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
