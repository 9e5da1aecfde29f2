"""The app suite's declarations, parameters, dependency messages and published values (no torch needed)."""

from __future__ import annotations

import sys

import pytest

from gpudissect.app.fp8cast import SPEC as FP8CAST
from gpudissect.bench.registry import load_all, resolve_params
from gpudissect.errors import GpuDissectError

FACTS = {"cc_major": 9, "cc_minor": 0, "sm_count": 132, "free_mem": 80 << 30}


def test_app_benchmarks_are_registered_without_torch():
    reg = load_all()
    assert {"app/linear", "app/layer", "app/llm"} <= set(reg)
    # linear and layer declare the fused FP8 cast (their fp8_fused types launch it); llm none
    assert all(reg[k].kernels == [FP8CAST] for k in ("app/linear", "app/layer")) and reg["app/llm"].kernels == []


def test_parameters_parse_and_reject():
    reg = load_all()
    p = resolve_params(reg["app/linear"], {"sizes": "1024,4096", "types": "bf16,fp8"}, FACTS)
    assert p["sizes"] == [1024, 4096] and p["types"] == ["bf16", "fp8"]
    with pytest.raises(GpuDissectError, match="bad value for sizes"):
        resolve_params(reg["app/linear"], {"sizes": "1000"}, FACTS)
    with pytest.raises(GpuDissectError, match="bad value for types"):
        resolve_params(reg["app/linear"], {"types": "int4"}, FACTS)
    with pytest.raises(GpuDissectError, match="bad value for hiddens"):
        resolve_params(reg["app/layer"], {"hiddens": "3000"}, FACTS)
    with pytest.raises(GpuDissectError, match="seq"):
        resolve_params(reg["app/layer"], {"seq": "100"}, FACTS)
    q = resolve_params(reg["app/llm"], {"sizes": "7b", "graphs": "0"}, FACTS)
    assert q["sizes"] == ["7b"] and q["graphs"] is False and q["hf_compile"] is False
    with pytest.raises(GpuDissectError, match="bad value for sizes"):
        resolve_params(reg["app/llm"], {"sizes": "70b"}, FACTS)


def test_missing_torch_is_one_clear_line(monkeypatch):
    from gpudissect.app.deps import MissingDependency, import_torch, import_transformers

    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingDependency, match=r"needs PyTorch .*gpudissect\[app\]"):
        import_torch()
    with pytest.raises(MissingDependency, match=r"needs transformers .*gpudissect\[app\]"):
        import_transformers()
    assert issubclass(MissingDependency, GpuDissectError)  # the runner reports it as one line, no traceback


def test_quick_plan_leaves_13b_fp32_to_the_full_run():
    from gpudissect.app.llm_run import default_plan

    assert "fp32" not in default_plan(True)["13b"]
    quick_keys = {f"{m}.{t}" for m, ts in default_plan(True).items() for t in ts}
    assert {"3b.fp32", "3b.bf16", "7b.bf16", "7b.fp8", "13b.bf16"} <= quick_keys  # every headline key's model
    assert default_plan(False)["13b"] == ["fp32", "bf16", "fp8"]


def test_quick_times_the_graph_decode_where_a_headline_key_needs_it():
    from gpudissect.app.llm_run import QUICK_GRAPHS, default_plan
    from helpers import ROOT

    keys = [k for k in (ROOT / "dev" / "headline_keys" / "app.txt").read_text().split() if k.startswith("app.llm.")]
    need = {tuple(k.split(".")[2:4]) for k in keys if ".graph" in k}
    assert need == QUICK_GRAPHS  # every graph headline key stays in the quick run, the other graphs go to full
    assert all(t in default_plan(True)[m] for m, t in QUICK_GRAPHS)


def test_table_xv_transcription():
    from gpudissect.reference import app as ref

    h800 = {p.key: p.value for p in ref.APP if p.gpu == "H800" and p.table == "Table XV"}
    assert h800["app.llm.7b.bf16.tokens_per_s"] == 432.91
    assert h800["app.llm.13b.fp32.tokens_per_s"] == 214.06
    assert len([p for p in ref.APP if p.table == "Table XV"]) == 18  # 8 rows x 3 cells less 3 OOM and 3 '-'
    assert ("app.llm.13b.fp32.tokens_per_s", "A100") in ref.OOM_CELLS
    assert not ref.published("app.llm.7b.fp8.tokens_per_s", "A100")
    assert ref.gpus() == ["H800", "A100", "RTX4090"]
    assert all(p.unit in ("tokens/s", "ratio") and p.paper == "000" for p in ref.APP)


def test_token_check_thresholds():
    from gpudissect.app.llm_run import check_tokens

    assert check_tokens("fp32", 1.0, 0.0)[0]
    assert not check_tokens("fp32", 0.98, 0.0)[0]
    assert check_tokens("bf16", 0.89, 0.2)[0]  # BF16 rounding on a random model: ~90% exact, gap ~0.2 std
    assert not check_tokens("bf16", 0.89, 0.9)[0]
    assert check_tokens("fp8", 0.09, 3.5)[0]  # e4m3 noise: gaps of several std, yet far above chance
    assert not check_tokens("fp8", 1 / 32000, 5.0)[0]  # tokens unrelated to the model
    ok, why = check_tokens("bf16", 0.3, 0.1)
    assert not ok and "needs exact argmax >= 50%" in why
