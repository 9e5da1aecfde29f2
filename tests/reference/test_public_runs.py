"""The independent public measurements (gpudissect.reference.public_runs, and every module's INDEPENDENT):
each names its source and GPU variant, says where its value is printed, and maps only to keys we have."""

from __future__ import annotations

import gzip
import importlib
import json
import pkgutil
import re
import statistics
from functools import cache

import pytest

from helpers import ROOT


def _independent() -> list:
    import gpudissect.reference as ref

    out = []
    for m in pkgutil.iter_modules(ref.__path__):
        out.extend(getattr(importlib.import_module(f"gpudissect.reference.{m.name}"), "INDEPENDENT", ()))
    return out


@cache
def _our_keys() -> frozenset[str]:
    """Our key registry: the committed H100 summary's keys and every key a committed run exported."""
    keys = set(json.loads((ROOT / "results" / "h100-sxm5-80gb" / "summary.json").read_text()))
    for path in ROOT.glob("results/*/runs/*/export.json.gz"):
        keys.update(f["key"] for f in json.loads(gzip.decompress(path.read_bytes()))["figures"])
    return frozenset(keys)


RECORDS = _independent()


def test_there_are_records_from_several_sources():
    assert len({r.paper for r in RECORDS}) >= 3


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: f"{r.paper}:{r.gpu}:{r.key}")
def test_a_record_names_its_source_variant_place_and_a_key_we_have(rec):
    from gpudissect.reference.public_runs import SOURCES, VARIANTS

    assert rec.paper in SOURCES, f"{rec.paper!r}: no entry in public_runs.SOURCES"
    assert rec.gpu in VARIANTS, f"{rec.gpu!r}: no entry in public_runs.VARIANTS"
    assert rec.table.strip(), "where in the source the value is printed"
    assert rec.value > 0 and rec.unit
    assert rec.key in _our_keys(), f"{rec.key}: neither in our summary nor in any committed run"


def test_sources_and_variants_say_what_they_are():
    from gpudissect.reference.public_runs import SOURCES, VARIANTS

    for s in SOURCES.values():
        assert s.title and s.how and re.match(r"https://github\.com/[\w.-]+/[\w.-]+", s.url)
    assert all(v.what for v in VARIANTS.values())


def test_a_public_run_says_how_it_measures_and_a_file_names_its_commit():
    from gpudissect.reference.public_runs import GB, INDEPENDENT

    for r in INDEPENDENT:
        assert len(r.note) > 40, r
        if r.paper == GB:  # a file of the repository at the commit it was read
            assert re.match(r"gpu-[a-z0-9-]+/[a-z0-9_]+\.txt@[0-9a-f]{8}, ", r.table), r.table


def test_per_spec_figures_have_a_datasheet_figure_on_both_cards():
    from gpudissect.reference import peaks
    from gpudissect.reference.public_runs import INDEPENDENT, OURS, VARIANTS

    scaled = [r for r in INDEPENDENT if r.per_spec]
    assert scaled
    for r in scaled:
        for g in (OURS, r.gpu):
            assert VARIANTS[g].peaks and peaks.by_label(VARIANTS[g].peaks).value(r.per_spec), (g, r.per_spec)


def test_the_p2p_figure_is_the_median_of_the_printed_diagonal():
    from gpudissect.reference.public_runs import INDEPENDENT, NCCL, P2P_DIAGONAL

    (rec,) = [r for r in INDEPENDENT if r.paper == NCCL]
    assert len(P2P_DIAGONAL) == 8 and rec.value == statistics.median(P2P_DIAGONAL)
