"""Adaptation to a shifted workload, and the adaptation curve that measures it.

From given weights (the meta-learned initialisation, or a freshly initialised
network for the from-scratch reference) run ``K`` episodes of ordinary Harmony
training on windows of the shifted workload (:func:`~slurmrl.rl.meta.inner.learn`)
and, after 0, 1, 5, 20 (and ``K``) episodes, replay the held-out windows with
the greedy policy. The unadapted policy is the meta-learned weights at 0
episodes, held flat. The held-out windows are never trained on: either other
scenarios (other VCs of the shifted workload) or the last jobs of the
adaptation scenario, with episodes drawn only from the jobs before them.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from slurmrl.errors import ConfigError
from slurmrl.rl.harmony.env import PlacementEnv
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.policy import read_checkpoint, save_checkpoint
from slurmrl.rl.harmony.train import HarmonyConfig, evaluate
from slurmrl.rl.meta.inner import learn
from slurmrl.rl.meta.reptile import new_net
from slurmrl.rl.nets.torch_nets import HarmonyNet
from slurmrl.rl.runs import one_core
from slurmrl.sim.experiment import Workload

CURVE_POINTS = (0, 1, 5, 20)
CURVE_CSV = "curve.csv"
CURVE_JSON = "curve.json"
INITS = ("meta", "scratch", "unadapted")


@dataclass(frozen=True)
class AdaptConfig:
    episodes: int = 20
    episode_jobs: int = 256
    inner: HarmonyConfig = field(default_factory=lambda: HarmonyConfig(updates_per_episode=8, batch_size=128))
    seed: int = 0

    def __post_init__(self) -> None:
        if self.episodes < 0:
            raise ConfigError(f"--episodes must be 0 or more, got {self.episodes}")
        if self.episode_jobs < 1:
            raise ConfigError(f"episode jobs must be at least 1, got {self.episode_jobs}")


@dataclass(frozen=True)
class CurvePoint:
    """The greedy policy's average JCT on the held-out windows after ``episodes`` episodes."""

    init: str  # "meta", "scratch" or "unadapted"
    episodes: int
    avg_jct: float  # mean over the windows, seconds
    window_jcts: tuple[float, ...]
    train_wall_s: float  # adaptation time spent so far (evaluations excluded)
    train_cpu_s: float


@dataclass(frozen=True)
class Split:
    """Where adaptation episodes are drawn from, and the windows the curve is measured on."""

    adapt: Workload
    held_out: tuple[Workload, ...]


def split_last(workload: Workload, jobs: int) -> Split:
    """Hold out the last ``jobs`` jobs of ``workload``; adaptation draws from the ones before."""
    all_jobs = workload.trace.jobs
    if jobs < 1 or jobs >= len(all_jobs):
        raise ConfigError(f"cannot hold out {jobs} of {workload.label}'s {len(all_jobs)} jobs")
    head = replace(
        workload, trace=replace(workload.trace, jobs=all_jobs[:-jobs]), label=f"{workload.label}[:-{jobs}]"
    )
    tail = replace(
        workload, trace=replace(workload.trace, jobs=all_jobs[-jobs:]), label=f"{workload.label}[-{jobs}:]"
    )
    return Split(head, (tail,))


def load_weights(directory: Path) -> tuple[HarmonyNet, HarmonyObs, str]:
    """A Harmony-format checkpoint as a trainable torch network, its observation layout and ordering."""
    ckpt, state = read_checkpoint(Path(directory))
    net = HarmonyNet(ckpt.net)
    net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    return net, ckpt.obs, ckpt.ordering


class _Clock:
    """Training time only: stopped while the curve's evaluations run."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self._t = self._c = 0.0

    def start(self) -> None:
        self._t, self._c = time.perf_counter(), time.process_time()

    def stop(self) -> None:
        self.wall += time.perf_counter() - self._t
        self.cpu += time.process_time() - self._c


def points(episodes: int) -> tuple[int, ...]:
    return tuple(sorted({p for p in CURVE_POINTS if p <= episodes} | {episodes}))


def adapt_curve(
    init: str, net: HarmonyNet, env: PlacementEnv, split: Split, cfg: AdaptConfig
) -> list[CurvePoint]:
    """Train ``net`` in place for ``cfg.episodes`` episodes, measuring the curve's points."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    marks = points(cfg.episodes)
    clock = _Clock()
    out: list[CurvePoint] = []

    def measure(k: int) -> None:
        jcts = tuple(evaluate(env, net, [w]) for w in split.held_out)
        out.append(CurvePoint(init, k, float(np.mean(jcts)), jcts, round(clock.wall, 2), round(clock.cpu, 2)))

    def after(k: int) -> None:
        clock.stop()
        if k in marks:
            measure(k)
        clock.start()

    measure(0)
    clock.start()
    learn(net, env, env.draw, cfg.episodes, cfg.inner, rng, after=after)
    return out


def run_adaptation(meta_dir: Path, split: Split, cfg: AdaptConfig, out: Path) -> list[CurvePoint]:
    """The three curves; the meta-initialised network after ``cfg.episodes`` episodes is saved in ``out``."""
    one_core()
    meta_net, obs, ordering = load_weights(meta_dir)
    env_cfg = replace(cfg.inner.env, episode_jobs=cfg.episode_jobs, obs=obs, ordering=ordering)
    env = PlacementEnv(env_cfg, workloads=[split.adapt])
    meta_curve = adapt_curve("meta", meta_net, env, split, cfg)
    unadapted = [replace(meta_curve[0], init="unadapted", episodes=k) for k in points(cfg.episodes)]
    torch.manual_seed(cfg.seed)
    scratch_curve = adapt_curve("scratch", new_net(obs, meta_net.cfg.hidden), env, split, cfg)
    curve = meta_curve + scratch_curve + unadapted
    extra = {
        "method": "reptile+adapt",
        "adapted_from": str(meta_dir),
        "adapt_episodes": cfg.episodes,
        "adapt_workload": split.adapt.label,
        "held_out": [w.label for w in split.held_out],
        "seed": cfg.seed,
    }
    save_checkpoint(Path(out), meta_net, obs, ordering, extra)
    write_curve(Path(out), curve, cfg)
    return curve


def write_curve(out: Path, curve: Sequence[CurvePoint], cfg: AdaptConfig) -> None:
    out.mkdir(parents=True, exist_ok=True)
    fields = ("init", "episodes", "avg_jct", "window_jcts", "train_wall_s", "train_cpu_s")
    with (out / CURVE_CSV).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        for p in curve:
            row = asdict(p)
            row["avg_jct"] = round(p.avg_jct, 1)
            row["window_jcts"] = " ".join(f"{j:.1f}" for j in p.window_jcts)
            writer.writerow(row)
    payload = {
        "adapt": {"episodes": cfg.episodes, "episode_jobs": cfg.episode_jobs, "seed": cfg.seed},
        "points": [asdict(p) for p in curve],
    }
    (out / CURVE_JSON).write_text(json.dumps(payload, indent=2) + "\n")
