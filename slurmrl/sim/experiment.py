"""From command-line choices to a finished run: the one path every entry uses.

``simulate``, ``compare``, ``evaluate``, the benchmarks and the RL
environment all build a :class:`Workload` here and run policies on it, so a
scenario means the same jobs, cluster and load everywhere, and the
simulator's settings are turned into a :class:`SimConfig` in one place
(:func:`sim_config`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from slurmrl._version import __version__
from slurmrl.cluster.model import Cluster
from slurmrl.errors import ConfigError, SlurmrlError
from slurmrl.perf.model import DEFAULT_SPEED_MODEL
from slurmrl.policy.base import Policy
from slurmrl.policy.registry import make_policy, policy_entry
from slurmrl.sim.cutoff import JctCutoff
from slurmrl.sim.elastic import ElasticRule, parse_elastic
from slurmrl.sim.gc_pause import paused_gc
from slurmrl.sim.limit_models import DEFAULT_LIMIT_MODEL, check_limit_model, limit_source, seed_time_limits
from slurmrl.sim.locality import Locality
from slurmrl.sim.records import JobRecord, Sample
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace

DEFAULT_TRACE = "embedded:philly-sample"
DEFAULT_CLUSTER = "2x4x8:v100"


# What a comparison row says of its policy, beside its figures (from the run meta).
ROW_FLAGS = ("deployable", "learned", "preemptive")


@dataclass(frozen=True)
class Workload:
    trace: Trace
    cluster: Cluster
    label: str
    arrival_scale: float  # inter-arrival times were divided by this (1 = the trace's own timeline)
    offered_load: float  # GPU-seconds asked / GPU-seconds available over the arrival span
    seed: int
    target_load: float | None = None  # the offered load asked for, when the scale was chosen to meet one
    # GPU type the trace's durations were measured on, when the scenario knows
    # it; an explicit --reference-gpu wins.
    reference_gpu: str = ""
    # Warm start (slurmrl.sim.handover): ``warm_policy`` schedules the jobs
    # submitted before ``handover``; only the later ones are measured.
    handover: float | None = None
    warm_policy: str = ""
    # Where the jobs' time limits come from: a model of slurmrl.sim.limit_models,
    # or "trace" when the trace gave every job its own.
    time_limits: str = DEFAULT_LIMIT_MODEL


@dataclass(frozen=True)
class SimSettings:
    """The simulator's knobs a user may turn; the defaults are :class:`SimConfig`'s.

    Kept apart from :class:`SimConfig` because one set of settings serves
    several seeds; :func:`sim_config` joins them.
    """

    speed_model: str = DEFAULT_SPEED_MODEL
    locality: Locality = Locality()
    enforce_limits: bool = False
    reveal_models: bool = False
    reference_gpu: str = ""
    elastic: ElasticRule = ElasticRule()  # "off" or "fraction:F" strings are parsed
    # Warm-started workloads: days of the warm-up's ended jobs the policy under test is
    # handed as finished at the hand-over, as the daemon reads accounting (0: none).
    handover_history: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "elastic", parse_elastic(self.elastic))
        if not 0 <= self.handover_history < math.inf:
            raise ConfigError(
                f"handover_history must be a number of days, got {self.handover_history!r}",
                column="handover_history",
            )

    def as_meta(self) -> dict[str, object]:
        return {
            "speed_model": self.speed_model,
            "locality": str(self.locality),
            "enforce_limits": self.enforce_limits,
            "reveal_models": self.reveal_models,
            "reference_gpu": self.reference_gpu,
            "elastic": str(self.elastic),
            "handover_history": self.handover_history,
        }


def sim_config(settings: SimSettings, seed: int) -> SimConfig:
    """The one place a :class:`SimConfig` is built from user-facing settings."""
    return SimConfig(
        seed=seed,
        speed_model=settings.speed_model,
        locality=settings.locality,
        enforce_time_limits=settings.enforce_limits,
        reveal_models=settings.reveal_models,
        reference_gpu=settings.reference_gpu,
        elastic=settings.elastic,
    )


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


def arrival_scale_for(trace: Trace, cluster: Cluster, target_load: float) -> float:
    """The factor that, dividing inter-arrival times, makes the offered load ``target_load``.

    Offered load is work over (GPUs x arrival span), and the span shrinks by
    exactly the factor, so the factor is the ratio of the two loads.
    """
    if not 0 < target_load < math.inf:
        raise ConfigError(
            f"--target-load must be a positive number, got {target_load:g}", column="target_load"
        )
    base = offered_load(trace, cluster)
    if not 0 < base < float("inf"):
        raise ConfigError(
            f"the workload's offered load is {base:g}: no arrival scale can make it {target_load:g}",
            column="target_load",
            hint="it needs at least two jobs submitted at different times",
        )
    return target_load / base


def prepare(
    *,
    trace: str | None = None,
    cluster: str | None = None,
    scenario: str | None = None,
    arrival_scale: float | None = None,
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
    trace_format: str = "auto",
    limit_model: str = DEFAULT_LIMIT_MODEL,
) -> Workload:
    """Load, select, scale and check a workload.

    A scenario keeps its trace's timeline: arrivals are compressed only when
    the caller asks, by ``arrival_scale`` (inter-arrival times divided by it)
    or by ``target_load`` (the scale that makes the offered load equal it).
    ``trace_format`` names the trace's format (see ``slurmrl.traces.FORMATS``)
    when its file name and first line do not tell.
    Jobs without a time limit get one from ``limit_model`` (see
    :mod:`slurmrl.sim.limit_models`) unless ``time_limits`` is False.
    """
    from slurmrl.cluster import load_cluster
    from slurmrl.traces import check_fits, load_trace
    from slurmrl.traces.select import Filters

    _check_scaling(arrival_scale, target_load)
    check_limit_model(limit_model)
    src = _source(scenario, trace, cluster, trace_format, _Window(start, end, vcs))
    the_cluster = load_cluster(src.cluster or DEFAULT_CLUSTER)
    with paused_gc():
        loaded = load_trace(src.trace or DEFAULT_TRACE, format=trace_format, skip_bad=skip_bad)
        w = src.window
        filters = Filters(w.start, w.end, tuple(w.vcs) if w.vcs else None, min_gpus, max_gpus, limit)
        chosen = filters.select(loaded)
        if not chosen.jobs:
            why = filters.why_empty(loaded)
            raise SlurmrlError(f"no jobs left in {loaded.source}: {why}")
        chosen = check_fits(chosen, the_cluster, skip_bad=skip_bad)
        if not chosen.jobs:
            raise SlurmrlError(
                f"no jobs left in {loaded.source}: every job selected was skipped by the fit checks"
            )
        factor = arrival_scale or 1.0
        if target_load is not None:
            factor = arrival_scale_for(chosen, the_cluster, target_load)
        chosen, handover = _scaled(chosen, factor, src)
        source = limit_source(chosen, limit_model)
        if time_limits:
            chosen = seed_time_limits(chosen, seed, limit_model)
    load = offered_load(chosen, the_cluster)
    return Workload(
        chosen,
        the_cluster,
        src.label,
        factor,
        load,
        seed,
        target_load,
        src.reference_gpu,
        handover,
        src.warm,
        source,
    )


def _check_scaling(arrival_scale: float | None, target_load: float | None) -> None:
    if arrival_scale is not None and target_load is not None:
        raise ConfigError("give --arrival-scale or --target-load, not both")
    if arrival_scale is not None and not 0 < arrival_scale < math.inf:
        raise ConfigError(
            f"--arrival-scale must be a positive number, got {arrival_scale:g}", column="arrival_scale"
        )


@dataclass(frozen=True)
class _Window:
    """The part of a trace selected: submit times from ``start`` to ``end``, and VCs."""

    start: float | None
    end: float | None
    vcs: tuple[str, ...]


@dataclass(frozen=True)
class _Source:
    """Where a workload's jobs and cluster come from: a scenario's, or the caller's trace and spec."""

    trace: str | None
    cluster: str | None
    label: str
    window: _Window
    handover: float | None = None  # on the window's timeline (select() rebases to its start)
    warm: str = ""  # the warm-up heuristic
    reference_gpu: str = ""


