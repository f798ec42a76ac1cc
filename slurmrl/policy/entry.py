"""A policy or placement by name: where its factory lives, and what it promises.

Its own module so that the tables of shipped entries (:mod:`slurmrl.policy.builtin`)
and the lookup by name (:mod:`slurmrl.policy.registry`) both build on it
without importing each other.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # "package.module:factory"
    summary: str
    deployable: bool = True  # False: uses true durations, a bound only
    default_placement: str = "first-fit"
    learned: bool = False  # a trained network (imports torch; not in compare's default set)
    # Replay CPU time per job relative to fifo's (measured on philly-sample, see
    # builtin.py). Only the order in which a process pool takes runs reads it:
    # the costliest first, so that no long run starts last on an idle pool.
    cost: float = 1.0

    def load(self) -> Callable[..., object]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)
