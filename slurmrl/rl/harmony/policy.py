"""The trained Harmony agent as a deployable :class:`~slurmrl.policy.base.Policy`.

A deployable heuristic ordering decides WHICH jobs start (``qssf`` when a
checkpoint names none; ``slurmrl train --policy harmony --lead NAME`` picks
another, chosen on the training scenarios, see policies/harmony-philly/history.md),
with its EASY backfill; the agent decides
WHERE each starts. The policy is the ordering's own scheduler with the learned
placement put in, so backfill reservations are priced with the agent's own
placements. A checkpoint may name a preemptive ordering (``srtf-limit``,
``tiresias``) to place for: the pointer then places the jobs that
scheduler starts or displaces others for, and the policy preempts.

A checkpoint is a folder with ``model.safetensors`` (weights only, no pickle)
and ``config.json``, loadable without torch: decisions are computed in numpy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from slurmrl.errors import PolicyError
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.view import ClusterView, Decisions, JobView
from slurmrl.rl import checkpoints
from slurmrl.rl.config_fields import choice, flag
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.placement import LEAD_BONUS, Chooser, HarmonyPlacement, Step, greedy_chooser
from slurmrl.rl.nets.config import HarmonyNetConfig, weight_shapes
from slurmrl.rl.nets.numpy_nets import NumpyHarmony

if TYPE_CHECKING:
    from slurmrl.rl.nets.torch_nets import HarmonyNet

CHECKPOINT_FORMAT = "slurmrl-harmony"
CHECKPOINT_VERSION = 1
WEIGHTS = checkpoints.WEIGHTS
CONFIG = checkpoints.CONFIG
DEFAULT_POLICY = "harmony-philly"
DEFAULT_ORDERING = "qssf"
ORDERINGS = ("fifo-backfill", "slurm", "qssf", "sjf-limit")  # deployable and non-preemptive: leads
# Preemptive orderings a pointer may place for and train under (the daemon requeues with
# preempt = "requeue"); meta-rl's training keeps to ORDERINGS.
PREEMPTIVE_ORDERINGS = ("srtf-limit", "tiresias", "gittins-limit")


@dataclass(frozen=True)
class HarmonyCheckpoint:
    net: HarmonyNetConfig
    obs: HarmonyObs
    ordering: str = DEFAULT_ORDERING
    lead: bool = False  # the fallback heuristic's node gets a logit bonus (HarmonyPlacement)
    placement: str = "interference-aware"  # the fallback it was trained with: its own placement
    lead_bonus: float = LEAD_BONUS  # the bonus it was trained with (older led checkpoints: the default)


class _WindowOrdering:
    """The ordering, also handing the head of each ranking to the placement (the encoder's window)."""

    def __init__(self, inner: object, placement: HarmonyPlacement) -> None:
        self._inner = inner
        self._placement = placement

    def order(self, view: ClusterView) -> Iterable[JobView]:
        ranked = self._inner.order(view)  # type: ignore[attr-defined]
        if iter(ranked) is ranked:  # a one-shot iterator: keep what we read
            ranked = list(ranked)
        head = list(itertools.islice(ranked, self._placement.obs.window + 1))
        self._placement.begin(view, head)
        return ranked

    def __getattr__(self, name: str) -> object:  # started(), bind_oracle(), ...
        return getattr(self._inner, name)


def _window_rank(rank: Callable[[ClusterView], list[JobView]], placement: HarmonyPlacement) -> Callable:
    """A preemptive scheduler's ranking, also handing its head to the placement (the encoder's window)."""

    def ranked(view: ClusterView) -> list[JobView]:
        jobs = rank(view)
        placement.begin(view, jobs[: placement.obs.window + 1])
        return jobs

    return ranked


class HarmonyPolicy:
    """A heuristic ordering's scheduler with the learned placement."""

    deployable = True
    learned = True  # a trained network: judged by gap closure against the heuristics

    def __init__(
        self,
        obs: HarmonyObs,
        chooser: Chooser,
        fallback: PlacementPolicy,
        *,
        ordering: str = DEFAULT_ORDERING,
        name: str = "harmony",
        lead: bool = False,
        lead_bonus: float = LEAD_BONUS,
    ) -> None:
        from slurmrl.policy.registry import policy_entry

        if ordering not in ORDERINGS + PREEMPTIVE_ORDERINGS:
            known = ", ".join(ORDERINGS + PREEMPTIVE_ORDERINGS)
            raise PolicyError(f"harmony ordering '{ordering}' is not one of {known}")
        self.name = name
        self.placement = HarmonyPlacement(obs, chooser, fallback, lead=lead, bonus=lead_bonus)
        self._inner = policy_entry(ordering).load()(self.placement)
        self.preemptive = bool(getattr(self._inner, "preemptive", False))
        if self.preemptive:
            self._inner.rank = _window_rank(self._inner.rank, self.placement)
        else:
            self._inner.ordering = _WindowOrdering(self._inner.ordering, self.placement)
        self.steps: list[Step] | None = None  # set to a list to record the decisions that started jobs

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        """A deployable policy never reads true durations."""

    def decide(self, view: ClusterView) -> Decisions:
        decisions = self._inner.decide(view)
        if self.steps is not None:
            tried = self.placement.tried
            for start in decisions.starts:
                step = tried.get(start.job_id)
                if step is not None and step.placement == start.placement:
                    self.steps.append(step)
        return decisions

    @classmethod
    def from_dir(
        cls, directory: Path | str, fallback: PlacementPolicy | None = None, *, name: str | None = None
    ) -> HarmonyPolicy:
        """A Harmony-format folder; ``fallback`` overrides the placement it was trained with."""
        from slurmrl.policy.registry import make_placement

        directory = Path(directory)
        ckpt, state = read_checkpoint(directory)
        net = NumpyHarmony(ckpt.net, state)
        return cls(
            ckpt.obs,
            greedy_chooser(net.logits),
            fallback or make_placement(ckpt.placement),
            ordering=ckpt.ordering,
            name=name or ("harmony" if directory.name == DEFAULT_POLICY else f"harmony:{directory.name}"),
            lead=ckpt.lead,
            lead_bonus=ckpt.lead_bonus,
        )


def save_checkpoint(
    directory: Path,
    net: HarmonyNet,
    obs: HarmonyObs,
    ordering: str,
    extra: Mapping[str, object] | None = None,
    *,
    lead: bool = False,
    placement: str | None = None,
    lead_bonus: float = LEAD_BONUS,
) -> None:
    config: dict[str, object] = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "net": net.cfg.to_dict(),
        "obs": obs.to_dict(),
        "ordering": ordering,
    }
    if lead:
        config["lead"] = True
        config["lead_bonus"] = lead_bonus
    if placement is not None:
        config["placement"] = placement
    if extra:
        config["training"] = dict(extra)
    checkpoints.write_checkpoint(directory, net.state_dict(), config)


