"""The jobs a process admitted last, so a replay of the same trace starts without redoing it.

``compare`` replays one trace under every policy on each worker, ``--seeds``
and sweeps under each seed, and training resets its environments on the same
few scenarios over and over. Admitting a trace (a view per job, its model
class, its node request, the queued arrivals) is the same work every time for
the same jobs, cluster and admission settings, and costs about 8 µs a job.
The views are frozen and the queue is handed out as a fork, so replays
sharing them cannot disturb one another.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from slurmrl.cluster.model import Cluster
from slurmrl.policy.view import JobView
from slurmrl.sim.engine import EventQueue
from slurmrl.traces.schema import TraceJob

KEEP = 4  # admissions kept per process (our choice): a training run's scenarios and validation window
# Larger traces are not kept (our choice): they are replayed once per process, and a kept
# admission holds its views and queued events (about 200 bytes a job) after the replay.
KEEP_JOBS = 250_000


@dataclass(frozen=True)
class Admission:
    """One trace's admitted jobs: (job, its view, its model class) in trace order, and the queued events."""

    jobs: tuple[TraceJob, ...]  # held, so no other tuple can take their identity while kept
    cluster: Cluster
    entries: tuple[tuple[TraceJob, JobView, str], ...]
    events: EventQueue[Any]  # never popped: every replay takes a fork


class Admissions:
    """The last :data:`KEEP` admissions, by the identity of the trace's jobs and cluster and the settings."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._kept: OrderedDict[tuple[int, int, Hashable], Admission] = OrderedDict()
        self._lock = threading.Lock()  # replays may run in threads of one process

    def get(self, jobs: tuple[TraceJob, ...], cluster: Cluster, settings: Hashable) -> Admission | None:
        key = (id(jobs), id(cluster), settings)
        with self._lock:
            found = self._kept.get(key)
            if found is None or found.jobs is not jobs or found.cluster is not cluster:
                return None
            self._kept.move_to_end(key)
            return found

    def put(self, admission: Admission, settings: Hashable) -> None:
        if len(admission.jobs) > KEEP_JOBS:
            return
        key = (id(admission.jobs), id(admission.cluster), settings)
        with self._lock:
            self._kept[key] = admission
            self._kept.move_to_end(key)
            while len(self._kept) > self._keep:
                self._kept.popitem(last=False)


ADMISSIONS = Admissions()
