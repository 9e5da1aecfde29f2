"""`gpudissect isa ...` commands and the control-field listing behind `gpudissect sass BENCH --control`."""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import GpuDissectError
from .exportschema import dumps

isa_app = typer.Typer(no_args_is_help=True, help="The instruction level: encoding and control codes of SASS.")


@isa_app.callback()
def _isa() -> None:
    """The instruction level: encoding and control codes of SASS."""


def _arch_raw(arch: str) -> str:
    from . import sasscheck

    sasscheck.check_arch(arch)
    return "SM" + arch.removeprefix("sm_")


@isa_app.command()
def encoding(
    opcode: Annotated[
        list[str] | None, typer.Option("--opcode", help="base opcode, e.g. FFMA (repeatable); default all")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text (a plain table per opcode), md or json")] = "text",
    arch: Annotated[str, typer.Option("--arch", help="target to compile for")] = "sm_90a",
) -> None:
    """Discover the bit fields of real instruction words from our cubins by flipping bits against nvdisasm."""
    if fmt not in ("text", "md", "json"):
        raise GpuDissectError(f"--format must be text, md or json, not {fmt!r}")
    raw = _arch_raw(arch)
    from .bench.isa.corpus import project_functions
    from .cli_progress import progress_line
    from .sass.encoding import discover_many, fields_table, representative_words

    words = representative_words(project_functions(arch, progress_line))
    if opcode:
        want = [o.upper() for o in opcode]
        missing = [o for o in want if o not in words]
        if missing:
            raise GpuDissectError(f"opcode(s) {', '.join(missing)} not in our cubins; found: {', '.join(words)}")
        words = {o: words[o] for o in want}
    encs = discover_many(words, raw)
    from .sass.control import default_layout
    from .sass.encoding import annotate

    lay = default_layout(arch)
    encs = {n: annotate(e, lay.fields, lay.unused) for n, e in encs.items()}
    if fmt == "json":
        typer.echo(
            dumps(
                {n: {"word": f"{e.word:032x}", "text": e.text, "fields": fields_table(e)} for n, e in encs.items()},
                indent=1,
            )
        )
    else:
        _print_fields(encs, fmt)
    from . import cli_output

    lost = [o for o in words if o not in encs]  # the disassembler printed nothing for their word
    cli_output.done(
        f"isa encoding: {len(encs)} of {len(words)} opcodes decoded ({arch}); not disassembled: {', '.join(lost)}"
        if lost
        else f"isa encoding: {cli_output.count(len(encs), 'opcode')}, every one decoded ({arch})"
    )


def _print_fields(encs: dict, fmt: str) -> None:  # type: ignore[type-arg]
    """Per opcode its instruction word and field table: Markdown, or a table (cli_output: rich on a terminal,
    plain columns when redirected; disassembler text made inert)."""
    from . import cli_output
    from .report.tables import md_table
    from .sass.encoding import fields_table

    head = ["bits", "width", "field", "holds", "one flip prints"]
    for n, e in encs.items():
        rows = [
            [str(r["bits"]), str(r["width"]), str(r["field"]), str(r["holds"]), str(r["example"])]
            for r in fields_table(e)
        ]
        if fmt == "md":
            typer.echo(f"### {n}\n\n`{e.text}` = `0x{e.word:032x}`\n")
            typer.echo(md_table(head, rows) + "\n")
            continue
        cli_output.heading(f"{n}: {e.text} = 0x{e.word:032x}")
        cli_output.table(head, rows, right=(1,), whole=(4,))  # an instruction is never wrapped
        cli_output.blank()


def control_listing(bench_name: str, arch: str = "sm_90a") -> str:
    """Every instruction of a benchmark's kernels with its decoded control fields beside it:
    W wait mask (barriers 0..5), R read barrier, B write barrier, Y yield, S stall cycles, U reuse flags."""
    raw = _arch_raw(arch)
    from .bench.registry import select
    from .device.compiler import compile_spec
    from .sass.control import default_layout
    from .sass.corpus import cubin_functions

    b = select(None, [bench_name])[0]
    if not b.kernels:
        return f"{b.key} has no kernels of its own: there is no SASS of ours to show\n"
    layout = default_layout(arch)
    lines = [
        f"control fields ({arch}): " + ", ".join(f"{n} bits {lo + w - 1}:{lo}" for n, (lo, w) in layout.fields.items()),
        "W: wait mask, barriers 0..5 | R: read barrier | B: write barrier | Y: yield | "
        "S: stall cycles | U: reuse slots",
    ]
    for spec in b.kernels:
        for fn in cubin_functions(spec.name, compile_spec(spec, arch), raw):
            lines.append(f"--- {spec.name}: {fn.name}")
            for i, (t, w) in enumerate(zip(fn.texts, fn.words)):
                text = t if t is not None else "(not disassembled)"
                lines.append(f"/*{16 * i:04x}*/ {text:<60} {layout.decode(w).short()}")
    return "\n".join(lines) + "\n"
