"""The numpy actor computes the torch network's logits; decisions match on random observations."""

from __future__ import annotations

import numpy as np
import torch

from slurmrl.rl.inference import pick
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.maifs.policy import numpy_copy
from tests.rl.maifs.common import random_net

OBS = MaifsObs()


def _obs(rng: np.random.Generator, agents: int, n_opt: int) -> tuple[np.ndarray, ...]:
    jobs = rng.random((OBS.window, OBS.job_features), dtype=np.float32)
    jobs[:, 0] = (np.arange(OBS.window) < agents).astype(np.float32)
    jobs[agents:] = 0.0
    glob = rng.random(OBS.global_features, dtype=np.float32)
    options = rng.random((OBS.window, n_opt, OBS.option_features), dtype=np.float32)
    masks = rng.random((OBS.window, n_opt)) < 0.6
    masks[:, -1] |= ~masks[:, :-1].any(axis=1)
    return jobs, glob, options, masks


def test_numpy_logits_match_torch() -> None:
    rng = np.random.default_rng(0)
    for seed in range(5):
        net = random_net(OBS, seed=seed, hidden=32, scale=5.0)
        actor = numpy_copy(net)
        for agents in (1, 3, OBS.window):
            jobs, glob, options, masks = _obs(rng, agents, 13)
            with torch.no_grad():
                logits, value = net(
                    torch.as_tensor(jobs)[None],
                    torch.as_tensor(glob)[None],
                    torch.as_tensor(options)[None],
                    torch.as_tensor(masks)[None],
                )
            ctx = actor.encode(jobs, glob)
            with torch.no_grad():
                ctx_t = net.encode(torch.as_tensor(jobs)[None], torch.as_tensor(glob)[None])[0].numpy()
            np.testing.assert_allclose(ctx[:agents], ctx_t[:agents], rtol=1e-4, atol=1e-5)
            for i in range(agents):
                mine = actor.logits(ctx, i, options[i], masks[i])
                theirs = logits[0, i].numpy()
                np.testing.assert_allclose(mine[masks[i]], theirs[masks[i]], rtol=1e-4, atol=1e-5)
                assert (mine[~masks[i]] < -1e7).all()
                assert pick(mine) == pick(theirs)
            assert value.shape == (1,)


def test_padding_agents_do_not_change_real_agents_contexts() -> None:
    rng = np.random.default_rng(1)
    actor = numpy_copy(random_net(OBS, hidden=16))
    jobs, glob, _, _ = _obs(rng, 2, 5)
    noisy = jobs.copy()
    noisy[2:, 1:] = rng.random((OBS.window - 2, OBS.job_features - 1))  # column 0 stays 0: still padding
    np.testing.assert_allclose(
        actor.encode(jobs, glob)[:2], actor.encode(noisy, glob)[:2], rtol=1e-5, atol=1e-6
    )
