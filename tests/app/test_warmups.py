"""How the app suite warms and sizes its timings, on stand-ins for torch and transformers (no torch needed):
the quick generate warm-up is the timed call stopped early, the graph decode's warm-up a few replays, time_call
sizes long calls with one call, and gc_frozen leaves alone what was alive before it."""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from gpudissect.app import llm, timing


@dataclass
class Clock:
    """Fake device time: each call of a timed function advances it; events read it."""

    now: float = 0.0


class FakeEvent:
    def __init__(self, clock: Clock) -> None:
        self.clock, self.t = clock, 0.0

    def record(self) -> None:
        self.t = self.clock.now

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        return end.t - self.t


def fake_torch(clock: Clock) -> Any:
    cuda = SimpleNamespace(
        Event=lambda enable_timing=True: FakeEvent(clock),
        synchronize=lambda: None,
    )
    return SimpleNamespace(
        cuda=cuda,
        no_grad=contextlib.nullcontext,
        ones_like=lambda x: x,
        full=lambda shape, value, device=None, dtype=None: [value] * shape[0],
        bool=bool,
    )


FAKE_TRANSFORMERS = SimpleNamespace(StoppingCriteria=object, StoppingCriteriaList=list)


@dataclass
class Ids:
    batch: int
    length: int
    device: str = "cuda"

    @property
    def shape(self) -> tuple[int, int]:
        return (self.batch, self.length)


@dataclass
class FakeModel:
    """generate as transformers runs it here: the cache sized from max_length, one token a step, each step asking
    the stopping criteria (ORed); records what each call asked and how many steps it ran."""

    clock: Clock
    calls: list[dict[str, Any]] = field(default_factory=list)

    def generate(self, ids: Ids, max_new_tokens: int, min_new_tokens: int, **kw: Any) -> Any:
        length, steps = ids.length, 0
        criteria = kw.get("stopping_criteria") or []
        while length < ids.length + max_new_tokens:
            length += 1
            steps += 1
            self.clock.now += 1.0
            if any(any(c(Ids(ids.batch, length), None)) for c in criteria):
                break
        self.calls.append({"max_new_tokens": max_new_tokens, "steps": steps, "cache": ids.length + max_new_tokens - 1})
        self.calls[-1].update(kw)

        class Out:
            def __getitem__(self, key: Any) -> Any:
                return SimpleNamespace(shape=(ids.batch, length - ids.length))

        return Out()


def test_quick_generate_warm_up_is_the_timed_call_stopped_early():
    clock = Clock()
    model = FakeModel(clock)
    ids = Ids(8, 128)
    t = llm.hf_generate(fake_torch(clock), FAKE_TRANSFORMERS, model, ids, 128, 2, warm_tokens=8)
    warm, *timed = model.calls
    # the warm-up asks for the same tokens (so the same static cache) and stops after 8
    assert warm["max_new_tokens"] == 128 and warm["cache"] == 255 and warm["steps"] == 8
    assert [c["max_new_tokens"] for c in timed] == [1, 1, 128, 128]
    assert all("stopping_criteria" not in c and c["steps"] == c["max_new_tokens"] for c in timed)
    same = ("attention_mask", "do_sample", "cache_implementation", "disable_compile", "eos_token_id")
    assert all(c[k] == warm[k] for c in timed for k in same)
    assert t.total_ms == [128.0, 128.0] and t.prefill_ms == [1.0, 1.0]
    assert "warmed by one generate of the same call stopped after 8 new tokens" in t.how


@pytest.mark.parametrize("kw", [{}, {"warm_tokens": 8, "compile": True}, {"warm_tokens": 128}])
def test_full_mode_and_compile_warm_with_whole_generates(kw):
    clock = Clock()
    model = FakeModel(clock)
    t = llm.hf_generate(fake_torch(clock), FAKE_TRANSFORMERS, model, Ids(8, 128), 128, 2, **kw)
    warm = model.calls[: 2 if kw.get("compile") else 1]
    assert all(c["steps"] == 128 and "stopping_criteria" not in c for c in warm)
    assert len(model.calls) == len(warm) + 4
    assert "warmed" not in t.how


class FakeGraph:
    def __init__(self) -> None:
        self.replays = 0

    def replay(self) -> None:
        self.replays += 1


def graph_decoder(new: int) -> tuple[llm.GraphDecoder, FakeGraph, list[str]]:
    clock = Clock()
    log: list[str] = []
    gd = llm.GraphDecoder.__new__(llm.GraphDecoder)
    gd.torch, gd.new, gd.graph = fake_torch(clock), new, FakeGraph()
    gd.cache = SimpleNamespace(reset=lambda: log.append("reset"))
    gd.tokens = SimpleNamespace(clone=lambda: "tokens")
    gd._prefill = lambda: log.append("prefill")  # type: ignore[method-assign]
    return gd, gd.graph, log


def test_quick_graph_decode_warms_with_a_few_replays():
    gd, g, log = graph_decoder(128)
    t = gd.time(2, 7)
    # warm: prefill + 7 replays; then 2 timed prefills and 2 timed decodes of 127 replays, each after a reset
    assert g.replays == 7 + 2 * 127
    assert log == ["reset", "prefill"] + ["reset", "prefill"] * 4
    assert t.how.endswith("warmed by a prefill and 7 replays")
    gd, g, _ = graph_decoder(128)
    assert "warmed" not in gd.time(2).how and g.replays == 3 * 127  # full mode: a whole warm decode


def counted(clock: Clock, ms: float) -> tuple[Any, list[int]]:
    n = [0]

    def fn() -> None:
        n[0] += 1
        clock.now += ms

    return fn, n


@pytest.mark.parametrize(
    ("ms", "target", "sizing", "iters"),
    [
        (530.0, 20.0, 1, 1),  # FP32 n = 16384 forward + backward: one sizing call
        (40.0, 20.0, 1, 1),  # at 2 x target: one
        (39.0, 20.0, 2, 1),  # under it: two, as before
        (0.13, 20.0, 2, 154),
        (0.01, 20.0, 2, 200),
    ],
)
def test_time_call_sizes_long_calls_with_one_call(ms, target, sizing, iters):
    clock = Clock()
    fn, n = counted(clock, ms)
    t = timing.time_call(fake_torch(clock), fn, 3, target, graph=False)
    assert t.how == f"{iters} eager calls" and t.ms == pytest.approx([ms] * 3)
    assert n[0] == 1 + sizing + 3 * iters  # warm call, sizing, timed batches
    fn, n = counted(clock, ms)
    assert timing.time_call(fake_torch(clock), fn, 3, target, graph=False, warm=False).ms == pytest.approx([ms] * 3)
    assert n[0] == sizing + 3 * iters  # the caller has just run fn: no warm call


def test_gc_frozen_keeps_what_was_alive_out_and_collects_what_is_made_inside():
    assert gc.get_freeze_count() == 0
    with timing.gc_frozen():
        assert gc.get_freeze_count() > 0
        before = gc.get_freeze_count()
        a: list[Any] = []
        a.append(a)  # a cycle made inside
        del a
        assert gc.collect() >= 1
        with timing.gc_frozen():  # already frozen: left as it is
            assert gc.get_freeze_count() == before
        assert gc.get_freeze_count() == before
    assert gc.get_freeze_count() == 0
