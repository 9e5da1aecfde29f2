"""The HTML report of the committed H100 quick run (issue 25): the front page is there, every table sits in its
own scrolling box, every image is a file beside the report; and, where a chromium is installed, in a real
headless browser at 1280 px: every image loads, nothing runs off the right edge, the front page renders."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

VIEWPORT = 1280


def test_front_page_comes_first_and_says_what_it_measured(h100_report: Path) -> None:
    page = h100_report.read_text()
    order = [page.index(f'id="{h}"') for h in ("at-a-glance", "memory-hierarchy", "compute-ceilings", "attention")]
    assert order == sorted(order) and order[-1] < page.index('id="suite-memory"')
    suites = re.findall(r'<h2 id="suite-([a-z]+)">', page)
    assert suites == ["memory", "cache", "atomics", "isa", "tensor", "numerics", "hopper", "gemm", "app", "link"]
    glance = page[page.index('id="at-a-glance"') : page.index('id="suite-memory"')]
    assert 'src="front_memory-hierarchy.png"' in glance and "Headline figures" in glance
    # the power cap is a normal condition, said once, not a problem beside the failed checks
    attention = glance[glance.index('id="attention"') :]
    problems = attention.split("Normal conditions")[0]
    assert 'class="alert"' not in problems and "sw_power_cap" not in problems  # this run has no real problem
    assert "sw_power_cap" in attention.split("Normal conditions")[1]
    assert "Skipped" in attention and "p2p_matrix" in attention  # skipped with its reason


def test_every_table_in_a_box_and_every_image_on_disk(h100_report: Path) -> None:
    page = h100_report.read_text()
    tables = page.count("<table>")
    assert tables > 50 and page.count('<div class="tbl"><table>') == tables
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert len(srcs) > 300
    missing = [s for s in srcs if not (h100_report.parent / html.unescape(s)).is_file()]
    assert not missing, missing[:5]
    # text findings are paragraphs, not a word-per-line table cell
    assert "<strong>mem.l2.far_copy_finding</strong>" in page
    assert not re.search(r"<td>mem\.l2\.far_copy_finding</td>", page)


_PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const glance = document.getElementById('at-a-glance');
  const r = {images: imgs.length,
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
    scrollWidth: document.scrollingElement.scrollWidth, innerWidth: window.innerWidth,
    front: !!glance && glance.getBoundingClientRect().height > 0,
    hierarchy: (document.querySelector('img[src="front_memory-hierarchy.png"]') || {}).naturalWidth || 0};
  const pre = document.createElement('pre'); pre.id = 'gd-probe'; pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def probe(page: Path, browser: str) -> dict:
    """Load a copy of `page` (images eager, so the load event waits for every one) with a script that reports
    what the browser laid out, and read the report back from the DOM chromium dumps."""
    copy = page.with_name("gd-probe.html")
    text = page.read_text().replace(' loading="lazy"', "")
    copy.write_text(text.replace("</body>", _PROBE + "</body>"))
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    cmd += [f"--window-size={VIEWPORT},1000", "--virtual-time-budget=30000", "--dump-dom", copy.as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=180).stdout
    m = re.search(r'<pre id="gd-probe">([^<]*)</pre>', dom)
    assert m, f"the probe did not report: {dom[-500:]}"
    return json.loads(html.unescape(m.group(1)))


needs_browser = pytest.mark.skipif(
    chromium() is None, reason="no chromium here (Debian: apt-get install chromium): the browser checks need one"
)


@needs_browser
def test_the_probe_sees_an_overflow(tmp_path: Path) -> None:
    """The check below can fail: a page wider than the window is reported as such."""
    page = tmp_path / "wide.html"
    page.write_text('<!DOCTYPE html><html><body><div style="width:3000px">x</div></body></html>')
    assert probe(page, chromium())["scrollWidth"] > VIEWPORT  # type: ignore[arg-type]


@needs_browser
def test_h100_report_in_headless_chromium(h100_report: Path) -> None:
    r = probe(h100_report, chromium())  # type: ignore[arg-type]
    assert r["images"] > 300 and not r["broken"], r["broken"][:5]
    assert r["innerWidth"] == VIEWPORT and r["scrollWidth"] <= VIEWPORT, r
    assert r["front"] and r["hierarchy"] > 0
