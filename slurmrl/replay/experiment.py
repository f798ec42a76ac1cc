"""A replay end to end: workload, plan, the live run, its results and its simulated twin.

The twin is the simulator's run of exactly what was submitted (compressed
and floored durations, minute-rounded limits, the replaying user; all
scaled back to trace seconds) with ``--speed-model none``: on the live
cluster jobs sleep, so placement cannot slow them. Stock Slurm's twin is
the simulator's ``slurm`` policy with the live cluster's scheduler settings.
"""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from slurmrl import __version__
from slurmrl.cluster.from_slurm import load_slurm_cluster, slurm_conf_path
from slurmrl.cluster.model import Cluster
from slurmrl.errors import SlurmrlError
from slurmrl.replay.daemon_proc import DaemonProcess, DaemonSetup, daemon_config_text
from slurmrl.replay.plan import DEFAULT_FLOOR, ReplayPlan, plan_replay, submitted_trace
from slurmrl.replay.records import job_record, placement_of, samples_of
from slurmrl.replay.runner import Replay, ReplayState, clear_leftovers
from slurmrl.replay.slurm_jobs import SlurmJobs
from slurmrl.sim.experiment import RunOutput, SimSettings, Workload, offered_load, run_policy, workload_meta
from slurmrl.sim.results import write_results

STOCK = "slurm"  # the policy label of stock Slurm (no daemon), live and simulated
STOCK_TWIN_PLACEMENT = "first-fit"  # select/cons_tres fills the lowest-numbered nodes that fit


@dataclass(frozen=True)
class ReplayRequest:
    workload: Workload  # on the live cluster's model
    speedup: float
    setup: DaemonSetup | None  # None: stock Slurm alone
    out: Path
    slurm_conf: str
    floor: float = DEFAULT_FLOOR
    partition: str = ""
    poll: float = 0.5


@dataclass(frozen=True)
class ReplayResult:
    live: RunOutput
    twin: RunOutput
    plan: ReplayPlan
    late: float  # the most any submission was behind its time (wall seconds)
    wall: float  # wall seconds of the live run


def live_cluster(slurm_conf: str) -> Cluster:
    return load_slurm_cluster(slurm_conf)


def resolve_conf(slurm_conf: str | None) -> str:
    return str(slurm_conf_path(slurm_conf or os.environ.get("SLURM_CONF")))


def policy_label(setup: DaemonSetup | None) -> tuple[str, str]:
    """(policy, placement) as the results name them."""
    if setup is None:
        return STOCK, STOCK
    if setup.config_file is not None:
        from slurmrl.daemon.config import load_config
        from slurmrl.policy.registry import policy_entry

        cfg = load_config(str(setup.config_file))
        return cfg.policy, cfg.placement or policy_entry(cfg.policy).default_placement
    from slurmrl.policy.registry import policy_entry

    return setup.policy, setup.placement or policy_entry(setup.policy).default_placement


def twin_workload(request: ReplayRequest, plan: ReplayPlan) -> Workload:
    trace = submitted_trace(request.workload.trace, plan)
    w = request.workload
    return replace(w, trace=trace, offered_load=offered_load(trace, w.cluster))


def run_twin(request: ReplayRequest, plan: ReplayPlan) -> RunOutput:
    """The simulator on exactly what was submitted, speed model none."""
    from slurmrl.policy.registry import make_policy

    workload = twin_workload(request, plan)
    settings = SimSettings(speed_model="none")
    policy, placement = policy_label(request.setup)
    if request.setup is None:
        obj = stock_policy(request.slurm_conf, plan.speedup)
        out = run_policy(workload, obj, placement=STOCK_TWIN_PLACEMENT, settings=settings)
        meta = {**out.meta, "policy": STOCK, "placement": STOCK_TWIN_PLACEMENT}
        return replace(out, meta={**meta, "source": "simulator", "speedup": plan.speedup})
    out = run_policy(workload, make_policy(policy, placement), placement=placement, settings=settings)
    return replace(out, meta={**out.meta, "policy": policy, "source": "simulator", "speedup": plan.speedup})