def _source(
    scenario: str | None, trace: str | None, cluster: str | None, trace_format: str, window: _Window
) -> _Source:
    """A scenario's trace, cluster and window (the caller's start, end and VCs win), else the caller's own."""
    if scenario is None:
        return _Source(trace, cluster, trace or DEFAULT_TRACE, window)
    from slurmrl.scenarios import get_scenario

    if trace is not None or cluster is not None or trace_format != "auto":
        raise SlurmrlError(
            "--scenario fixes the trace and the cluster; drop --trace/--cluster/--format or --scenario"
        )
    sc = get_scenario(scenario)
    start, handover, warm = window.start, None, ""
    if sc.warmup_start is not None and start is None:
        start, handover, warm = sc.warmup_start, (sc.start or 0.0) - sc.warmup_start, sc.warm_policy
    chosen = _Window(
        sc.start if start is None else start,
        sc.end if window.end is None else window.end,
        window.vcs or sc.vcs,
    )
    return _Source(sc.trace_path(), sc.cluster_spec(), sc.name, chosen, handover, warm, sc.reference_gpu)


def _scaled(chosen: Trace, factor: float, src: _Source) -> tuple[Trace, float | None]:
    """The jobs with arrivals scaled by ``factor``, and the hand-over: the first measured job's
    arrival on the (possibly scaled) timeline."""
    from slurmrl.traces import select

    first = None
    if src.handover is not None:
        first = next((i for i, j in enumerate(chosen.jobs) if j.submit_time >= src.handover), None)
        if first is None:
            raise SlurmrlError(
                f"scenario '{src.label}' keeps no job after its warm-up window",
                hint="--limit counts from the first warm-up job",
            )
    if factor != 1.0:
        chosen = select(chosen, load=factor)
    return chosen, (chosen.jobs[first].submit_time if first is not None else None)


