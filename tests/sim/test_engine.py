"""The event queue: time order, deterministic ties, no scheduling in the past."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmrl.sim.engine import ARRIVAL, COMPLETION, WAKE, EventQueue


def test_ties_break_by_priority_then_insertion() -> None:
    q: EventQueue[str] = EventQueue()
    q.schedule(5.0, WAKE, "wake")
    q.schedule(5.0, ARRIVAL, "arrive-1")
    q.schedule(5.0, COMPLETION, "done")
    q.schedule(5.0, ARRIVAL, "arrive-2")
    q.schedule(1.0, WAKE, "early")
    assert q.pop()[2] == "early"
    assert [e for _, e in q.pop_due(5.0)] == ["done", "arrive-1", "arrive-2", "wake"]
    assert q.now == 5.0
    assert q.peek() == float("inf")


def test_cannot_schedule_in_the_past() -> None:
    q: EventQueue[str] = EventQueue()
    q.schedule(3.0, ARRIVAL, "a")
    q.pop()
    with pytest.raises(ValueError, match="before the current time"):
        q.schedule(2.0, ARRIVAL, "b")


@given(st.lists(st.tuples(st.floats(0, 1e6), st.integers(0, 2)), min_size=1, max_size=200))
def test_pops_are_sorted(events: list[tuple[float, int]]) -> None:
    q: EventQueue[int] = EventQueue()
    for i, (t, p) in enumerate(events):
        q.schedule(t, p, i)
    out = []
    while len(q):
        t, p, i = q.pop()
        out.append((t, p, i))
    assert out == sorted(out)


@given(
    st.lists(
        st.tuples(st.integers(0, 5).map(float), st.sampled_from([COMPLETION, ARRIVAL, WAKE])), max_size=40
    )
)
def test_schedule_all_pops_as_single_pushes_do(events: list[tuple[float, int]]) -> None:
    one, many = EventQueue[int](), EventQueue[int]()
    for i, (t, p) in enumerate(events):
        one.schedule(t, p, i)
    many.schedule_all((t, p, i) for i, (t, p) in enumerate(events))
    assert [one.pop() for _ in events] == [many.pop() for _ in events]


def test_schedule_all_refuses_the_past() -> None:
    q = EventQueue[str](start=10.0)
    with pytest.raises(ValueError, match="before the current time"):
        q.schedule_all([(11.0, ARRIVAL, "a"), (9.0, ARRIVAL, "b")])


@given(
    before=st.lists(st.tuples(st.integers(0, 5), st.sampled_from([ARRIVAL, COMPLETION, WAKE])), max_size=8),
    after=st.lists(st.tuples(st.integers(5, 9), st.sampled_from([ARRIVAL, COMPLETION, WAKE])), max_size=8),
)
def test_a_fork_pops_what_the_original_pops_and_keeps_apart(before, after) -> None:
    """Events scheduled after a fork tie-break alike in both queues and reach only their own."""
    q: EventQueue[str] = EventQueue()
    for i, (t, kind) in enumerate(before):
        q.schedule(float(t), kind, f"b{i}")
    twin = q.fork()
    for queue in (q, twin):
        for i, (t, kind) in enumerate(after):
            queue.schedule(float(t), kind, f"a{i}")
    twin.schedule(9.0, WAKE, "only-twin")

    def drain(queue: EventQueue[str]) -> list[str]:
        return [queue.pop()[2] for _ in range(len(queue))]

    mine = drain(q)
    assert drain(twin) == [*mine, "only-twin"]
