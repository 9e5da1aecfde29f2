"""The docs (mkdocs, docs/) and the README: generated pages are what their generators write today, every
relative link lands on a file (and heading) of the checkout, the papers are cited by title, never by a path
of the workspace they were read in. `mkdocs build --strict` itself runs in CI after the tests (.ci/run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """Python-Markdown's toc slug (the docs site's anchors; GitHub's agree for the headings used here)."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[-\s]+", "-", text).strip("-")


def _anchors(md: Path) -> set[str]:
    text = md.read_text()
    found = {_slug(h) for h in re.findall(r"^#+ (.+?)(?: \{#[^}]+\})?$", text, flags=re.M)}
    return found | set(re.findall(r"\{#([^}]+)\}", text))


def test_the_cli_reference_is_what_the_cli_says_today():
    from dev.docs_cli import render

    assert (DOCS / "cli.md").read_text() == render(), "run: python3 dev/docs_cli.py"


def test_the_cli_reference_has_every_command():
    import typer.main

    from gpudissect.cli import app

    text = (DOCS / "cli.md").read_text()
    group = typer.main.get_command(app)
    for name in group.commands:
        assert f"`gpudissect {name}`" in text


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_lands_in_the_checkout(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    for m in _LINK.finditer(text):
        url = m.group(1) or m.group(2)
        if re.match(r"[a-z]+:", url) or url.startswith("#"):
            continue
        path, _, anchor = url.partition("#")
        target = (page.parent / path).resolve()
        assert target.is_file(), f"{page.name}: {url} does not exist"
        assert target.is_relative_to(ROOT), f"{page.name}: {url} leaves the checkout"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"{page.name}: {url}: no such heading"


def test_the_papers_are_cited_by_title_never_by_a_workspace_path():
    for page in [ROOT / "README.md", *PAGES]:
        text = page.read_text()
        assert "shared/seeds" not in text and "seed texts" not in text, page
    papers = (DOCS / "papers.md").read_text()
    for pid in ("000", "001", "002", "003", "004"):
        assert f"## `{pid}` {{#p{pid}}}" in papers
    for title in (
        "Dissecting the NVIDIA Hopper Architecture",
        "Dissecting Tensor Cores via Microbenchmarks",
        "Dissecting the NVIDIA Volta GPU Architecture",
        "Benchmarking and Dissecting the Nvidia Hopper",
        "Demystifying Tensor Cores",
    ):
        assert title in papers and title in (ROOT / "README.md").read_text()


def test_the_suites_index_lists_every_benchmark_and_every_suite_has_a_page():
    from gpudissect.bench.registry import load_all

    suites: dict[str, set[str]] = {}
    for b in load_all().values():
        if b.suite not in ("fake", "fake_suite"):
            suites.setdefault(b.suite, set()).add(b.name)
    index = (DOCS / "suites" / "index.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| \[(\w+)\]\(\w+\.md\) \| (.*?) \|", index, flags=re.M)}
    assert set(rows) == set(suites)
    for suite, names in suites.items():
        assert set(re.findall(r"`(\w+)`", rows[suite])) == names, suite
        assert (DOCS / "suites" / f"{suite}.md").exists()
        assert f"suites/{suite}.md" in (ROOT / "mkdocs.yml").read_text()


def test_every_page_is_in_the_site_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in PAGES:
        assert str(page.relative_to(DOCS)) in nav, f"{page} is not in mkdocs.yml's nav"