@dataclass(frozen=True)
class _Resolved:
    """The policy to replay and what the meta says of it."""

    policy: Policy
    name: str
    placement: str
    deployable: bool
    learned: bool


def _resolve(policy: str | Policy, placement: str | None) -> _Resolved:
    """A registered name built with ``placement``, or a policy object as given."""
    if isinstance(policy, str):
        entry = policy_entry(policy)
        placed = placement or entry.default_placement
        return _Resolved(make_policy(policy, placement), policy, placed, entry.deployable, entry.learned)
    placed = placement or getattr(getattr(policy, "placement", None), "name", "")
    return _Resolved(policy, policy.name, placed, policy.deployable, bool(getattr(policy, "learned", False)))


@dataclass(frozen=True)
class _Replayed:
    """A replay's measured part: records and samples, the inherited backlog, wall and decisions."""

    records: tuple[JobRecord, ...]
    samples: tuple[Sample, ...]
    backlog: tuple[JobRecord, ...]
    wall: float
    decisions: int
    preemptive: bool


def _replay(
    workload: Workload,
    policy: Policy,
    settings: SimSettings,
    progress: Callable[[int], None] | None,
    cutoff: JctCutoff | None = None,
) -> _Replayed:
    """The whole trace under ``policy``; a warm-started one from its hand-over, measured from there."""
    config = sim_config(settings, workload.seed)
    preemptive = bool(getattr(policy, "preemptive", False))
    if workload.handover is None:
        t0 = time.perf_counter()
        sim = Simulator(workload.trace, workload.cluster, config=config)
        result = sim.run(policy, progress=progress, cutoff=cutoff)
        wall = time.perf_counter() - t0
        return _Replayed(result.records, result.samples, (), wall, result.decisions, preemptive)
    from slurmrl.sim.handover import WARM_STARTS, inherited, measured, warm_policy, with_history

    warm = warm_policy(workload.warm_policy)
    preemptive = preemptive or bool(getattr(warm, "preemptive", False))
    start = WARM_STARTS.take(
        workload,
        config,
        warm,
        workload.handover,
        preemptive,
        lambda: Simulator(workload.trace, workload.cluster, config=config),
    )
    start = with_history(start, workload.handover, settings.handover_history)
    t0 = time.perf_counter()
    if cutoff is not None:
        cutoff = replace(cutoff, measured_from=workload.handover)
    result = start.sim.run(policy, progress=progress, first=start.view, preemptive=preemptive, cutoff=cutoff)
    wall = start.warm_wall + time.perf_counter() - t0  # the warm-up counts, played here or not
    records, samples = measured(result.records, result.samples, workload.handover)
    backlog = inherited(result.records, workload.handover)
    return _Replayed(records, samples, backlog, wall, result.decisions, preemptive)


