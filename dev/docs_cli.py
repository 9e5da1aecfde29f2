"""The CLI reference (docs/cli.md), generated from the CLI itself: walks the typer app `gpudissect.cli.app`
and writes every command and group with its usage, help text, arguments and options, as `--help` shows them.

    python3 dev/docs_cli.py            # write docs/cli.md
    python3 dev/docs_cli.py --check    # exit 1 when docs/cli.md differs from what the CLI says today

tests/docs/test_docs_site.py checks that the committed docs/cli.md is what this writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cli.md"
PROG = "gpudissect"


def _md(text: str) -> str:
    """Help text as Markdown: code spans kept; outside them, characters Markdown or HTML would read escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
        else:
            for ch, esc in (("\\", "\\\\"), ("<", "&lt;"), (">", "&gt;"), ("*", "\\*"), ("_", "\\_"), ("|", "\\|")):
                part = part.replace(ch, esc)
            out.append(part)
    return "".join(out)


def _paragraphs(help_text: str) -> str:
    """click's help: paragraphs separated by blank lines, lines inside a paragraph rewrapped; a `\\b` paragraph
    keeps its lines (click's marker for preformatted text)."""
    out = []
    for para in re.split(r"\n\s*\n", help_text.strip()):
        if para.startswith("\b"):
            out.append("```text\n" + para.lstrip("\b").strip("\n") + "\n```")
        else:
            out.append(_md(" ".join(line.strip() for line in para.splitlines())))
    return "\n\n".join(out)


def _params(cmd: Any, ctx: Any) -> list[str]:
    lines = []
    args = [p for p in cmd.params if p.param_type_name == "argument"]
    opts = [p for p in cmd.params if p.param_type_name == "option" and not getattr(p, "hidden", False)]
    for title, params in (("Arguments", args), ("Options", opts)):
        records = [r for r in (p.get_help_record(ctx) for p in params) if r]
        if not records:
            continue
        lines += [f"**{title}**", ""]
        for name, help_text in records:
            help_md = _md(" ".join(help_text.split())) if help_text else ""
            lines.append(f"- `{name}`" + (f": {help_md}" if help_md else ""))
        lines.append("")
    return lines


def _walk(cmd: Any, path: list[str], parent_ctx: Any, out: list[str]) -> None:
    ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent_ctx)
    name = " ".join(path)
    level = "#" * min(len(path) + 1, 4)
    out += [f"{level} `{name}`", ""]
    if cmd.help:
        out += [_paragraphs(cmd.help), ""]
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out += ["```text", f"{name} {usage}".rstrip(), "```", ""]
    out += _params(cmd, ctx)
    subs = getattr(cmd, "commands", None)
    if subs:
        for sub_name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, sub_name)
            if sub is not None and not getattr(sub, "hidden", False):
                _walk(sub, [*path, sub_name], ctx, out)


def render() -> str:
    import typer.main

    from gpudissect.cli import app

    root = typer.main.get_command(app)
    out = [
        "# CLI reference",
        "",
        "Generated from the CLI itself by `python3 dev/docs_cli.py` (a test checks that this page is what it",
        "writes): every command with its usage, arguments and options, as `gpudissect COMMAND --help` prints",
        "them. Every input error is one line on stderr and exit code 2.",
        "",
    ]
    ctx = root.context_class(root, info_name=PROG)
    subs = [root.get_command(ctx, n) for n in root.list_commands(ctx)]
    out += ["Commands: " + ", ".join(f"[`{c.name}`](#{PROG}-{c.name})" for c in subs if c is not None), ""]
    _walk(root, [PROG], None, out)
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> None:
    text = render()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            sys.exit(f"{OUT.relative_to(ROOT)} is out of date: run python3 dev/docs_cli.py")
        return
    OUT.write_text(text)


if __name__ == "__main__":
    main()
