"""LLM pieces on a tiny random Llama on the CPU (needs torch and transformers; skipped in CI)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from gpudissect.analysis.roofline import LlamaShape  # noqa: E402
from gpudissect.app import llm  # noqa: E402

TINY = LlamaShape("tiny", hidden=64, layers=2, heads=4, kv_heads=4, intermediate=160, vocab=512)


@pytest.fixture(scope="module")
def model():
    return llm.build_model(torch, transformers, TINY, torch.float32, "cpu")


def _greedy(ids, **extra):
    """generate's arguments as hf_generate passes them: greedy, 9 new tokens, static cache, eager."""
    return dict(
        attention_mask=torch.ones_like(ids),
        max_new_tokens=9,
        min_new_tokens=9,
        do_sample=False,
        cache_implementation="static",
        disable_compile=True,
        pad_token_id=0,
        eos_token_id=None,
        **extra,
    )


def test_built_model_has_the_parameters_the_roofline_counts(model):
    assert sum(p.numel() for p in model.parameters()) == TINY.total_params
    assert model.config.hidden_size == 64 and model.config.num_hidden_layers == 2


def test_our_decode_steps_reproduce_transformers_generate(model):
    ids = llm.prompt_ids(torch, TINY.vocab, 3, 10, "cpu")
    out = model.generate(ids, **_greedy(ids))
    assert out.shape == (3, 19)
    gd = llm.GraphDecoder(torch, transformers, model, ids, 9)
    with torch.no_grad():
        gd.run_eager()
    assert torch.equal(gd.tokens, out[:, 10:])
    exact, gap = llm.teacher_forced_gap(torch, model, ids, gd.tokens)
    assert exact == 1.0 and gap == pytest.approx(0.0, abs=1e-6)


def test_stopped_warm_up_builds_the_timed_calls_cache_and_runs_their_first_steps(model):
    ids = llm.prompt_ids(torch, TINY.vocab, 3, 10, "cpu")
    kw = _greedy(ids, return_dict_in_generate=True)
    warm = model.generate(ids, stopping_criteria=llm.stop_at(torch, transformers, 13), **kw)
    full = model.generate(ids, **kw)
    assert warm.sequences.shape == (3, 13) and full.sequences.shape == (3, 19)
    assert torch.equal(warm.sequences, full.sequences[:, :13])
    # the same static cache: prompt + max_new_tokens - 1 slots, whatever the stopping criterion
    assert warm.past_key_values.get_max_length() == full.past_key_values.get_max_length() == 18


def test_teacher_forced_check_catches_wrong_tokens(model):
    ids = llm.prompt_ids(torch, TINY.vocab, 2, 8, "cpu")
    gd = llm.GraphDecoder(torch, transformers, model, ids, 6)
    with torch.no_grad():
        gd.run_eager()
    wrong = (gd.tokens + 1) % TINY.vocab
    exact, gap = llm.teacher_forced_gap(torch, model, ids, wrong)
    assert exact < 0.5 and gap > 0.1


def test_fp8_swap_keeps_the_lm_head():
    from gpudissect.app.float8 import Float8InferenceLinear

    m = llm.build_model(torch, transformers, TINY, torch.bfloat16, "cpu")
    assert llm.to_fp8(torch, m) == TINY.layers * 7
    assert isinstance(m.model.layers[0].mlp.down_proj, Float8InferenceLinear)
    assert isinstance(m.lm_head, torch.nn.Linear)
    ids = llm.prompt_ids(torch, TINY.vocab, 2, 8, "cpu")
    gd = llm.GraphDecoder(torch, transformers, m, ids, 5)
    with torch.no_grad():
        gd.run_eager()
    assert gd.tokens.shape == (2, 5)
    exact, gap = llm.teacher_forced_gap(torch, m, ids, gd.tokens)
    assert gap < 0.75
