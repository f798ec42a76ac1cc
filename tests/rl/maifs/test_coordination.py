"""A step never double-books a GPU, gives each agent a count in its range, and masks by predecessors."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.policy.view import JobView
from slurmrl.rl.maifs.coordination import Resolver
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.maifs.policy import numpy_copy, sampling
from slurmrl.sim.elastic import power_of_two_range
from tests.rl.maifs.common import busy_pool, cluster, random_net, view_of

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
