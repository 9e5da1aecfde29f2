"""Write a report directory safely: check --out before any work, render into a temporary directory
beside it, then move the new files in, so a failed render leaves the old report whole and a re-render
leaves no stale PNG of an earlier run behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from gpudissect.errors import GpuDissectError

REPORT_FILES = ("report.md", "report.html")


def _ours(p: Path) -> bool:
    """Files a report writes: the report itself and its PNGs."""
    return p.is_file() and (p.name in REPORT_FILES or p.suffix == ".png")


def check_report_dir(out: Path) -> Path:
    """--out must be a new directory, an empty one, or one holding a previous report (nothing else)."""
    p = Path(out).expanduser()
    if p.exists() and not p.is_dir():
        raise GpuDissectError(f"--out {p} exists and is not a directory")
    if p.is_dir():
        entries = list(p.iterdir())
        others = [e.name for e in entries if not _ours(e)]
        if others:
            raise GpuDissectError(
                f"--out {p} holds files that are not a gpudissect report ({', '.join(sorted(others)[:3])}"
                f"{', …' if len(others) > 3 else ''}): choose a new or empty directory"
            )
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise GpuDissectError(f"cannot write the report to {p}: {parent} is not an existing directory")
    if not os.access(parent, os.W_OK) or (p.is_dir() and not os.access(p, os.W_OK)):
        raise GpuDissectError(f"cannot write the report to {p}: directory not writable")
    return p


def write_report_dir(out: Path, render: Callable[[Path], Path]) -> Path:
    """Call render(tmp_dir) -> file written there; then move everything into `out`. Returns the
    report file's final path."""
    p = check_report_dir(out)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{p.name}.", dir=p.parent))
    except OSError as e:
        raise GpuDissectError(f"cannot write the report to {p}: {e.strerror or e}") from None
    try:
        written = render(tmp)
        if p.is_dir():
            for old in p.iterdir():
                if _ours(old):
                    old.unlink()
            for new in tmp.iterdir():
                os.replace(new, p / new.name)
            tmp.rmdir()
        else:
            os.replace(tmp, p)
            os.chmod(p, 0o777 & ~_umask())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return p / written.name


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
