"""A pending queue kept sorted between passes.

Orderings whose job keys change only at known times (a fixed job property,
or Slurm's priorities, recomputed every PriorityCalcPeriod) do not need to
sort the whole queue at every scheduling pass. :class:`Ranking` keeps the
pending jobs sorted by key, inserts arrivals with a binary search, drops the
jobs the scheduler reported as started, and re-keys everything (vectorised)
only when the ordering's period elapses. Whenever its bookkeeping disagrees
with the view (a requeued job, a start it was not told about) it rebuilds
from the view, so it is never wrong, only occasionally slower.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter

import numpy as np

from slurmrl.policy.view import ClusterView, JobView

KeyFn = Callable[[Sequence[JobView], float], np.ndarray]  # smaller key = served first

_SUBMIT = attrgetter("submit_time")
_ID = attrgetter("job_id")


class Ranking:
    def __init__(self, keys: KeyFn, period: float | None = None) -> None:
        self._key_fn = keys
        self.period = period  # re-key all pending jobs this often (None: keys never change)
        self._keys: list[tuple[float, float, int]] = []
        self._jobs: list[JobView] = []
        self._key_of: dict[str, tuple[float, float, int]] = {}
        self._seqs: dict[str, int] = {}
        self._gone: list[str] = []
        self._next_rekey = -np.inf
        self._force = False
        self.rebuilds = 0  # full rebuilds so far (for tests and profiling)

    def invalidate(self) -> None:
        """Re-key every pending job at the next :meth:`order` (the keys' inputs changed)."""
        self._force = True

    def job(self, job_id: str) -> JobView | None:
        """The tracked pending job with this id, if any."""
        key = self._key_of.get(job_id)
        if key is None:
            return None
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            return self._jobs[i]
        return None

    def started(self, job_ids: Iterable[str]) -> None:
        self._gone.extend(job_ids)

    def order(self, view: ClusterView) -> list[JobView]:
        pending = view.pending
        for job_id in self._gone:
            key = self._key_of.pop(job_id, None)
            if key is not None:
                i = bisect.bisect_left(self._keys, key)
                if i >= len(self._keys) or self._keys[i] != key:
                    i = self._keys.index(key)
                del self._keys[i]
                del self._jobs[i]
        self._gone.clear()
        due = self._force or (self.period is not None and view.now >= self._next_rekey)
        if not due:
            arrivals: list[JobView] = []
            for job in reversed(pending):
                if job.job_id in self._key_of:
                    break
                arrivals.append(job)
            if len(self._key_of) + len(arrivals) != len(pending):
                due = True
            elif arrivals:
                values = self._key_fn(arrivals, view.now).tolist()
                for job, value in zip(arrivals, values, strict=False):
                    key = (value, job.submit_time, self._seq_of(job))
                    i = bisect.bisect_right(self._keys, key)
                    self._keys.insert(i, key)
                    self._jobs.insert(i, job)
                    self._key_of[job.job_id] = key
        if due:
            self._rebuild(pending, view.now)
        return list(self._jobs)

    def _rebuild(self, pending: Sequence[JobView], now: float) -> None:
        self.rebuilds += 1
        self._force = False
        if self.period is not None:
            self._next_rekey = now + self.period
        jobs = list(pending)
        if not jobs:
            self._keys, self._jobs, self._key_of = [], [], {}
            return
        values = np.asarray(self._key_fn(jobs, now), dtype=float)
        submits = np.fromiter(map(_SUBMIT, jobs), dtype=float, count=len(jobs))
        ids = list(map(_ID, jobs))
        known = self._seqs
        fresh: list[str] = []
        for job_id in reversed(ids):  # arrivals since the last pass sit at the end
            if job_id in known:
                break
            fresh.append(job_id)
        for job_id in reversed(fresh):
            known[job_id] = len(known)
        if not known.keys() >= set(ids):  # a view not in arrival order (rare)
            for job_id in ids:
                if job_id not in known:
                    known[job_id] = len(known)
        seqs = np.fromiter(map(known.__getitem__, ids), dtype=np.int64, count=len(jobs))
        # The same (key, submit, arrival) order that bisect uses between
        # rebuilds, sorted on numbers only.
        idx = np.lexsort((seqs, submits, values))
        self._jobs = [jobs[i] for i in idx.tolist()]
        self._keys = list(zip(values[idx].tolist(), submits[idx].tolist(), seqs[idx].tolist(), strict=True))
        self._key_of = dict(zip([ids[i] for i in idx.tolist()], self._keys, strict=True))

    def _seq_of(self, job: JobView) -> int:
        """Arrival number of a job: the last tie-break, as job ids are in Slurm."""
        seq = self._seqs.get(job.job_id)
        if seq is None:
            seq = self._seqs[job.job_id] = len(self._seqs)
        return seq
