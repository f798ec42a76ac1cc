"""The deployable policy: valid starts in a replay, a checkpoint that loads without torch, clear refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from slurmrl.errors import PolicyError
from slurmrl.policy.registry import policy_entry
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.maifs.policy import MaifsPolicy, numpy_copy, read_checkpoint, save_checkpoint
from slurmrl.sim.experiment import SimSettings, run_policy
from tests.rl.maifs.common import random_net, small_workload

OBS = MaifsObs()


class _Recording(MaifsPolicy):
    """The policy, keeping every start's GPU count."""

    counts: dict[str, int]

    def decide(self, view):  # type: ignore[no-untyped-def]
        decisions = super().decide(view)
        for start in decisions.starts:
            self.counts[start.job_id] = start.placement.num_gpus
        return decisions


def test_a_replay_with_every_job_elastic_finishes_and_chooses_counts() -> None:
    policy = _Recording(OBS, numpy_copy(random_net(OBS)))
    policy.counts, policy.steps = {}, []
    out = run_policy(small_workload(), policy, settings=SimSettings(elastic="fraction:1"))
    assert out.summary["finished"] == 80
    assert policy.steps, "no multi-agent step was taken"
    asked = {j.job_id: j.num_gpus for j in small_workload().trace.jobs}
    assert set(policy.counts) == set(asked)
    # The agents chose counts other than the asked one (the simulator refuses any outside the range).
    assert sum(policy.counts[j] != asked[j] for j in asked) >= 5


def test_the_checkpoint_loads_without_torch(tmp_path: Path) -> None:
    net = random_net(OBS, hidden=16)
    save_checkpoint(tmp_path / "ck", net, OBS, {"seed": 0})
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from slurmrl.rl.maifs.policy import MaifsPolicy\n"
        f"p = MaifsPolicy.from_dir({str(tmp_path / 'ck')!r})\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print(p.name, p.net.cfg.hidden)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["maifs:ck", "16"]
    _, cfg, state = read_checkpoint(tmp_path / "ck")
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(state[k], v.numpy())


def test_bad_checkpoints_are_refused_by_name(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "ck", random_net(OBS, hidden=16), OBS)
    cfg_path = tmp_path / "ck" / "config.json"
    raw = json.loads(cfg_path.read_text())
    raw["net"]["hidden"] = 32
    cfg_path.write_text(json.dumps(raw))
    with pytest.raises(PolicyError, match="attn_q.weight has shape"):
        MaifsPolicy.from_dir(tmp_path / "ck")
    cfg_path.write_text("{not json")
    with pytest.raises(PolicyError, match="not valid JSON"):
        MaifsPolicy.from_dir(tmp_path / "ck")
    with pytest.raises(PolicyError, match="has no config.json"):
        MaifsPolicy.from_dir(tmp_path / "missing")


def test_registered_as_a_learned_deployable_policy() -> None:
    entry = policy_entry("maifs")
    assert entry.learned and entry.deployable


def test_the_shipped_checkpoint_is_what_the_registry_loads() -> None:
    from slurmrl.policy.registry import make_policy
    from slurmrl.rl.maifs.policy import shipped_policy_dir

    folder = shipped_policy_dir()
    assert folder.name == "maifs-philly"
    policy = make_policy("maifs")
    assert isinstance(policy, MaifsPolicy) and policy.name == "maifs"
    obs, cfg, _ = read_checkpoint(folder)
    assert policy.obs == obs and policy.net.cfg == cfg


class _AlwaysWait:
    """Agents that always choose "not now", however strong the lead's prior."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def encode(self, jobs: np.ndarray, glob: np.ndarray) -> np.ndarray:
        return self.inner.encode(jobs, glob)  # type: ignore[attr-defined]

    def logits(self, context: np.ndarray, agent: int, options: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = np.full(mask.size, -1e9, dtype=np.float32)
        out[-1] = 1e3
        return np.where(mask, out, np.float32(-1e9))


def test_led_agents_never_leave_the_cluster_idle() -> None:
    """Waiting agents on an idle cluster would leave jobs unfinished: there the lead's starts stand."""
    from slurmrl.rl.lead import lead_policy
    from slurmrl.rl.maifs.policy import LEAD_PLACEMENT

    workload = small_workload(50)
    net = _AlwaysWait(numpy_copy(random_net()))
    policy = MaifsPolicy(MaifsObs(), net, lead=lead_policy("sjf-limit", LEAD_PLACEMENT))  # type: ignore[arg-type]
    result = run_policy(workload, policy, settings=SimSettings(elastic="fraction:0.5"))
    assert result.summary["unfinished"] == 0 and result.summary["finished"] == 50
