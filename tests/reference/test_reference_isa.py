"""Checks on the transcribed instruction-level reference values (002 Table 4.1 / 2.1, 004 Table I)."""

import re
from collections import Counter

from gpudissect.bench.isa import native_ops
from gpudissect.reference.isa import ISA, PASCAL_LATENCY, VOLTA_LATENCY, published, unit_for_key


def test_records_well_formed():
    for p in ISA:
        assert re.fullmatch(r"isa\.[a-z0-9_.]+", p.key), p.key
        assert p.unit == unit_for_key(p.key) and p.value > 0 and p.paper in {"002", "004"} and p.table
    assert not [k for k, n in Counter((p.key, p.gpu, p.table) for p in ISA).items() if n > 1]


def test_table_4_1_as_printed():
    assert VOLTA_LATENCY["isa.latency.ffma_cycles"] == 4 and VOLTA_LATENCY["isa.latency.imad_cycles"] == 5
    assert VOLTA_LATENCY["isa.latency.hfma2_cycles"] == 6 and VOLTA_LATENCY["isa.latency.dfma_cycles"] == 8
    assert VOLTA_LATENCY["isa.latency.popc_cycles"] == 10 and VOLTA_LATENCY["isa.latency.mufu_cycles"] == 14
    assert PASCAL_LATENCY["isa.latency.imad_cycles"] == 86 and PASCAL_LATENCY["isa.latency.isetp_cycles"] == 12
    assert len(VOLTA_LATENCY) == 25 and len(PASCAL_LATENCY) == 43


def test_table_2_1_and_mapping():
    same = [p.value for p in ISA if p.table == "Table 2.1" and "same" in p.note]
    other = [p.value for p in ISA if p.table == "Table 2.1" and "different" in p.note]
    assert len(same) == 4 and len(other) == 12 and max(same) < min(other)
    assert published("isa.scheduler.subcores_per_sm_count", "V100")[0].value == 4


def test_our_keys_meet_the_published_ones():
    ours = {f"isa.latency.{o.volta or o.key}_cycles" for o in native_ops.ops()} | {"isa.latency.mufu_cycles"}
    volta = set(VOLTA_LATENCY) - {
        "isa.latency.mov_cycles",
        "isa.latency.fset_cycles",
        "isa.latency.dset_cycles",
        "isa.latency.dsetp_cycles",
    }
    assert volta <= ours, volta - ours
