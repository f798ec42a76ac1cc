from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, Node, Rack, islands_for
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.ordering.ranking import Ranking
from slurmrl.policy.view import ClusterView, JobView

CLUSTER = Cluster("t", (Rack("r", 0, (0,)),), (Node("n0", 0, 0, 8, "v100", islands_for("nvswitch", 8)),))
POOL = GpuPool(CLUSTER).readonly()

# One step of a queue's life: new jobs arrive (each with a key from a small
# range, so ties are common), some pending jobs start (told or untold, as when
# Slurm starts them itself), a started job may come back (requeue), and time
# may pass a re-key period.
steps = st.lists(
    st.tuples(
        st.lists(st.integers(0, 5), max_size=12),  # keys of the arrivals
        st.lists(st.integers(0, 200), max_size=4),  # which pending jobs start
        st.booleans(),  # are the starts reported to the ranking
        st.booleans(),  # does a started job come back
        st.booleans(),  # does a re-key period pass
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_ranking_matches_a_full_sort_at_every_pass(
    script: list[tuple[list[int], list[int], bool, bool, bool]],
) -> None:
    key_of: dict[str, int] = {}
    ranking = Ranking(lambda job: (key_of[job.job_id],), lambda rows, now: rows[:, 1], width=1, period=100.0)
    pending: dict[str, JobView] = {}
    seq: dict[str, int] = {}
    gone: list[JobView] = []
    now = 0.0
    for arrivals, picks, told, requeue, tick in script:
        now += 150.0 if tick else 1.0
        for key in arrivals:
            job_id = f"j{len(key_of)}"
            key_of[job_id] = key
            seq[job_id] = len(seq)
            pending[job_id] = JobView(job_id, 1, now)
        if requeue and gone:
            back = gone.pop()  # requeued: a new view of the same job, at the end of the queue
            pending[back.job_id] = replace(back, preemptions=back.preemptions + 1)
        ranked = ranking.order(ClusterView(now, CLUSTER, POOL, pending.values(), ()))
        want = sorted(pending, key=lambda j: (key_of[j], pending[j].submit_time, seq[j]))
        assert [j.job_id for j in ranked] == want
        ids = list(pending)
        started = sorted({ids[p % len(ids)] for p in picks}) if ids else []
        for job_id in started:
            gone.append(pending.pop(job_id))
        if told:
            ranking.started(started)
        # A pass's ranking is a snapshot: reading it again after the starts gives the same jobs.
        assert [j.job_id for j in ranked] == want


def test_ranking_reads_each_job_once_and_rekeys_in_one_call() -> None:
    calls: list[int] = []
    read: list[str] = []

    def columns(job: JobView) -> tuple[float]:
        read.append(job.job_id)
        return (float(job.gpus),)

    def keys(rows: np.ndarray, now: float) -> np.ndarray:
        calls.append(len(rows))
        return -rows[:, 1] * now  # depends on time: only a re-key may change it

    ranking = Ranking(columns, keys, width=1, period=300.0)
    pending = {f"j{i}": JobView(f"j{i}", 1 + i % 3, float(i)) for i in range(500)}
    view = ClusterView(1.0, CLUSTER, POOL, pending.values(), ())
    first = [j.job_id for j in ranking.order(view)]
    assert first[:3] == ["j2", "j5", "j8"]
    assert sorted(read) == sorted(pending) and calls == [500]
    ranking.order(ClusterView(100.0, CLUSTER, POOL, pending.values(), ()))
    assert calls == [500] and ranking.rebuilds == 1  # nothing new, no period: nothing recomputed
    ranking.order(ClusterView(400.0, CLUSTER, POOL, pending.values(), ()))
    assert calls == [500, 500] and ranking.rebuilds == 2 and len(read) == 500


def test_a_reused_job_id_is_a_new_arrival_but_a_requeued_job_keeps_its_place() -> None:
    ranking = Ranking(lambda job: (0.0,), lambda rows, now: rows[:, 1], width=1)  # all keys tie

    def order(now: float, *jobs: JobView) -> list[str]:
        return [j.job_id for j in ranking.order(ClusterView(now, CLUSTER, POOL, jobs, ()))]

    old5, j6 = JobView("5", 1, 100.0), JobView("6", 1, 100.0)
    assert order(110.0, old5, j6) == ["5", "6"]
    # A controller restarted from an old state forgot jobs 5-7 and numbers new ones from 5 again:
    # the new job 5 was submitted after job 7, so it queues behind it.
    j7, new5 = JobView("7", 1, 400.0), JobView("5", 1, 500.0)
    assert order(600.0, j7, new5) == ["7", "5"]
    # A requeued job (same id, same submit time, a new view) keeps its place among equals.
    assert order(700.0, j7, replace(new5, preemptions=1), JobView("8", 1, 300.0)) == ["8", "7", "5"]
