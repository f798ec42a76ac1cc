"""The ``topdrl-first`` baseline: topdrl's window and placement, always the window's first job."""

from __future__ import annotations

import numpy as np

from slurmrl.policy.placement.topology import Topology
from slurmrl.policy.registry import make_policy, policy_entry
from slurmrl.rl.env import trace_workload
from slurmrl.rl.features import JOB_BASE_FEATURES, Featurizer, ObsConfig
from slurmrl.rl.lead import lead_policy, led_decisions, propose
from slurmrl.rl.topdrl import PLACEMENT, read_checkpoint_config, shipped_policy_dir
from slurmrl.rl.window_policy import FirstInWindow, WindowPolicy, led_step
from slurmrl.sim.simulator import Simulator
from slurmrl.traces.schema import Trace, TraceJob


def _trace(n: int = 90) -> Trace:
    rng = np.random.default_rng(2)
    jobs = []
    for i in range(n):
        dur = float(rng.choice([100.0, 1000.0, 5000.0]))
        jobs.append(TraceJob(f"j{i}", 10.0 * i, dur, int(rng.choice([1, 2, 4, 8])), time_limit=dur * 2))
    return Trace(tuple(jobs), "t", "test")


def test_registered_deployable_placing_as_topdrl() -> None:
    entry = policy_entry("topdrl-first")
    assert entry.deployable and not entry.learned
    assert entry.default_placement == policy_entry("topdrl").default_placement == PLACEMENT
    policy = make_policy("topdrl-first")
    assert isinstance(policy, FirstInWindow)
    shipped = read_checkpoint_config(shipped_policy_dir())
    assert (policy.obs_config.window, policy.obs_config.oldest) == (shipped.obs.window, shipped.obs.oldest)


def test_each_start_is_the_first_window_job_that_fits() -> None:
    wl = trace_workload(_trace(), "1x2x8:v100")
    obs = ObsConfig(window=8, oldest=2)
    policy = FirstInWindow(obs, Topology())
    mirror = Featurizer(wl.cluster, obs, Topology())
    sim = Simulator(wl.trace, wl.cluster)
    checked = 0
    while (view := sim.next_view()) is not None:
        decisions = policy.decide(view)
        pool, skip = view.pool.copy(), set()
        for start in decisions.starts:
            window = mirror.select(view.pending, pool, skip)
            first = next(j for j in window if Topology().place(j, pool, view) is not None)
            assert start.job_id == first.job_id
            assert start.placement == Topology().place(first, pool, view)
            pool.allocate(start.placement)
            skip.add(start.job_id)
            checked += 1
        # Work-conserving: after its starts no window job fits any more.
        rest = mirror.select(view.pending, pool, skip)
        assert all(Topology().place(j, pool, view) is None for j in rest)
        sim.apply(decisions)
    assert checked == len(wl.trace.jobs)


class ScoredFirst(FirstInWindow):
    """The same logits, scored on the full observation as a network's are."""

    reads_features = True
    _choose = WindowPolicy._choose


def test_picking_by_position_decides_as_scoring_the_observation() -> None:
    wl = trace_workload(_trace(160), "1x2x8:v100")
    obs = ObsConfig(window=8, oldest=2)
    fast, scored = FirstInWindow(obs, Topology()), ScoredFirst(obs, Topology())
    sim = Simulator(wl.trace, wl.cluster)
    while (view := sim.next_view()) is not None:
        decisions = fast.decide(view)
        assert decisions == scored.decide(view)  # starts, placements and the whole order
        sim.apply(decisions)


def test_rank_columns_spread_the_window_over_zero_to_one() -> None:
    wl = trace_workload(_trace(), "1x2x8:v100")
    obs = ObsConfig(window=8, oldest=2)
    feat = Featurizer(wl.cluster, obs, Topology())
    sim = Simulator(wl.trace, wl.cluster)
    col = {name: i for i, name in enumerate(JOB_BASE_FEATURES)}
    seen = 0
    while (view := sim.next_view()) is not None:
        window, o = feat.window_observation(view, view.pool, allow_wait=False)
        n = len(window)
        if n >= 3:
            for absolute, rank in (("log_gpus", "gpus_rank"), ("log_gpu_time", "gpu_time_rank")):
                a, r = o.jobs[:n, col[absolute]], o.jobs[:n, col[rank]]
                assert r.min() == 0.0 and r.max() == (1.0 if len(set(a.tolist())) > 1 else 0.0)
                # Ranks keep the order of the column they rank, ties sharing one rank.
                for i in range(n):
                    for j in range(n):
                        assert (a[i] < a[j]) == (r[i] < r[j])
            assert not o.jobs[n:, col["wait_rank"]].any()  # empty rows stay zero
            seen += 1
        sim.apply(make_policy("fifo-backfill", "topology").decide(view))
    assert seen > 3


def test_a_led_pass_ends_exactly_where_no_window_job_can_start() -> None:
    """``led_step`` skips the observation when nothing can start, and only then: checked against
    the proposals' GPUs and the placement's answer for every other window job."""
    wl = trace_workload(_trace(200), "1x2x8:v100")
    obs = ObsConfig(window=8, oldest=2)
    lead = lead_policy("sjf-limit", PLACEMENT)
    feat = Featurizer(wl.cluster, obs, Topology())
    sim = Simulator(wl.trace, wl.cluster)
    outcomes = {True: 0, False: 0}
    while (view := sim.next_view()) is not None:
        feat.sync_running(view.running)
        proposal = propose(lead, view)
        pool, done, began = proposal.pool, set(), []
        while True:
            props = [(j, p) for j, p in proposal.starts if j.job_id not in done][: obs.window]
            others = [j for j in proposal.ranked if j.job_id not in done][: obs.window - len(props)]
            can = any(pool.is_free(p) for _, p in props) or any(
                Topology().place(j, pool, view) is not None for j in others
            )
            step = led_step(feat, view, proposal, pool, done)
            assert (step is not None) == can
            outcomes[can] += 1
            if step is None:
                break
            best = int(np.flatnonzero(step.mask[:-1])[0])  # the first row that can start
            job, placement = step.window[best], step.placements[best]
            pool.allocate(placement)
            feat.hold(job, placement, view.now)
            done.add(job.job_id)
            began.append((job, placement))
        sim.apply(led_decisions(lead, proposal, view, began))
    assert outcomes[True] > 20 and outcomes[False] > 20
