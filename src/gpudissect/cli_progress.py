"""Signs of life on stderr for the CLI's long steps (compiling kernels), shared by its command modules."""

from __future__ import annotations

import sys


def progress_line(done: int, total: int, what: str) -> None:
    """A sign of life on stderr while kernels compile (a line per kernel; \\r on a terminal)."""
    if sys.stderr.isatty():
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r\033[Kcompiled {done}/{total}: {what}{end}")
    else:
        sys.stderr.write(f"compiled {done}/{total}: {what}\n")
    sys.stderr.flush()
