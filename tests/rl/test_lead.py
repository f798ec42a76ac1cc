"""Learned policies start from the best heuristic: a zero network output reproduces it exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.errors import PolicyError
from slurmrl.policy import make_placement
from slurmrl.policy.backfill import DEFAULT_TIME_LIMIT
from slurmrl.rl.features import CLUSTER_CHANNELS, GLOBAL_FEATURES, ObsConfig
from slurmrl.rl.lead import lead_policy
from slurmrl.rl.nets.config import NetConfig, weight_shapes
from slurmrl.rl.nets.numpy_nets import NumpyTopDRL
from slurmrl.rl.topdrl import TopDRLPolicy, read_checkpoint_config, shipped_policy_dir
from slurmrl.rl.window_policy import lead_prior
from slurmrl.sim.experiment import prepare, run_policy
from tests.sim.fixtures.clusters import MIXED


def zero_topdrl(lead: str, placement: str = "topology") -> TopDRLPolicy:
    """TopDRL's network with every weight zero (it outputs 0 for every row), led by ``lead``."""
    obs = ObsConfig()
    cfg = NetConfig(obs.job_features, len(CLUSTER_CHANNELS), len(GLOBAL_FEATURES))
    state = {name: np.zeros(shape, dtype=np.float32) for name, shape in weight_shapes(cfg).items()}
    place = make_placement(placement)
    return TopDRLPolicy(NumpyTopDRL(cfg, state), obs, place, lead=lead_policy(lead, placement))


@pytest.fixture(scope="module")
def contended():
    """2,500 jobs of the embedded week on 448 GPUs: queues form, backfill and preemption act."""
    return prepare(scenario="philly-sample-448", limit=2500, seed=3)


@pytest.mark.parametrize(
    ("lead", "placement"),
    [
        ("qssf", "topology"),
        ("tiresias", "topology"),
        ("sjf-limit", "consolidate"),
        ("gittins-limit", "topology"),
    ],
)
def test_zero_output_reproduces_the_lead_heuristic_job_by_job(contended, lead: str, placement: str) -> None:
    alone = run_policy(contended, lead, placement=placement)
    led = run_policy(contended, zero_topdrl(lead, placement))
    assert led.records == alone.records  # every job: start, end, placement shape, preemptions
    assert led.summary["avg_jct"] == alone.summary["avg_jct"]
    assert led.meta["preemptive"] == (lead in ("tiresias", "gittins-limit"))


def test_lead_prior_orders_proposals_then_stop_then_the_rest() -> None:
    prior = lead_prior(3, 6)
    assert list(np.argsort(-prior, kind="stable")) == [0, 1, 2, 6, 3, 4, 5]


def test_a_checkpoint_names_its_lead_and_the_shipped_one_is_led_by_gittins_limit(tmp_path: Path) -> None:
    shipped = shipped_policy_dir()
    # Preemptive, as its lead: the daemon runs it only with preempt = "requeue".
    assert read_checkpoint_config(shipped).lead == "gittins-limit"
    assert TopDRLPolicy.from_dir(shipped).preemptive
    folder = tmp_path / "led"
    shutil.copytree(shipped, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "lead": "qssf"}))
    policy = TopDRLPolicy.from_dir(folder)
    assert policy.lead is not None and policy.lead.name == "qssf"
    (folder / "config.json").write_text(json.dumps({**config, "lead": "sjf-oracle"}))
    with pytest.raises(PolicyError, match="deployable heuristic"):
        TopDRLPolicy.from_dir(folder)


def zero_pointer(lead: bool):
    """Harmony's pointer network with every weight zero, under qssf's order, led or not."""
    from slurmrl.rl.harmony.features import HarmonyObs
    from slurmrl.rl.harmony.placement import greedy_chooser
    from slurmrl.rl.harmony.policy import HarmonyPolicy
    from slurmrl.rl.nets.config import HarmonyNetConfig
    from slurmrl.rl.nets.config import weight_shapes as pointer_shapes
    from slurmrl.rl.nets.numpy_nets import NumpyHarmony

    obs = HarmonyObs()
    cfg = HarmonyNetConfig(obs.job_features, obs.node_features, obs.global_features)
    state = {name: np.zeros(shape, dtype=np.float32) for name, shape in pointer_shapes(cfg).items()}
    net = NumpyHarmony(cfg, state)
    return HarmonyPolicy(obs, greedy_chooser(net.logits), make_placement("interference-aware"), lead=lead)


