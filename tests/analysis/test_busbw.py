"""Bus bandwidth as nccl-tests defines it (doc/PERFORMANCE.md)."""

import pytest

from gpudissect.analysis import busbw


@pytest.mark.parametrize(
    "op,n,factor",
    [
        ("all_reduce", 8, 2 * 7 / 8),
        ("all_reduce", 2, 1.0),
        ("all_reduce", 1, 0.0),
        ("reduce_scatter", 8, 7 / 8),
        ("all_gather", 4, 3 / 4),
        ("all_to_all", 8, 7 / 8),
        ("broadcast", 8, 1.0),
        ("reduce", 3, 1.0),
    ],
)
def test_factors(op, n, factor):
    assert busbw.bus_factor(op, n) == pytest.approx(factor)


def test_algbw_and_busbw_numbers():
    # 1 GiB all-reduce over 8 ranks in 5 ms: algbw 214.7 GB/s, busbw x 1.75
    assert busbw.algbw_gbps(1 << 30, 5e-3) == pytest.approx(214.748, rel=1e-5)
    assert busbw.busbw_gbps("all_reduce", 1 << 30, 5e-3, 8) == pytest.approx(214.748 * 1.75, rel=1e-5)


def test_buffer_sizes_follow_the_definition_of_s():
    # S is the whole array: all_gather's output, reduce_scatter's input
    assert busbw.buffer_elems("all_gather", 800, 8) == (100, 800)
    assert busbw.buffer_elems("reduce_scatter", 800, 8) == (800, 100)
    assert busbw.buffer_elems("all_reduce", 800, 8) == (800, 800)
    assert busbw.buffer_elems("all_to_all", 800, 8) == (800, 800)
    with pytest.raises(ValueError):
        busbw.buffer_elems("all_gather", 801, 8)


def test_round_size():
    assert busbw.round_size("all_reduce", 8, 8) == 8
    assert busbw.round_size("all_gather", 8, 8) == 32  # one float per rank at least
    assert busbw.round_size("all_to_all", 1000, 8) == 992


@pytest.mark.parametrize("bad", [("all_reduce", 0), ("nope", 2)])
def test_bad_input(bad):
    with pytest.raises(ValueError):
        busbw.bus_factor(*bad)
    with pytest.raises(ValueError):
        busbw.algbw_gbps(1, 0)
