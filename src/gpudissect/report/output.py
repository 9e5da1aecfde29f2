"""Write a report directory safely.

A report folder is recognisably ours: it holds a manifest (.gpudissect-report.json) listing every file
the report wrote, with the tool version. --out takes a new path, an empty folder, or a folder with our
manifest; only what the manifest lists is ever replaced or deleted (a user's own files beside it stay),
and anything else is refused before any work. The report is built aside, in a staging folder on the same
file system, and swapped in only once complete: a render that fails (disk full, a crash, SIGTERM) leaves
the previous report whole and no staging folder behind.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpudissect.errors import GpuDissectError
from gpudissect.report.outfile import expand
from gpudissect.version import __version__

MANIFEST = ".gpudissect-report.json"
MANIFEST_FORMAT = "gpudissect-report"
_MAX_MANIFEST_BYTES = 1 << 20
_STAGING = ".gpudissect-staging-"  # inside an existing --out
_ASIDE = ".gpudissect-previous-"  # the previous report's files, while the new ones move in


@dataclass(frozen=True)
class ReportDir:
    path: Path
    exists: bool
    previous: tuple[str, ...]  # the previous report's files (its manifest lists them), present now


def _plain_name(name: object) -> bool:
    """A file name of the folder itself: no path, nothing hidden above it, not the manifest."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..", MANIFEST)
        and "/" not in name
        and "\0" not in name
        and not name.startswith((_STAGING, _ASIDE))
    )


def _damaged(p: Path, why: str) -> GpuDissectError:
    return GpuDissectError(
        f"--out {p}: its report manifest {MANIFEST} is damaged ({why}); remove the folder or choose another"
    )


def read_manifest(p: Path) -> list[str]:
    """The files the manifest of report folder `p` lists. It was written by us; one that is not as we write
    it (a name with a path in it, say) is refused whole rather than trusted in part."""
    m = p / MANIFEST
    try:
        st = os.lstat(m)
        if not stat.S_ISREG(st.st_mode):
            raise _damaged(p, "not a regular file")
        if st.st_size > _MAX_MANIFEST_BYTES:
            raise _damaged(p, "too large")
        data = json.loads(m.read_bytes())
    except OSError as e:
        raise GpuDissectError(f"cannot read {m}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise _damaged(p, f"not JSON: {e}") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or not isinstance(files, list):
        raise _damaged(p, f"not a {MANIFEST_FORMAT} manifest")
    bad = [f for f in files if not _plain_name(f)]
    if bad:
        raise _damaged(p, f"it lists {bad[0]!r}, not a file name of the folder")
    return list(dict.fromkeys(files))


def check_report_dir(out: Path | str) -> ReportDir:
    """--out must be a new path, an empty directory, or a report folder of ours (with its manifest)."""
    p = expand(out)
    if os.path.lexists(p) and not p.exists():
        raise GpuDissectError(f"--out {p} is a symlink to nothing")
    if p.exists() and not p.is_dir():
        raise GpuDissectError(f"--out {p} exists and is not a directory")
    if p.is_dir():
        try:
            names = sorted(e.name for e in p.iterdir())
        except OSError as e:
            raise GpuDissectError(f"cannot read --out {p}: {e.strerror or e}") from None
        previous: tuple[str, ...] = ()
        if MANIFEST in names:
            previous = tuple(n for n in read_manifest(p) if os.path.lexists(p / n) and not (p / n).is_dir())
        elif names:
            raise GpuDissectError(
                f"--out {p} is not a gpudissect report (no {MANIFEST}) and not empty ({', '.join(names[:3])}"
                f"{', …' if len(names) > 3 else ''}): choose a new or empty directory"
            )
        if not os.access(p, os.W_OK | os.X_OK):
            raise GpuDissectError(f"cannot write the report to {p}: directory not writable")
        return ReportDir(p, True, previous)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise GpuDissectError(f"cannot write the report to {p}: {parent} is not an existing directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise GpuDissectError(f"cannot write the report to {p}: directory not writable")
    return ReportDir(p, False, ())


def _write_manifest(d: Path, files: list[str]) -> None:
    doc = {"format": MANIFEST_FORMAT, "tool_version": __version__, "files": sorted(files)}
    (d / MANIFEST).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def write_report_dir(out: Path | str, render: Callable[[Path], Path]) -> Path:
    """Call render(staging_dir) -> the report file written there; then swap the new report in for the
    previous one. Returns the report file's final path. On any failure the previous report stays whole
    and no staging is left; an OSError (no space, no permission) is one GpuDissectError."""
    d = check_report_dir(out)
    kept = "the previous report is kept" if d.previous else "nothing was written"
    try:
        staging = Path(tempfile.mkdtemp(prefix=_STAGING if d.exists else f".{d.path.name[:100]}.", dir=_home(d)))
    except OSError as e:
        raise GpuDissectError(f"cannot write the report to {d.path}: {e.strerror or e}") from None
    try:
        written = render(staging)
        names = sorted(e.name for e in staging.iterdir())
        _write_manifest(staging, names)
        if d.exists:
            _swap_in(d, staging, [*names, MANIFEST])
        else:
            os.chmod(staging, 0o777 & ~_umask())  # mkdtemp made it private; a report folder is not
            os.rename(staging, d.path)
    except OSError as e:
        raise GpuDissectError(f"cannot write the report to {d.path}: {e.strerror or e}; {kept}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already when the swap succeeded
    return d.path / written.name


def _home(d: ReportDir) -> Path:
    """Where staging goes: inside an existing --out (same file system, so every move is a rename), else
    beside the new one."""
    return d.path if d.exists else (d.path.parent if str(d.path.parent) else Path("."))


def _swap_in(d: ReportDir, staging: Path, names: list[str]) -> None:
    """Move the previous report's files aside, the new ones in, then drop the previous ones; if a move
    fails (or SIGTERM arrives) everything is put back as it was."""
    out = d.path
    clash = [n for n in names if n != MANIFEST and n not in d.previous and os.path.lexists(out / n)]
    if clash:
        raise GpuDissectError(
            f"--out {out} holds {clash[0]}, which the report would overwrite but its manifest does not list: "
            "move that file away or choose another directory"
        )
    aside = Path(tempfile.mkdtemp(prefix=_ASIDE, dir=out))
    moved: list[str] = []
    placed: list[str] = []
    try:
        for n in [*d.previous, MANIFEST]:
            if os.path.lexists(out / n):
                os.rename(out / n, aside / n)
                moved.append(n)
        for n in names:  # the manifest last: while it is missing, nothing here claims to be a report
            os.rename(staging / n, out / n)
            placed.append(n)
    except BaseException:
        for n in placed:
            (out / n).unlink(missing_ok=True)
        for n in moved:
            os.rename(aside / n, out / n)
        shutil.rmtree(aside, ignore_errors=True)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
