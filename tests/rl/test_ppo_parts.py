"""The pieces of the PPO trainer: GAE with truncation, explained variance, target_kl, layer_init."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from slurmrl.rl.env import EnvConfig, SchedEnv, trace_workload
from slurmrl.rl.features import ObsConfig
from slurmrl.rl.nets.config import NetConfig
from slurmrl.rl.nets.torch_layers import layer_init
from slurmrl.rl.nets.torch_nets import TopDRLNet
from slurmrl.rl.ppo import (
    Batch,
    PPOConfig,
    _policy_out,
    _to_torch,
    clipped_surrogate,
    collect_rollout,
    compute_advantages,
    explained_variance,
    kl_exceeded,
    ppo_update,
)
from slurmrl.rl.topdrl import new_network
from slurmrl.traces.schema import Trace, TraceJob

GAMMA, LAM = 0.9, 0.8  # gamma * lambda = 0.72
REWARDS = [1.0, 2.0, 3.0]
VALUES = [0.5, 1.0, 1.5]


def _col(xs: list[float]) -> torch.Tensor:
    return torch.tensor(xs, dtype=torch.float64).unsqueeze(1)  # [T, N=1]


def test_gae_terminal_end_has_no_future_value() -> None:
    # delta2 = 3 - 1.5 = 1.5;  delta1 = 2 + 0.9 * 1.5 - 1 = 2.35;  delta0 = 1 + 0.9 * 1 - 0.5 = 1.4
    # A2 = 1.5;  A1 = 2.35 + 0.72 * 1.5 = 3.43;  A0 = 1.4 + 0.72 * 3.43 = 3.8696
    adv, ret = compute_advantages(
        _col(REWARDS), _col(VALUES), _col([0, 0, 1]), torch.tensor([10.0], dtype=torch.float64), GAMMA, LAM
    )
    assert adv[:, 0].tolist() == pytest.approx([3.8696, 3.43, 1.5])
    assert ret[:, 0].tolist() == pytest.approx([4.3696, 4.43, 3.0])


def test_gae_truncated_end_bootstraps_from_the_final_observation() -> None:
    # The cut episode's last observation is worth 2.0; last_value (10.0) is the next episode's.
    # delta2 = 3 + 0.9 * 2 - 1.5 = 3.3;  A1 = 2.35 + 0.72 * 3.3 = 4.726;  A0 = 1.4 + 0.72 * 4.726 = 4.80272
    adv, ret = compute_advantages(
        _col(REWARDS),
        _col(VALUES),
        _col([0, 0, 0]),
        torch.tensor([10.0], dtype=torch.float64),
        GAMMA,
        LAM,
        truncated=_col([0, 0, 1]),
        final_values=_col([0, 0, 2.0]),
    )
    assert adv[:, 0].tolist() == pytest.approx([4.80272, 4.726, 3.3])
    assert ret[:, 0].tolist() == pytest.approx([5.30272, 5.726, 4.8])


def test_gae_without_an_end_bootstraps_from_the_last_value() -> None:
    # delta2 = 3 + 0.9 * 4 - 1.5 = 5.1;  A1 = 2.35 + 0.72 * 5.1 = 6.022;  A0 = 1.4 + 0.72 * 6.022 = 5.73584
    adv, _ = compute_advantages(
        _col(REWARDS), _col(VALUES), _col([0, 0, 0]), torch.tensor([4.0], dtype=torch.float64), GAMMA, LAM
    )
    assert adv[:, 0].tolist() == pytest.approx([5.73584, 6.022, 5.1])


def test_gae_truncation_mid_rollout_stops_the_flow_but_keeps_the_bootstrap() -> None:
    # Env 0 truncates at step 0 (final value 2.0), env 1 terminates there; steps 1-2 are a new episode.
    rewards = torch.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], dtype=torch.float64)
    values = torch.tensor([[0.5, 0.5], [1.0, 1.0], [1.5, 1.5]], dtype=torch.float64)
    term = torch.tensor([[0, 1], [0, 0], [0, 0]], dtype=torch.float64)
    trunc = torch.tensor([[1, 0], [0, 0], [0, 0]], dtype=torch.float64)
    finals = torch.tensor([[2.0, 0.0], [0, 0], [0, 0]], dtype=torch.float64)
    adv, _ = compute_advantages(
        rewards, values, term, torch.tensor([4.0, 4.0], dtype=torch.float64), GAMMA, LAM,
        truncated=trunc, final_values=finals,
    )  # fmt: skip
    # Truncated: 1 + 0.9 * 2 - 0.5 = 2.3; terminated: 1 - 0.5 = 0.5. Steps 1-2 match the no-end case.
    assert adv[0].tolist() == pytest.approx([2.3, 0.5])
    assert adv[1].tolist() == pytest.approx([6.022, 6.022])


def _gae_reference(rewards, values, done_after, last_value, gamma, lam):
    """The single-loop form with per-observation done flags (done[s] = step s - 1 ended)."""
    t = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    obs_done = torch.cat([torch.zeros_like(done_after[:1]), done_after[:-1]])
    for s in reversed(range(t)):
        if s == t - 1:
            nonterminal, nv = 1.0 - done_after[-1], last_value
        else:
            nonterminal, nv = 1.0 - obs_done[s + 1], values[s + 1]
        delta = rewards[s] + gamma * nv * nonterminal - values[s]
        last = delta + gamma * lam * nonterminal * last
        adv[s] = last
    return adv


def test_gae_matches_the_reference_loop_when_nothing_is_truncated() -> None:
    g = torch.Generator().manual_seed(0)
    rewards, values = torch.randn(17, 3, generator=g), torch.randn(17, 3, generator=g)
    done = (torch.rand(17, 3, generator=g) < 0.2).float()
    last = torch.randn(3, generator=g)
    adv, _ = compute_advantages(rewards, values, done, last, 0.99, 0.95)
    assert torch.allclose(adv, _gae_reference(rewards, values, done, last, 0.99, 0.95), atol=1e-5)


def test_gae_truncation_needs_final_values() -> None:
    with pytest.raises(ValueError, match="final_values"):
        compute_advantages(
            _col(REWARDS),
            _col(VALUES),
            _col([0, 0, 0]),
            torch.zeros(1),
            GAMMA,
            LAM,
            truncated=_col([0, 0, 1]),
        )


def test_explained_variance() -> None:
    y = torch.tensor([1.0, 2.0, 4.0, 8.0])
    assert explained_variance(y.clone(), y) == pytest.approx(1.0)
    assert explained_variance(torch.full_like(y, 3.0), y) == pytest.approx(0.0)
    assert explained_variance(torch.full_like(y, y.mean()), y) == pytest.approx(0.0)
    assert explained_variance(-y, y) < 0.0
    assert math.isnan(explained_variance(y, torch.full_like(y, 2.0)))


# -- target_kl -------------------------------------------------------------------

NET = NetConfig(job_features=3, cluster_channels=2, global_features=2, hidden=8, conv=2)


def _batch(net: TopDRLNet, size: int = 64) -> Batch:
    g = torch.Generator().manual_seed(1)
    k = 4
    jobs = torch.rand(size, k, NET.job_features, generator=g)
    jobs[..., 0] = 1.0
    obs = {
        "jobs": jobs,
        "cluster": torch.rand(size, NET.cluster_channels, 1, 2, 2, generator=g),
        "globals": torch.rand(size, NET.global_features, generator=g),
        "mask": torch.ones(size, k + 1),
    }
    with torch.no_grad():
        logits, values = _policy_out(net, obs)
        dist = torch.distributions.Categorical(logits=logits)
        actions = dist.sample()
        logprobs = dist.log_prob(actions)
    return Batch(
        obs, actions, logprobs, torch.randn(size, generator=g) * 5, torch.randn(size, generator=g), values
    )


def test_kl_exceeded_rule() -> None:
    assert not kl_exceeded(1e9, None)
    assert not kl_exceeded(0.01, 0.02)
    assert kl_exceeded(0.03, 0.02)


@pytest.mark.parametrize("target_kl", [None, 1e-3])
def test_target_kl_stops_the_epochs_early(target_kl: float | None) -> None:
    torch.manual_seed(0)
    net = TopDRLNet(NET)
    batch = _batch(net)
    cfg = PPOConfig(update_epochs=6, num_minibatches=4, learning_rate=1.0, target_kl=target_kl)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate)
    stats = ppo_update(net, opt, batch, cfg)
    assert stats.approx_kl > 1e-3  # a huge step moves the policy far
    assert stats.epochs == (6 if target_kl is None else 1)
    assert 0.0 <= stats.clip_fraction <= 1.0
    assert all(math.isfinite(x) for x in (stats.policy_loss, stats.value_loss, stats.entropy))


def test_ppo_config_keeps_target_kl_off_by_default() -> None:
    assert PPOConfig().target_kl is None


# -- layer_init ------------------------------------------------------------------


def _is_scaled_orthogonal(weight: torch.Tensor, gain: float) -> bool:
    """Rows (or columns, whichever are fewer) orthonormal up to ``gain``, kernels flattened."""
    w = weight.detach().reshape(weight.shape[0], -1).double()
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return torch.allclose(gram, gain**2 * torch.eye(gram.shape[0], dtype=torch.float64), atol=1e-5)


@pytest.mark.parametrize("gain", [math.sqrt(2.0), 0.01, 1.0])
def test_layer_init_gives_scaled_orthogonal_weights(gain: float) -> None:
    for layer in (torch.nn.Linear(12, 5), torch.nn.Linear(5, 12), torch.nn.Conv2d(3, 4, 3)):
        assert layer_init(layer, gain) is layer
        assert _is_scaled_orthogonal(layer.weight, gain)
        assert torch.count_nonzero(layer.bias) == 0


def test_network_uses_the_cleanrl_gains() -> None:
    net = TopDRLNet(NET)
    gains = {"score.2": 0.01, "wait.2": 0.01, "value.2": 1.0}
    layers = [name for name, m in net.named_modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]
    assert len(layers) == 11
    for name in layers:
        module = net.get_submodule(name)
        assert _is_scaled_orthogonal(module.weight, gains.get(name, math.sqrt(2.0))), name
        assert torch.count_nonzero(module.bias) == 0, name


# -- rollout with truncation -------------------------------------------------------


def _trace(n: int = 60) -> Trace:
    rng = np.random.default_rng(0)
    t, jobs = 0.0, []
    for i in range(n):
        t += float(rng.exponential(30.0))
        dur = float(rng.choice([60.0, 600.0, 6000.0]))
        jobs.append(TraceJob(f"j{i}", t, dur, int(rng.choice([1, 2, 4])), time_limit=dur * 2))
    return Trace(tuple(jobs), "test", "test")


def test_rollout_records_truncations_with_the_final_value() -> None:
    obs_cfg = ObsConfig(window=4, oldest=1)
    env_cfg = EnvConfig(episode_jobs=20, obs=obs_cfg, compression=(1.0, 1.0), max_steps=5)
    wl = trace_workload(_trace(), "1x2x8:v100")
    envs = gym.vector.SyncVectorEnv(
        [lambda: SchedEnv(env_cfg, workloads=[wl]) for _ in range(2)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    torch.manual_seed(0)
    net = new_network(obs_cfg, hidden=8, conv=2)
    obs, _ = envs.reset(seed=0)
    ro = collect_rollout(net, envs, _to_torch(obs), np.zeros(2), 12)
    envs.close()
    assert ro.truncated.sum() > 0
    assert torch.all(ro.terminated * ro.truncated == 0)
    cut = ro.truncated.bool()
    assert torch.all(ro.final_values[~cut] == 0)
    assert torch.all(ro.final_values[cut] != 0)
    # The value after a truncation is the final observation's, not the next episode's first one.
    s, i = (int(x) for x in torch.nonzero(cut)[0])
    if s + 1 < 12:
        assert ro.final_values[s, i] != ro.values[s + 1, i]
    assert len(ro.episode_returns) == int((ro.terminated + ro.truncated).sum())


def test_the_clipped_surrogate_stops_pushing_past_the_clip() -> None:
    ratio = torch.tensor([0.5, 1.0, 1.5])
    adv = torch.ones(3)
    loss = clipped_surrogate(ratio, adv, 0.2)
    np.testing.assert_allclose(loss.numpy(), [-0.5, -1.0, -1.2])


# -- separate critic, prior, validation ----------------------------------------------


def test_a_separate_critic_takes_the_value_loss_and_leaves_the_actor_value_head_alone() -> None:
    torch.manual_seed(0)
    actor, critic = TopDRLNet(NET), TopDRLNet(NET)
    before = {k: v.clone() for k, v in actor.state_dict().items()}
    critic_before = {k: v.clone() for k, v in critic.state_dict().items()}
    batch = _batch(actor)
    cfg = PPOConfig(update_epochs=1, num_minibatches=2, learning_rate=1e-2, max_grad_norm=1e-3)
    opt = torch.optim.Adam(actor.parameters(), lr=cfg.learning_rate)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=cfg.learning_rate)
    ppo_update(actor, opt, batch, cfg, critic=(critic, critic_opt))
    after = actor.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before if k.startswith("value."))
    assert not torch.equal(before["score.2.weight"], after["score.2.weight"])
    assert not torch.equal(critic_before["value.2.weight"], critic.state_dict()["value.2.weight"])


def test_the_prior_adds_to_the_logits_before_the_mask() -> None:
    torch.manual_seed(0)
    net = TopDRLNet(NET)
    obs = {k: v[:3] for k, v in _batch(net).obs.items()}
    plain, _ = _policy_out(net, obs)
    prior = torch.tensor([[0.0, -1.0, -2.0, -3.0, -4.0]] * 3)
    led, _ = _policy_out(net, dict(obs, prior=prior))
    assert torch.allclose(led, plain + prior)


def test_a_separate_critic_reads_the_values_forward_gives() -> None:
    torch.manual_seed(0)
    critic = TopDRLNet(NET)
    obs = _batch(TopDRLNet(NET), size=8).obs
    _, values = critic(obs["jobs"], obs["cluster"], obs["globals"])
    assert torch.equal(critic.values(obs["jobs"], obs["cluster"], obs["globals"]), values)
    # The critic's per-job score head gets no gradient either way: only its values are read.
    critic.values(obs["jobs"], obs["cluster"], obs["globals"]).sum().backward()
    assert all(p.grad is None for p in critic.score.parameters())
    assert all(p.grad is not None for p in critic.value.parameters())


def test_a_validation_replay_that_cannot_beat_the_best_keeps_nothing_and_says_so(tmp_path) -> None:
    from slurmrl.rl.ppo import BEST, _keep_best, _Standing, evaluate_net

    obs_cfg = ObsConfig(window=4, oldest=1)
    env_cfg = EnvConfig(episode_jobs=20, obs=obs_cfg)
    torch.manual_seed(0)
    net = new_network(obs_cfg, hidden=8, conv=2)
    wl = trace_workload(_trace(300), "1x2x8:v100")  # 16 GPUs for 300 jobs: a queue
    whole = evaluate_net(net, env_cfg, [wl])
    assert evaluate_net(net, env_cfg, [wl], beat=whole) == whole
    assert evaluate_net(net, env_cfg, [wl], beat=0.5 * whole) == math.inf
    said: list[str] = []
    standing = _Standing(update=3, best_val=0.5 * whole)
    assert _keep_best(tmp_path, net, env_cfg, math.inf, standing, said.append) == 0.5 * whole
    assert not (tmp_path / BEST).exists()
    assert said == [f"update 3: validation replay abandoned, it could no longer beat {0.5 * whole:.0f} s"]
