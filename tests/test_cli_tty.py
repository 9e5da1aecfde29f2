"""Issue 25 section 3: terminal output adapts to a TTY and is plain when redirected.

On a terminal (forced: cli_output.is_terminal and terminal_width patched, CliRunner's stdout is no TTY) the
commands print rich tables that fit the width and wrap long text with a hanging indent, never breaking a
word; redirected they print plain aligned text, never wrapped, without box characters or escape codes.
--format md and --json are the same bytes either way. `report`, `isa encoding`, `sass` and `sass --map` end
with one pass/fail line on stderr. Nothing here needs a GPU, NVRTC or a disassembler: fakes stand in."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from gpudissect import cli_output, sasscheck
from gpudissect.bench.registry import REGISTRY, Benchmark, KernelSpec
from gpudissect.cli import app
from gpudissect.models import BenchResult, Figure
from gpudissect.sass.disasm import SassCheck
from gpudissect.store import Store
from helpers import fill_store, force_terminal, make_run_info, table_cells

runner = CliRunner()
BOX = set("┏┓┗┛┃━│─┡┩╇┳┻┼└┘┌┐")
LONG_NOTE = "a note long enough to need wrapping on any terminal narrower than this sentence is, " * 2


def _tokens(out: str) -> set[str]:
    return set("".join(" " if c in BOX else c for c in out).split())


def assert_whole(out: str, *texts: str) -> None:
    """Every word of `texts` is a whole token of `out`: nothing was broken mid-word."""
    missing = {w for t in texts for w in t.split()} - _tokens(out)
    assert not missing, missing


def assert_terminal(out: str, width: int) -> None:
    assert BOX & set(out), "a rich table"
    for line in out.splitlines():
        assert len(line) <= width or len(line.split()) == 1, line


def assert_plain(out: str) -> None:
    assert not BOX & set(out) and "\x1b" not in out, out


def _both(monkeypatch, args: list[str], width: int = 100):
    """(redirected, terminal) results of one command."""
    plain = runner.invoke(app, args)
    with monkeypatch.context() as m:
        force_terminal(m, width)
        tty = runner.invoke(app, args)
    return plain, tty


def test_width_is_none_when_redirected(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert cli_output.width() is None and not cli_output.is_terminal()  # pytest's stdout is no terminal
    force_terminal(monkeypatch, 60)
    assert cli_output.width() == 60 and cli_output.wrap("x " * 40, 2, 4)[1].startswith("      x")


def test_fit_gives_short_columns_their_width_and_none_below_the_longest_words():
    assert cli_output._fit([2, 5], [4, 30], 40) == [4, 30]
    assert cli_output._fit([2, 5, 6], [4, 30, 40], 40) == [4, 17, 19]  # 27 spare: 2, then 12 and 13
    assert cli_output._fit([20, 25], [40, 30], 40) is None


def _labelled_store(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    s = Store(db)
    rid = s.create_run(replace(make_run_info(gpu="EVIL [bold red]markup[/] GPU"), label=LONG_NOTE.strip()))
    s.save_bench(BenchResult(rid, "memory", "tlb", "ok", "", "t0", "t1", 1.0), [], [])
    s.finish_run(rid, "ok")
    s.close()
    return db


def test_runs(tmp_path, monkeypatch):
    db = _labelled_store(tmp_path)
    plain, tty = _both(monkeypatch, ["runs", "--db", str(db)])
    assert plain.exit_code == tty.exit_code == 0
    assert_plain(plain.stdout)
    head, *rows = plain.stdout.splitlines()
    assert head.split()[:3] == ["ID", "LABEL", "GPU"] and len(rows) == 3  # one line a run, however long
    assert LONG_NOTE.strip() in rows[2] and "EVIL [bold red]markup[/] GPU" in rows[2]  # shown, not obeyed
    assert_terminal(tty.stdout, 100)
    assert_whole(tty.stdout, "NVIDIA H100 80GB HBM3", "EVIL [bold red]markup[/] GPU", LONG_NOTE)


def test_list_and_list_long(monkeypatch):
    plain, tty = _both(monkeypatch, ["list"], 100)
    assert_plain(plain.stdout)
    longest = max(REGISTRY.values(), key=lambda b: len(b.title))
    assert any(line.endswith(longest.title) for line in plain.stdout.splitlines())
    assert_terminal(tty.stdout, 100)
    assert_whole(tty.stdout, longest.title)
    assert any(table_cells(x)[:2] == [longest.suite, longest.name] for x in tty.stdout.splitlines())
    plain, tty = _both(monkeypatch, ["list", "pchase_latency"], 60)
    assert_plain(plain.stdout)
    stride = "--set pchase_latency.stride=128  bytes between chain elements (multiple of 8)"
    assert any(line.endswith(stride) for line in plain.stdout.splitlines())  # one line a field
    lines = tty.stdout.splitlines()
    assert max(map(len, lines)) <= 60 and stride not in tty.stdout
    i = next(i for i, x in enumerate(lines) if "pchase_latency.stride" in x)
    assert lines[i + 1].startswith(" " * 14) and lines[i + 1].strip()  # hanging indent under the label
    assert_whole(tty.stdout, stride)


def test_plan(monkeypatch):
    plain, tty = _both(monkeypatch, ["plan", "--arch", "sm_80"], 90)
    assert plain.exit_code == tty.exit_code == 0
    assert_plain(plain.stdout)
    tma = next(x for x in plain.stdout.splitlines() if x.startswith("hopper") and "tma_latency" in x)
    assert len(tma) > 90 and "(this GPU: sm_80" in tma  # the reason whole, on the benchmark's line
    assert plain.stdout.splitlines()[2].split() == ["SUITE", "BENCHMARK", "PLAN", "WHAT"]
    assert_terminal(tty.stdout, 90)
    assert_whole(tty.stdout, tma)
    assert tty.stdout.startswith("plan for sm_80") and "benchmarks run on sm_80" in tty.stdout.splitlines()[-1]


def test_compare_text_md_and_json(tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    fill_store(db, (33.0, 40.0), extra_keys_in_first=5)
    args = ["compare", "1", "2", "--db", str(db)]
    plain, tty = _both(monkeypatch, args)
    assert plain.exit_code == tty.exit_code == 1  # 33 -> 40 cycles: beyond 5%
    assert_plain(plain.stdout)
    lines = plain.stdout.splitlines()
    assert lines[0].startswith("Compare A = run 1 (NVIDIA H100 80GB HBM3, quick, 2026-01-01") and len(lines[0]) > 100
    assert "  figures in both runs: 5; changed beyond the threshold: 1" in lines
    l1 = next(x for x in lines if "mem.latency.l1_hit_cycles" in x)
    assert l1.split()[:5] == ["!", "mem.latency.l1_hit_cycles", "33", "40", "cycles"]
    assert "Only in A (5, run 1" in plain.stdout and "**" not in plain.stdout and "|" not in plain.stdout
    assert_terminal(tty.stdout, 100)
    assert_whole(tty.stdout, lines[0], l1)
    for fmt in ("md", "json"):  # machine-readable: the same bytes on a terminal and in a file
        plain, tty = _both(monkeypatch, [*args, "--format", fmt])
        assert plain.stdout == tty.stdout and plain.exit_code == tty.exit_code == 1
    assert json.loads(plain.stdout)["summary"]["changed"] == 1


def _group(db, values):
    s = Store(db)
    for uuid, v in values.items():
        rid = s.create_run(replace(make_run_info(), gpu_uuid=uuid, selection={"group": "g1"}))
        fig = Figure("memory", "bandwidth", "mem.bw.dram_gbps", v, "GB/s", "measured", "m", (v - 2, v + 2))
        s.save_bench(BenchResult(rid, "memory", "bandwidth", "ok", "", "s", "e", 1.0), [], [fig])
        s.finish_run(rid, "ok")
    s.close()


def test_compare_gpus(tmp_path, monkeypatch):
    db = tmp_path / "g.sqlite"
    _group(db, {"GPU-a": 3000.0, "GPU-b": 3001.0, "GPU-c": 2700.0, "GPU-d": 2999.0})
    args = ["compare", "--gpus", "g1", "--db", str(db)]
    plain, tty = _both(monkeypatch, args)
    assert plain.exit_code == tty.exit_code == 1
    assert_plain(plain.stdout)
    assert plain.stdout.splitlines()[0].endswith("GPU-c") and "mem.bw.dram_gbps  GB/s" in plain.stdout
    assert_terminal(tty.stdout, 100)
    assert_whole(tty.stdout, "mem.bw.dram_gbps 2700 (-10.0%) ! GPU-c")
    plain, tty = _both(monkeypatch, [*args, "--format", "md"])
    assert plain.stdout == tty.stdout and "| `mem.bw.dram_gbps` | GB/s |" in plain.stdout


def _doctor(monkeypatch, detail: str):
    from gpudissect import doctor
    from gpudissect.doctor import Check

    found = [Check("python", True, "3.11.7"), Check("GPU", False, LONG_NOTE), Check("cuobjdump", True, detail)]
    monkeypatch.setattr(doctor, "checks", lambda db: found)


def test_doctor_table_and_narrow_terminal(monkeypatch):
    _doctor(monkeypatch, "/usr/local/cuda/bin/cuobjdump")
    plain, tty = _both(monkeypatch, ["doctor"])
    assert plain.exit_code == tty.exit_code == 1 and "missing GPU" in plain.stderr
    assert_plain(plain.stdout)
    gpu = next(x for x in plain.stdout.splitlines() if x.startswith("GPU"))
    assert gpu.split()[:2] == ["GPU", "missing"] and gpu.endswith(LONG_NOTE.strip())
    assert_terminal(tty.stdout, 100)
    assert_whole(tty.stdout, LONG_NOTE)
    # a path wider than the terminal leaves room for no table: a block per component, the path whole
    path = "/very/long/site-packages/path/" + "x" * 60 + "/bin/cuobjdump"
    _doctor(monkeypatch, path)
    force_terminal(monkeypatch, 70)
    r = runner.invoke(app, ["doctor"])
    lines = r.stdout.splitlines()
    assert not BOX & set(r.stdout) and "cuobjdump  ok" in lines and "python  ok" in lines
    assert any(x.strip() == f"DETAIL:  {path}" for x in lines)
    assert all(len(x) <= 70 for x in lines if path not in x)


def _fake_encoding(monkeypatch):
    from gpudissect.bench.isa import corpus
    from gpudissect.sass import control, encoding

    enc = encoding.OpcodeEncoding("FFMA", 0x1234, "FFMA R3, R3, R0, R3 ;", [], [], [])
    rows = [
        {"bits": "71:64", "width": 8, "field": "op3", "holds": LONG_NOTE, "example": "FFMA R3, R3, R0, R2 ;"},
        {"bits": "5:1", "width": 5, "field": "opcode", "holds": "opcode", "example": "FADD R3, R3, R0 ;"},
    ]
    monkeypatch.setattr(corpus, "project_functions", lambda arch, progress: [])
    monkeypatch.setattr(encoding, "representative_words", lambda functions: {"FFMA": 0x1234, "ZZZ": 1})
    monkeypatch.setattr(encoding, "discover_many", lambda words, raw: {"FFMA": enc} if "FFMA" in words else {})
    monkeypatch.setattr(encoding, "annotate", lambda e, fields, unused: e)
    monkeypatch.setattr(control, "default_layout", lambda arch: SimpleNamespace(fields={}, unused=()))
    monkeypatch.setattr(encoding, "fields_table", lambda e: rows)


def test_isa_encoding_text_md_json_and_final_line(monkeypatch):
    _fake_encoding(monkeypatch)
    plain, tty = _both(monkeypatch, ["isa", "encoding"])
    assert plain.exit_code == tty.exit_code == 0
    assert_plain(plain.stdout)
    lines = plain.stdout.splitlines()
    assert lines[0] == "FFMA: FFMA R3, R3, R0, R3 ; = 0x00000000000000000000000000001234"
    assert lines[1].split() == ["bits", "width", "field", "holds", "one", "flip", "prints"]
    assert lines[2].startswith("71:64") and lines[2].endswith("FFMA R3, R3, R0, R2 ;")  # never wrapped
    assert plain.stderr == "isa encoding: 1 of 2 opcodes decoded (sm_90a); not disassembled: ZZZ\n"
    assert_terminal(tty.stdout, 100)
    assert_whole(tty.stdout, LONG_NOTE)
    assert any(table_cells(x)[-1:] == ["FFMA R3, R3, R0, R2 ;"] for x in tty.stdout.splitlines())  # one line
    for fmt in ("md", "json"):
        plain, tty = _both(monkeypatch, ["isa", "encoding", "--opcode", "ffma", "--format", fmt])
        assert plain.stdout == tty.stdout and plain.exit_code == 0
        assert plain.stderr == "isa encoding: 1 opcode, every one decoded (sm_90a)\n"
    assert json.loads(plain.stdout)["FFMA"]["fields"][1]["field"] == "opcode"


def test_sass_map_text_md_and_final_line(monkeypatch):
    from gpudissect.sassmap import Row, render_markdown

    rows = [
        Row(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            "tensor_mma.cu[f16_f32.m16n8k16]",
            "f",
            ("HMMA.16816.F32",),
        ),
        Row(
            "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
            "tensor_mma.cu[f16_f32.m8n8k4]",
            "f",
            ("FFMA",),
            LONG_NOTE,
        ),
    ]
    monkeypatch.setattr(sasscheck, "map_all", lambda arch, jobs, progress: rows)
    plain, tty = _both(monkeypatch, ["sass", "--map"], 200)
    assert plain.exit_code == tty.exit_code == 0
    assert_plain(plain.stdout)
    lines = plain.stdout.splitlines()
    assert lines[0].split()[:3] == ["PTX", "instruction", "SASS"] and len(lines) == 3
    assert lines[1].startswith("mma.sync.aligned.m16n8k16") and "HMMA.16816.F32" in lines[1]
    assert LONG_NOTE.strip() in lines[2] and "`" not in plain.stdout
    final = "sass --map: 2 tensor instructions from 2 kernel variants (sm_90a), 1 with a tensor-core SASS opcode\n"
    assert plain.stderr == tty.stderr == final
    assert_terminal(tty.stdout, 200)
    assert_whole(tty.stdout, lines[1], LONG_NOTE)
    plain, tty = _both(monkeypatch, ["sass", "--map", "--format", "md"])
    assert plain.stdout == tty.stdout == render_markdown(rows, "sm_90a")
    r = runner.invoke(app, ["sass", "shared_latency", "--format", "md"])
    assert r.exit_code == 2 and "--format is for --map" in r.stderr


SASS_LINE = "/*0100*/ LDS.U.128 R4, [R2+UR4+0x1000] ;  /* a comment that makes this line longer than eighty */"


@pytest.mark.parametrize("found", [True, False])
def test_sass_never_wraps_sass_and_ends_with_one_line(monkeypatch, found):
    spec = KernelSpec("memory_bank.cu", {"bank_u32": ["LDS"]}, {"A": 1}, label="memory_bank.cu[x]")
    b = Benchmark("fake", "fake_tty_sass", lambda ctx: None, "t", {}, [spec], needs_gpu=False)
    monkeypatch.setitem(REGISTRY, b.key, b)
    funcs = {"bank_u32": f"/*0000*/ MOV R1, c[0x0][0x28] ;\n{SASS_LINE}\n"}
    checks = [SassCheck("bank_u32", "LDS", found, SASS_LINE if found else "")]
    monkeypatch.setattr(sasscheck, "check_benchmark", lambda b, arch, jobs, progress: [(spec, funcs, checks)])
    plain, tty = _both(monkeypatch, ["sass", "fake_tty_sass", "--full"], 60)
    assert plain.exit_code == tty.exit_code == (0 if found else 1)
    assert_plain(plain.stdout)
    lines = plain.stdout.splitlines()
    assert lines[0] == "--- memory_bank.cu[x] (sm_90a)" and SASS_LINE in lines  # never wrapped
    what = f"  bank_u32: found /LDS/  {SASS_LINE}" if found else "  bank_u32: MISSING /LDS/"
    assert what in lines
    tl = tty.stdout.splitlines()
    # on a 60-column terminal too: it folds a SASS line itself, nothing is cut or wrapped by us
    assert SASS_LINE in tl and what in tl and tl[0].startswith("-") and len(tl[0]) == 60
    want = (
        "sass: 1 kernel of fake/fake_tty_sass, all required SASS present (sm_90a)\n"
        if found
        else "sass: 1 of 1 kernel of fake/fake_tty_sass missing required SASS (sm_90a)\n"
    )
    assert plain.stderr == tty.stderr == want


def test_report_ends_with_one_line(tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    r = runner.invoke(app, ["report", "1", "2", "--db", str(db), "--out", str(tmp_path / "cmp")])
    assert r.exit_code == 0 and r.stdout == ""
    assert r.stderr == f"report: 2 runs side by side -> {tmp_path / 'cmp' / 'comparison.md'}\n"


def test_gemm(monkeypatch):
    from gpudissect import cli_gemm
    from gpudissect.bench.gemm import cases
    from gpudissect.gemm.variants import RUNGS

    props = SimpleNamespace(L2_cache_size=50 << 20, multi_processor_count=132)
    monkeypatch.setattr(
        cli_gemm, "_torch", lambda: SimpleNamespace(cuda=SimpleNamespace(get_device_properties=lambda i: props))
    )

    class Case:
        def __init__(self, torch, rung, dtype, m, n, k, l2):
            self.rung, self.launches = rung or max(RUNGS), [SimpleNamespace(grid=(132, 1, 1))]  # 0: per shape

        def compare(self, pairs, ms, x):
            tel = {"ours": {"mhz": 1980.0, "watts": 650.0}}
            return SimpleNamespace(ok=True, why=LONG_NOTE.strip(), ours_ms=[1.0], cublas_ms=[1.1], ratio=1.1, tel=tel)

    monkeypatch.setattr(cases, "Case", Case)
    plain, tty = _both(monkeypatch, ["gemm", "--m", "4096", "--n", "4096", "--k", "4096"], 60)
    assert plain.exit_code == tty.exit_code == 0, plain.output
    assert f"check: ok: {LONG_NOTE.strip()}" in plain.stdout.splitlines()  # one line
    assert_plain(plain.stdout)
    assert max(len(x) for x in tty.stdout.splitlines()) <= 60
    assert_whole(tty.stdout, LONG_NOTE)
    assert "ours / cuBLAS 1.100" in tty.stdout

    # few rows: the small-M path the public matmul runs there, with its variant and schedule
    class SmallCase(Case):
        def __init__(self, torch, variant, dtype, m, n, k, l2):
            self.rung, self.variant = 20, variant
            self.launches = [SimpleNamespace(grid=(1, 4, 32))]

    monkeypatch.setattr(cases, "SmallCase", SmallCase)
    r = runner.invoke(app, ["gemm", "--m", "16", "--n", "4096", "--k", "4096"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "16 x 4096 x 4096 bf16, the small-M path (rung 20, small16c1) (the per-shape default)"
    assert lines[1].startswith("schedule: 1 token tile(s) of 16 x 32 weight tile(s) of 128 rows, K split 4 way(s)")
    r = runner.invoke(app, ["gemm", "--m", "16", "--n", "4096", "--k", "4096", "--rung", "10"])  # a rung named: it
    assert r.exit_code == 0 and r.stdout.startswith("16 x 4096 x 4096 bf16, rung 10 (")
    r = runner.invoke(app, ["gemm", "--m", "1000", "--n", "4096", "--k", "4096", "--rung", "20"])  # forced
    assert r.exit_code == 0 and "the small-M path (rung 20, small128)" in r.stdout


def _show_store(tmp_path):
    """fill_store's two runs, then one whose GPU name and figure text hold markup and a long note."""
    db = tmp_path / "show.sqlite"
    fill_store(db)
    s = Store(db)
    rid = s.create_run(make_run_info(gpu="EVIL [bold red]markup[/] GPU"))
    figs = [
        Figure(
            "memory", "tlb", "mem.tlb.hit_cycles", 21.5, "cycles", "measured", LONG_NOTE, (21.0, 22.0), note=LONG_NOTE
        ),
        Figure("memory", "tlb", "mem.tlb.miss_cycles", "n/a", "cycles", "measured", "[red]m[/red]", check="failed"),
    ]
    s.save_bench(BenchResult(rid, "memory", "tlb", "ok", "", "t0", "t1", 1.0), [], figs)
    s.finish_run(rid, "ok")
    s.close()
    return db


