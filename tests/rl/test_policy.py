"""The TopDRL policy: checkpoint round trip, the shipped checkpoint, the daemon's path."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from slurmrl.errors import PolicyError
from slurmrl.policy.placement.topology import Topology
from slurmrl.policy.registry import make_policy, policy_entry
from slurmrl.rl.env import trace_workload
from slurmrl.rl.features import ObsConfig
from slurmrl.rl.topdrl import TopDRLPolicy, load_checkpoint, new_network, save_checkpoint, shipped_policy_dir
from slurmrl.sim.simulator import Simulator
from slurmrl.traces.schema import Trace, TraceJob

FIX = Path(__file__).resolve().parents[1] / "slurm" / "fixtures" / "v22.05"


def _trace(n: int = 80) -> Trace:
    rng = np.random.default_rng(5)
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(20.0))
        dur = float(rng.choice([50.0, 500.0, 5000.0]))
        jobs.append(
            TraceJob(f"j{i}", t, dur, int(rng.choice([1, 2, 4, 8])), vc=f"vc{i % 3}", time_limit=dur * 3)
        )
    return Trace(tuple(jobs), "test", "test")


def _decisions(policy: TopDRLPolicy, trace: Trace, cluster) -> list[tuple]:
    sim = Simulator(trace, cluster)
    out = []
    while (view := sim.next_view()) is not None:
        d = policy.decide(view)
        out.append(tuple((s.job_id, s.placement) for s in d.starts))
        sim.apply(d)
    return out


def test_checkpoint_round_trip_gives_identical_decisions(tmp_path: Path) -> None:
    torch.manual_seed(3)
    obs = ObsConfig(window=8, oldest=2)
    net = new_network(obs, hidden=16, conv=4)
    save_checkpoint(tmp_path, net, obs)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["obs"]["window"] == 8 and cfg["net"]["hidden"] == 16
    ckpt, loaded = load_checkpoint(tmp_path)
    assert ckpt.obs == obs
    wl = trace_workload(_trace(), "1x2x8:v100")
    a = _decisions(TopDRLPolicy.from_net(net, obs, Topology()), wl.trace, wl.cluster)
    b = _decisions(TopDRLPolicy.from_dir(tmp_path), wl.trace, wl.cluster)
    assert a == b and any(a)


def test_missing_or_mismatched_checkpoint_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no config.json"):
        load_checkpoint(tmp_path)
    obs = ObsConfig(window=8, oldest=2)
    save_checkpoint(tmp_path, new_network(obs, hidden=16, conv=4), obs)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["net"]["hidden"] = 32
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(PolicyError, match="cannot load weights"):
        load_checkpoint(tmp_path)


def test_a_weight_of_the_wrong_shape_is_named(tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    obs = ObsConfig(window=8, oldest=2)
    save_checkpoint(tmp_path, new_network(obs, hidden=16, conv=4), obs)
    state = load_file(str(tmp_path / "model.safetensors"))
    state["wait.2.weight"] = np.zeros((1, 8), dtype=np.float32)
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(
        PolicyError, match=r"wait\.2\.weight has shape \(1, 8\), config.json implies \(1, 16\)"
    ):
        TopDRLPolicy.from_dir(tmp_path)


def test_the_shipped_policy_loads_and_decides_without_torch() -> None:
    """The daemon's path: no torch import, whose start-up time and memory the daemon would pay for."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import sys
        from slurmrl.policy.registry import make_policy
        from slurmrl.sim.experiment import prepare
        from slurmrl.sim.simulator import Simulator

        policy = make_policy("topdrl")
        wl = prepare(trace="embedded:philly-sample", cluster="1x2x8:v100", limit=40)
        sim = Simulator(wl.trace, wl.cluster)
        view = sim.next_view()
        starts = policy.decide(view).starts
        print(len(starts), "torch" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert int(out[0]) > 0
    assert out[1] == "False"


def test_every_start_is_feasible_and_order_covers_the_queue() -> None:
    policy = TopDRLPolicy.from_dir(shipped_policy_dir())
    wl = trace_workload(_trace(), "1x2x8:v100")
    sim = Simulator(wl.trace, wl.cluster)
    while (view := sim.next_view()) is not None:
        d = policy.decide(view)
        ids = {j.job_id for j in view.pending}
        assert set(d.order) == ids and len(d.order) == len(ids)
        assert [s.job_id for s in d.starts] == list(d.order)[: len(d.starts)]
        sim.apply(d)  # raises on an infeasible start
    assert sim.finished_count == len(wl.trace.jobs)


def test_shipped_policy_runs_on_a_recorded_slurm_snapshot(recorded_snapshot) -> None:
    assert policy_entry("topdrl").deployable
    snap = recorded_snapshot()
    view = snap.to_view()
    policy = make_policy("topdrl")
    decisions = policy.decide(view)
    pending = {j.job_id: j for j in view.pending}
    assert set(decisions.order) == set(pending)
    pool = view.pool.copy()
    for start in decisions.starts:
        assert start.placement.num_gpus == pending[start.job_id].gpus
        assert pool.is_free(start.placement)
        pool.allocate(start.placement)
    again = make_policy("topdrl").decide(replace(view))
    assert again.starts == decisions.starts


def _tiny_run(**overrides):
    """A PPO config small enough to train in a test, on a 40-job trace's workload."""
    from slurmrl.rl.ppo import PPOConfig

    wl = trace_workload(_trace(40), "1x2x8:v100")
    base = dict(
        env_overrides={"episode_jobs": 20, "obs": ObsConfig(window=4, oldest=1), "compression": (1.0, 1.0)},
        num_steps=16,
        num_envs=2,
        eval_every=0,
        hidden=8,
        conv=2,
    )
    return PPOConfig(**(base | overrides)), wl


def test_training_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    from slurmrl.rl.ppo import LOG, train

    cfg, wl = _tiny_run(total_steps=64, checkpoint_every=1)
    first = train(cfg, tmp_path, workloads=[wl], progress=False)
    assert first.steps == 64
    again = train(replace(cfg, total_steps=128), tmp_path, resume=True, workloads=[wl], progress=False)
    assert again.steps == 128
    rows = (tmp_path / LOG).read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2", "3", "4"]
    with pytest.raises(Exception, match="already holds a training run"):
        train(cfg, tmp_path, workloads=[wl], progress=False)


def test_wall_limit_stops_the_run_and_keeps_a_checkpoint(tmp_path: Path) -> None:
    from slurmrl.rl.ppo import LOG, train

    cfg, wl = _tiny_run(total_steps=128, checkpoint_every=100, wall_limit_s=1e-6)
    result = train(cfg, tmp_path, workloads=[wl], progress=False)
    assert (result.updates, result.steps) == (1, 32)
    assert result.cpu_seconds > 0
    assert len((tmp_path / LOG).read_text().splitlines()) == 2
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["training"]["update"] == 1 and config["training"]["cpu_seconds"] > 0


def test_rollout_workers_in_processes_train_what_one_process_trains(tmp_path: Path) -> None:
    """``--workers N --vector async`` steps each environment in its own process, deterministically per seed."""
    from slurmrl.rl.ppo import train

    cfg, wl = _tiny_run(total_steps=64)
    weights = {}
    for vector in ("sync", "async"):
        train(replace(cfg, vector=vector), tmp_path / vector, workloads=[wl], progress=False)
        weights[vector] = (tmp_path / vector / "model.safetensors").read_bytes()
    assert weights["sync"] == weights["async"]
