"""JSON exports in and out: read one back (bounded, parsed, then checked against the one schema of
exportschema.py, so a broken or hostile file is one clear error), turn it into the records a report or an
import needs, and write output files atomically. Non-finite numbers follow exportschema's rule: written
as null, read back as NaN where a number is required and as absent where it is optional."""

from __future__ import annotations

import gzip
import json
import os
import stat
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .errors import GpuDissectError
from .exportschema import EXPORT_FORMAT, EXPORT_VERSION, ExportError, bulk, parse
from .models import BenchResult, Figure, RunInfo, Series

GZIP_MAGIC = b"\x1f\x8b"
MAX_EXPORT_BYTES = 512 << 20  # uncompressed; the largest committed export is ~20 MiB
_CHUNK = 1 << 20


def gzip_bytes(text: str) -> bytes:
    """gzip of `text` with no timestamp or name, so the same export compresses to the same bytes."""
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def _bad(path: Path, why: str) -> GpuDissectError:
    return GpuDissectError(f"{path} is not a usable gpudissect export: {why}")


def _too_big(p: Path) -> GpuDissectError:
    return _bad(p, f"larger than {MAX_EXPORT_BYTES >> 20} MiB uncompressed (no export is that big)")


def _open_regular(p: Path) -> IO[bytes]:
    """`p` opened for reading if it is a regular file. O_NONBLOCK: opening a FIFO must not wait for a
    writer; it is refused like /dev/zero, a socket or a directory, before a byte is read."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise GpuDissectError(f"no such file: {p}") from None
    except IsADirectoryError:
        raise GpuDissectError(f"{p} is a directory, not an export file") from None
    except OSError as e:
        raise GpuDissectError(f"cannot read {p}: {e.strerror or e}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise GpuDissectError(f"{p} is a directory, not an export file")
        raise GpuDissectError(f"{p} is not a regular file (a device, FIFO or socket), not an export file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _read_bounded(p: Path) -> bytearray:
    """The file's bytes, gunzipped when compressed, refused as soon as they pass MAX_EXPORT_BYTES:
    a gzip bomb is stopped after the limit, not after it filled memory."""
    with _open_regular(p) as fh:
        try:
            if os.fstat(fh.fileno()).st_size > MAX_EXPORT_BYTES:
                raise _too_big(p)
            packed = fh.read(2) == GZIP_MAGIC  # `gpudissect export -o run.json.gz`, and the committed results
            fh.seek(0)
            src: Any = gzip.GzipFile(fileobj=fh, mode="rb") if packed else fh
            out = bytearray()
            while chunk := src.read(_CHUNK):
                out += chunk
                if len(out) > MAX_EXPORT_BYTES:
                    raise _too_big(p)
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise _bad(p, f"a damaged or truncated gzip file ({e})") from None
        except OSError as e:
            raise GpuDissectError(f"cannot read {p}: {e.strerror or e}") from None
    return out


def export_text(path: Path | str) -> str:
    """An export file's JSON text, plain or gzip-compressed; a missing, unreadable, non-regular, too
    large, damaged-gzip or binary file raises GpuDissectError with one line saying which."""
    p = Path(path).expanduser()
    raw = _read_bounded(p)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(p, "binary, not JSON text") from None


def read_export(path: Path | str) -> dict[str, Any]:
    """The export's JSON object, after checking it is one: missing, empty, binary, truncated or
    wrongly shaped files raise GpuDissectError with one line saying which. Every field is checked by
    records_from_export (the schema), which every reader goes through."""
    p = Path(path).expanduser()
    text = export_text(p)
    if not text.strip():
        raise _bad(p, "the file is empty")
    try:
        with bulk():
            data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _bad(p, f"invalid JSON at line {e.lineno} column {e.colno} ({e.msg}); truncated?") from None
    except RecursionError:
        raise _bad(p, "JSON nested too deeply") from None
    except ValueError as e:  # Python's limit on the digits of an integer (4300)
        raise _bad(p, f"a number too long to read ({str(e).split(':')[0]})") from None
    del text  # the parsed objects replace it: one copy of a large export in memory, not two
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise _bad(p, f'no "format": "{EXPORT_FORMAT}" marker (written by `gpudissect export`?)')
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version > EXPORT_VERSION:
        raise _bad(p, f"schema version {str(version)[:30]}; this gpudissect reads up to {EXPORT_VERSION}")
    if not isinstance(data.get("run"), dict):
        raise _bad(p, '"run" must be an object')
    for part in ("benches", "figures", "series"):
        if not isinstance(data.get(part, []), list):
            raise _bad(p, f'"{part}" must be a list')
    return data


def records_from_export(
    data: dict[str, Any], path: Path | str = "export"
) -> tuple[RunInfo, list[BenchResult], list[Series], list[Figure]]:
    """The records of an export, every field checked against exportschema's schema first: the first bad
    one is refused with its JSON path, e.g. `figures[12].method: must be a text, not null`."""
    try:
        return parse(data)
    except ExportError as e:
        raise _bad(Path(path), str(e)) from None


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
