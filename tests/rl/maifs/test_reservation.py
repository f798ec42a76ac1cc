"""The head job's reservation: no start of a MAIFS pass delays it, judged on users' time limits."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.backfill import EasyBackfill
from slurmrl.policy.ordering.fifo import FifoOrdering
from slurmrl.policy.placement.topology import Topology
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.maifs.policy import MaifsPolicy, numpy_copy, sampling
from slurmrl.sim.experiment import SimSettings, run_policy
from tests.rl.maifs.common import cluster, random_net, small_workload

OBS = MaifsObs()
NOW = 1000.0
C = cluster()


def running_jobs(c: Cluster, rng: np.random.Generator) -> tuple[GpuPool, list[JobView]]:
    """About half the GPUs busy with 1-4 GPU jobs of random limits, each on one node."""
    pool, jobs = GpuPool(c), []
    for node in c.nodes:
        g = 0
        while g < node.gpus and rng.random() < 0.6:
            n = min(int(rng.integers(1, 5)), node.gpus - g)
            placement = Placement.of([(node.index, list(range(g, g + n)))])
            pool.allocate(placement)
            limit = float(rng.choice([600.0, 3600.0, 20000.0]))
            jobs.append(
                JobView(
                    f"r{len(jobs)}", n, 0.0, time_limit=limit, start_time=NOW - 100.0, placement=placement
                )
            )
            g += n
    return pool, jobs


def pending_jobs(rng: np.random.Generator, n: int) -> list[JobView]:
    """A large job first, then small ones with long and short limits, some elastic."""
    jobs = [JobView("big", 24, 0.0, time_limit=50000.0, gpu_range=(16, 32))]
    for i in range(n):
        g = int(rng.choice([1, 2, 4, 8]))
        rng_range = (max(1, g // 2), 2 * g) if rng.random() < 0.5 else None
        limit = float(rng.choice([300.0, 5000.0, 100000.0]))
        jobs.append(JobView(f"p{i}", g, 10.0 + i, time_limit=limit, gpu_range=rng_range))
    return jobs


def shadow_of(view: ClusterView, pool: GpuPool, head: JobView) -> float:
    """The head's reservation with every running job held to its time limit (a fresh calculator)."""
    backfill = EasyBackfill("check", FifoOrdering(), Topology())
    backfill.before_pass(view)
    return backfill.reservation(view, pool, head)[0]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 14))
