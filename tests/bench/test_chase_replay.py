"""The pointer-chase sweeps replayed on every committed run that has them (tests/chase_replay.py): quick mode's
cheaper L2 searches of `cache_lines` and its refinement of `pchase_latency` (.ca and default at the L1 knee
only) measure a subset of the points the committed quick runs measured and derive the very figures (and
cache_lines' per-stride capacities) those runs stored; full mode asks for every committed point of the full
run, no more; `tma_latency` asks for exactly its committed points."""

from __future__ import annotations

import pytest

from chase_replay import ROOT, element_lookup, exports_naming, figures_of, footprint_lookup, ran, replay, series_of

PCHASE = footprint_lookup({"ca": "ca", "cg": "cg", "default": "default"})
TMA = footprint_lookup({"cg": "ld.global.cg", "tma": "tma"})


def _runs(bench: str) -> list:
    return [pytest.param(p, id=str(p.relative_to(ROOT / "results"))) for p in exports_naming(bench)]


def _replayed(bench: str, path, lookup, mode: str = "quick"):
    if not ran(path, bench, mode):
        pytest.skip(f"no {mode} {bench} in this export")
    run, dev = replay(bench, path, lookup, mode)  # KeyError: a point the committed run did not measure
    assert run.status == "ok", run.message
    return run, dev


def assert_same_figures(run, path, bench: str) -> None:
    """Every figure the replay derives has the committed value and note; none of the committed keys is lost
    (the runner's *_ns conversions and the clock are the replay's own)."""
    com = figures_of(path, bench)
    ours = {k: f for k, f in run.figures.items() if not k.startswith("clock.")}
    assert set(ours) == {k for k in com if not k.startswith("clock.") and not k.endswith("_ns")}
    for k, f in ours.items():
        assert (f.value, f.note or "") == (com[k]["value"], com[k].get("note") or ""), k


# the quick runs measured with this tree's quick grids (quick-n, the first, started 15:48 that day): their replay
# asks for exactly their points; the runs before measured the old, larger grid, of which the new asks a subset
NEW_GRID_FROM = "2026-11-26T15:40"


def new_grid(path) -> bool:
    import gzip
    import json

    return json.loads(gzip.decompress(path.read_bytes()))["run"]["started"] >= NEW_GRID_FROM


def committed_points(path, bench: str) -> set[tuple[str, float]]:
    return {(name, x) for name, pts in series_of(path, bench).items() for x in pts}


@pytest.mark.parametrize("path", _runs("cache_lines"))
def test_cache_lines_quick_search_finds_the_committed_capacities(path):
    run, dev = _replayed("cache_lines", path, element_lookup)
    assert_same_figures(run, path, "cache_lines")  # the per-stride capacities are in mem.line.*_bytes' notes
    asked, had = set(dev.asked), committed_points(path, "cache_lines")
    assert {p for p in had if p[0].startswith("l1 stride")} <= asked  # L1 searched as before
    if new_grid(path):
        assert asked == {p for p in had if "8-byte" not in p[0]}
    else:  # a point of c elements costs three walks of c + 2048 loads at its latency: less than half is left
        curves = series_of(path, "cache_lines")
        walks = {(n, x): (x + 2048) * curves[n][x][1] for n, x in had if n.startswith("l2 stride")}
        assert sum(walks[p] for p in asked if p in walks) < 0.5 * sum(walks.values())
    assert "quick mode" in run.figures["mem.line.l2_bytes"].method
    assert "quick mode" not in run.figures["mem.line.l1_bytes"].method


@pytest.mark.parametrize("path", _runs("pchase_latency"))
def test_pchase_quick_refines_ca_and_default_at_the_l1_knee_only(path):
    run, dev = _replayed("pchase_latency", path, PCHASE)
    assert_same_figures(run, path, "pchase_latency")
    asked, had = set(dev.asked), committed_points(path, "pchase_latency")
    assert {p for p in had if p[0] == "cg"} <= asked  # .cg (the L2 figures) refined as before
    curves = series_of(path, "pchase_latency")
    for op in ("ca", "default"):
        l2_hit = min(x for x, y in curves[op].items() if y[1] > 250)
        assert {p for p in had if p[0] == op and p[1] <= l2_hit} <= asked  # the L1 transition as before
    if new_grid(path):
        assert asked == had
    else:
        assert len(asked) < len(had) - 25


@pytest.mark.parametrize("path", _runs("tma_latency"))
def test_tma_latency_asks_for_its_committed_points(path):
    run, dev = _replayed("tma_latency", path, TMA)
    assert_same_figures(run, path, "tma_latency")
    had = {p for p in committed_points(path, "tma_latency") if p[0] != "tma - ld.global.cg"}
    assert set(dev.asked) == had


@pytest.mark.parametrize(("bench", "lookup"), [("pchase_latency", PCHASE), ("cache_lines", element_lookup)])
def test_full_mode_asks_for_every_committed_point(bench, lookup):
    full = [p for p in exports_naming(bench) if ran(p, bench, "full")]
    assert full  # memory-full
    for path in full:
        run, dev = _replayed(bench, path, lookup, mode="full")
        assert_same_figures(run, path, bench)
        had = {p for p in committed_points(path, bench) if "8-byte" not in p[0]}  # sector chases: no lookup
        assert set(dev.asked) == had
