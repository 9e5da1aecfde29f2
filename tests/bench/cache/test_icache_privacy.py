"""Instruction-cache privacy verdicts (Jia Fig. 3.5) from synthetic observer data, and the plan of the privacy
experiments (CPU only)."""

from __future__ import annotations

from gpudissect.analysis import icache_privacy as priv
from gpudissect.bench.cache import icache_privacy as experiments


def _obs(name, rank, slowed, base=1.0, noise=(0.0, 0.002, -0.002)):
    controls = tuple(base + e for e in noise * 3)
    thrashed = tuple(base + (1.2 if slowed else 0.0) + e for e in noise * 2)
    return priv.Observer(name, rank, controls, thrashed)


def test_subcore_private_level():
    obs = [
        _obs("self", 0, True),
        _obs("w4", 1, True),
        _obs("w1", 2, False),
        _obs("pair", 3, False),
        _obs("far", 5, False),
    ]
    thr = priv.rise_threshold(obs, floor=0.01)
    v = priv.judge(obs, thr)
    assert v.conclusive and v.domain == "sub-core"
    assert v.slowed == {"self": True, "w4": True, "w1": False, "pair": False, "far": False}


def test_sm_private_level_with_untested_domain_between():
    obs = [_obs("self", 0, True), _obs("w1", 2, True), _obs("gpc", 4, False), _obs("far", 5, False)]
    v = priv.judge(obs, priv.rise_threshold(obs, floor=0.01))
    assert v.conclusive and v.domain == "SM or TPC"


def test_a_slowed_distant_observer_with_an_unaffected_nearer_one_is_inconclusive():
    obs = [_obs("self", 0, True), _obs("w1", 2, False), _obs("far", 5, True)]
    v = priv.judge(obs, priv.rise_threshold(obs, floor=0.01))
    assert not v.conclusive and "no domain" in v.text


def test_no_eviction_of_the_nearest_observer_is_inconclusive():
    obs = [_obs("self", 0, False), _obs("w1", 2, False)]
    assert not priv.judge(obs, priv.rise_threshold(obs, floor=0.01)).conclusive


def test_threshold_follows_the_controls_spread_and_noise_alone_does_not_slow():
    noisy = (0.0, 0.05, -0.05)
    obs = [_obs("self", 0, False, noise=noisy), _obs("w1", 2, False, noise=noisy)]
    thr = priv.rise_threshold(obs, floor=0.0)
    assert 0.4 < thr < 0.5  # 6 robust sigmas: 1.4826 x 0.05 (the median absolute deviation)
    outlier = priv.Observer("w2", 2, (1.0,) * 8 + (9.0,), (1.0,) * 6)
    assert priv.rise_threshold([outlier], floor=0.0) == 0.0  # one slow launch does not raise the threshold
    v = priv.judge(obs, thr)
    assert v.slowed == {"self": False, "w1": False}
    assert priv.rise_threshold(obs, floor=1.0) == 1.0


def test_everyone_slowed_is_gpu_wide_only_when_another_gpc_was_observed():
    obs = [_obs("self", 0, True), _obs("far", 5, True)]
    assert priv.judge(obs, 0.1).domain == "GPU"
    obs = [_obs("self", 0, True), _obs("pair", 3, True)]
    assert priv.judge(obs, 0.1).domain == ">= TPC"


def test_rank_and_groups():
    assert priv.rank_of(True, True, True, False, True) == 0
    assert priv.rank_of(True, True, False, False, True) == 1
    assert priv.rank_of(True, False, False, False, True) == 2
    assert priv.rank_of(False, False, False, True, True) == 3
    assert priv.rank_of(False, False, False, False, True) == 4
    assert priv.rank_of(False, False, False, False, False) == 5
    assert priv.merge_groups([[1, 2], [3, 4], [2, 3], [7, 8]]) == [[1, 2, 3, 4], [7, 8]]


def test_a_small_significant_rise_is_interference_not_eviction():
    obs = [_obs("self", 0, True), _obs("gpc", 4, True), priv.Observer("far", 5, (2.5,) * 9, (2.58,) * 6)]
    v = priv.judge(obs, 0.05)
    assert v.conclusive and v.domain == "GPC" and not v.slowed["far"]
    assert "interference" in v.text and "far +0.080" in v.text


def test_plan_of_the_levels():
    l0, l1 = experiments.levels(16384, 131072)
    assert (l0.name, l0.n, l0.fit, l0.over) == ("l0", 512, [128, 256], [1536, 2560])
    assert (l1.name, l1.n, l1.fit, l1.over) == ("l1", 2048, [1024, 2048], [12288, 20480])
    assert l0.sizes == [0, 128, 256, 1536, 2560]
    # thrash sizes of L0 that would reach past L1 are left out; at least 8 FFMAs (one per chain)
    assert experiments.levels(16384, 30000)[0].over == [1536] and experiments.ffmas(10) == 8


def test_placement_observers_and_ranks():
    pl = experiments.Placement(list(range(8)), [[0, 1, 2, 3], [4, 5]], 2, [0, 1, 2, 3], 3, 0, 5)
    assert pl.observers("l0") == [(2, w) for w in range(5)] + [(3, 0), (0, 0), (5, 0)]
    assert pl.observers("l1") == [(2, 0), (2, 1), (3, 0), (0, 0), (5, 0)]
    assert [pl.rank(2, 5, 5), pl.rank(2, 4, 0), pl.rank(2, 1, 0), pl.rank(3, 0, 0), pl.rank(0, 0, 0)] == [0, 1, 2, 3, 4]
    assert pl.rank(5, 0, 0) == 5 and "thrasher on SM 2; its TPC pair SM 3" in pl.note


def test_private_to_combines_the_sequential_and_concurrent_verdicts():
    def v(domain, conclusive=True):
        return priv.Verdict({}, {}, 0.0, domain, conclusive, domain)

    assert experiments.private_to(v("SM"), v("SM")) == "SM (both methods agree)"
    assert experiments.private_to(v("SM"), v("TPC")).startswith("inconclusive: the sequential method says SM")
    assert (
        experiments.private_to(v("x", False), v("TPC"))
        == "TPC (the concurrent method; the sequential one is inconclusive)"
    )
    assert experiments.private_to(v("x", False), v("y", False)) == "inconclusive (neither method)"
