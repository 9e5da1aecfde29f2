"""The decoder layer and the linear/layer benchmark cases on CPU tensors (needs torch; skipped in CI)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")


def test_layer_shape_parameters_and_flops_agree():
    from gpudissect.analysis.roofline import layer_flops
    from gpudissect.app.layer import build_layer

    layer = build_layer(64, 96, 4, torch.float32, "cpu")
    n_linear = sum(p.numel() for name, p in layer.named_parameters() if "norm" not in name)
    assert n_linear == 4 * 64 * 64 + 3 * 64 * 96
    x = torch.randn(2, 8, 64)
    with torch.no_grad():
        y = layer(x)
    assert y.shape == x.shape
    assert layer_flops(64, 96, 4, 2, 8) > 2 * 2 * 8 * n_linear


def test_layer_is_causal():
    from gpudissect.app.layer import build_layer

    layer = build_layer(32, 64, 2, torch.float32, "cpu")
    x = torch.randn(1, 6, 32)
    x2 = x.clone()
    x2[:, 4:] += 1.0  # changing later tokens must not change earlier outputs
    with torch.no_grad():
        a, b = layer(x), layer(x2)
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_fp8_layer_update_is_close_to_fp32():
    from gpudissect.app import float8
    from gpudissect.app.layer import build_layer
    from gpudissect.app.layer_run import TOL, _rel

    ref = build_layer(128, 256, 4, torch.float32, "cpu")
    bf = copy.deepcopy(ref).to(torch.bfloat16)
    f8 = copy.deepcopy(bf)
    assert float8.swap_linears(f8, float8.Float8Linear.from_linear) == 4
    x = torch.randn(2, 16, 128)
    with torch.no_grad():
        r = ref(x) - x
        e_bf = _rel(bf(x.bfloat16()).float() - x.bfloat16().float(), r)
        e_f8 = _rel(f8(x.bfloat16()).float() - x.bfloat16().float(), r)
    assert e_bf < TOL["bf16"] and e_f8 < TOL["fp8"]
    assert e_f8 > e_bf  # fp8 must actually be in the path
