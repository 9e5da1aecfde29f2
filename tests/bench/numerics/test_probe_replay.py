"""tc_probes' analysis replayed on committed H100 runs: each probe's hardware answer read back from its series,
the probes built, predicted and decided by the code of this tree. Inputs, every hypothesis' prediction (as
recorded, repr), the probe counts, the findings and the chains' verdicts must be what the run recorded: the
host side may get cheaper, never different."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from gpudissect.bench import numerics as n
from gpudissect.bench.numerics import findings, multiblock, probe_bench, probe_kit

H100 = Path(__file__).resolve().parents[3] / "results" / "h100-sxm5-80gb"
# quick-u and quick-p measured with this tree's probes; quick-m (the afternoon's, before the host side was
# rewritten) and quick-p (registered before quick-u) are kept among the profiles
EXPORTS = {
    "quick-u": H100 / "runs" / "quick-u" / "export.json.gz",
    "quick-p": H100 / "profiles" / "quick-runs-evening" / "quick-p.json.gz",
    "quick-m": H100 / "profiles" / "quick-traces" / "quick-m.json.gz",
    "numerics-full": H100 / "runs" / "numerics-full" / "export.json.gz",
}


def _export(run: str) -> tuple[dict, dict]:
    d = json.loads(gzip.open(EXPORTS[run]).read())  # a committed export that is gone is a failure, not a skip
    series = {s["name"]: s for s in d["series"] if s.get("bench") == "tc_probes"}
    return series, {f["key"]: f["value"] for f in d["figures"] if f.get("bench") == "tc_probes"}


@pytest.mark.parametrize("run", list(EXPORTS))
def test_the_probes_replay_the_committed_runs(run, monkeypatch):
    series, figures = _export(run)
    probe_kit.forget_probes()
    wrong: list[tuple] = []

    def answers(runner, ins, probes, perm=None):
        recorded = {pt["extra"]["label"]: pt["extra"] for pt in series[f"probes.{ins.key}"]["points"]}
        for p in probes:
            r = recorded.get(f"{p.param}: {p.label}")
            if r is None:
                wrong.append((ins.key, p.param, p.label, "not in the run"))
                continue
            inputs = f"a={p.a if p.raw_a is None else [hex(x) for x in p.raw_a]} b={p.b} c={p.c}"
            preds = "; ".join(f"{h}={v!r}" for h, v in p.predictions.items())
            if (inputs, preds) != (r["inputs"], r["predictions"]):
                wrong.append((ins.key, p.label, inputs, preds, r["inputs"], r["predictions"]))
            p.got_bits = int(r["hardware"].split()[0], 16)
            p.got = float(n.to_values(ins.c, np.array([p.got_bits]))[0])

    monkeypatch.setattr(findings, "run_probes", answers)
    monkeypatch.setattr(multiblock, "run_probes", answers)
    found = {}
    for ins in n.INSTRS:
        s = series[f"probes.{ins.key}"]
        f = found[ins] = n.probe_instruction(None, ins)
        assert len(f.probes) == len(s["points"]), ins.key
        row = json.loads(json.dumps(probe_bench.findings_row(f), default=str))
        assert row == json.loads(s["params"]["findings"]), ins.key
    for ci in n.CHAIN_INSTRS:
        cf = n.probe_chain(None, ci, found[ci.single].hyp)
        assert len(cf.probes) == len(series[f"probes.{ci.key}"]["points"]), ci.key
        assert cf.mode == figures[f"num.{ci.key}.between_instructions"], ci.key
    assert not wrong, wrong[:3]
    probe_kit.forget_probes()