def read_checkpoint(directory: Path) -> tuple[HarmonyCheckpoint, dict[str, np.ndarray]]:
    """Config and weights (numpy), every tensor checked against the config."""
    from slurmrl.policy.registry import placement_names

    raw = checkpoints.read_config(directory, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, "Harmony")
    cfg_path = directory / CONFIG
    try:
        net_cfg = HarmonyNetConfig.from_dict(raw.get("net"))
        obs = HarmonyObs.from_dict(raw.get("obs"))
        ordering = choice(raw, "ordering", "", [*ORDERINGS, *PREEMPTIVE_ORDERINGS], default=DEFAULT_ORDERING)
        lead = flag(raw, "lead", "", default=False)
        bonus = raw.get("lead_bonus", LEAD_BONUS)
        if isinstance(bonus, bool) or not isinstance(bonus, int | float) or not math.isfinite(bonus):
            raise ValueError(f"'lead_bonus' must be a finite number, not {bonus!r}")
        placement = choice(raw, "placement", "", placement_names(), default=HarmonyCheckpoint.placement)
    except ValueError as exc:
        raise PolicyError(str(exc), file=str(cfg_path)) from None
    if (net_cfg.job_features, net_cfg.node_features) != (obs.job_features, obs.node_features):
        raise PolicyError("'net' feature counts do not match the 'obs' layout", file=str(cfg_path))
    return HarmonyCheckpoint(net_cfg, obs, ordering, lead, placement, float(bonus)), checkpoints.read_weights(
        directory, weight_shapes(net_cfg)
    )


def shipped_policy_dir(name: str = DEFAULT_POLICY) -> Path:
    """The shipped checkpoint folder (see :func:`slurmrl.rl.checkpoints.shipped_policy_dir`)."""
    return checkpoints.shipped_policy_dir(name)


def make_harmony(placement: PlacementPolicy) -> HarmonyPolicy:
    """Registry factory: the shipped checkpoint; ``placement`` places the jobs the pointer does not."""
    return HarmonyPolicy.from_dir(shipped_policy_dir(), placement)
