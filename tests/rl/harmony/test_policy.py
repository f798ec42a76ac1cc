"""The deployable policy: free GPUs only, the same decisions whatever the true durations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.errors import PolicyError
from slurmrl.policy.placement.interference import InterferenceAware
from slurmrl.policy.registry import policy_entry
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.placement import greedy_chooser
from slurmrl.rl.harmony.policy import HarmonyPolicy, save_checkpoint
from slurmrl.rl.nets.numpy_nets import NumpyHarmony
from slurmrl.sim.experiment import run_policy
from slurmrl.sim.simulator import SimConfig, Simulator
from tests.rl.harmony.common import random_net, small_workload


def _policy(seed: int = 0) -> HarmonyPolicy:
    net = random_net(seed=seed)
    infer = NumpyHarmony(net.cfg, {k: v.detach().numpy() for k, v in net.state_dict().items()})
    return HarmonyPolicy(HarmonyObs(), greedy_chooser(infer.logits), InterferenceAware())


def _replay(policy: HarmonyPolicy, trace, cluster, passes: int = 10_000) -> list[tuple]:
    """Every pass's starts; asserts each start takes only GPUs free in the view it answered."""
    sim = Simulator(trace, cluster, config=SimConfig(speed_model="full"))
    out = []
    while (view := sim.next_view()) is not None and len(out) < passes:
        decisions = policy.decide(view)
        pool = view.pool.copy()
        for start in decisions.starts:
            for alloc in start.placement.allocs:
                assert pool.free[alloc.node, list(alloc.gpus)].all()
            pool.allocate(start.placement)
        out.append((view.now, tuple((s.job_id, s.placement) for s in decisions.starts)))
        sim.apply(decisions)
    return out


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 1000), scale=st.sampled_from([0.1, 3.0, 20.0]))
def test_places_on_free_gpus_only_and_never_reads_durations(seed: int, scale: float) -> None:
    wl = small_workload(40, seed)
    policy = _policy(seed)
    first = _replay(policy, wl.trace, wl.cluster, passes=6)
    # The same arrivals with other durations: until the first job ends the
    # views are the same, and so must be every decision.
    other = small_workload(40, seed, scale=scale)
    again = _replay(_policy(seed), other.trace, other.cluster, passes=6)
    earliest_end = min(j.submit_time + j.duration for j in other.trace.jobs + wl.trace.jobs)
    same = [(a, b) for a, b in zip(first, again, strict=False) if a[0] < earliest_end and b[0] < earliest_end]
    assert same and all(a == b for a, b in same)


def test_a_whole_replay_only_ever_starts_jobs_on_free_gpus() -> None:
    wl = small_workload(60, 7)
    starts = sum(len(s) for _, s in _replay(_policy(7), wl.trace, wl.cluster))
    assert starts == 60


def test_registered_as_a_learned_deployable_policy() -> None:
    from slurmrl.rl.checkpoints import shipped_policy_dir
    from slurmrl.rl.harmony.policy import read_checkpoint

    entry = policy_entry("harmony")
    assert entry.learned and entry.deployable
    # by name, the shipped checkpoint runs with the placement it was trained led by
    assert entry.default_placement == read_checkpoint(shipped_policy_dir("harmony-philly"))[0].placement


def test_a_loaded_checkpoint_starts_every_job_once(tmp_path: Path) -> None:
    save_checkpoint(tmp_path, random_net(), HarmonyObs(), "qssf")
    policy = HarmonyPolicy.from_dir(tmp_path)
    wl = small_workload(30, 2)
    started = [job for _, starts in _replay(policy, wl.trace, wl.cluster) for job, _ in starts]
    assert sorted(started) == sorted(j.job_id for j in wl.trace.jobs)


def test_a_led_checkpoint_records_its_bonus_and_runs_with_it(tmp_path: Path) -> None:
    """The bonus a led pointer was trained with is in its config.json; one without it had the default."""
    from slurmrl.rl.harmony.placement import LEAD_BONUS

    save_checkpoint(tmp_path, random_net(), HarmonyObs(), "sjf-limit", lead=True, placement="type-aware")
    config = tmp_path / "config.json"
    raw = json.loads(config.read_text())
    assert raw["lead_bonus"] == LEAD_BONUS
    assert HarmonyPolicy.from_dir(tmp_path).placement.bonus == LEAD_BONUS
    config.write_text(json.dumps({**raw, "lead_bonus": 4.5}))
    policy = HarmonyPolicy.from_dir(tmp_path)
    wl = small_workload(30, 2)
    policy.steps = []
    run_policy(wl, policy)
    priors = [s.obs.prior for s in policy.steps if s.obs.prior is not None]
    assert priors and all(sorted(set(p.tolist())) == [0.0, 4.5] for p in priors)
    del raw["lead_bonus"]
    config.write_text(json.dumps(raw))
    assert HarmonyPolicy.from_dir(tmp_path).placement.bonus == LEAD_BONUS
    config.write_text(json.dumps({**raw, "lead_bonus": "big"}))
    with pytest.raises(PolicyError, match="'lead_bonus' must be a finite number"):
        HarmonyPolicy.from_dir(tmp_path)


def test_a_checkpoint_runs_with_the_placement_it_names_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    save_checkpoint(tmp_path, random_net(), HarmonyObs(), "sjf-limit", placement="type-aware")
    assert HarmonyPolicy.from_dir(tmp_path).placement.fallback.name == "type-aware"
    assert (
        HarmonyPolicy.from_dir(tmp_path, InterferenceAware()).placement.fallback.name == "interference-aware"
    )
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "placement": "nosuch"}))
    with pytest.raises(PolicyError, match="'placement' must be one of") as err:
        HarmonyPolicy.from_dir(tmp_path)
    assert str(config) in str(err.value)


def test_a_checkpoint_may_place_for_a_preemptive_ordering(tmp_path: Path) -> None:
    """Under srtf-limit the pointer places what that scheduler starts, preemptions included, and
    sees the head of its ranking as its window at every pass."""
    save_checkpoint(tmp_path, random_net(), HarmonyObs(), "srtf-limit", lead=True, placement="type-aware")
    policy = HarmonyPolicy.from_dir(tmp_path)
    assert policy.preemptive
    wl = small_workload(60, 3, scale=20.0)
    policy.steps = []
    windows: list[int] = []
    begin = policy.placement.begin
    policy.placement.begin = lambda view, queue: (windows.append(len(queue)), begin(view, queue))[1]
    out = run_policy(wl, policy)
    assert windows and max(windows) > 1  # each pass hands the ranking's head to the encoder
    assert out.summary["finished"] == 60 and out.summary["preemptions"] > 0
    assert policy.steps  # the pointer chose the placements
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "ordering": "sjf-oracle"}))
    with pytest.raises(PolicyError, match="srtf-limit, tiresias"):
        HarmonyPolicy.from_dir(tmp_path)
