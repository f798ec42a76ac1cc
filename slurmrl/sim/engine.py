"""A minimal discrete-event core.

Events sit in a heap of ``(time, priority, seq, event)``: equal times are
broken by priority (completions before arrivals before wake-ups, so freed GPUs
are visible to the jobs that arrive at the same instant) and then by insertion
order, which makes every run with the same inputs replay identically.
Cancelled events are not removed from the heap; their owners ignore stale
ones (see :class:`~slurmrl.sim.simulator.Simulator`), which keeps scheduling
O(log n).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from itertools import count
from typing import Generic, TypeVar

E = TypeVar("E")

# Tie-break order at one instant.
COMPLETION = 0
ARRIVAL = 1
WAKE = 2


class EventQueue(Generic[E]):
    __slots__ = ("_heap", "_seq", "now")

    def __init__(self, start: float = 0.0) -> None:
        self._heap: list[tuple[float, int, int, E]] = []
        self._seq = count()
        self.now = start

    def __len__(self) -> int:
        return len(self._heap)

    def schedule(self, time: float, priority: int, event: E) -> None:
        if time < self.now:
            raise ValueError(f"cannot schedule an event at {time} before the current time {self.now}")
        heapq.heappush(self._heap, (time, priority, next(self._seq), event))

    def schedule_all(self, items: Iterable[tuple[float, int, E]]) -> None:
        """Many ``(time, priority, event)`` at once, sequenced in the given order.

        One heapify instead of a push each: a trace's arrivals are most of
        the events a replay ever holds. Keys are unique (the sequence), so
        the events pop in exactly the order single pushes would give.
        """
        seq, now = self._seq, self.now
        entries = [(time, priority, next(seq), event) for time, priority, event in items]
        if entries and min(entries)[0] < now:
            raise ValueError(f"cannot schedule an event at {min(entries)[0]} before the current time {now}")
        self._heap.extend(entries)
        heapq.heapify(self._heap)

    def peek(self) -> float:
        """Time of the next event; ``inf`` when none is left."""
        return self._heap[0][0] if self._heap else float("inf")

    def fork(self) -> EventQueue[E]:
        """An independent copy: the same events, handing out the same sequence numbers from here on."""
        twin: EventQueue[E] = EventQueue(self.now)
        twin._heap = list(self._heap)  # entries are tuples of immutable values
        position = next(self._seq)
        self._seq, twin._seq = count(position), count(position)
        return twin

    def pop(self) -> tuple[float, int, E]:
        time, priority, _, event = heapq.heappop(self._heap)
        self.now = time
        return time, priority, event

    def pop_due(self, time: float) -> list[tuple[int, E]]:
        """All events at exactly ``time``, in tie-break order."""
        due = []
        heap = self._heap
        while heap and heap[0][0] == time:
            _, priority, _, event = heapq.heappop(heap)
            due.append((priority, event))
        self.now = time
        return due
