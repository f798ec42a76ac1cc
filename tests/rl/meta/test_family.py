from __future__ import annotations

import numpy as np
import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.meta.family import FamilyConfig, FamilySampler, job_weights, pool_of
from slurmrl.traces.schema import Trace
from tests.rl.meta.common import MODELS, small_workload


def sampler(jobs: int = 40) -> FamilySampler:
    pools = [pool_of(small_workload(seed=3)), pool_of(small_workload(seed=4, cluster="1x2x8:v100"))]
    return FamilySampler(FamilyConfig(jobs=jobs), pools=pools)


def test_same_seed_same_task_and_jobs() -> None:
    a, b = sampler(), sampler()
    spec_a, spec_b = a.sample(np.random.default_rng(7)), b.sample(np.random.default_rng(7))
    assert spec_a == spec_b
    assert a.build(spec_a).trace.jobs == b.build(spec_b).trace.jobs


def test_tasks_vary_pool_mix_size_tilt_and_rate() -> None:
    s = sampler()
    rng = np.random.default_rng(0)
    specs = [s.sample(rng) for _ in range(30)]
    assert {sp.pool for sp in specs} == {0, 1}
    assert len({sp.rate_scale for sp in specs}) == 30
    lo, hi = FamilyConfig().rate_scale
    assert all(lo <= sp.rate_scale <= hi for sp in specs)
    assert len({sp.size_tilt for sp in specs}) == 30
    tops = {max(sp.mix, key=lambda cw: cw[1])[0] for sp in specs}
    assert len(tops) >= 3  # the dominant class changes from task to task
    for sp in specs:
        assert sum(w for _, w in sp.mix) == pytest.approx(1.0)


def test_build_keeps_recorded_labels_and_scales_arrivals() -> None:
    s = sampler(jobs=40)
    spec = s.sample(np.random.default_rng(1))
    wl = s.build(spec)
    pool = s.pools[spec.pool]
    assert len(wl.trace.jobs) == 40
    assert len({j.job_id for j in wl.trace.jobs}) == 40
    originals = {(j.model, j.duration, j.num_gpus) for j in pool.workload.trace.jobs}
    assert all((j.model, j.duration, j.num_gpus) in originals for j in wl.trace.jobs)
    assert {j.model for j in wl.trace.jobs} <= set(MODELS)
    span = wl.trace.jobs[-1].submit_time
    expected = pool.gaps[spec.start : spec.start + 39].sum() / spec.rate_scale
    assert span == pytest.approx(expected)
    assert wl.cluster == pool.workload.cluster


def test_size_tilt_moves_the_mean_gpus() -> None:
    jobs = small_workload().trace.jobs
    mix = {m: 1.0 / len(MODELS) for m in MODELS}
    gpus = np.array([j.num_gpus for j in jobs])
    low = float(job_weights(jobs, mix, -1.0) @ gpus)
    high = float(job_weights(jobs, mix, 1.0) @ gpus)
    assert high > low + 0.5


def test_mix_weight_goes_to_its_class_only() -> None:
    jobs = small_workload().trace.jobs
    w = job_weights(jobs, {"lstm": 1.0}, 0.0)
    assert all((p > 0) == (j.model == "lstm") for p, j in zip(w, jobs, strict=True))


def test_pool_without_model_classes_is_refused() -> None:
    wl = small_workload()
    blind = [j.__class__(j.job_id, j.submit_time, j.duration, j.num_gpus) for j in wl.trace.jobs]
    with pytest.raises(ConfigError, match="records no model class"):
        pool_of(wl.__class__(Trace(tuple(blind), "t", "t"), wl.cluster, "blind", 1.0, 1.0, 0))