def test_show_glob_is_a_fitted_table_with_the_run_once(tmp_path, monkeypatch):
    db = _show_store(tmp_path)
    plain, tty = _both(monkeypatch, ["show", "mem.*", "--db", str(db)])
    assert plain.exit_code == tty.exit_code == 0 and plain.stderr == tty.stderr
    assert_plain(plain.stdout)
    lines = plain.stdout.splitlines()  # redirected: as before, one line a row and the run on one line
    assert lines[0].split() == ["KEY", "VALUE", "UNIT", "SPREAD", "(MIN-MAX)", "CHECK"]
    assert lines[1].split() == ["mem.tlb.hit_cycles", "21.5", "cycles", "21", "–", "22", "ok"]
    assert lines[2].split() == ["mem.tlb.miss_cycles", "FAILED", "cycles", "failed"]
    run = next(x for x in lines if x.startswith("run 3: "))
    assert "EVIL [bold red]markup[/] GPU" in run and len(run) > 100
    assert_terminal(tty.stdout, 100)
    assert "┃ KEY" in tty.stdout and "SPREAD (MIN-MAX)" in tty.stdout
    rows = [table_cells(x) for x in tty.stdout.splitlines() if table_cells(x)]
    assert rows == [  # one row a figure (the header row is drawn in heavy lines)
        ["mem.tlb.hit_cycles", "21.5", "cycles", "21 – 22", "ok"],
        ["mem.tlb.miss_cycles", "FAILED", "cycles", "", "failed"],
    ]
    tl = tty.stdout.splitlines()
    assert sum(x.startswith("run 3: EVIL [bold red]markup[/] GPU") for x in tl) == 1  # shown, not obeyed
    assert sum(x == "memory/tlb (status ok):" for x in tl) == 1
    assert_whole(tty.stdout, run)
    i = tl.index(next(x for x in tl if x.startswith("run 3: ")))
    assert tl[i + 1].startswith("    ") and tl[i + 1].strip()  # the run line wraps with a hanging indent
    plain, tty = _both(monkeypatch, ["show", "mem.*", "--db", str(db), "--json"])
    assert plain.stdout == tty.stdout and plain.exit_code == tty.exit_code == 0  # JSON: the same bytes
    assert [d["key"] for d in json.loads(tty.stdout)] == ["mem.tlb.hit_cycles", "mem.tlb.miss_cycles"]


