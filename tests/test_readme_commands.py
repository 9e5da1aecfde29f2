"""Every command of the README works as written: each line of its ```bash blocks runs through bash (the README's
imports first, then the rest in the README's order) and its ```python blocks through python, in a fresh
directory and home with no store, the committed results/ beside them as in a checkout. A command that cannot
run here is listed in SKIP with the reason; a README command that is neither run nor listed fails the test."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# the commands (as written, without their comment) that do not run here, and why
SKIP = {
    "python3 -m pip install -e .": "installs packages (CI installed the checkout before running the tests)",
    'python3 -m pip install -e ".[api]"': "installs packages (the test extras include pandas and pyarrow)",
    'python3 -m pip install -e ".[app]"': "installs torch and transformers (not in CI)",
    'python3 -m pip install -e ".[test]"': "installs packages (CI ran it before the tests)",
    "python3 -m pytest -q -n auto": "the test suite itself",
    "gpudissect doctor": "needs a GPU (without one it reports what is missing and exits 1)",
    "gpudissect plan": "needs a GPU (plans for the local one; `plan --arch sm_80` runs here)",
    "gpudissect run": "needs a GPU",
}


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def readme_commands() -> list[str]:
    """Every command line of the README's bash blocks, as written (comments included); a command written twice
    (with another comment) once."""
    lines = [ln for block in _blocks("bash") for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    seen: set[tuple[str, ...]] = set()
    return [ln for ln in lines if not (tuple(_parts(ln)) in seen or seen.add(tuple(_parts(ln))))]


def _parts(line: str) -> list[str]:
    """The commands of a line (split at &&), each without its comment, normalised by shlex."""
    return [shlex.join(shlex.split(part, comments=True)) for part in line.split("&&")]


def _skipped(line: str) -> str | None:
    skip = {_parts(k)[0]: why for k, why in SKIP.items()}
    reasons = [skip.get(p) for p in _parts(line)]
    if all(reasons):
        return "; ".join(dict.fromkeys(reasons))
    assert not any(reasons), f"{line!r}: runs only in part; split it or list every part in SKIP"
    return None


def test_the_readme_is_short_and_every_skip_is_a_readme_command():
    assert len(README.read_text().splitlines()) <= 200
    written = {p for line in readme_commands() for p in _parts(line)}
    stale = {_parts(k)[0] for k in SKIP} - written
    assert not stale, f"SKIP lists commands the README no longer has: {stale}"


@pytest.fixture
def checkout(tmp_path):
    """A working directory beside a fresh home: results/ as in a checkout, no store, no report yet."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "results").symlink_to(ROOT / "results")
    # a user's environment: none of the test session's settings (its store, fake suites, data dirs) but the
    # cubin cache (compiled once per session) and a CUDA 12 cuobjdump where CI fetched one
    keep = ("GPUDISSECT_CACHE", "GPUDISSECT_CUOBJDUMP12")
    env = {
        k: v
        for k, v in os.environ.items()
        if (not k.startswith("GPUDISSECT_") or k in keep) and k not in ("XDG_DATA_HOME", "XDG_CACHE_HOME")
    }
    env["HOME"] = str(home)  # the default store and reports: ~/.local/share/gpudissect/
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # this interpreter's gpudissect
    env["COLUMNS"] = "120"
    return work, home, env


def _run(cmd: list[str], work: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{cmd[-1]!r} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.mark.sass  # `gpudissect sass` compiles with NVRTC and runs the disassembler
def test_every_readme_command_runs_as_written(checkout):
    work, home, env = checkout
    lines = readme_commands()
    imports = [ln for ln in lines if ln.startswith("gpudissect import ")]
    assert imports, "the README's quickstart without a GPU imports a committed run"
    ran, skipped = {}, {}
    for line in imports + [ln for ln in lines if ln not in imports]:
        reason = _skipped(line)
        if reason:
            skipped[line] = reason
            continue
        done = _run(["bash", "-c", line], work, env)
        ran[line] = done.stdout + done.stderr
    assert set(ran) | set(skipped) == set(lines)
    assert any(ln.startswith("gpudissect report") for ln in ran) and any(ln.startswith("gpudissect sass") for ln in ran)

    # what the commands said and wrote
    assert any("h100-memory" in out for line, out in ran.items() if line.startswith("gpudissect runs"))
    show = next(out for line, out in ran.items() if line.startswith("gpudissect show 'mem.latency.*'"))
    assert "mem.latency.l2_far_hit_cycles" in show and "from run 1" in show
    assert list((home / ".local" / "share" / "gpudissect" / "reports").glob("run-1-html/*.html"))
    assert not any(p.name.startswith("gpudissect-report") for p in work.iterdir())  # never the working directory
    assert (work / "h100-memory.json.gz").stat().st_size > 0


def test_every_readme_python_block_runs(checkout):
    work, _, env = checkout
    pytest.importorskip("pandas")
    blocks = _blocks("python")
    assert blocks
    for code in blocks:
        done = _run([sys.executable, "-c", code], work, env)
        assert "mem.latency." in done.stdout
