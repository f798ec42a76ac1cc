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

from slurmrl.cluster.from_slurm import slurm_conf_path
from slurmrl.errors import SlurmrlError
from slurmrl.policy.base import Policy
from slurmrl.replay.daemon_proc import DaemonProcess, DaemonSetup, daemon_config_text
from slurmrl.replay.plan import DEFAULT_FLOOR, ReplayPlan, plan_replay, submitted_trace
from slurmrl.replay.records import job_record, placement_of, samples_of
from slurmrl.replay.runner import Replay, ReplayState, clear_leftovers
from slurmrl.replay.slurm_jobs import SlurmJobs
from slurmrl.sim.experiment import RunOutput, SimSettings, Workload, offered_load, run_policy, save_run

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


def make_plan(request: ReplayRequest) -> ReplayPlan:
    """What ``request`` submits; the same plan every time for the same request and user."""
    return plan_replay(
        request.workload.trace,
        speedup=request.speedup,
        gpus_per_node=request.workload.cluster.max_gpus_per_node,
        floor=request.floor,
        submit_user=getpass.getuser(),
    )


def run_twin(request: ReplayRequest, plan: ReplayPlan) -> RunOutput:
    """The simulator on exactly what was submitted, speed model none."""
    w = request.workload
    trace = submitted_trace(w.trace, plan)
    workload = replace(w, trace=trace, offered_load=offered_load(trace, w.cluster))
    settings = SimSettings(speed_model="none")
    extra = {"source": "simulator", "speedup": plan.speedup}
    if request.setup is None:
        out = run_policy(
            workload,
            stock_policy(request.slurm_conf, plan.speedup),
            placement=STOCK_TWIN_PLACEMENT,
            settings=settings,
        )
        return replace(out, meta={**out.meta, "policy": STOCK, **extra})
    from slurmrl.grid.cells import policy_target

    # A checkpoint folder runs as the daemon loads it, named as the live run names it, so the two pair up.
    policy, placement = policy_label(request.setup)
    out = run_policy(workload, policy_target(policy, placement), placement=placement, settings=settings)
    return replace(out, meta={**out.meta, "policy": policy, **extra})


def stock_policy(slurm_conf: str, speedup: float) -> Policy:
    """The simulator's ``slurm`` policy with the live cluster's scheduler settings, on trace time."""
    from slurmrl.policy.ordering.multifactor import make_slurm
    from slurmrl.policy.registry import make_placement
    from slurmrl.slurm.scheduler_conf import read_scheduler_settings

    settings = read_scheduler_settings(slurm_conf).time_scaled(speedup)
    return make_slurm(make_placement(STOCK_TWIN_PLACEMENT), settings=settings)


def live_output(
    request: ReplayRequest, plan: ReplayPlan, state: ReplayState, twin: RunOutput, version: str, wall: float
) -> RunOutput:
    """The live run's records and summary; its meta is the twin's (same workload, cluster and
    settings, so the two pair up) with what only the live run knows."""
    from slurmrl.sim.metrics import summarize

    cluster = request.workload.cluster
    by_trace = {}
    for job in plan.jobs:
        seen = state.seen.get(state.ids.get(job.trace_id, ""))
        by_trace[job.trace_id] = (
            job_record(plan, job, seen, state.origin, cluster),
            placement_of(seen, cluster) if seen is not None else None,
        )
    ordered = [by_trace[j.job_id] for j in request.workload.trace.jobs]
    records = [r for r, _ in ordered]
    samples = samples_of(records, [p for _, p in ordered], cluster)
    summary = summarize(records, samples, cluster, wall_seconds=wall).to_dict()
    policy, placement = policy_label(request.setup)
    meta = {k: v for k, v in twin.meta.items() if k != "decisions"}
    meta.update(
        policy=policy,
        placement=placement,
        deployable=True,
        source="slurm",
        slurm_version=version,
        daemon=request.setup is not None,
        floor=plan.floor,
        late_submit_s=round(state.late, 3),
    )
    return RunOutput(summary, tuple(records), tuple(samples), meta)


def replay(
    request: ReplayRequest,
    *,
    say: Callable[[str], None] = print,
    progress: Callable[[int], None] | None = None,
    twin_out: Path | None = None,
) -> ReplayResult:
    """Run the replay, write its results (and the twin's, when asked) and return both."""
    from slurmrl.slurm.cli_backend import CliBackend

    env = {"SLURM_CONF": request.slurm_conf}
    jobs = SlurmJobs(env)
    version = CliBackend(conf=request.slurm_conf, env=env).version()
    plan = make_plan(request)
    policy_label(request.setup)  # a bad config file fails here, before anything is submitted
    request.out.mkdir(parents=True, exist_ok=True)
    daemon = None
    if request.setup is not None:
        text = daemon_config_text(request.setup, request.out / "daemon", plan.speedup, request.slurm_conf)
        daemon = DaemonProcess(request.out / "daemon", text)
        daemon.check()
    clear_leftovers(jobs, say)
    t0 = time.monotonic()
    state = Replay(
        plan,
        jobs,
        request.out,
        daemon=daemon,
        partition=request.partition,
        poll=request.poll,
        progress=progress,
    ).run()
    wall = time.monotonic() - t0
    twin = run_twin(request, plan)
    live = live_output(request, plan, state, twin, version, wall)
    save_run(request.out, live)
    if twin_out is not None:
        save_run(twin_out, twin)
    unfinished = live.summary.get("unfinished", 0)
    if unfinished:
        raise SlurmrlError(f"{unfinished} replayed job(s) did not finish", file=str(request.out / "jobs.csv"))
    return ReplayResult(live, twin, plan, state.late, wall)
