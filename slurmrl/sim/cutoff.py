"""Giving up on a replay that can no longer come in under a figure.

A trainer replays its validation window every few updates and keeps the
weights only if the replay's average JCT beats the best so far. A policy that
holds jobs back makes that replay run many times its usual wall (its queue
grows, and every pass reads the queue), only for the result to be thrown
away. Every job's JCT is at least the time it has spent in the system so far
plus the work it has left at its fastest (its best GPU type and count, no
slowdown), so at any instant of a replay the mean over the measured jobs of
``end - submit`` for those that ended, that sum for those waiting or
running, and the fastest run for those still to come is a floor under the
final average; it starts near the workload's own bound, so a replay that
holds jobs back passes it early. Once that floor passes the figure to beat
the replay is abandoned: the kept weights are the ones a whole replay would
have kept.

A replay that kills jobs at their time limits is never cut: which jobs end
finished, and so count, is not known until they end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class JctCutoff:
    """Abandon a replay once its average JCT can no longer be at or below ``beat`` seconds."""

    beat: float
    # Jobs submitted before this time are not measured (a warm-started replay's warm-up).
    measured_from: float = -math.inf
    every: int = 64  # scheduling passes between checks of the floor (each reads the jobs not yet ended)

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"a cutoff is checked every 1 or more passes, not {self.every}")


class ReplayAbandoned(Exception):
    """A replay stopped by its :class:`JctCutoff`: ``floor`` already exceeds ``beat``."""

    def __init__(self, floor: float, beat: float, now: float) -> None:
        super().__init__(
            f"abandoned at t={now:.0f} s: the average JCT is already at least {floor:.1f} s, "
            f"above the {beat:.1f} s to beat"
        )
        self.floor = floor
        self.beat = beat
        self.now = now
