"""Issue 10 item 5: hostile input through the real CLI: exit code 2, one line on stderr, no traceback."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpudissect.cli import app
from helpers import fill_store

runner = CliRunner()


def _assert_one_line(r, args) -> None:
    assert r.exit_code == 2, (args, r.exit_code, r.stdout[-300:], r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (args, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr and r.exception is None or isinstance(r.exception, SystemExit)


def _good_export(tmp_path) -> dict:
    db = tmp_path / "good.sqlite"
    fill_store(db, (33.0,))
    from gpudissect.store import Store

    return Store(db, read_only=True).export(1)


def _hostile_files(tmp_path) -> dict[str, bytes]:
    good = json.dumps(_good_export(tmp_path)).encode()
    wrong = [
        {"format": "gpudissect-export"},
        {"format": "gpudissect-export", "run": []},
        {"format": "gpudissect-export", "run": {"id": 1}},
        {**json.loads(good), "figures": [{"key": 1}]},
        {**json.loads(good), "figures": "many"},
        {**json.loads(good), "series": [{"points": [{"x": "a", "y": None}]}]},
        {**json.loads(good), "schema_version": 99},
        {**json.loads(good), "run": {**json.loads(good)["run"], "extra": 5}},
        [1, 2, 3],
        "gpudissect-export",
    ]
    files = {
        "empty.json": b"",
        "truncated.json": good[: len(good) // 2],
        "binary.json": bytes(range(256)) * 4,
        "nul.json": b"\0" * 100,
        "deep.json": b"[" * 100000,
    }
    files |= {f"wrong{i}.json": json.dumps(w).encode() for i, w in enumerate(wrong)}
    return files


def test_hostile_json_files_every_command(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    files = _hostile_files(tmp_path)
    for name, content in files.items():
        p = tmp_path / name
        p.write_bytes(content)
        for args in (
            ["report", "--from-json", str(p), "--out", str(tmp_path / "rep")],
            ["compare", str(p), "1", "--db", str(db)],
            ["compare", "1", str(p), "--db", str(db)],
            ["show", "k", "--from-json", str(p)],
            ["import", str(p), "--db", str(tmp_path / "imp.sqlite")],
        ):
            _assert_one_line(runner.invoke(app, args), args)
    missing = str(tmp_path / "missing.json")
    for args in (["report", "--from-json", missing], ["compare", missing, "1"], ["import", missing]):
        _assert_one_line(runner.invoke(app, args), args)
    assert not (tmp_path / "rep").exists() and not (tmp_path / "imp.sqlite").exists()


def test_hostile_arguments(tmp_path):
    db = tmp_path / "s.sqlite"
    fill_store(db)
    d = ["--db", str(db)]
    cases = [
        ["run", "--resume", "abc"],
        ["run", "--bench", "nope"],
        ["run", "--suite", ""],
        ["run", "--set", "=3"],
        ["run", "--set", "noequals"],
        ["run", "--bench", "pchase_latency", "--set", "pchase_latnecy.steps=abc"],
        ["run", "--bench", "pchase_latency", "--set", "steps=abc"],
        ["run", "--bench", "pchase_latency", "--set", "stride=-8"],
        ["report", "x"],
        ["report", "--format", "pdf", *d],
        ["report", "99", *d],
        ["report", "-5", *d],
        ["export", "--format", "xml", *d],
        ["export", "99", *d],
        ["export", "1", "1", *d],
        ["compare", "1", *d],
        ["compare", "1", "nope", *d],
        ["compare", "1", "2", "--threshold", "abc", *d],
        ["compare", "1", "2", "--threshold", "-3", *d],
        ["compare", "1", "2", "--format", "xml", *d],
        ["show", "no.such.key", *d],
        ["show", "k", "7", *d],
        ["list", "nope"],
        ["list", "--bogus"],
        ["sass", "nope"],
        ["sass"],
        ["sass", "--arch", "banana", "tlb"],
        ["sass", "--map", "tlb"],
        ["sass", "-j", "0", "tlb"],
        ["nosuchcommand"],
        ["runs", "--db"],
        ["import"],
        ["doctor", "--what"],
    ]
    for args in cases:
        _assert_one_line(runner.invoke(app, args), args)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300).map(str.encode),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=4),
            max_leaves=12,
        ).map(lambda v: json.dumps({"format": "gpudissect-export", "run": v}).encode()),
    )
)
def test_fuzzed_export_files(tmp_path, content):
    p = tmp_path / "fuzz.json"
    p.write_bytes(content)
    for args in (["show", "k", "--from-json", str(p)], ["compare", str(p), str(p)]):
        _assert_one_line(runner.invoke(app, args), args)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12), min_size=1, max_size=3)
)
def test_fuzzed_set_and_run_ids(tmp_path, values):
    """--set with arbitrary text and arbitrary run references end as one line (no GPU is reached)."""
    args = ["run", "--bench", "pchase_latency", *[x for v in values for x in ("--set", f"{v}=x{v}")]]
    _assert_one_line(runner.invoke(app, args), args)
    ref = values[0] or "-"
    # after "--": a reference that reads like an option ("--help", which hypothesis found) is still a reference
    args = ["compare", "--db", str(tmp_path / "none.sqlite"), "--", ref, "1"]
    _assert_one_line(runner.invoke(app, args), args)


def test_a_nul_byte_in_a_run_reference_is_one_line(tmp_path):
    """Found by the fuzz above: '~\\x00' reached the OS's user lookup, which raises ValueError (exit 70 before)."""
    for ref in ("~\x00", "a\x00b.json"):
        args = ["compare", "--db", str(tmp_path / "none.sqlite"), "--", ref, "1"]
        r = runner.invoke(app, args)
        _assert_one_line(r, args)
        assert "NUL byte" in r.stderr
