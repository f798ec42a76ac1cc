"""``slurmrl replay``: a trace window on the live cluster, with or without the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import click

from slurmrl.cli.numbers import Finite
from slurmrl.cli.options import build_workload, progress_bar, workload_options


def _compare_line(live: dict[str, object], twin: dict[str, object]) -> str:
    def hours(v: object) -> str:
        return f"{float(v) / 3600:.2f} h" if isinstance(v, (int, float)) else "-"

    from slurmrl.report.fidelity import relative_difference

    a, s = live.get("avg_jct"), twin.get("avg_jct")
    diff = relative_difference(float(a), float(s)) * 100 if a is not None and s is not None else float("nan")
    return (
        f"avg JCT  Slurm {hours(a)}  simulator {hours(s)}  ({diff:+.1f}%)\n"
        f"p95 JCT  Slurm {hours(live.get('p95_jct'))}  simulator {hours(twin.get('p95_jct'))}\n"
        f"makespan Slurm {hours(live.get('makespan'))}  simulator {hours(twin.get('makespan'))}"
    )


@click.command()
@workload_options
@click.option(
    "--speedup",
    type=Finite(min=0, min_open=True),
    required=True,
    help="Trace seconds per wall second (100: a trace day in about 15 minutes).",
)
@click.option(
    "--policy", default=None, help="Run the daemon with this policy; none given: stock Slurm alone."
)
@click.option("--placement", default=None, help="The daemon's placement (with --policy).")
@click.option(
    "--daemon-config",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Run the daemon on this config (its state and logs go under --out).",
)
@click.option("--slurm-conf", default=None, help="The cluster's slurm.conf [default: $SLURM_CONF].")
@click.option("--partition", default="", help="Submit to this partition [default: the cluster's default].")
@click.option(
    "--floor",
    type=Finite(min=0, min_open=True),
    default=2.0,
    show_default=True,
    help="Shortest job, in wall seconds (shorter jobs sleep this long, in both worlds).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Result folder: summary.json, jobs.csv, timeline.csv, as `simulate --out` writes.",
)
@click.option(
    "--twin-out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write the simulated twin's results here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print both summaries as JSON.")
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def replay(
    speedup: float,
    policy: str | None,
    placement: str | None,
    daemon_config: Path | None,
    slurm_conf: str | None,
    partition: str,
    floor: float,
    out: Path,
    twin_out: Path | None,
    as_json: bool,
    no_progress: bool,
    **opts,
) -> None:
    """Replay a trace window on the live Slurm cluster and compare it with the simulator.

    Each job is submitted with sbatch at its compressed submit time (GPUs,
    nodes, time limit, a sleep of its compressed duration). With --policy or
    --daemon-config the slurmrl daemon runs beside the controller; without,
    stock Slurm schedules alone. Ctrl-C cancels every job the replay submitted.
    """
    from slurmrl.replay.daemon_proc import DaemonSetup
    from slurmrl.replay.experiment import ReplayRequest, resolve_conf
    from slurmrl.replay.experiment import replay as run

    if opts.get("cluster") or opts.get("scenario"):
        raise click.ClickException(
            "replay runs on the live cluster: drop --cluster/--scenario (use --slurm-conf)"
        )
    if policy and daemon_config:
        raise click.ClickException("give --policy or --daemon-config, not both")
    if placement and not policy:
        raise click.ClickException("--placement needs --policy")
    if policy:
        from slurmrl.daemon.config import DaemonConfig
        from slurmrl.daemon.loop import load_policy

        load_policy(DaemonConfig(policy=policy, placement=placement))  # deployable, non-preemptive, known
    conf = resolve_conf(slurm_conf)
    workload = build_workload(dict(opts, cluster=conf))
    setup = DaemonSetup(policy or "", placement, daemon_config) if (policy or daemon_config) else None
    request = ReplayRequest(workload, speedup, setup, out, conf, floor=floor, partition=partition)
    say = (lambda _m: None) if as_json else click.echo
    with progress_bar(len(workload.trace.jobs), "replay", not no_progress) as bar:
        result = run(request, say=say, progress=bar, twin_out=twin_out)
    if as_json:
        click.echo(
            json.dumps(
                {"live": result.live.summary, "simulator": result.twin.summary, "meta": result.live.meta},
                indent=2,
                default=str,
            )
        )
        return
    click.echo(
        f"{len(result.plan.jobs)} jobs replayed at x{speedup:g} in {result.wall:.0f} s "
        f"(submissions at most {result.late:.2f} s late)"
    )
    click.echo(_compare_line(result.live.summary, result.twin.summary))
    click.echo(f"results written to {out}" + (f" and {twin_out}" if twin_out else ""))
