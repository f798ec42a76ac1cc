"""``slurmrl scenarios``: the named benchmark workloads."""

from __future__ import annotations

import click

from slurmrl.errors import SlurmrlError
from slurmrl.scenarios import SCENARIOS
from slurmrl.sim.limit_models import DEFAULT_LIMIT_MODEL, LIMIT_MODELS


def _facts(name: str, limit_model: str) -> str:
    """Cluster, job count, offered load and how well limits rank durations, or why they could not be had."""
    from slurmrl.sim.experiment import prepare
    from slurmrl.sim.limit_models import limit_spearman

    try:
        workload = prepare(scenario=name, limit_model=limit_model)
    except SlurmrlError as exc:
        return f"unavailable: {exc.message}"
    rho = limit_spearman(workload.trace)
    shown = "n/a" if rho is None else f"{rho:.2f}"
    return (
        f"{workload.cluster.total_gpus} GPUs, {len(workload.trace.jobs)} jobs, "
        f"offered load {workload.offered_load:.2f}, "
        f"limits ({workload.time_limits}) vs durations Spearman {shown}"
    )


@click.command()
@click.option(
    "--limits",
    "limit_model",
    type=click.Choice(LIMIT_MODELS),
    default=DEFAULT_LIMIT_MODEL,
    show_default=True,
    help="Time-limit model for jobs the trace gives none (seed 0), as in simulate and compare.",
)
def scenarios(limit_model: str) -> None:
    """List named scenarios: trace window, cluster, job count, offered load, and the Spearman
    rank correlation of the jobs' time limits with their true durations (1 = limits rank jobs
    exactly as durations do: what limit-based policies such as backfill and qssf can exploit)."""
    width = max(len(n) for n in SCENARIOS)
    for sc in SCENARIOS.values():
        role = f" [{sc.role}]" if sc.role != "benchmark" else ""
        vcs = f", VC {','.join(sc.vcs)}" if sc.vcs else ""
        click.echo(f"{sc.name:<{width}}  {sc.summary}{role}")
        click.echo(f"{'':<{width}}  {sc.window()}{vcs} on {sc.cluster}: {_facts(sc.name, limit_model)}")
