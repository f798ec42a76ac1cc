"""From command-line choices to a finished run: the one path every entry uses.

``simulate``, ``compare``, ``evaluate``, the benchmarks and the RL
environment all build a :class:`Workload` here and run policies on it, so a
scenario means the same jobs, cluster and load everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from slurmrl import __version__
from slurmrl.cluster.model import Cluster
from slurmrl.errors import SlurmrlError
from slurmrl.policy.base import Policy
from slurmrl.policy.registry import make_policy, policy_entry
from slurmrl.sim.records import JobRecord, Sample
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace

DEFAULT_TRACE = "embedded:philly-sample"
DEFAULT_CLUSTER = "2x4x8:v100"


@dataclass(frozen=True)
class Workload:
    trace: Trace
    cluster: Cluster
    label: str
    load_factor: float  # how much inter-arrival times were compressed
    offered_load: float  # GPU-seconds asked / GPU-seconds available over the arrival span
    seed: int


@dataclass(frozen=True)
class RunOutput:
    summary: dict[str, object]
    records: tuple[JobRecord, ...]
    samples: tuple[Sample, ...]
    meta: dict[str, object] = field(default_factory=dict)


def offered_load(trace: Trace, cluster: Cluster) -> float:
    """GPU-time asked over GPU-time available between first and last arrival."""
    if len(trace.jobs) < 2 or cluster.total_gpus == 0:
        return 0.0
    span = trace.jobs[-1].submit_time - trace.jobs[0].submit_time
    work = sum(j.num_gpus * j.duration for j in trace.jobs)
    return work / (cluster.total_gpus * span) if span > 0 else float("inf")


def prepare(
    *,
    trace: str | None = None,
    cluster: str | None = None,
    scenario: str | None = None,
    load: float | None = None,
    target_load: float | None = None,
    seed: int = 0,
    skip_bad: bool = False,
    start: float | None = None,
    end: float | None = None,
    vcs: tuple[str, ...] = (),
    min_gpus: int | None = None,
    max_gpus: int | None = None,
    limit: int | None = None,
    time_limits: bool = True,
) -> Workload:
    """Load, select, scale and check a workload.

    ``load`` compresses inter-arrival times by that factor; ``target_load``
    (scenarios) picks the factor that makes the offered load equal it.
    """
    from slurmrl.cluster import load_cluster
    from slurmrl.scenarios import get_scenario
    from slurmrl.traces import check_fits, load_trace, select

    label = trace or DEFAULT_TRACE
    if scenario is not None:
        if trace is not None or cluster is not None:
            raise SlurmrlError("--scenario fixes the trace and the cluster; drop --trace/--cluster or --scenario")
        sc = get_scenario(scenario)
        trace, cluster, label = sc.trace_path(), sc.cluster_spec(), sc.name
        start = sc.start if start is None else start
        end = sc.end if end is None else end
        if load is None and target_load is None:
            target_load = sc.target_load
    the_cluster = load_cluster(cluster or DEFAULT_CLUSTER)
    loaded = load_trace(trace or DEFAULT_TRACE, skip_bad=skip_bad)
    chosen = select(
        loaded, start=start, end=end, vcs=vcs or None, min_gpus=min_gpus, max_gpus=max_gpus, limit=limit
    )
    chosen = check_fits(chosen, the_cluster, skip_bad=skip_bad)
    if not chosen.jobs:
        raise SlurmrlError(f"no jobs left in {loaded.source} after selection and fit checks")
    factor = 1.0
    if target_load is not None:
        base = offered_load(chosen, the_cluster)
        factor = target_load / base if base > 0 else 1.0
    elif load is not None:
        factor = load
    if factor <= 0:
        raise SlurmrlError(f"--load must be positive, got {factor}")
    if factor != 1.0:
        chosen = select(chosen, load=factor)
    if time_limits:
        from slurmrl.sim.time_limits import with_time_limits

        chosen = with_time_limits(chosen, seed)
    return Workload(chosen, the_cluster, label, factor, offered_load(chosen, the_cluster), seed)


def run_policy(
    workload: Workload,
    policy: str | Policy,
    *,
    placement: str | None = None,
    config: SimConfig | None = None,
    progress: Callable[[int], None] | None = None,
) -> RunOutput:
    """Replay ``workload`` under one policy and summarise it."""
    from slurmrl.sim.metrics import summarize

    if isinstance(policy, str):
        name = policy
        entry = policy_entry(policy)
        policy_obj = make_policy(policy, placement)
        placement_name = placement or entry.default_placement
        deployable = entry.deployable
    else:
        policy_obj, name = policy, policy.name
        placement_name = placement or getattr(getattr(policy, "placement", None), "name", "")
        deployable = policy.deployable
    sim = Simulator(workload.trace, workload.cluster, config=config or SimConfig(seed=workload.seed))
    t0 = time.perf_counter()
    result = sim.run(policy_obj, progress=progress)
    wall = time.perf_counter() - t0
    summary = summarize(result.records, result.samples, workload.cluster, wall_seconds=wall).to_dict()
    meta: dict[str, object] = {
        "policy": name,
        "placement": placement_name,
        "deployable": deployable,
        "workload": workload.label,
        "trace": workload.trace.source,
        "cluster": workload.cluster.describe(),
        "seed": workload.seed,
        "load_factor": round(workload.load_factor, 6),
        "offered_load": round(workload.offered_load, 6),
        "decisions": result.decisions,
        "version": __version__,
    }
    return RunOutput(summary, result.records, result.samples, meta)
