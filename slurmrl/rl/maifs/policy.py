"""The trained MAIFS agents as a deployable :class:`~slurmrl.policy.base.Policy`, and its checkpoint.

Each pass: the window's agents (:mod:`.window`) choose in turn
(:mod:`.coordination`); when some started and GPUs are left, the next
window of jobs that could still fit takes its turn, until nothing starts.
Non-preemptive and work-conserving ("not now" is open to an agent only when
none of its options can be placed), so a job's count is chosen once, at its
start; rigid jobs are placed like any other, on their one count.

Led by a rigid heuristic (``"lead"`` in the checkpoint's config): the
heuristic decides each pass as it would alone; its starts are the first
agents, each with a bonus on the option that is the heuristic's own (its
count, its rack, its GPUs), the rest of its ranking the next agents, with a
bonus on "not now". A network that outputs zero thus starts exactly the
heuristic's jobs on exactly its GPUs; training moves counts and racks from
there.

A checkpoint is a folder with ``model.safetensors`` (weights only, no
pickle) and ``config.json``, loadable without torch: decisions run in numpy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.errors import PolicyError
from slurmrl.policy.base import PlacementPolicy, Policy
from slurmrl.policy.ordering.qssf import QssfOrdering
from slurmrl.policy.view import ClusterView, Decisions, JobIds, JobView, Start
from slurmrl.rl import checkpoints
from slurmrl.rl.lead import Led, check_lead, lead_policy, led_decisions, propose, runs_after
from slurmrl.rl.maifs.coordination import AgentNet, Chooser, Lead, MaifsStep, Resolver
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.maifs.reservation import Gate, Reserver
from slurmrl.rl.maifs.window import could_fit, pick_window
from slurmrl.rl.nets.config import MaifsNetConfig, weight_shapes
from slurmrl.rl.nets.numpy_nets import NumpyMaifs

if TYPE_CHECKING:
    from slurmrl.rl.nets.torch_nets import MaifsNet

CHECKPOINT_FORMAT = "slurmrl-maifs"
CHECKPOINT_VERSION = 1
WEIGHTS = checkpoints.WEIGHTS
CONFIG = checkpoints.CONFIG
DEFAULT_POLICY = "maifs-philly"


def greedy(logits: np.ndarray) -> tuple[int, float]:
    """The deployed rule: the best option, near-ties to the lowest index (CPU-independent)."""
    from slurmrl.rl.inference import pick

    return pick(logits), 0.0


def sampling(rng: np.random.Generator) -> Chooser:
    """Training's behaviour policy: an option drawn from the softmax, with its log-probability."""

    def choose(logits: np.ndarray) -> tuple[int, float]:
        z = logits.astype(np.float64)
        z -= z.max()
        p = np.exp(z)
        p /= p.sum()
        a = int(rng.choice(p.size, p=p))
        return a, float(np.log(max(p[a], 1e-12)))

    return choose


class MaifsPolicy(Led):
    """Multi-agent count-and-placement decisions over a window of the ranking."""

    deployable = True
    learned = True  # a trained network: judged by gap closure against the heuristics

    def __init__(
        self,
        obs: MaifsObs,
        net: AgentNet,
        choose: Chooser = greedy,
        *,
        name: str = "maifs",
        lead: Policy | None = None,
    ) -> None:
        self.name = name
        self.lead = lead
        self.obs = obs
        self.net = net
        self.choose = choose
        self.ordering = QssfOrdering()  # its estimator learns run times from finished jobs
        self.reserver = Reserver(self.ordering) if obs.reserve else None
        self._resolver: Resolver | None = None
        self.steps: list[MaifsStep] | None = None  # set to a list to record every step

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        """A deployable policy never reads true durations."""

    def resolver(self, view: ClusterView) -> Resolver:
        if self._resolver is None or self._resolver.cluster is not view.cluster:
            self._resolver = Resolver(view.cluster, self.obs)
        return self._resolver

    def decide(self, view: ClusterView) -> Decisions:
        if self.lead is not None:
            return self._decide_led(view, self.lead)
        ranked = self.ordering.order(view)
        pool = view.pool.copy()
        gate = self.reserver.gate(view, ranked, pool) if self.reserver is not None else None
        began = self.windows(view, ranked, pool, gate)
        starts = tuple(Start(job.job_id, placement) for job, placement in began)
        self.ordering.started([s.job_id for s in starts])
        info: dict[str, float] = {}
        if self.reserver is not None:
            self.reserver.started(view, began)
            info["shadow_time"] = gate.shadow if gate is not None else math.nan
        return Decisions(order=JobIds(ranked), starts=starts, info=info)

    def windows(
        self, view: ClusterView, ranked: Iterable[JobView], pool: GpuPool, gate: Gate | None
    ) -> list[tuple[JobView, Placement]]:
        """Window after window takes its step while GPUs are left and the last one started something."""
        resolver = self.resolver(view)
        estimator = self.ordering.estimator
        pool_for = None if gate is None else (lambda job: gate.pool_for(job, pool, view.now))
        done: set[str] = set()
        began: list[tuple[JobView, Placement]] = []
        while pool.total_free > 0:
            window = pick_window(
                view.pending,
                ranked,
                pool,
                size=self.obs.window,
                oldest=self.obs.oldest,
                skip=done,
                pool_for=pool_for,
            )
            if not window:
                break
            agents = [resolver.agent(job, estimator.estimate(job)) for job in window]
            step, started = resolver.step(agents, view, pool, self.net, self.choose, gate)
            if self.steps is not None:
                self.steps.append(step)
            done.update(job.job_id for job in window)
            if not started:
                break
            by_id = {job.job_id: job for job in window}
            began.extend((by_id[s.job_id], s.placement) for s in started)
        return began

    def _decide_led(self, view: ClusterView, lead: Policy) -> Decisions:
        """Agents over the lead heuristic's proposals, then its ranking (see the module docstring)."""
        for done in view.finished:
            self.ordering.estimator.learn(done)
        proposal = propose(lead, view)
        pool, proposed = proposal.pool, list(proposal.starts)
        resolver, estimator, k = self.resolver(view), self.ordering.estimator, self.obs.window
        began: list[tuple[JobView, Placement]] = []
        # The pool only shrinks within a pass, so a job that cannot fit now never will:
        # the lead's ranking is read once, a window at a time, however long the queue.
        waiting = (j for j in proposal.ranked if could_fit(j, pool))
        while pool.total_free > 0 or proposed:
            props, proposed = proposed[:k], proposed[k:]
            window = [j for j, _ in props] + list(itertools.islice(waiting, k - len(props)))
            if not window:
                break
            agents = [resolver.agent(job, estimator.estimate(job)) for job in window]
            leads = [Lead(p) for _, p in props] + [Lead()] * (len(window) - len(props))
            step, started = resolver.step(agents, view, pool, self.net, self.choose, None, leads)
            if self.steps is not None:
                self.steps.append(step)
            by_id = {job.job_id: job for job in window}
            began.extend((by_id[s.job_id], s.placement) for s in started)
            if not props and not started:
                break
        if not began and proposal.starts and not runs_after(view, proposal):
            began = list(proposal.starts)  # the agents would leave the cluster idle: the lead's starts stand
        return led_decisions(lead, proposal, view, began)

    @classmethod
    def from_dir(cls, directory: Path | str) -> MaifsPolicy:
        directory = Path(directory)
        obs, net_cfg, state = read_checkpoint(directory)
        name = "maifs" if directory.name == DEFAULT_POLICY else f"maifs:{directory.name}"
        lead = read_lead(directory)
        return cls(obs, NumpyMaifs(net_cfg, state), name=name, lead=lead_policy(lead, LEAD_PLACEMENT))