def run_policy(
    workload: Workload,
    policy: str | Policy,
    *,
    placement: str | None = None,
    settings: SimSettings = SimSettings(),
    progress: Callable[[int], None] | None = None,
    cutoff: JctCutoff | None = None,
) -> RunOutput:
    """Replay ``workload`` under one policy and summarise it, every setting in the meta.

    ``cutoff``: give up, raising :class:`~slurmrl.sim.cutoff.ReplayAbandoned`,
    once the average JCT can no longer come in under it (a trainer's validation).
    """
    from slurmrl.sim.metrics import summarize

    chosen = _resolve(policy, placement)
    if workload.reference_gpu and not settings.reference_gpu:
        settings = replace(settings, reference_gpu=workload.reference_gpu)
    run = _replay(workload, chosen.policy, settings, progress, cutoff)
    summary = summarize(
        run.records, run.samples, workload.cluster, wall_seconds=run.wall, backlog=run.backlog
    ).to_dict()
    meta: dict[str, object] = {
        "policy": chosen.name,
        "placement": chosen.placement,
        "deployable": chosen.deployable,
        "learned": chosen.learned,
        "preemptive": run.preemptive,
        "workload": workload.label,
        "trace": workload.trace.source,
        "trace_format": workload.trace.format,
        "cluster": workload.cluster.describe(),
        "seed": workload.seed,
        **workload_meta(workload),
        **settings.as_meta(),
        "decisions": run.decisions,
        "version": __version__,
    }
    return RunOutput(summary, run.records, run.samples, meta)


def save_run(out: str | Path, result: RunOutput) -> None:
    """One run's result folder; ``speed_model`` (and ``elastic`` when on) also at the top of summary.json, as they change every figure."""
    from slurmrl.sim.results import write_results

    summary = {**result.summary, "speed_model": result.meta["speed_model"]}
    if result.meta.get("elastic", "off") != "off":
        summary["elastic"] = result.meta["elastic"]
    write_results(out, summary=summary, records=result.records, samples=result.samples, meta=result.meta)


def workload_meta(workload: Workload) -> dict[str, object]:
    """How the workload's timeline was set (scale, the target it met if any, the load it gives) and where its limits come from."""
    meta: dict[str, object] = {"arrival_scale": round(workload.arrival_scale, 6)}
    if workload.handover is not None:
        meta["handover"] = workload.handover
        meta["warm_policy"] = workload.warm_policy
    if workload.target_load is not None:
        meta["target_load"] = workload.target_load
    meta["offered_load"] = round(workload.offered_load, 6)
    meta["time_limits"] = workload.time_limits
    return meta
