"""``slurmrl policies``: what can be passed to --policy and --placement."""

from __future__ import annotations

import click

from slurmrl.policy.registry import placement_entry, placement_names, policy_entry, policy_names


@click.command()
def policies() -> None:
    """List registered policies and placements with one line each."""
    click.echo("Policies (--policy):")
    for name in policy_names():
        entry = policy_entry(name)
        tag = "" if entry.deployable else "  [bound, not deployable]"
        click.echo(f"  {name:<20} {entry.summary}{tag}")
    click.echo("Placements (--placement):")
    for name in placement_names():
        click.echo(f"  {name:<20} {placement_entry(name).summary}")
