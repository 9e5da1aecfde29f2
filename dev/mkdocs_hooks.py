"""mkdocs hooks (mkdocs.yml `hooks:`): the docs link to files of the repository's results/ (the plots of the
committed runs, the deviation tables) by paths relative to the page, as GitHub and an editor show them. The
site build copies exactly the files the pages link to into the site (under _repo/) and rewrites those links;
a link into results/ whose file is missing stays broken, so `mkdocs build --strict` fails on it."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, InclusionLevel

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "_repo"  # the site folder that holds the repository files the docs link to
SHARED = ("results/",)  # the repository folders the docs may link into
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def repo_target(page_src_uri: str, url: str) -> str | None:
    """The repository path a page's relative link points to, when it is in one of SHARED; else None."""
    if "://" in url or url.startswith(("#", "/", "mailto:")):
        return None
    path = url.partition("#")[0]
    target = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_src_uri), path))
    return target if target.startswith(SHARED) else None


def on_files(files, config):
    wanted = set()
    for f in files.documentation_pages():
        for m in _LINK.finditer(Path(f.abs_src_path).read_text(encoding="utf-8")):
            t = repo_target(f.src_uri, m.group(2))
            if t and (ROOT / t).is_file():
                wanted.add(t)
    for t in sorted(wanted):
        files.append(
            File.generated(config, f"{PREFIX}/{t}", abs_src_path=str(ROOT / t), inclusion=InclusionLevel.NOT_IN_NAV)
        )
    return files


def on_page_markdown(markdown, page, config, files):
    here = posixpath.dirname(page.file.src_uri) or "."

    def rewrite(m: re.Match) -> str:
        t = repo_target(page.file.src_uri, m.group(2))
        if t is None:
            return m.group(0)
        frag = m.group(2).partition("#")[2]
        return m.group(1) + posixpath.relpath(f"{PREFIX}/{t}", here) + (f"#{frag}" if frag else "") + m.group(3)

    return _LINK.sub(rewrite, markdown)
