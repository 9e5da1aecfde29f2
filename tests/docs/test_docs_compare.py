"""The docs' H100 beside H200 page is what the report's comparison gives from the committed exports today."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_h100_h200_page_is_generated_from_the_committed_runs():
    from dev.docs_compare import OUT, render

    text = render()
    assert OUT.read_text() == text, "run: python3 dev/docs_compare.py"
    assert "| mem.bw.dram_gbps |" in text and "H200 (h200-x2/fleet-gpu0)" in text