@pytest.mark.parametrize(
    ("source", "placement"),
    [("gavel-msr-6c71a0", "consolidate"), ("gavel-msr-6c71a0", "first-fit"), (MIXED, "type-aware")],
)
def test_zero_pointer_led_by_any_placement_under_sjf_limit_is_that_heuristic(
    source: str, placement: str
) -> None:
    """Whatever placement leads it (on several GPU types too), the untrained pointer replays sjf-limit with it."""
    from slurmrl.rl.harmony.policy import HarmonyPolicy
    from slurmrl.sim.experiment import SimSettings

    if source == MIXED:  # Philly jobs of up to 4 GPUs on two V100 and two K80 nodes
        workload = prepare(trace="embedded:philly-sample", cluster=MIXED, max_gpus=4, limit=600, seed=3)
    else:
        workload = prepare(scenario=source, limit=600, seed=3)
    full = SimSettings(speed_model="full")
    alone = run_policy(workload, "sjf-limit", placement=placement, settings=full)
    pointer = zero_pointer(lead=True)
    led = HarmonyPolicy(
        pointer.placement.obs,
        pointer.placement.chooser,
        make_placement(placement),
        ordering="sjf-limit",
        lead=True,
    )
    assert run_policy(workload, led, settings=full).records == alone.records


def test_zero_pointer_led_by_its_fallback_places_as_the_heuristic() -> None:
    from slurmrl.sim.experiment import SimSettings

    workload = prepare(scenario="gavel-msr-6c71a0", limit=700, seed=3)
    full = SimSettings(speed_model="full")
    alone = run_policy(workload, "qssf", placement="interference-aware", settings=full)
    led = run_policy(workload, zero_pointer(lead=True), settings=full)
    assert led.records == alone.records
    unled = run_policy(workload, zero_pointer(lead=False), settings=full)
    assert unled.records != alone.records  # without the lead, the untrained pointer places elsewhere


def zero_agents(lead: str):
    """MAIFS's agents with every weight zero, led by the rigid heuristic ``lead``."""
    from slurmrl.rl.maifs.obs import MaifsObs
    from slurmrl.rl.maifs.policy import LEAD_PLACEMENT, MaifsPolicy
    from slurmrl.rl.nets.config import MaifsNetConfig
    from slurmrl.rl.nets.config import weight_shapes as agent_shapes
    from slurmrl.rl.nets.numpy_nets import NumpyMaifs

    obs = MaifsObs()
    cfg = MaifsNetConfig(obs.job_features, obs.option_features, obs.global_features)
    state = {name: np.zeros(shape, dtype=np.float32) for name, shape in agent_shapes(cfg).items()}
    return MaifsPolicy(obs, NumpyMaifs(cfg, state), lead=lead_policy(lead, LEAD_PLACEMENT))


@pytest.mark.parametrize("lead", ["qssf", "tiresias"])
def test_zero_agents_led_by_a_rigid_heuristic_reproduce_it_on_an_elastic_run(contended, lead: str) -> None:
    from slurmrl.sim.experiment import SimSettings

    elastic = SimSettings(elastic="fraction:0.5")
    alone = run_policy(contended, lead, placement="topology", settings=elastic)
    led = run_policy(contended, zero_agents(lead), settings=elastic)
    assert led.records == alone.records


def led_copy(tmp_path: Path, shipped: str, lead: object) -> Path:
    """A copy of a shipped checkpoint whose config names ``lead``."""
    folder = tmp_path / f"{shipped}-{lead}"
    shutil.copytree(shipped_policy_dir(shipped), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "lead": lead}))
    return folder


def test_maifs_and_harmony_checkpoints_name_their_lead(tmp_path: Path) -> None:
    from slurmrl.rl.harmony.policy import HarmonyPolicy
    from slurmrl.rl.maifs.policy import MaifsPolicy

    shipped = MaifsPolicy.from_dir(shipped_policy_dir("maifs-philly"))
    assert shipped.lead is not None and shipped.lead.name == "gittins-limit"  # as it was trained
    maifs = MaifsPolicy.from_dir(led_copy(tmp_path, "maifs-philly", "qssf"))
    assert maifs.lead is not None and maifs.lead.name == "qssf"
    assert HarmonyPolicy.from_dir(led_copy(tmp_path, "harmony-philly", True)).placement.lead
    with pytest.raises(PolicyError, match="deployable heuristic"):
        MaifsPolicy.from_dir(led_copy(tmp_path, "maifs-philly", "srtf-oracle"))


class _AlwaysStop(TopDRLPolicy):
    """A led TopDRL whose network wants to stop at every pick."""

    def _logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = np.zeros(len(mask), dtype=np.float32)
        logits[-1] = 100.0
        return logits


def test_a_led_pass_never_stops_on_an_idle_cluster() -> None:
    """Stopping holds the window until the next end or arrival; with nothing running there may be none."""
    zero = zero_topdrl("sjf-limit")
    stubborn = _AlwaysStop(zero._infer, zero.obs_config, zero.placement, lead=zero.lead)
    workload = prepare(scenario="philly-sample-448", limit=300, seed=3)
    result = run_policy(workload, stubborn)
    assert result.summary["unfinished"] == 0 and result.summary["finished"] == 300
    # It started a job while another ran only in a pass that held an overdue one (waited past its
    # limit, see the next test), so it could not stop; otherwise one at a time.
    records = result.records
    assert any(o.start_time < r.start_time < o.end_time for r in records for o in records)
    assert _beside_only_when_overdue(records)


