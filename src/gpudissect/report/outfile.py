"""Writing one output file (`export -o`): what the path is decides how it is written.

- "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: that file descriptor of this process, as
  the shell set it up (a pipe, a file opened for appending): written, never reopened or replaced.
- a symlink: followed; the rules below apply to its final target, and the link stays a link.
- a regular file or a new path: written atomically (a temporary file beside it, renamed over it once
  complete), so a failure never leaves a truncated file where a good one was.
- a device node or a FIFO: opened and written through; there is nothing to replace, and an error
  (ENOSPC from /dev/full) is reported.
- a directory or a socket: refused before any work.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gpudissect.errors import GpuDissectError

_FD_PATH = re.compile(r"^/(?:dev/fd|proc/self/fd|proc/(\d+)/fd)/(\d+)$")
_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_MAX_LINKS = 40  # as the kernel's limit: a longer chain is a loop


def expand(path: Path | str) -> Path:
    """`~` and `~user` expanded; an unknown user or a NUL byte is one clear error (Path.expanduser raises
    RuntimeError, the OS ValueError)."""
    text = os.fspath(path)
    if "\0" in text:  # no path holds one; the OS calls (even ~user's lookup) raise ValueError on it
        raise GpuDissectError(f"{text!r} is not a usable path: it holds a NUL byte")
    out = os.path.expanduser(text)
    if text.startswith("~") and out == text:
        user = text[1:].split("/", 1)[0]
        raise GpuDissectError(f"cannot expand {text}: " + (f"no user {user!r}" if user else "no home directory"))
    return Path(out)


@dataclass(frozen=True)
class Output:
    """Where an output goes: `fd` (a descriptor of ours), else `path`, atomically or (`through`) written into."""

    shown: str  # as the user gave it, for messages
    path: Path | None = None
    fd: int | None = None
    through: bool = False

    @property
    def is_file(self) -> bool:
        """Whether the output is a file of its own (worth a line saying it was written)."""
        return self.fd is None


def _fd_of(path: str) -> int | None:
    if path in _STD:
        return _STD[path]
    m = _FD_PATH.match(path)
    if m and (m.group(1) is None or int(m.group(1)) == os.getpid()):
        return int(m.group(2))
    return None


def _follow(path: Path) -> tuple[str, int | None]:
    """The path after its symlinks, or the file descriptor a link chain names (/dev/stdout ->
    /proc/self/fd/1 -> pipe:[...] must stay descriptor 1, not become a file name)."""
    cur = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        fd = _fd_of(cur)
        if fd is not None:
            return cur, fd
        try:
            link = os.readlink(cur)
        except OSError:  # not a link, or not there (yet)
            return os.path.realpath(cur), None
        cur = os.path.normpath(os.path.join(os.path.dirname(cur), link))
    raise GpuDissectError(f"{path}: too many levels of symbolic links")


def plan_output(path: Path | str) -> Output:
    """Check an output path before any work, so a bad one costs nothing and leaves nothing behind."""
    shown = os.fspath(path)
    if shown == "-":
        return Output("standard output", fd=1)
    p = expand(path)
    target, fd = _follow(p)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError as e:
            raise GpuDissectError(f"cannot write {shown}: file descriptor {fd}: {e.strerror}") from None
        return Output(shown, fd=fd)
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise GpuDissectError(f"cannot write {shown}: a part of the path is not a directory") from None
    except OSError as e:
        raise GpuDissectError(f"cannot write {shown}: {e.strerror}") from None
    where = Path(target)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise GpuDissectError(f"{shown} is a directory; name a file to write")
    if st is not None and stat.S_ISSOCK(st.st_mode):
        raise GpuDissectError(f"{shown} is a socket; name a file, a FIFO or a device to write")
    if st is not None and not stat.S_ISREG(st.st_mode):  # a device node or a FIFO: written into
        if not os.access(where, os.W_OK):
            raise GpuDissectError(f"cannot write {shown}: permission denied")
        return Output(shown, where, through=True)
    parent = where.parent
    if not parent.exists():
        raise GpuDissectError(f"directory {parent} does not exist (for {shown})")
    if not parent.is_dir():
        raise GpuDissectError(f"{parent} is not a directory (for {shown})")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise GpuDissectError(f"directory {parent} is not writable (for {shown})")
    return Output(shown, where)


def write_output(out: Output, write: Callable[[IO[Any]], None], binary: bool = False) -> None:
    """Call write(fh) with the output open as `out` says; an OSError (disk full, a closed pipe's
    reader aside) becomes one GpuDissectError naming the output."""
    try:
        if out.fd is not None:
            _write_fd(out.fd, write, binary)
        elif out.through:
            _write_through(out.path, write, binary)  # type: ignore[arg-type]
        else:
            _write_atomic(out.path, write, binary)  # type: ignore[arg-type]
    except BrokenPipeError:
        raise  # the reader went away (`| head`): the CLI ends quietly, as other tools do
    except OSError as e:
        raise GpuDissectError(f"cannot write {out.shown}: {e.strerror or e}") from None


def _mode(binary: bool) -> dict[str, Any]:
    return {"mode": "wb"} if binary else {"mode": "w", "encoding": "utf-8", "newline": ""}


def _write_fd(fd: int, write: Callable[[IO[Any]], None], binary: bool) -> None:
    std = {1: sys.stdout, 2: sys.stderr}.get(fd)
    if std is not None:  # through Python's own stream: ordered with everything else printed there
        fh = std.buffer if binary else std
        write(fh)
        fh.flush()
        return
    with os.fdopen(os.dup(fd), **_mode(binary)) as fh:
        write(fh)


def _write_through(path: Path, write: Callable[[IO[Any]], None], binary: bool) -> None:
    # no O_CREAT (it exists), no O_TRUNC (a device or FIFO has nothing to truncate); a FIFO waits for its reader
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, **_mode(binary)) as fh:
        write(fh)


def _write_atomic(path: Path, write: Callable[[IO[Any]], None], binary: bool) -> None:
    try:
        mode = os.stat(path).st_mode & 0o777  # an existing file keeps its permissions
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp", dir=path.parent)  # < NAME_MAX
    try:
        with os.fdopen(fd, **_mode(binary)) as fh:
            write(fh)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
