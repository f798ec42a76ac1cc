"""``slurmrl scenarios``: the named benchmark workloads."""

from __future__ import annotations

import click

from slurmrl.errors import SlurmrlError
from slurmrl.scenarios import SCENARIOS


def _facts(name: str) -> str:
    """Cluster, job count and offered load as computed from the trace, or why they could not be."""
    from slurmrl.sim.experiment import prepare

    try:
        workload = prepare(scenario=name, time_limits=False)
    except SlurmrlError as exc:
        return f"unavailable: {exc.message}"
    return (
        f"{workload.cluster.total_gpus} GPUs, {len(workload.trace.jobs)} jobs, "
        f"offered load {workload.offered_load:.2f}"
    )


@click.command()
def scenarios() -> None:
    """List named scenarios: trace window, cluster, job count and the offered load they give."""
    width = max(len(n) for n in SCENARIOS)
    for sc in SCENARIOS.values():
        role = f" [{sc.role}]" if sc.role != "benchmark" else ""
        vcs = f", VC {','.join(sc.vcs)}" if sc.vcs else ""
        click.echo(f"{sc.name:<{width}}  {sc.summary}{role}")
        click.echo(f"{'':<{width}}  {sc.window()}{vcs} on {sc.cluster}: {_facts(sc.name)}")
