"""A step never double-books a GPU, gives each agent a count in its range, and masks by predecessors."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import JobView
from slurmrl.rl.maifs.coordination import Resolver
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.maifs.policy import numpy_copy, sampling
from slurmrl.rl.nets.numpy_layers import MASKED
from slurmrl.sim.elastic import power_of_two_range
from tests.rl.maifs.common import busy_pool, cluster, random_net, view_of
from tests.sim.fixtures.clusters import MIXED

OBS = MaifsObs(window=6)
NET = numpy_copy(random_net(OBS))


@st.composite
def windows(draw: st.DrawFn) -> list[JobView]:
    out = []
    for i in range(draw(st.integers(1, OBS.window))):
        gpus = draw(st.sampled_from([1, 2, 3, 4, 8, 16]))
        rng = power_of_two_range(gpus, 32) if draw(st.booleans()) else None
        out.append(JobView(f"j{i}", gpus, 0.0, num_nodes=-(-gpus // 8), gpu_range=rng))
    return out


@settings(max_examples=80, deadline=None)
@given(windows(), st.floats(0.0, 0.9), st.integers(0, 10_000))
def test_a_step_never_double_books_and_respects_ranges(jobs: list[JobView], busy: float, seed: int) -> None:
    c = cluster()
    pool = busy_pool(c, np.random.default_rng(seed), busy)
    free_before = pool.free.copy()
    view = view_of(c, pool, jobs)
    resolver = Resolver(c, OBS)
    agents = [resolver.agent(j, 3600.0) for j in jobs]
    step, starts = resolver.step(agents, view, pool, NET, sampling(np.random.default_rng(seed)))
    taken = np.zeros_like(free_before)
    by_id = {j.job_id: j for j in jobs}
    for s in starts:
        assert by_id[s.job_id].accepts_gpus(s.placement.num_gpus)
        for node, gpus in s.placement.allocs:
            for g in gpus:
                assert free_before[node, g], "placed on a GPU that was busy"
                assert not taken[node, g], "two agents got the same GPU"
                taken[node, g] = True
    assert len({s.job_id for s in starts}) == len(starts)
    assert int(taken.sum()) == int(free_before.sum()) - pool.total_free
    # Each recorded choice was open in its agent's mask, and padding rows chose "not now".
    k = len(jobs)
    assert step.masks[np.arange(OBS.window), step.actions].all()
    assert (step.actions[k:] == step.masks.shape[1] - 1).all()


def test_later_agents_see_the_gpus_earlier_ones_took() -> None:
    c = cluster()
    pool = busy_pool(c, np.random.default_rng(0), 0.0)
    jobs = [JobView(f"big{i}", 16, 0.0, num_nodes=2) for i in range(3)]  # 32 GPUs: only two fit
    resolver = Resolver(c, OBS)
    step, starts = resolver.step(
        [resolver.agent(j, 60.0) for j in jobs],
        view_of(c, pool, jobs),
        pool,
        NET,
        sampling(np.random.default_rng(1)),
    )
    assert len(starts) == 2
    assert pool.total_free == 0
    # The third agent had only "not now" open.
    assert step.masks[2, :-1].sum() == 0 and step.masks[2, -1]


def slowest_rack_first(racks: int):
    """A chooser that takes an open option on the last rack (on MIXED, the K80s) whenever it may."""

    def choose(logits: np.ndarray) -> tuple[int, float]:
        open_ = np.flatnonzero(logits[:-1] > MASKED / 2)
        on_last = [int(a) for a in open_ if a % (racks + 1) == racks - 1]
        return (on_last or open_.tolist() or [logits.size - 1])[0], 0.0

    return choose


def test_on_several_gpu_types_every_start_goes_to_the_fastest_type_with_room() -> None:
    mixed = load_cluster(MIXED)  # V100 rack, K80 rack
    resolver = Resolver(mixed, OBS)
    for busy in (False, True):  # V100s free, then full: no start reaches a K80 while a V100 has room
        pool = GpuPool(mixed)
        if busy:
            pool.allocate(Placement.of([(0, [0, 1, 2, 3]), (1, [0, 1, 2, 3])]))
        jobs = [JobView(f"j{i}", 2, 0.0, model="resnet50") for i in range(2)]
        agents = [resolver.agent(j, 60.0) for j in jobs]
        _, starts = resolver.step(
            agents, view_of(mixed, pool, jobs), pool, NET, slowest_rack_first(resolver.racks)
        )
        types = {mixed.nodes[a.node].gpu_type for s in starts for a in s.placement.allocs}
        assert starts and types == ({"k80"} if busy else {"v100"}), (busy, types)
