"""Jobs in system integrated over time: the waiting area paired rewards compare.

The sum of every job's time in the system equals the integral of the
number of jobs in it (Little's law on one replay), so a replay's samples
give its total JCT over any stretch of simulated time. Paired rewards take
the agent's area less a heuristic's over the same stretch.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from slurmrl.sim.records import Sample


class AreaCurve:
    """Jobs in system integrated over time, from a replay's samples: the lead's waiting area."""

    def __init__(self, samples: Sequence[Sample], start: float) -> None:
        kept = [s for s in samples if s.time >= start]
        self.times = [start] + [s.time for s in kept]
        before = [s for s in samples if s.time < start]
        counts = [(before[-1].pending_jobs + before[-1].running_jobs) if before else 0]
        counts += [s.pending_jobs + s.running_jobs for s in kept]
        self.counts = counts
        cum = [0.0]
        for i in range(1, len(self.times)):
            cum.append(cum[-1] + counts[i - 1] * (self.times[i] - self.times[i - 1]))
        self.cum = cum

    def elapsed(self, t: float) -> float:
        """Time from the start to ``t``, capped at the replay's end: the lead's makespan term."""
        return min(max(t, self.times[0]), self.times[-1]) - self.times[0]

    def at(self, t: float) -> float:
        """Area from the start up to time ``t`` (the count after the last sample holds on)."""
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            return 0.0
        return self.cum[i] + self.counts[i] * (t - self.times[i])

    @property
    def total(self) -> float:
        return self.cum[-1]
