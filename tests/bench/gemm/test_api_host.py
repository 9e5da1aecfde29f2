"""api_vs_cublas's host cost (CPU, a fake torch): ours and torch.matmul timed batch by batch in alternation, the
order swapped every pair, both behind one sleep length; a batch whose sleep ended before its last call is dropped,
and a pair counts only where both sides held the stream."""

from __future__ import annotations

from types import SimpleNamespace

from gpudissect.bench.gemm import api


class FakeCuda:
    def __init__(self, held: list[bool]) -> None:
        self.held, self.sleeps = list(held), []

    def synchronize(self) -> None:
        pass

    def _sleep(self, cycles: int) -> None:
        self.sleeps.append(cycles)

    def Event(self) -> SimpleNamespace:  # torch.cuda.Event's name
        held = self.held.pop(0) if self.held else True
        return SimpleNamespace(record=lambda: None, query=lambda: not held)


def test_pairs_alternate_and_drop_batches_that_did_not_hold(monkeypatch):
    order: list[str] = []
    cuda = FakeCuda([True, True, True, False, True, True])  # the second pair's second batch (ours) ran dry
    torch = SimpleNamespace(cuda=cuda)
    clock = iter(range(10**6))
    monkeypatch.setattr(api.time, "perf_counter", lambda: next(clock) * 1e-6)  # each read 1 us after the last
    mine, other, ratios, cycles = api.host_pairs(
        torch, lambda: order.append("ours"), lambda: order.append("torch"), calls=3, batches=3
    )
    # warm-up and the unheld estimate of each side, then the batches: ours first, then torch first, ...
    batches = order[2 * (20 + 100) :]
    assert [batches[i] for i in range(0, 18, 3)] == ["ours", "torch", "torch", "ours", "ours", "torch"]
    assert len(mine) == 2 and len(other) == 3 and len(ratios) == 2
    assert all(s == cycles for s in cuda.sleeps) and len(cuda.sleeps) == 6
    assert cycles == int(0.02 * 2.0e9)  # the 20 ms floor: a 3-call batch enqueues in microseconds here
