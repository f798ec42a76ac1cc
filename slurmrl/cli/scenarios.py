"""``slurmrl scenarios``: the named benchmark workloads."""

from __future__ import annotations

import click

from slurmrl.scenarios import SCENARIOS


@click.command()
def scenarios() -> None:
    """List named scenarios (trace window x cluster x offered load)."""
    width = max(len(n) for n in SCENARIOS)
    for sc in SCENARIOS.values():
        role = f" [{sc.role}]" if sc.role != "benchmark" else ""
        click.echo(f"{sc.name:<{width}}  {sc.summary}{role}")
