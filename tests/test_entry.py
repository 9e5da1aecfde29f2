"""The `gpudissect` entry point: a missing dependency of the command line is one line naming it and exit code 2."""

import subprocess
import sys

import pytest

from gpudissect.entry import REQUIRED


@pytest.mark.parametrize("missing", REQUIRED)
def test_a_missing_dependency_is_one_line_and_exit_2(missing):
    code = f"import sys; sys.modules[{missing!r}] = None; from gpudissect.entry import main; main()"
    r = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"needs the package '{missing}'" in lines[0] and "Traceback" not in r.stderr


def test_with_everything_installed_it_is_the_command_line():
    r = subprocess.run([sys.executable, "-m", "gpudissect", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Usage" in r.stdout
