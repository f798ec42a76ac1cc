"""A pending queue kept sorted between passes, re-keyed in one vectorised step.

Orderings whose job keys change only at known times (a fixed job property,
or Slurm's priorities, recomputed every PriorityCalcPeriod) need not sort the
whole queue at every scheduling pass, nor touch every queued job in Python
when they do re-key it: on a replay with thousands of queued jobs that per-job
work was most of a run.

So :class:`Ranking` reads each job's static numbers once, when it first sees
the job (its *columns*: GPUs asked, an account number, a duration estimate
bucket...), into one table indexed by arrival number. A re-key is then array
work only: gather the live rows, call the ordering's vectorised key function,
``lexsort``. Between re-keys, arrivals are keyed on their own and merged in
at their place, and started jobs are marked dead; a pass reads the ranking
lazily, block by block, so it pays only for the jobs it looks at.

Whenever the bookkeeping disagrees with the view (a requeued job, a start it
was not told about, as when Slurm starts jobs itself under the daemon) the
table is rebuilt from the view, so it is never wrong, only occasionally
slower.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from slurmrl.policy.view import ClusterView, JobView

# A job's static numbers, read once; the ranking stores its submit time first.
ColumnFn = Callable[[JobView], Sequence[float]]
# Keys of many jobs from their rows (column 0: submit time, then the ColumnFn's
# numbers) at time ``now``; smaller key = served first.
KeyFn = Callable[[np.ndarray, float], np.ndarray]

_BLOCK = 128  # jobs materialised at a time when a pass walks the ranking
_FIRST_BLOCK = 8  # the first block (doubled up to _BLOCK): many passes read only the head
_MAX_EXTRA = 64  # later arrivals kept apart before they are folded into the sorted arrays


class Ranked:
    """One pass's ranking, read lazily; iterating it again gives the same jobs.

    A snapshot: later starts and arrivals do not change it, so the daemon can
    still read the whole order after the pass. The liveness array is the
    ranking's own until the ranking next changes it, which copies it first
    while a snapshot still holds it (:meth:`Ranking._writable`).
    """

    __slots__ = ("_views", "_order", "_alive", "_extra", "__weakref__")

    def __init__(
        self,
        views: list[JobView],
        order: np.ndarray,
        alive: np.ndarray,
        extra: list[tuple[float, float, int, int]],
    ) -> None:
        self._views = views
        self._order = order  # arrival numbers sorted at the last re-key (dead ones included)
        self._alive = alive
        self._extra = extra  # (key, submit, arrival number, position in order) of later arrivals, sorted

    def __iter__(self) -> Iterator[JobView]:
        views, alive, order, extra = self._views, self._alive, self._order, self._extra
        n = order.size
        e, cursor, size = 0, 0, _FIRST_BLOCK
        while cursor < n or e < len(extra):
            stop = min(n, cursor + size)
            size = min(2 * size, _BLOCK)
            if e < len(extra) and extra[e][3] < stop:
                stop = extra[e][3]
            if stop > cursor:
                block = order[cursor:stop]
                for seq in block[alive[block]].tolist():
                    yield views[seq]
                cursor = stop
            while e < len(extra) and extra[e][3] <= cursor:
                seq = extra[e][2]
                if alive[seq]:
                    yield views[seq]
                e += 1


class Ranking:
    def __init__(self, columns: ColumnFn, keys: KeyFn, width: int, period: float | None = None) -> None:
        self._columns = columns
        self._key_fn = keys
        self.period = period  # re-key all pending jobs this often (None: keys never change)
        self._seq: dict[str, int] = {}  # job id -> arrival number (row of the table)
        self._views: list[JobView] = []  # by arrival number
        self._table = np.zeros((256, width + 1))  # by arrival number: submit time, then columns
        self._alive = np.zeros(256, dtype=bool)  # pending and ranked
        self._count = 0  # live jobs
        self._new: list[int] = []  # tracked since the last ranking, not keyed yet
        # The ranking: arrival numbers in key order as of the last re-key, with
        # their (key, submit) pairs for merging later arrivals in.
        self._order = np.zeros(0, dtype=np.int64)
        self._order_key = np.zeros(0)
        self._order_submit = np.zeros(0)
        self._extra: list[tuple[float, float, int, int]] = []  # (key, submit, seq, position), sorted
        self._next_rekey = -np.inf
        self._force = False
        self.rebuilds = 0  # full re-keys so far (for tests and profiling)
        self._lent: weakref.ref[Ranked] | None = None  # the last snapshot handed the liveness array

    def _writable(self) -> np.ndarray:
        """The liveness array, copied first if a snapshot still reads it.

        A pass's snapshot is usually gone (with the pass's decisions) by
        the next change, so most passes copy nothing.
        """
        lent = self._lent
        if lent is not None:
            self._lent = None
            if lent() is not None:
                self._alive = self._alive.copy()
        return self._alive

    def invalidate(self) -> None:
        """Re-key every pending job at the next :meth:`order` (the keys' inputs changed)."""
        self._force = True

    def unstarted(self, job_ids: Iterable[str]) -> None:
        """Pending again: jobs it was told had started whose start did not happen.

        A policy led by a heuristic may hold back what the heuristic
        proposed and start another job instead; the arrival and count
        checks of :meth:`absorb` cannot see such a swap, so the led policy
        says which of the starts it was told of did not happen.
        """
        for job_id in job_ids:
            seq = self._seq.get(job_id)
            if seq is not None and not self._alive[seq]:
                self._writable()[seq] = True
                self._count += 1

    def job(self, job_id: str) -> JobView | None:
        """The tracked pending job with this id, if any."""
        seq = self._seq.get(job_id)
        return self._views[seq] if seq is not None and self._alive[seq] else None

    def started(self, job_ids: Iterable[str]) -> None:
        for job_id in job_ids:
            seq = self._seq.get(job_id)
            if seq is not None and self._alive[seq]:
                self._writable()[seq] = False
                self._count -= 1

    def absorb(self, view: ClusterView) -> None:
        """Track the jobs that arrived since the last call, reading their columns.

        Arrivals sit at the end of ``view.pending``; anything else (a
        requeued job, starts it was not told of, or a view built afresh from
        a Slurm snapshot, as the daemon's are) sends the ranking back to the
        view, which also refreshes every job's columns.
        """
        pending = view.pending
        arrivals: list[JobView] = []
        for job in reversed(pending):  # type: ignore[call-overload]
            seq = self._seq.get(job.job_id)
            if seq is not None:
                # The newest job known before must be the very object seen then:
                # a requeued job comes back to the end as a new view.
                if not self._alive[seq] or self._views[seq] is not job:
                    self._from_view(pending)
                    return
                break
            arrivals.append(job)
        for job in reversed(arrivals):
            self._add(job)
        if self._count != len(pending):
            self._from_view(pending)

    def order(self, view: ClusterView) -> Ranked:
        self.absorb(view)
        now = view.now
        if self._force or (self.period is not None and now >= self._next_rekey):
            self._rekey(now)
        elif self._new:
            self._merge(now)
            if len(self._extra) > _MAX_EXTRA:
                self._fold()
        ranked = Ranked(self._views, self._order, self._alive, self._extra.copy())
        self._lent = weakref.ref(ranked)
        return ranked

    # -- bookkeeping --------------------------------------------------------------

    def _add(self, job: JobView) -> int:
        seq = self._seq.get(job.job_id)
        if seq is not None and self._table[seq, 0] != job.submit_time:
            # Another job under a known id (a controller that lost its state
            # hands ids out again): a new arrival, which must not win ties on
            # the arrival number of the old one. A requeued job keeps its
            # submit time, and its place among equals, as under Slurm.
            if self._alive[seq]:
                self._writable()[seq] = False
                self._count -= 1
            seq = None
        if seq is None:
            seq = self._seq[job.job_id] = len(self._views)
            self._views.append(job)
            if seq >= self._alive.size:
                grow = max(256, seq)
                self._table = np.concatenate([self._table, np.zeros((grow, self._table.shape[1]))])
                self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
        else:
            self._views[seq] = job
        self._table[seq, 0] = job.submit_time
        self._table[seq, 1:] = self._columns(job)
        if not self._alive[seq]:
            self._writable()[seq] = True
            self._count += 1
        self._new.append(seq)
        return seq

    def _from_view(self, pending: Iterable[JobView]) -> None:
        self._writable()[:] = False
        self._count = 0
        self._new.clear()
        for job in pending:
            self._add(job)
        self._force = True

    # -- ranking ------------------------------------------------------------------

    def _rekey(self, now: float) -> None:
        self.rebuilds += 1
        self._force = False
        if self.period is not None:
            self._next_rekey = now + self.period
        seqs = np.flatnonzero(self._alive)
        rows = self._table[seqs]
        keys = np.asarray(self._key_fn(rows, now), dtype=float)
        idx = np.lexsort((seqs, rows[:, 0], keys))
        self._order, self._order_key, self._order_submit = seqs[idx], keys[idx], rows[idx, 0]
        self._extra = []
        self._new = []

    def _fold(self) -> None:
        """Sort the kept-apart arrivals into the arrays, each with the key it was given."""
        live = self._alive[self._order]
        extra = [x for x in self._extra if self._alive[x[2]]]
        keys = np.concatenate([self._order_key[live], [x[0] for x in extra]])
        submits = np.concatenate([self._order_submit[live], [x[1] for x in extra]])
        seqs = np.concatenate([self._order[live], np.array([x[2] for x in extra], dtype=np.int64)])
        idx = np.lexsort((seqs, submits, keys))
        self._order, self._order_key, self._order_submit = seqs[idx], keys[idx], submits[idx]
        self._extra = []

    def _merge(self, now: float) -> None:
        """Key the jobs tracked since the last re-key and place them among the ranked ones."""
        seqs = np.asarray(self._new, dtype=np.int64)
        self._new = []
        rows = self._table[seqs]
        keys = np.asarray(self._key_fn(rows, now), dtype=float).tolist()
        order, key_of, submit_of = self._order, self._order_key, self._order_submit
        n = key_of.size
        for key, submit, seq in zip(keys, rows[:, 0].tolist(), seqs.tolist(), strict=True):
            lo = int(key_of.searchsorted(key, side="left"))
            if lo < n and key_of[lo] == key:  # equal keys (rare): then submit time and arrival decide
                hi = int(key_of.searchsorted(key, side="right"))
                while lo < hi and (submit_of[lo], order[lo]) < (submit, seq):
                    lo += 1
            bisect.insort(self._extra, (key, submit, seq, lo))
