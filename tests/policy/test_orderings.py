from __future__ import annotations

import math

import pytest

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy import make_policy
from slurmrl.policy.ordering.multifactor import MultifactorConfig, MultifactorOrdering, make_slurm
from slurmrl.policy.ordering.qssf import make_qssf
from slurmrl.policy.ordering.tiresias import Tiresias
from slurmrl.policy.placement.first_fit import FirstFit
from slurmrl.policy.view import ClusterView, FinishedJob, JobView


def make_cluster(nodes: int, gpus: int = 4) -> Cluster:
    return Cluster(
        "t",
        (Rack("r", 0, tuple(range(nodes))),),
        tuple(Node(f"n{i}", i, 0, gpus, "v100", islands_for("nvswitch", gpus)) for i in range(nodes)),
    )


def view_of(
    cluster: Cluster,
    now: float,
    pending: tuple[JobView, ...],
    running: tuple[JobView, ...] = (),
    finished: tuple[FinishedJob, ...] = (),
) -> ClusterView:
    pool = GpuPool(cluster)
    for r in running:
        pool.allocate(r.placement)  # type: ignore[arg-type]
    return ClusterView(now, cluster, pool.readonly(), pending, running, finished)


def run_on(node: int, gpus: int, job_id: str, start: float, **kw: object) -> JobView:
    p = Placement.of([(node, list(range(gpus)))])
    return JobView(job_id, gpus, kw.pop("submit", start), start_time=start, placement=p, **kw)  # type: ignore[arg-type]


def test_sjf_oracle_runs_shortest_first() -> None:
    cluster = make_cluster(1)
    pending = tuple(JobView(f"j{i}", 4, float(i), time_limit=1e4) for i in range(3))
    policy = make_policy("sjf-oracle", "first-fit")
    assert policy.deployable is False
    policy.bind_oracle({"j0": 500.0, "j1": 50.0, "j2": 200.0})
    d = policy.decide(view_of(cluster, 10.0, pending))
    assert list(d.order) == ["j1", "j2", "j0"]
    assert [s.job_id for s in d.starts] == ["j1"]


def test_srtf_oracle_preempts_only_much_longer_jobs() -> None:
    cluster = make_cluster(1)
    long = run_on(0, 4, "long", 0.0)
    policy = make_policy("srtf-oracle", "first-fit")
    policy.bind_oracle({"long": 2000.0, "short": 100.0, "mid": 800.0})
    d = policy.decide(view_of(cluster, 500.0, (JobView("short", 4, 400.0),), (long,)))
    assert d.preempt == ("long",) and [s.job_id for s in d.starts] == ["short"]
    # 1500 s left vs 800 s: not below half, so no churn.
    d = policy.decide(view_of(cluster, 500.0, (JobView("mid", 4, 400.0),), (long,)))
    assert d.preempt == () and d.starts == ()


def test_tiresias_demotes_long_job_and_preempts_it() -> None:
    cluster = make_cluster(1)
    policy = Tiresias(FirstFit())
    old = run_on(0, 4, "old", 0.0, submit=0.0)  # 4 GPUs x 1000 s = 4000 GPU-s > 3250: queue 1
    new = JobView("new", 2, 900.0)
    now = 1000.0
    assert policy.queue(old, now) == 1 and policy.queue(new, now) == 0
    d = policy.decide(view_of(cluster, now, (new,), (old,)))
    assert d.preempt == ("old",)
    assert [s.job_id for s in d.starts] == ["new"]
    # A job in the top queue is never preempted for another top-queue job.
    young = run_on(0, 4, "young", 900.0)
    d = Tiresias(FirstFit()).decide(view_of(cluster, now, (new,), (young,)))
    assert d.preempt == () and d.starts == ()
    # Demotion time is announced so the simulator wakes the policy then.
    assert d.wake_at == pytest.approx(900.0 + 3250.0 / 4)


