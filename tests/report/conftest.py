"""The HTML report of the committed H100 quick run (every suite), rendered once per test run: under
pytest-xdist the workers share the session's temporary directory, and a lock lets one of them render it
while the others wait and read the same files."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from helpers import ROOT

H100_QUICK = ROOT / "results" / "h100-sxm5-80gb" / "runs" / "quick-i" / "export.json.gz"


def render_h100_report() -> Path:
    from gpudissect.exportio import from_export
    from gpudissect.report.annotate import annotations_for
    from gpudissect.report.html import render_html

    out = Path(os.environ["GPUDISSECT_TEST_TMP"]) / "h100-quick-report"
    done = out / "rendered"
    with open(Path(os.environ["GPUDISSECT_TEST_TMP"]) / "h100-quick-report.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            run, benches, series, figures = from_export(H100_QUICK)
            render_html(run, benches, series, figures, None, out, annotations=annotations_for(series, figures))
            done.write_text("ok\n")
    return out / "report.html"


@pytest.fixture(scope="session")
def h100_report() -> Path:
    if not H100_QUICK.exists():
        pytest.skip(f"{H100_QUICK.relative_to(ROOT)} is not in this checkout")
    return render_h100_report()
