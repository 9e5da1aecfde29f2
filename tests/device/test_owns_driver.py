"""The device layer owns every CUDA driver call: outside src/gpudissect/device/, no code imports
cuda.bindings or reaches a driver module (`_drv`, `drv.`). Read from the sources, comments and string
literals left out (prose may name the binding)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from helpers import ROOT

SRC = ROOT / "src" / "gpudissect"
DEVICE = SRC / "device"
DRIVER_USE = re.compile(r"cuda\.bindings|\b_drv\b|\bdrv\.")
# f-string text is a token of its own from Python 3.12
_PROSE = {tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}


def code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every line with its comments and string literals blanked out."""
    lines = [list(line) for line in text.splitlines()]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in _PROSE:
            (r0, c0), (r1, c1) = tok.start, tok.end
            for r in range(r0, r1 + 1):
                row = lines[r - 1]
                lo, hi = (c0 if r == r0 else 0), (c1 if r == r1 else len(row))
                row[lo:hi] = " " * (hi - lo)
    return [(n, "".join(row)) for n, row in enumerate(lines, 1)]


def driver_uses(path: Path) -> list[str]:
    return [
        f"{path.relative_to(SRC)}:{n}: {code}" for n, code in code_lines(path.read_text()) if DRIVER_USE.search(code)
    ]


def test_no_driver_call_outside_the_device_layer():
    outside = sorted(p for p in SRC.rglob("*.py") if DEVICE not in p.parents)
    found = [use for p in outside for use in driver_uses(p)]
    assert not found, "driver calls belong in src/gpudissect/device/:\n" + "\n".join(found)


def test_the_scan_sees_driver_code_and_skips_prose():
    code = "from cuda.bindings import driver as drv\nx = dev._drv.cuInit(0)  # drv.cuInit\ny = drv.cuInit(0)\n"
    prose = '"""made current through cuda.bindings"""\n# dev._drv\ns = f"{n} drv.x"\n'
    assert [n for n, c in code_lines(code) if DRIVER_USE.search(c)] == [1, 2, 3]
    assert not [n for n, c in code_lines(prose) if DRIVER_USE.search(c)]
    # and the device layer itself does use the driver (the pattern is not vacuous)
    assert driver_uses(DEVICE / "cuda.py") and driver_uses(DEVICE / "driver.py")