def test_show_one_figure_wraps_long_fields_with_a_hanging_indent(tmp_path, monkeypatch):
    db = _show_store(tmp_path)
    plain, tty = _both(monkeypatch, ["show", "mem.tlb.hit_cycles", "--db", str(db)])
    assert plain.exit_code == tty.exit_code == 0
    assert_plain(plain.stdout)
    lines = plain.stdout.splitlines()  # redirected: every field one line, never wrapped
    assert lines[0] == "mem.tlb.hit_cycles = 21.5 cycles  [measured, check ok]"
    assert f"  method:      {LONG_NOTE}" in lines and f"  note:        {LONG_NOTE}" in lines
    assert any(x.startswith("  run:         3: EVIL [bold red]markup[/] GPU (sm_90a)") for x in lines)
    tl = tty.stdout.splitlines()
    assert not BOX & set(tty.stdout) and "\x1b" not in tty.stdout
    assert tl[0] == lines[0] and max(map(len, tl)) <= 100
    for label in ("method", "note"):  # wrapped, the lines after the first under the text's column
        i = next(i for i, x in enumerate(tl) if x.startswith(f"  {label}:"))
        assert tl[i][:15] == f"  {label + ':':<12} " and tl[i + 1].startswith(" " * 15) and tl[i + 1][15] != " "
        assert " ".join(" ".join(tl[i : i + 3]).split()).startswith(f"{label}: {LONG_NOTE[:150]}")
    assert_whole(tty.stdout, LONG_NOTE, lines[-1])
    assert "EVIL [bold red]markup[/] GPU" in tty.stdout.replace("\n" + " " * 15, " ")  # shown, not obeyed
    plain, tty = _both(monkeypatch, ["show", "mem.tlb.hit_cycles", "--db", str(db), "--json"])
    assert plain.stdout == tty.stdout and json.loads(tty.stdout)["note"] == LONG_NOTE
    plain, tty = _both(monkeypatch, ["show", "mem.tlb.miss_cycles", "--db", str(db)])
    assert "  method:      [red]m[/red]" in plain.stdout.splitlines() and "[red]m[/red]" in tty.stdout
