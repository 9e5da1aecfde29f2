"""docs/results/independent.md is what dev/docs_independent.py writes from the committed summary and the
independent records today, and it compares every record whose key the summary has."""

from __future__ import annotations


def test_the_independent_page_is_current():
    from dev.docs_independent import OUT, records, render

    text = render()
    assert OUT.read_text() == text, "run: python3 dev/docs_independent.py"
    keys = {r.key for r in records()}
    missing = text.split("Not in our summary", 1)[1] if "Not in our summary" in text else ""
    # every independent record is on the page: a row beside our figure, or named as one we have no figure of
    assert keys and all(f"| `{k}` |" in text or f"`{k}`" in missing for k in keys)
    assert f"{sum(f'| `{k}` |' in text for k in keys)} figures compared" in text