def stock_policy(slurm_conf: str, speedup: float):
    """The simulator's ``slurm`` policy with the live cluster's scheduler settings, on trace time."""
    from slurmrl.policy.ordering.multifactor import make_slurm
    from slurmrl.policy.registry import make_placement
    from slurmrl.slurm.scheduler_conf import read_scheduler_settings

    settings = read_scheduler_settings(slurm_conf).time_scaled(speedup)
    return make_slurm(make_placement(STOCK_TWIN_PLACEMENT), settings=settings)


def live_output(request: ReplayRequest, plan: ReplayPlan, state: ReplayState, version: str, wall: float) -> RunOutput:
    from slurmrl.sim.metrics import summarize

    cluster = request.workload.cluster
    records, placements = [], []
    for job in plan.jobs:
        seen = state.seen.get(state.ids.get(job.trace_id, ""))
        records.append(job_record(plan, job, seen, state.origin, cluster))
        placements.append(placement_of(seen, cluster) if seen is not None else None)
    by_trace = {r.job_id: r for r in records}
    records = [by_trace[j.job_id] for j in request.workload.trace.jobs]
    by_plan = dict(zip((j.trace_id for j in plan.jobs), placements, strict=True))
    samples = samples_of(records, [by_plan[r.job_id] for r in records], cluster)
    summary = summarize(records, samples, cluster, wall_seconds=wall).to_dict()
    policy, placement = policy_label(request.setup)
    w = twin_workload(request, plan)
    meta: dict[str, object] = {
        "policy": policy, "placement": placement, "deployable": True, "workload": w.label,
        "trace": w.trace.source, "cluster": cluster.describe(), "seed": w.seed, **workload_meta(w),
        **SimSettings(speed_model="none").as_meta(), "version": __version__,
        "source": "slurm", "slurm_version": version, "speedup": plan.speedup,
        "daemon": request.setup is not None, "floor": plan.floor, "late_submit_s": round(state.late, 3),
    }
    return RunOutput(summary, tuple(records), tuple(samples), meta)


def save(out: Path, result: RunOutput) -> None:
    summary = {**result.summary, "speed_model": result.meta["speed_model"]}
    write_results(out, summary=summary, records=result.records, samples=result.samples, meta=result.meta)


def replay(request: ReplayRequest, *, say: Callable[[str], None] = print,
           progress: Callable[[int], None] | None = None, twin_out: Path | None = None) -> ReplayResult:
    """Run the replay, write its results (and the twin's, when asked) and return both."""
    env = {"SLURM_CONF": request.slurm_conf}
    jobs = SlurmJobs(env)
    version = jobs.version()
    per_node = request.workload.cluster.max_gpus_per_node
    plan = plan_replay(request.workload.trace, speedup=request.speedup, gpus_per_node=per_node,
                       floor=request.floor, submit_user=getpass.getuser())
    policy_label(request.setup)  # a bad config file fails here, before anything is submitted
    request.out.mkdir(parents=True, exist_ok=True)
    daemon = None
    if request.setup is not None:
        text = daemon_config_text(request.setup, request.out / "daemon", plan.speedup, request.slurm_conf)
        daemon = DaemonProcess(request.out / "daemon", text)
        daemon.check()
    clear_leftovers(jobs, say)
    t0 = time.monotonic()
    state = Replay(plan, jobs, request.out, daemon=daemon, partition=request.partition,
                   poll=request.poll, progress=progress).run()
    wall = time.monotonic() - t0
    live = live_output(request, plan, state, version, wall)
    save(request.out, live)
    twin = run_twin(request, plan)
    if twin_out is not None:
        save(twin_out, twin)
    unfinished = live.summary.get("unfinished", 0)
    if unfinished:
        raise SlurmrlError(f"{unfinished} replayed job(s) did not finish", file=str(request.out / "jobs.csv"))
    return ReplayResult(live, twin, plan, state.late, wall)
