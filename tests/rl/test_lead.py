"""Learned policies start from the best heuristic: a zero network output reproduces it exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from slurmrl.errors import PolicyError
from slurmrl.policy import make_placement
from slurmrl.rl.features import CLUSTER_CHANNELS, GLOBAL_FEATURES, ObsConfig
from slurmrl.rl.inference import NumpyTopDRL
from slurmrl.rl.netconfig import NetConfig, weight_shapes
from slurmrl.rl.topdrl import TopDRLPolicy, lead_policy, read_checkpoint_config, shipped_policy_dir
from slurmrl.rl.window_policy import lead_prior
from slurmrl.sim.experiment import prepare, run_policy


def zero_topdrl(lead: str, placement: str = "topology") -> TopDRLPolicy:
    """TopDRL's network with every weight zero (it outputs 0 for every row), led by ``lead``."""
    obs = ObsConfig()
    cfg = NetConfig(obs.job_features, len(CLUSTER_CHANNELS), len(GLOBAL_FEATURES))
    state = {name: np.zeros(shape, dtype=np.float32) for name, shape in weight_shapes(cfg).items()}
    place = make_placement(placement)
    return TopDRLPolicy(NumpyTopDRL(cfg, state), obs, place, lead=lead_policy(lead, place))


@pytest.fixture(scope="module")
def contended():
    """2,500 jobs of the embedded week on 448 GPUs: queues form, backfill and preemption act."""
    return prepare(scenario="philly-sample-448", limit=2500, seed=3)


@pytest.mark.parametrize(
    ("lead", "placement"), [("qssf", "topology"), ("tiresias", "topology"), ("sjf-limit", "consolidate")]
)
def test_zero_output_reproduces_the_lead_heuristic_job_by_job(contended, lead: str, placement: str) -> None:
    alone = run_policy(contended, lead, placement=placement)
    led = run_policy(contended, zero_topdrl(lead, placement))
    assert led.records == alone.records  # every job: start, end, placement shape, preemptions
    assert led.summary["avg_jct"] == alone.summary["avg_jct"]
    assert led.meta["preemptive"] == (lead == "tiresias")


def test_lead_prior_orders_proposals_then_stop_then_the_rest() -> None:
    prior = lead_prior(3, 6)
    assert list(np.argsort(-prior, kind="stable")) == [0, 1, 2, 6, 3, 4, 5]


def test_a_checkpoint_names_its_lead_and_the_shipped_one_has_none(tmp_path: Path) -> None:
    shipped = shipped_policy_dir()
    assert read_checkpoint_config(shipped).lead == ""  # shipped behaviour is the original window
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
    from slurmrl.rl.harmony.netconfig import HarmonyNetConfig
    from slurmrl.rl.harmony.netconfig import weight_shapes as pointer_shapes
    from slurmrl.rl.harmony.numpy_net import NumpyHarmony
    from slurmrl.rl.harmony.placement import greedy_chooser
    from slurmrl.rl.harmony.policy import HarmonyPolicy

    obs = HarmonyObs()
    cfg = HarmonyNetConfig(obs.job_features, obs.node_features, obs.global_features)
    state = {name: np.zeros(shape, dtype=np.float32) for name, shape in pointer_shapes(cfg).items()}
    net = NumpyHarmony(cfg, state)
    return HarmonyPolicy(obs, greedy_chooser(net.logits), make_placement("interference-aware"), lead=lead)


def test_zero_pointer_led_by_its_fallback_places_as_the_heuristic() -> None:
    from slurmrl.sim.experiment import SimSettings

    workload = prepare(scenario="gavel-msr-6c71a0", limit=700, seed=3)
    full = SimSettings(speed_model="full")
    alone = run_policy(workload, "qssf", placement="interference-aware", settings=full)
    led = run_policy(workload, zero_pointer(lead=True), settings=full)
    assert led.records == alone.records
    unled = run_policy(workload, zero_pointer(lead=False), settings=full)
    assert unled.records != alone.records  # without the lead, the untrained pointer places elsewhere
