"""What every executor shares: outcomes, one-line errors, and the costliest tasks first."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from slurmrl.cli.options import run_tasks
from slurmrl.errors import SlurmrlError
from slurmrl.executors import Outcome, longest_first


class Recording:
    """Runs tasks here in the order given and remembers that order."""

    name = "recording"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def run(self, task: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Outcome]:
        for index, item in enumerate(items):
            self.seen.append(item)
            try:
                yield Outcome(index, task(item))
            except ValueError as exc:
                yield Outcome(index, error=str(exc))

    def describe(self, count: int) -> str:
        return f"{count} task(s) here"


def test_longest_first_keeps_list_order_among_equals() -> None:
    assert longest_first([1.0, 5.0, 2.0, 5.0, 0.5]) == [1, 3, 2, 0, 4]
    assert longest_first([]) == []
    assert longest_first([3.0, 3.0, 3.0]) == [0, 1, 2]


def test_run_tasks_hands_out_the_costliest_first_and_answers_in_item_order() -> None:
    executor = Recording()
    items = [1, 2, 3, 4]
    results = run_tasks(executor, lambda x: x * 10, items, "runs", False, costs=[1.0, 8.0, 2.0, 8.0])
    assert executor.seen == [2, 4, 3, 1]
    assert results == [10, 20, 30, 40]
    executor = Recording()
    assert run_tasks(executor, lambda x: -x, items, "runs", False) == [-1, -2, -3, -4]
    assert executor.seen == items


def test_a_failure_names_the_item_by_its_place_in_the_list() -> None:
    def task(x: int) -> int:
        if x == 3:
            raise ValueError("three")
        return x

    with pytest.raises(SlurmrlError, match="runs 3 of 4 failed: three"):
        run_tasks(Recording(), task, [1, 2, 3, 4], "runs", False, costs=[1.0, 1.0, 9.0, 1.0])
