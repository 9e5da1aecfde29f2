"""The README's generated target table (scripts/make_results.py): measured values, never typed."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("make_results", Path(__file__).parent.parent / "scripts" / "make_results.py")
mr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mr)


def test_targets_table_says_met_only_for_measured_values_at_the_goal():
    table = mr.targets_table({"mem.bw.dram.copy_vs_d2d": 0.9981, "tma.bulk_16k_vs_stream": 0.95,
                              "tma.tensor2d_vs_stream": "FAILED", "mem.bw.l1_bytes_per_clk_sm": 127.0})
    rows = {line.split("`")[1]: line for line in table.splitlines() if line.count("`") >= 2}
    assert rows["mem.bw.dram.copy_vs_d2d"].endswith("| 0.9981 | >= 1 | no |")
    assert rows["tma.bulk_16k_vs_stream"].endswith("| yes |")
    assert rows["tma.tensor2d_vs_stream"].endswith("| FAILED | >= 0.95 | no |")
    assert rows["mem.bw.shared_bytes_per_clk_sm"].endswith("| not measured | >= 124.2 | no |")
    assert rows["mem.bw.l1_bytes_per_clk_sm"].endswith("| yes |")
    assert len(rows) == len(mr.TARGETS)
