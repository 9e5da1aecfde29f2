"""docs/results/independent.md is what dev/docs_independent.py writes from the committed summary and the
independent records today, and it compares every record whose key the summary has."""

from __future__ import annotations

import json


def test_the_independent_page_is_current():
    from dev.docs_independent import OUT, SUMMARY, records, render

    text = render()
    assert OUT.read_text() == text, "run: python3 dev/docs_independent.py"
    summary = json.loads(SUMMARY.read_text())
    recs = records()
    keys = {r.key for r in recs}
    missing = text.split("Not in our summary", 1)[1] if "Not in our summary" in text else ""
    # every independent record is on the page: a row beside our figure, or named as one we have no figure of
    assert keys and all(f"| `{k}` |" in text or f"`{k}`" in missing for k in keys)
    compared = [r for r in recs if isinstance(summary.get(r.key), (int, float))]
    assert f"{len(compared)} comparisons of {len({r.key for r in compared})} of our figures" in text


def test_each_source_is_a_column_and_a_section():
    from dev.docs_independent import records, render

    from gpudissect.reference.public_runs import SOURCES

    text = render()
    head, by_figure = text.split("## By figure", 1)
    columns = by_figure.split("\n| --- |", 1)[0]
    for s in dict.fromkeys(r.paper for r in records()):
        assert f"`{s}`" in columns and f"\n## `{s}`\n" in text and SOURCES[s].url in head
