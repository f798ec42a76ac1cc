"""The featuriser's parts: rank columns, and placements worked out apart from the observation."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from slurmrl.policy.placement.topology import Topology
from slurmrl.policy.view import Decisions, Start
from slurmrl.rl.env import trace_workload
from slurmrl.rl.features import _RANK_SOURCES, JOB_BASE_FEATURES, Featurizer, ObsConfig, _ranks
from slurmrl.sim.simulator import Simulator
from slurmrl.traces.schema import Trace, TraceJob


def _ranks_one_column_at_a_time(rows: np.ndarray) -> np.ndarray:
    """The definition: each column's dense rank (``np.unique``'s inverse) over its distinct values - 1."""
    out = np.zeros((len(rows), len(_RANK_SOURCES)), dtype=np.float32)
    for c, src in enumerate(_RANK_SOURCES):
        values, inverse = np.unique(rows[:, src], return_inverse=True)
        if len(values) > 1:
            out[:, c] = inverse.reshape(-1) / (len(values) - 1)
    return out


# Few distinct values (ties, and 0.0 beside -0.0) as well as arbitrary ones.
_VALUES = st.one_of(
    st.sampled_from([0.0, -0.0, 1e-9, 0.25, 0.5, 1.0, 4.0]),
    st.floats(0.0, 4.0, width=32),
)


@given(
    hnp.arrays(np.float32, st.tuples(st.integers(1, 32), st.just(len(JOB_BASE_FEATURES))), elements=_VALUES)
)
def test_rank_columns_equal_their_definition_bit_for_bit(rows: np.ndarray) -> None:
    got, want = _ranks(rows), _ranks_one_column_at_a_time(rows)
    assert got.dtype == want.dtype == np.float32
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


def _trace() -> Trace:
    rng = np.random.default_rng(4)
    jobs = []
    for i in range(60):
        dur = float(rng.choice([100.0, 1000.0, 5000.0]))
        gpus = int(rng.choice([1, 2, 4, 8, 16]))
        jobs.append(TraceJob(f"j{i}", 15.0 * i, dur, gpus, user=f"u{i % 4}", time_limit=dur * 3))
    return Trace(tuple(jobs), "t", "test")


def test_an_observation_built_from_given_placements_is_the_one_built_without() -> None:
    wl = trace_workload(_trace(), "1x2x8:v100")
    feat = Featurizer(wl.cluster, ObsConfig(window=8, oldest=2), Topology())
    sim = Simulator(wl.trace, wl.cluster)
    compared = 0
    while (view := sim.next_view()) is not None:
        window = feat.select(view.pending, view.pool)
        placed = feat.place_window(view, view.pool, window)
        assert placed == [Topology().place(j, view.pool, view) if j.gpus else None for j in window]
        given_ = feat.observe(view, view.pool, window, placed=placed)
        built = feat.observe(view, view.pool, window)
        for a, b in zip(
            (given_.jobs, given_.cluster, given_.globals, given_.mask),
            (built.jobs, built.cluster, built.globals, built.mask),
            strict=True,
        ):
            assert np.array_equal(a, b)
        assert given_.placements == built.placements
        compared += len(window) > 0
        fits = [(j, p) for j, p in zip(window, placed, strict=True) if p is not None]
        sim.apply(Decisions(starts=(Start(fits[0][0].job_id, fits[0][1]),)) if fits else Decisions())
    assert compared > 10