def _beside_only_when_overdue(records) -> bool:
    """Every job started while another ran shares its start time with a job that had waited past its limit."""
    overdue = {
        r.start_time for r in records if r.start_time - r.submit_time > (r.time_limit or DEFAULT_TIME_LIMIT)
    }
    beside = [r for r in records if any(o.start_time < r.start_time < o.end_time for o in records)]
    return all(r.start_time in overdue for r in beside)


_JOB = st.tuples(
    st.floats(0.0, 2000.0),  # arrival gap
    st.sampled_from([30.0, 300.0, 3000.0]),  # duration
    st.sampled_from([1, 2, 4, 8]),  # GPUs
    st.sampled_from([0.5, 1.0, 3.0]),  # time limit over duration
)


@settings(max_examples=25, deadline=None)
@given(st.lists(_JOB, min_size=2, max_size=12))
def test_a_network_that_always_stops_still_starts_every_job_it_held_past_its_limit(jobs) -> None:
    """Any arrivals: the stubborn led policy finishes every job, and runs two side by side only when one was overdue."""
    from slurmrl.rl.env import trace_workload
    from slurmrl.traces.schema import Trace, TraceJob

    t, rows = 0.0, []
    for i, (gap, duration, gpus, over) in enumerate(jobs):
        t += gap
        rows.append(TraceJob(f"j{i}", t, duration, gpus, time_limit=duration * over))
    zero = zero_topdrl("sjf-limit")
    stubborn = _AlwaysStop(zero._infer, zero.obs_config, zero.placement, lead=zero.lead)
    result = run_policy(trace_workload(Trace(tuple(rows), "t", "test"), "1x2x8:v100"), stubborn)
    assert result.summary["finished"] == len(rows) and result.summary["unfinished"] == 0
    assert _beside_only_when_overdue(result.records)


def test_a_led_pass_holds_a_proposal_back_no_longer_than_its_time_limit() -> None:
    """Stopping may leave the lead's proposals waiting, but not one that has waited longer than it asked to run."""
    from slurmrl.rl.env import trace_workload
    from slurmrl.traces.schema import Trace, TraceJob

    trace = Trace(
        (
            TraceJob(
                "long", 0.0, 10_000.0, 4, time_limit=20_000.0
            ),  # runs throughout: stopping stays allowed
            TraceJob("small", 10.0, 50.0, 1, time_limit=100.0),
            TraceJob("tick-1", 150.0, 10.0, 1, time_limit=1000.0),
            TraceJob("tick-2", 400.0, 10.0, 1, time_limit=1000.0),
        ),
        "t",
        "test",
    )
    zero = zero_topdrl("sjf-limit")
    stubborn = _AlwaysStop(zero._infer, zero.obs_config, zero.placement, lead=zero.lead)
    start = {
        r.job_id: r.start_time for r in run_policy(trace_workload(trace, "1x1x8:v100"), stubborn).records
    }
    assert 110.0 < start["small"] <= 150.0  # the first decision point after it waited 100 s
    assert start["tick-1"] > 1150.0  # held back as long as its own limit allows


def _heuristics() -> list[str]:
    from slurmrl.policy.registry import POLICIES

    return sorted(n for n, e in POLICIES.items() if e.deployable and not e.learned)


@pytest.mark.parametrize("lead", _heuristics())
def test_a_lead_told_of_a_swapped_start_decides_as_a_fresh_one(lead: str) -> None:
    """A proposal held back while another job started leaves every count as the lead expects;
    told of it (settle), the lead's next pass is the one a fresh instance makes of the same view."""
    from slurmrl.cluster import load_cluster
    from slurmrl.cluster.pool import GpuPool
    from slurmrl.policy.view import ClusterView, JobView
    from slurmrl.rl.lead import led_decisions, propose

    cluster = load_cluster("1x1x8:v100")
    small = JobView("small", 4, 0.0, time_limit=600.0)
    large = JobView("large", 6, 1.0, time_limit=3600.0)
    tail = JobView("tail", 8, 2.0, time_limit=7200.0)  # the newest arrival, untouched by the swap
    heuristic = lead_policy(lead, "first-fit")
    assert heuristic is not None
    first = ClusterView(10.0, cluster, GpuPool(cluster).readonly(), (small, large, tail), (), ())
    proposal = propose(heuristic, first)
    started = [j.job_id for j, _ in proposal.starts]
    others = [j for j in (large, small) if j.job_id not in started]
    swapped = (others[0], make_placement("first-fit").place(others[0], first.pool, first))
    assert swapped[1] is not None
    led_decisions(heuristic, proposal, first, [swapped])  # the led pass started another job instead

    pool = GpuPool(cluster)
    pool.allocate(swapped[1])
    running = swapped[0].running(10.0, swapped[1])
    waiting = tuple(j for j in (small, large, tail) if j is not swapped[0])
    after = ClusterView(20.0, cluster, pool.readonly(), waiting, (running,), ())
    fresh = lead_policy(lead, "first-fit")
    assert fresh is not None
    got, want = propose(heuristic, after).decisions, propose(fresh, after).decisions
    assert list(got.order) == list(want.order) and got.starts == want.starts
