"""The `gpudissect` command's entry point: the command line, or, where an installed dependency it imports is
missing (a source tree run without `pip install`), one line that names it and exit code 2, not a traceback."""

from __future__ import annotations

import sys

# the packages gpudissect.cli imports at start (pyproject's dependencies); others fail later, each with its own line
REQUIRED = ("typer", "rich", "pydantic")


def main() -> None:
    try:
        from .cli import main as cli_main
    except ModuleNotFoundError as e:
        missing = (e.name or "").split(".")[0]
        if missing not in REQUIRED:
            raise
        print(
            f"error: gpudissect needs the package {missing!r}, which is not installed: install gpudissect with pip "
            f"(python3 -m pip install -e . in a source tree) or add {missing} to this environment",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    cli_main()
