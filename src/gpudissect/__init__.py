"""gpudissect: dissect NVIDIA GPUs by microbenchmarking.

`gpudissect.open(db=None)` gives the stored runs to Python (see gpudissect.api)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .version import __version__

if TYPE_CHECKING:
    from pathlib import Path

    from .api import Runs


def open(db: str | Path | None = None) -> Runs:
    """The runs of a store (read-only) or of an export JSON; see gpudissect.api."""
    from .api import open as _open

    return _open(db)


__all__ = ["__version__", "open"]
