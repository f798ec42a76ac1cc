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
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from slurmrl.policy.view import ClusterView, JobView

# A job's static numbers, read once; the ranking stores its submit time first.
ColumnFn = Callable[[JobView], Sequence[float]]
# Keys of many jobs from their rows (column 0: submit time, then the ColumnFn's
# numbers) at time ``now``; smaller key = served first.
KeyFn = Callable[[np.ndarray, float], np.ndarray]

_BLOCK = 128  # jobs materialised at a time when a pass walks the ranking
_MAX_EXTRA = 64  # later arrivals kept apart before they are folded into the sorted arrays


class Ranked:
    """One pass's ranking, read lazily; iterating it again gives the same jobs.

    A snapshot: later starts and arrivals do not change it, so the daemon can
    still read the whole order after the pass.
    """

    __slots__ = ("_views", "_order", "_alive", "_extra", "_gpus")

    def __init__(
        self,
        views: list[JobView],
        order: np.ndarray,
        alive: np.ndarray,
        extra: list[tuple[int, int]],
        gpus: np.ndarray | None = None,
    ) -> None:
        self._views = views
        self._order = order  # arrival numbers sorted at the last re-key (dead ones included)
        self._alive = alive
        self._extra = extra  # (position in order, arrival number) of later arrivals, sorted
        self._gpus = gpus  # GPUs asked, by arrival number (None: read from the views)

    def __iter__(self) -> Cursor:
        return Cursor(self)


class Cursor:
    """A walk through a :class:`Ranked`; :meth:`take` skips jobs too large for the free GPUs in bulk."""

    __slots__ = ("_ranked", "_cursor", "_e", "_buf", "_at")

    def __init__(self, ranked: Ranked) -> None:
        self._ranked = ranked
        self._cursor = 0  # next position in the ranked order not yet buffered
        self._e = 0  # next later arrival not yet buffered
        self._buf: list[int] = []  # arrival numbers of the next live jobs, in rank order
        self._at = 0  # how many of them were handed out

    def __iter__(self) -> Cursor:
        return self

    def __next__(self) -> JobView:
        if self._at >= len(self._buf) and not self._fill():
            raise StopIteration
        seq = self._buf[self._at]
        self._at += 1
        return self._ranked._views[seq]

    def take(self, count: int, max_gpus: int) -> list[JobView]:
        """Of the next ``count`` jobs, those asking at most ``max_gpus`` GPUs, in rank order."""
        ranked = self._ranked
        views, gpus = ranked._views, ranked._gpus
        out: list[JobView] = []
        while count > 0:
            if self._at >= len(self._buf) and not self._fill(max(count, _BLOCK)):
                break
            chunk = self._buf[self._at : self._at + count]
            self._at += len(chunk)
            count -= len(chunk)
            if gpus is None:
                out.extend(job for job in (views[seq] for seq in chunk) if job.gpus <= max_gpus)
            else:
                seqs = np.asarray(chunk, dtype=np.int64)
                out.extend(views[seq] for seq in seqs[gpus[seqs] <= max_gpus].tolist())
        return out

    def _fill(self, size: int = _BLOCK) -> bool:
        """Buffer the live jobs of the next ``size`` ranked positions, later arrivals merged in; False at the end.

        A later arrival kept apart at position ``p`` comes after the jobs
        ranked before ``p`` and before the one at ``p``.
        """
        ranked = self._ranked
        alive, order, extra = ranked._alive, ranked._order, ranked._extra
        n = order.size
        buf: list[int] = []
        cursor, e = self._cursor, self._e
        while not buf and (cursor < n or e < len(extra)):
            stop = min(n, cursor + size)
            j = e
            while j < len(extra) and extra[j][0] <= stop:
                j += 1
            block = order[cursor:stop]
            if j > e:
                block = np.insert(block, [x[0] - cursor for x in extra[e:j]], [x[1] for x in extra[e:j]])
            buf = block[alive[block]].tolist()
            cursor, e = stop, j
        self._cursor, self._e = cursor, e
        self._buf, self._at = buf, 0
        return bool(buf)


class Ranking:
    def __init__(self, columns: ColumnFn, keys: KeyFn, width: int, period: float | None = None) -> None:
        self._columns = columns
        self._key_fn = keys
        self.period = period  # re-key all pending jobs this often (None: keys never change)
        self._seq: dict[str, int] = {}  # job id -> arrival number (row of the table)
        self._views: list[JobView] = []  # by arrival number
        self._table = np.zeros((256, width + 1))  # by arrival number: submit time, then columns
        self._alive = np.zeros(256, dtype=bool)  # pending and ranked
        self._gpus = np.zeros(256, dtype=np.int64)  # by arrival number: GPUs asked
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

    def invalidate(self) -> None:
        """Re-key every pending job at the next :meth:`order` (the keys' inputs changed)."""
        self._force = True

    def job(self, job_id: str) -> JobView | None:
        """The tracked pending job with this id, if any."""
        seq = self._seq.get(job_id)
        return self._views[seq] if seq is not None and self._alive[seq] else None

    def started(self, job_ids: Iterable[str]) -> None:
        for job_id in job_ids:
            seq = self._seq.get(job_id)
            if seq is not None and self._alive[seq]:
                self._alive[seq] = False
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
        return Ranked(self._views, self._order, self._alive.copy(), [(x[3], x[2]) for x in self._extra], self._gpus)

    # -- bookkeeping --------------------------------------------------------------

    def _add(self, job: JobView) -> int:
        seq = self._seq.get(job.job_id)
        if seq is not None and self._table[seq, 0] != job.submit_time:
            # Another job under a known id (a controller that lost its state
            # hands ids out again): a new arrival, which must not win ties on
            # the arrival number of the old one. A requeued job keeps its
            # submit time, and its place among equals, as under Slurm.
            if self._alive[seq]:
                self._alive[seq] = False
                self._count -= 1
            seq = None
        if seq is None:
            seq = self._seq[job.job_id] = len(self._views)
            self._views.append(job)
            if seq >= self._alive.size:
                grow = max(256, seq)
                self._table = np.concatenate([self._table, np.zeros((grow, self._table.shape[1]))])
                self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
                self._gpus = np.concatenate([self._gpus, np.zeros(grow, dtype=np.int64)])
        else:
            self._views[seq] = job
        self._table[seq, 0] = job.submit_time
        self._gpus[seq] = job.gpus
        self._table[seq, 1:] = self._columns(job)
        if not self._alive[seq]:
            self._alive[seq] = True
            self._count += 1
        self._new.append(seq)
        return seq

    def _from_view(self, pending: Iterable[JobView]) -> None:
        self._alive[:] = False
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
        for key, submit, seq in zip(keys, rows[:, 0].tolist(), seqs.tolist(), strict=True):
            lo = int(np.searchsorted(key_of, key, side="left"))
            hi = int(np.searchsorted(key_of, key, side="right"))
            while lo < hi and (submit_of[lo], order[lo]) < (submit, seq):  # equal keys: rare
                lo += 1
            bisect.insort(self._extra, (key, submit, seq, lo))