def test_no_start_delays_the_head_jobs_reservation(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    pool, running = running_jobs(C, rng)
    pending = pending_jobs(rng, n)
    view = ClusterView(now=NOW, cluster=C, pool=pool.readonly(), pending=pending, running=running)
    policy = MaifsPolicy(OBS, numpy_copy(random_net(OBS, seed=seed % 7)), sampling(rng))
    gate = policy.reserver.gate(view, policy.ordering.order(view), pool.copy())  # type: ignore[union-attr]
    decisions = policy.decide(view)
    if gate is None:
        return
    head = next(j for j in pending if j.job_id == gate.head)
    before = shadow_of(view, pool, _low(head))
    assert decisions.info["shadow_time"] == before
    after_pool = pool.copy()
    started = []
    by_id = {j.job_id: j for j in pending}
    for s in decisions.starts:
        after_pool.allocate(s.placement)
        started.append(by_id[s.job_id].running(NOW, s.placement))
    assert gate.head not in {s.job_id for s in decisions.starts}
    after = ClusterView(
        NOW, C, after_pool.readonly(), [j for j in pending if j not in started], running + started
    )
    assert shadow_of(after, after_pool, _low(head)) <= before


def _low(job: JobView) -> JobView:
    """The head as the reservation takes it: on its smallest count."""
    from slurmrl.policy.elastic.curves import bounds, sized

    return sized(job, bounds(job)[0], C)


def test_a_long_job_keeps_off_the_gpus_the_head_is_waiting_for() -> None:
    # Node 0: 4 GPUs busy until t=2000 by their limit, 4 free; node 1: one GPU free; nodes 2-3 full.
    # The head (8 GPUs on one node) is reserved node 0 at t=2000, its 4 free GPUs included.
    pool = GpuPool(C)
    a = Placement.of([(0, [0, 1, 2, 3])])
    b = Placement.of([(1, [0, 1, 2, 3, 4, 5, 6])])
    full = [Placement.of([(n, list(range(8)))]) for n in (2, 3)]
    for p in (a, b, *full):
        pool.allocate(p)
    running = [
        JobView("a", 4, 0.0, time_limit=1500.0, start_time=500.0, placement=a),
        JobView("b", 7, 0.0, time_limit=1e6, start_time=500.0, placement=b),
        *(
            JobView(f"f{i}", 8, 0.0, time_limit=1e6, start_time=500.0, placement=p)
            for i, p in enumerate(full)
        ),
    ]
    head = JobView("head", 8, 0.0, time_limit=3600.0, num_nodes=1)
    long = JobView("long", 4, 5.0, time_limit=1e5)
    short = JobView("short", 4, 6.0, time_limit=500.0)
    view = ClusterView(NOW, C, pool.readonly(), [head, long, short], running)
    starts = {
        s.job_id: s.placement for s in MaifsPolicy(OBS, numpy_copy(random_net(OBS))).decide(view).starts
    }
    # The long job would hold node 0's free GPUs past t=2000 and one GPU is all that is left
    # elsewhere: it waits. The short one's limit ends by 2000, so it may use node 0.
    assert "head" not in starts and "long" not in starts
    assert "short" in starts and starts["short"].nodes == (0,)


def test_a_replay_with_the_reservation_finishes_every_job() -> None:
    policy = MaifsPolicy(OBS, numpy_copy(random_net(OBS)))
    out = run_policy(small_workload(), policy, settings=SimSettings(elastic="fraction:0.5"))
    assert out.summary["finished"] == 80
    assert not math.isnan(float(out.summary["avg_jct"]))


def test_checkpoints_from_before_the_reservation_load_with_it_off() -> None:
    assert MaifsObs.from_dict({"window": 8, "max_counts": 3, "oldest": 2}).reserve is False
    assert MaifsObs.from_dict(MaifsObs().to_dict()) == MaifsObs()
    assert MaifsPolicy(MaifsObs(reserve=False), numpy_copy(random_net(OBS))).reserver is None


def test_on_several_gpu_types_the_head_is_reserved_on_the_fastest_type_with_room(tmp_path) -> None:
    """K80s first in the node order, no NVLink anywhere: topology would reserve the K80 node, type-aware the V100."""
    from slurmrl.cluster.spec import load_cluster

    spec = tmp_path / "k80-first.toml"
    spec.write_text(
        'name = "k80-first"\n[defaults]\ngpus = 4\ngpu_type = "k80"\nintra = "pcie"\n'
        '[[racks]]\nname = "k80"\nnodes = 2\n[[racks]]\nname = "v100"\nnodes = 2\ngpu_type = "v100"\n'
    )
    c = load_cluster(str(spec))
    pool = GpuPool(c)
    running = []
    for node, until in ((0, 2000.0), (1, 1e6), (2, 2000.0), (3, 1e6)):  # nodes 0 and 2 half free
        gpus = [0, 1] if until == 2000.0 else [0, 1, 2, 3]
        p = Placement.of([(node, gpus)])
        pool.allocate(p)
        running.append(
            JobView(f"r{node}", len(gpus), 0.0, time_limit=until - 500.0, start_time=500.0, placement=p)
        )
    head = JobView("head", 4, 0.0, time_limit=3600.0, num_nodes=1)
    long = JobView("long", 2, 5.0, time_limit=1e5)
    view = ClusterView(NOW, c, pool.readonly(), [head, long], running)
    policy = MaifsPolicy(OBS, numpy_copy(random_net(OBS)))
    gate = policy.reserver.gate(view, policy.ordering.order(view), pool.copy())  # type: ignore[union-attr]
    assert gate is not None and gate.head == "head" and gate.shadow == 2000.0
    assert gate.outside is not None
    assert gate.outside.free_count.tolist() == [2, 0, 0, 0]  # node 2's free V100s are the head's
    by_topology = EasyBackfill("check", FifoOrdering(), Topology())
    by_topology.before_pass(view)
    _, reserved = by_topology.reservation(view, pool, head)
    assert reserved is not None and reserved[0].any() and not reserved[2].any()  # what topology would hold
