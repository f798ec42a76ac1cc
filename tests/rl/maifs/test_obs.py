"""Count choices stay in the job's range; option masks open only what fits the free GPUs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.policy.elastic.curves import Curves
from slurmrl.policy.view import JobView
from slurmrl.rl.maifs.obs import MaifsObs, RackState, count_choices, option_rows, option_table
from slurmrl.sim.elastic import power_of_two_range
from tests.rl.maifs.common import busy_pool, cluster

OBS = MaifsObs()


@st.composite
def jobs(draw: st.DrawFn) -> JobView:
    gpus = draw(st.integers(1, 16))
    rng = power_of_two_range(gpus, 32) if draw(st.booleans()) else None
    nodes = -(-gpus // 8)
    return JobView(f"j{gpus}", gpus, 0.0, num_nodes=nodes, gpu_range=rng)


@given(jobs(), st.integers(1, 5))
def test_count_choices_are_in_range_and_include_the_request(job: JobView, limit: int) -> None:
    counts = count_choices(job, limit)
    assert all(job.accepts_gpus(c) for c in counts)
    assert len(counts) <= max(limit, 3)
    assert job.gpus in counts
    if job.gpu_range is None:
        assert counts == (job.gpus,)
    else:
        assert counts[0] == job.gpu_range[0] and counts[-1] == job.gpu_range[1]


def test_a_wide_declared_range_is_cut_to_the_limit() -> None:
    job = JobView("w", 8, 0.0, gpu_range=(1, 64))
    counts = count_choices(job, 4)
    assert counts == (1, 4, 8, 64)


@settings(max_examples=60, deadline=None)
@given(jobs(), st.floats(0.0, 1.0), st.integers(0, 10_000))
def test_open_options_fit_the_free_gpus(job: JobView, busy: float, seed: int) -> None:
    c = cluster()
    pool = busy_pool(c, np.random.default_rng(seed), busy)
    counts = count_choices(job, OBS.max_counts)
    rows, mask = option_rows(
        job, counts, RackState(job, pool), OBS, Curves(c), now=0.0, total_free=pool.total_free
    )
    assert rows.shape == (OBS.options(len(c.racks)), OBS.option_features)
    table = option_table(counts, len(c.racks), OBS.max_counts)
    for o in np.flatnonzero(mask):
        opt = table[o]
        if opt is None:  # "not now" is open only when nothing else is
            assert not mask[:-1].any()
            continue
        assert job.accepts_gpus(opt.count)
        free = pool.free_count if opt.rack is None else pool.free_count[list(c.racks[opt.rack].nodes)]
        assert opt.count <= int(free.sum())
        if opt.count <= 8:
            assert int(free.max()) >= opt.count  # packed: one node holds it
    # Every count that fits some single node has an open option.
    for slot, count in enumerate(counts):
        if count <= 8 and int(pool.free_count.max()) >= count:
            assert mask[slot * (len(c.racks) + 1) : (slot + 1) * (len(c.racks) + 1)].any()