LEAD_PLACEMENT = "type-aware"  # the lead heuristic places as the agents do (topology on one GPU type)


def read_lead(directory: Path) -> str:
    """The checkpoint's ``lead``: "" or a deployable heuristic's registered name."""
    raw = checkpoints.read_config(directory, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, "MAIFS")
    return check_lead(str(raw.get("lead", "")), directory / CONFIG)


def numpy_copy(net: MaifsNet) -> NumpyMaifs:
    """The numpy actor of a torch network's current weights (what rollouts run)."""
    return NumpyMaifs(net.cfg, checkpoints.numpy_state(net))


@dataclass(frozen=True)
class Checkpoint:
    obs: MaifsObs
    net: MaifsNetConfig


def save_checkpoint(
    directory: Path,
    net: MaifsNet,
    obs: MaifsObs,
    extra: Mapping[str, object] | None = None,
    *,
    lead: str = "",
) -> None:
    config: dict[str, object] = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "net": net.cfg.to_dict(),
        "obs": obs.to_dict(),
    }
    if lead:
        config["lead"] = lead
    if extra:
        config["training"] = dict(extra)
    checkpoints.write_checkpoint(directory, net.state_dict(), config)


def read_checkpoint(directory: Path) -> tuple[MaifsObs, MaifsNetConfig, dict[str, np.ndarray]]:
    """Observation layout, network config and weights (numpy), every tensor checked against the config."""
    raw = checkpoints.read_config(directory, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, "MAIFS")
    cfg_path = directory / CONFIG
    try:
        net_cfg = MaifsNetConfig.from_dict(raw.get("net"))
        obs = MaifsObs.from_dict(raw.get("obs"))
    except ValueError as exc:
        raise PolicyError(str(exc), file=str(cfg_path)) from None
    layout = (obs.job_features, obs.option_features, obs.global_features)
    if (net_cfg.job_features, net_cfg.option_features, net_cfg.global_features) != layout:
        raise PolicyError("'net' feature counts do not match the 'obs' layout", file=str(cfg_path))
    return obs, net_cfg, checkpoints.read_weights(directory, weight_shapes(net_cfg))


def shipped_policy_dir(name: str = DEFAULT_POLICY) -> Path:
    """The shipped checkpoint folder (see :func:`slurmrl.rl.checkpoints.shipped_policy_dir`)."""
    return checkpoints.shipped_policy_dir(name)


def make_maifs(placement: PlacementPolicy) -> MaifsPolicy:
    """Registry factory: the shipped checkpoint. Agents place with ``topology`` (by rack); ``placement`` is unused."""
    return MaifsPolicy.from_dir(shipped_policy_dir())


def load_policy(directory: Path, placement: PlacementPolicy | None) -> MaifsPolicy:
    """A MAIFS checkpoint folder as a policy; its agents place by rack, so ``placement`` is unused."""
    return MaifsPolicy.from_dir(directory)