def test_tiresias_promotes_starving_job() -> None:
    cluster = make_cluster(1)
    policy = Tiresias(FirstFit(), starve_limit=10.0)
    old = run_on(0, 4, "old", 0.0)
    policy.decide(view_of(cluster, 1000.0, (JobView("new", 4, 900.0),), (old,)))  # old preempted after 1000 s
    waiting = JobView("old", 4, 0.0, attained_service=4000.0, preemptions=1)
    hog = run_on(0, 4, "hog", 1000.0, submit=900.0)
    policy.decide(view_of(cluster, 5000.0, (waiting,), (hog,)))
    assert policy.queue(waiting, 5000.0) == 1
    d = policy.decide(view_of(cluster, 11000.0, (waiting,), (hog,)))  # waited 10 x its last run
    assert policy.queue(waiting, 11000.0) == 0
    assert d.preempt == ("hog",) and [s.job_id for s in d.starts] == ["old"]


def test_slurm_multifactor_matches_documented_formula() -> None:
    cluster = make_cluster(4)  # 16 GPUs
    ordering = MultifactorOrdering(MultifactorConfig())
    policy = make_slurm(FirstFit())
    policy.ordering = ordering
    r = run_on(0, 4, "r", 0.0, group="a")
    policy.decide(view_of(cluster, 0.0, (JobView("x", 16, 0.0, group="a"),), (r,)))
    pending = (
        JobView("j1", 4, 0.0, group="a"),
        JobView("j2", 1, 300.0, group="b"),
        JobView("j3", 8, 500.0, group="b"),
        JobView("j4", 16, 550.0, group="a"),
    )
    now = 600.0
    d = policy.decide(view_of(cluster, now, pending, (r,)))
    # Usage: a ran 4 GPUs x 600 s, b nothing. Two accounts -> S = 1/2.
    # U_a = 1 -> F_a = 2^(-1/0.5) = 0.25; U_b = 0 -> F_b = 1.
    week = 7 * 86400.0

    def expected(submit: float, gpus: int, fs: float) -> float:
        # Job size: nodes asked (fewest of 4 GPUs that hold the job) over 4 nodes, and
        # as many CPUs (one per node, nodes of unknown CPU count counting 1) over 4.
        nodes = -(-gpus // 4)
        total = 1000 * (now - submit) / week + 10000 * fs + 1000 * (nodes / 4 + nodes / 4) / 2
        return float(math.floor(total))  # Slurm keeps whole numbers

    want = {
        "j1": expected(0.0, 4, 0.25),
        "j2": expected(300.0, 1, 1.0),
        "j3": expected(500.0, 8, 1.0),
        "j4": expected(550.0, 16, 0.25),
    }
    got = dict(zip([j.job_id for j in pending], ordering.priorities(pending, now).tolist(), strict=True))
    assert got == pytest.approx(want)
    assert list(d.order) == sorted(want, key=lambda k: -want[k]) == ["j3", "j2", "j4", "j1"]
    assert [s.job_id for s in d.starts] == ["j3", "j2"]
    # Between PriorityCalcPeriod ticks the ranking is reused, not recomputed.
    rebuilds = ordering._ranking.rebuilds
    rest = (pending[0], pending[3], JobView("j5", 1, 650.0, group="c"))
    policy.decide(view_of(cluster, 700.0, rest, (r,)))
    assert ordering._ranking.rebuilds == rebuilds
    policy.decide(view_of(cluster, 900.0, rest, (r,)))
    assert ordering._ranking.rebuilds == rebuilds + 1


def test_slurm_priorities_are_whole_numbers_and_ties_go_to_submit_time_then_arrival() -> None:
    """sort_job_queue2 (job_scheduler.c) compares uint32_t priorities, then submit times,
    then job ids: sums that differ by less than one tie."""
    cluster = make_cluster(4)
    only = dict(weight_age=1000.0, weight_job_size=1.0, weight_fairshare=10000.0)
    policy = make_slurm(FirstFit(), MultifactorConfig(**only))
    everything = Placement.of([(n, [0, 1, 2, 3]) for n in range(4)])
    hog = JobView("hog", 16, 0.0, start_time=0.0, placement=everything)  # nothing starts: order only
    # Age 1000 * 600 / 1 week = 0.99 plus size 0.25 (1 node of 4): 10001.24.
    # Age 0.50 plus size 1.0 (4 nodes): 10001.50. Both are 10001: the earlier submit goes first.
    early = JobView("early", 1, 0.0)
    big = JobView("big", 16, 300.0)
    # Same submit time and priority: the one that arrived (was numbered) first.
    twin_a, twin_b = JobView("z-first", 1, 0.0), JobView("a-second", 1, 0.0)
    d = policy.decide(view_of(cluster, 600.0, (early, big, twin_a, twin_b), (hog,)))
    assert policy.ordering.priorities((early, big), 600.0).tolist() == [10001.0, 10001.0]
    assert list(d.order) == ["early", "z-first", "a-second", "big"]


@pytest.mark.parametrize(
    ("favor_small", "want"),
    [
        # CPUs (nodes x the cluster's CPUs per node) per minute of limit over the cluster's CPUs:
        # 1 node of 4 for 1 min 0.25, 4 nodes for 2 min 0.5, 4 nodes for 61 s (2 whole
        # minutes) 0.5, 4 nodes for 1 min 1.0, 4 nodes without a limit (a week) 0.0001 -> 1.
        (False, {"a": 250, "b": 500, "c": 500, "d": 1000, "e": 1}),
        (True, {"a": 750, "b": 500, "c": 500, "d": 1, "e": 999}),
    ],
)
def test_small_relative_to_time_divides_job_size_by_the_time_limit(
    favor_small: bool, want: dict[str, int]
) -> None:
    """set_priority_factors (priority_multifactor.c) under PRIORITY_FLAGS_SIZE_RELATIVE."""
    from slurmrl.slurm.scheduler_conf import SchedulerSettings

    settings = SchedulerSettings(
        priority_type="priority/multifactor",
        weight_job_size=1000,
        favor_small=favor_small,
        priority_flags=("SMALL_RELATIVE_TO_TIME",),
    )
    policy = make_slurm(FirstFit(), settings=settings)
    pending = (
        JobView("a", 4, 0.0, time_limit=60.0),
        JobView("b", 16, 0.0, time_limit=120.0),
        JobView("c", 16, 0.0, time_limit=61.0),
        JobView("d", 16, 0.0, time_limit=60.0),
        JobView("e", 16, 0.0),
    )
    policy.decide(view_of(make_cluster(4), 0.0, pending))
    got = dict(zip("abcde", (int(p) for p in policy.ordering.priorities(pending, 0.0)), strict=True))
    assert got == want


def test_slurm_weights_are_configurable_and_documented_defaults_hold() -> None:
    cfg = MultifactorConfig()
    assert (cfg.max_age, cfg.decay_half_life, cfg.calc_period) == (7 * 86400.0, 7 * 86400.0, 300.0)
    with pytest.raises(ValueError):
        MultifactorOrdering(MultifactorConfig(fairshare_by="planet"))


def test_qssf_learns_from_finished_jobs() -> None:
    cluster = make_cluster(1)
    policy = make_qssf(FirstFit())
    slow, quick = JobView("s", 1, 10.0, user="slow"), JobView("q", 1, 20.0, user="quick")
    hog = run_on(0, 4, "hog", 0.0)
    d = policy.decide(view_of(cluster, 30.0, (slow, quick), (hog,)))
    assert list(d.order) == ["s", "q"]  # no history: equal estimates, submit order
    history = tuple(
        FinishedJob(JobView(f"h{i}", 1, 0.0, user=u), end_time=40.0, run_time=t)
        for i, (u, t) in enumerate([("slow", 9000.0), ("slow", 8000.0), ("quick", 60.0), ("quick", 90.0)])
    )
    policy.decide(view_of(cluster, 400.0, (slow, quick), (hog,), history))
    assert policy.ordering.estimator.estimate(quick) == 75.0
    # A new user falls back to the cluster-wide 1-GPU median: (90 + 8000) / 2.
    assert policy.ordering.estimator.estimate(JobView("n", 1, 0.0, user="new")) == 4045.0
    d = policy.decide(view_of(cluster, 800.0, (slow, quick), (hog,)))
    assert list(d.order) == ["q", "s"]


def test_incremental_ranking_matches_full_sort_without_rebuilds() -> None:
    cluster = make_cluster(2)
    policy = make_policy("sjf-oracle", "first-fit")
    durations = {f"j{i}": float((i * 37) % 101 + 1) for i in range(60)}
    policy.bind_oracle(durations)
    pending: dict[str, JobView] = {}
    running: dict[str, JobView] = {}
    now = 0.0
    for step in range(60):
        now += 10.0
        pending[f"j{step}"] = JobView(f"j{step}", 1 + step % 4, now, time_limit=500.0)
        finished = []
        for job_id, job in list(running.items()):
            if job.start_time + durations[job_id] <= now:  # type: ignore[operator]
                del running[job_id]
                finished.append(FinishedJob(job, now, durations[job_id]))
        view = view_of(cluster, now, tuple(pending.values()), tuple(running.values()), tuple(finished))
        d = policy.decide(view)
        want = sorted(pending.values(), key=lambda j: (durations[j.job_id], j.submit_time, j.job_id))
        assert list(d.order) == [j.job_id for j in want]
        for s in d.starts:
            job = pending.pop(s.job_id)
            running[s.job_id] = JobView(
                job.job_id, job.gpus, job.submit_time, start_time=now, placement=s.placement
            )
    assert policy.ordering._ranking.rebuilds == 0  # arrivals and starts only, never a full re-sort


def test_slurm_job_size_counts_nodes_and_cpus_not_gpus() -> None:
    """The test cluster's own figures: 8 nodes x 64 CPUs, PriorityWeightJobSize=1000 and
    PriorityWeightPartition=1000; sprio on Slurm 22.05 shows priority 1063 for any 1-node
    job of one CPU (1 or 8 GPUs alike) and 1126 for a 2-node one (Slurm truncates to integers)."""
    from slurmrl.slurm.scheduler_conf import SchedulerSettings

    cluster = Cluster(
        "t",
        (Rack("r", 0, tuple(range(8))),),
        tuple(Node(f"n{i}", i, 0, 8, "v100", islands_for("nvlink:4", 8), cpus=64) for i in range(8)),
    )
    settings = SchedulerSettings(
        priority_type="priority/multifactor", weight_job_size=1000, weight_partition=1000
    )
    policy = make_slurm(FirstFit(), settings=settings)
    pending = (JobView("one", 1, 0.0), JobView("eight", 8, 0.0), JobView("sixteen", 16, 0.0))
    policy.decide(view_of(cluster, 0.0, pending))
    got = [int(p) for p in policy.ordering.priorities(pending, 0.0)]
    assert got == [1063, 1063, 1126]


@pytest.mark.parametrize("seed", range(20))
def test_worst_victim_is_the_first_of_the_full_victim_ranking(seed: int) -> None:
    import random

    from slurmrl.policy.ordering.preemptive import _first_of, _ranked

    rng = random.Random(seed)
    keys = [(rng.randint(0, 2), rng.randint(0, 3)) for _ in range(rng.randint(0, 12))]
    jobs = [object() for _ in keys]  # distinct stand-ins: ties must keep their order
    ranked = _ranked(jobs, keys)  # type: ignore[arg-type]
    assert _first_of(jobs, keys) is (ranked[0] if ranked else None)  # type: ignore[arg-type]
