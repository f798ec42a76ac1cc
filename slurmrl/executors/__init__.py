"""Run many independent tasks: on this machine's cores or as Slurm job arrays.

A task is a picklable function applied to one item (a sweep cell, a seed of
a training run). An :class:`Executor` runs a list of them and yields one
:class:`Outcome` per item as it finishes, in any order. Two exist:

* :class:`~slurmrl.executors.local.LocalExecutor`: a process pool over every
  core (``jobs=1`` runs in this process, one item after the other);
* :class:`~slurmrl.executors.slurm.SlurmExecutor`: one submitit job array on
  the cluster of ``SLURM_CONF``, one array task per item.

Tasks write their own results (a sweep cell its folder); what comes back is
small, so both executors give the same outcomes and a caller never cares
which one ran them. Ctrl-C stops what was started (pool workers, array tasks
with scancel) and leaves finished items as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from slurmrl.errors import ConfigError

EXECUTORS = ("local", "slurm")


@dataclass(frozen=True)
class Outcome:
    """One item's end: its index in the submitted list, the task's return value or why it failed."""

    index: int
    value: Any = None
    error: str | None = None  # one line: the exception, or how the job ended

    @property
    def ok(self) -> bool:
        return self.error is None


class Executor(Protocol):
    name: str

    def run(self, task: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Outcome]:
        """Run ``task(item)`` for every item; yield each outcome as it finishes."""
        ...

    def describe(self, count: int) -> str:
        """One line: where ``count`` tasks would run."""
        ...


def make_executor(
    name: str, *, jobs: int | None = None, slurm: Any = None, announce: Callable[[str], None] | None = None
) -> Executor:
    """The executor called ``name``; ``slurm`` is a :class:`~slurmrl.executors.slurm.SlurmOptions`.

    ``announce`` is told what was submitted (the Slurm executor's array id), so a user can follow it.
    """
    if name == "local":
        from slurmrl.executors.local import LocalExecutor

        return LocalExecutor(jobs=jobs)
    if name == "slurm":
        from slurmrl.executors.slurm import SlurmExecutor, SlurmOptions

        return SlurmExecutor(slurm or SlurmOptions(), announce)
    raise ConfigError(f"unknown executor '{name}'; choose one of {', '.join(EXECUTORS)}")


def longest_first(costs: Sequence[float]) -> list[int]:
    """Indices by falling cost, ties in list order.

    A pool that hands out the longest tasks first (LPT) ends within 4/3 of
    the best possible schedule (R. L. Graham, SIAM J. Appl. Math. 17(2),
    1969); in list order one long task may start last on an otherwise idle pool.
    """
    return sorted(range(len(costs)), key=lambda i: -costs[i])


def error_line(exc: BaseException) -> str:
    """An exception as one line: the project's own message, else type and text."""
    from slurmrl.errors import SlurmrlError

    if isinstance(exc, SlurmrlError):
        return exc.format()
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".rstrip(": ")
