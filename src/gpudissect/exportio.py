"""JSON exports in and out: read one back (checked, so a broken file is one clear error), turn it into
the records a report or an import needs, and write output files atomically."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

from .errors import GpuDissectError
from .models import BenchResult, Figure, Point, RunInfo, Series, Telemetry

EXPORT_FORMAT = "gpudissect-export"
GZIP_MAGIC = b"\x1f\x8b"


def gzip_bytes(text: str) -> bytes:
    """gzip of `text` with no timestamp or name, so the same export compresses to the same bytes."""
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def _bad(path: Path, why: str) -> GpuDissectError:
    return GpuDissectError(f"{path} is not a usable gpudissect export: {why}")


def export_text(path: Path | str) -> str:
    """An export file's JSON text, plain or gzip-compressed; a missing, unreadable, damaged-gzip or
    binary file raises GpuDissectError with one line saying which."""
    p = Path(path).expanduser()
    if not p.exists():
        raise GpuDissectError(f"no such file: {p}")
    if p.is_dir():
        raise GpuDissectError(f"{p} is a directory, not an export file")
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise GpuDissectError(f"cannot read {p}: {e.strerror or e}") from None
    if raw[:2] == GZIP_MAGIC:  # `gpudissect export -o run.json.gz`, and the committed results
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise _bad(p, f"a damaged or truncated gzip file ({e})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(p, "binary, not JSON text") from None


def read_export(path: Path | str) -> dict[str, Any]:
    """The export's JSON object, after checking it is one: missing, empty, binary, truncated or
    wrongly shaped files raise GpuDissectError with one line saying which."""
    p = Path(path).expanduser()
    text = export_text(p)
    if not text.strip():
        raise _bad(p, "the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _bad(p, f"invalid JSON at line {e.lineno} column {e.colno} ({e.msg}); truncated?") from None
    except RecursionError:
        raise _bad(p, "JSON nested too deeply") from None
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise _bad(p, f'no "format": "{EXPORT_FORMAT}" marker (written by `gpudissect export`?)')
    from .store import SCHEMA_VERSION

    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise _bad(p, f"schema version {version!r}; this gpudissect reads up to {SCHEMA_VERSION}")
    if not isinstance(data.get("run"), dict):
        raise _bad(p, '"run" must be an object')
    for part in ("benches", "figures", "series"):
        if not isinstance(data.get(part, []), list):
            raise _bad(p, f'"{part}" must be a list')
    return data


def _record(cls: type, d: Any, what: str) -> Any:
    """cls(**d), with unknown keys and wrong shapes named instead of a TypeError."""
    if not isinstance(d, dict):
        raise ValueError(f"{what} must be an object, not {type(d).__name__}")
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"{what} has unknown field(s) {', '.join(sorted(unknown))}")
    try:
        return cls(**d)
    except TypeError as e:
        raise ValueError(f"{what}: {e}") from None


def _number_pair(v: Any, what: str) -> tuple[float, float] | None:
    if v is None:
        return None
    if not (isinstance(v, list | tuple) and len(v) == 2):
        raise ValueError(f"{what} must be a pair [min, max]")
    return (v[0], v[1])


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _need_str(obj: Any, names: tuple[str, ...], what: str) -> None:
    for n in names:
        if not isinstance(getattr(obj, n), str):
            raise ValueError(f"{what}.{n} must be a text")


def records_from_export(
    data: dict[str, Any], path: Path | str = "export"
) -> tuple[RunInfo, list[BenchResult], list[Series], list[Figure]]:
    """The records of a checked export (see read_export)."""
    try:
        run = _record(RunInfo, data["run"], "run")
        if not isinstance(run.id, int) or not isinstance(run.selection, dict) or not isinstance(run.extra, dict):
            raise ValueError("run: id must be a number, selection and extra objects")
        benches = []
        for i, b in enumerate(data.get("benches", [])):
            tele = b.get("telemetry") if isinstance(b, dict) else None
            t = _record(Telemetry, tele, f"benches[{i}].telemetry") if tele else None
            benches.append(_record(BenchResult, {**b, "telemetry": t} if isinstance(b, dict) else b, f"benches[{i}]"))
        series = []
        for i, s in enumerate(data.get("series", [])):
            if not isinstance(s, dict) or not isinstance(s.get("points"), list):
                raise ValueError(f"series[{i}] needs a list of points")
            pts = [_record(Point, p, f"series[{i}].points[{j}]") for j, p in enumerate(s["points"])]
            for j, pt in enumerate(pts):
                if not all(_is_num(v) for v in (pt.x, pt.y)) or not isinstance(pt.extra, dict):
                    raise ValueError(f"series[{i}].points[{j}] needs numbers x and y")
            one = _record(Series, {**s, "points": pts}, f"series[{i}]")
            _need_str(one, ("suite", "bench", "name"), f"series[{i}]")
            series.append(one)
        figures = []
        for i, f in enumerate(data.get("figures", [])):
            if not isinstance(f, dict):
                raise ValueError(f"figures[{i}] must be an object")
            spread = _number_pair(f.get("spread"), f"figures[{i}].spread")
            one = _record(Figure, {**f, "spread": spread}, f"figures[{i}]")
            _need_str(one, ("suite", "bench", "key"), f"figures[{i}]")
            if not (_is_num(one.value) or isinstance(one.value, str)):
                raise ValueError(f"figures[{i}].value must be a number or a text")
            figures.append(one)
    except (ValueError, KeyError) as e:
        raise _bad(Path(path), str(e).strip("'\"")) from None
    return run, benches, series, figures


def from_export(path: Path | str) -> tuple[RunInfo, list[BenchResult], list[Series], list[Figure]]:
    return records_from_export(read_export(path), path)


# ---- output files ----------------------------------------------------------------------------
def check_output_file(path: Path) -> Path:
    """An output file path that can be written: not a directory, in a directory that exists.
    Called before any work, so a bad path costs nothing and leaves nothing behind."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise GpuDissectError(f"{p} is a directory; name a file to write")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise GpuDissectError(f"directory {parent} does not exist (for {p})")
    if not parent.is_dir():
        raise GpuDissectError(f"{parent} is not a directory (for {p})")
    if not os.access(parent, os.W_OK):
        raise GpuDissectError(f"directory {parent} is not writable (for {p})")
    return p


def atomic_write(path: Path, write: Callable[[IO[Any]], None], binary: bool = False) -> None:
    """Write through a temporary file in the same directory, renamed over `path` only when `write`
    finished: an error never leaves a truncated or empty file where a good one was."""
    p = check_output_file(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"newline": "", "encoding": "utf-8"})) as fh:
            write(fh)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
