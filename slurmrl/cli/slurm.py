"""``slurmrl slurm ...`` and ``slurmrl cluster ...``: read a live Slurm cluster.

Errors from Slurm (controller down, munge, permissions, unknown output) are
shown as one line through :class:`click.ClickException`, never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmrl.errors import SlurmrlError

if TYPE_CHECKING:
    from slurmrl.slurm.scheduler_conf import SchedulerSettings


def _backend(name: str, conf: str | None, mode: str = "json"):
    if name == "pyslurm":
        from slurmrl.slurm.pyslurm_backend import PyslurmBackend

        return PyslurmBackend(conf=conf)
    from slurmrl.slurm.cli_backend import CliBackend

    return CliBackend(conf=conf, mode=mode)


@click.group()
def slurm() -> None:
    """Read the live Slurm queue, nodes and GPU topology."""


@slurm.command()
@click.option("--backend", type=click.Choice(["cli", "pyslurm"]), default="cli", show_default=True)
@click.option("--text", "text_mode", is_flag=True, help="Read scontrol text instead of JSON (cli backend).")
@click.option("--conf", type=click.Path(), default=None, help="slurm.conf (default: $SLURM_CONF).")
@click.option("--json", "as_json", is_flag=True, help="Print the snapshot as JSON.")
def snapshot(backend: str, text_mode: bool, conf: str | None, as_json: bool) -> None:
    """Print one snapshot: nodes with their GPU use, and pending jobs with their asks."""
    try:
        snap = _backend(backend, conf, "text" if text_mode else "json").snapshot()
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    if as_json:
        click.echo(json.dumps(snap.to_dict(), indent=2))
        return
    click.echo(f"Slurm {snap.version} ({snap.source}); {snap.cluster.describe()}")
    for w in snap.warnings:
        click.echo(f"warning: {w}")
    click.echo("nodes:")
    for node in snap.nodes:
        used = set(node.used_indices or ())
        width = node.gpu_count
        if node.unavailable:
            bar = "x" * width
        elif node.used_indices is None:
            bar = "#" * node.used_count + "." * (width - node.used_count)
        else:
            bar = "".join("#" if g in used else "." for g in range(width))
        states = "+".join(sorted(node.states))
        click.echo(
            f"  {node.name:<12} [{bar}] {node.used_count}/{width} {node.gpu_type:<6} {states}"
            + (f"  ({node.reason})" if node.reason else "")
        )
    running = snap.running
    click.echo(f"running: {len(running)}")
    for job in running:
        where = " ".join(
            f"{n}:{','.join(map(str, item.indices)) if item.indices is not None else '?x' + str(item.count)}"
            for n, item in job.gpu_alloc
        )
        click.echo(f"  {job.job_id:<10} {job.user:<10} {job.gpus.total:>3} GPUs  {where}  {job.name!r}")
    pending = snap.pending
    click.echo(f"pending: {len(pending)}")
    for job in pending:
        multi = job.gpus.per_node is not None and (job.num_nodes or 1) > 1
        per = f" ({job.gpus.per_node}/node)" if multi else ""
        flags = " held" if job.held else ""
        click.echo(
            f"  {job.job_id:<10} {job.user:<10} {job.gpus.total:>3} GPUs{per} nodes={job.num_nodes or '?'} "
            f"{job.reason}{flags}  {job.name!r}"
        )


@click.group()
def cluster() -> None:
    """Build or convert cluster specs."""


@cluster.command("from-slurm")
@click.option(
    "--conf",
    type=click.Path(),
    default=None,
    help="slurm.conf or its folder; without it, the live cluster (via sinfo) is read.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the TOML spec here instead of printing it.",
)
def from_slurm(conf: str | None, out: str | None) -> None:
    """Write the TOML cluster spec of a Slurm cluster or of its config files.

    The spec carries the cluster's scheduler settings (priority weights,
    fair-share, backfill options) in a ``[scheduler]`` table, so that
    ``simulate --policy slurm --cluster SPEC`` runs the site's own scheduler;
    the settings read are shown on stderr when the spec goes to stdout.
    """
    from slurmrl.cluster.toml_spec import cluster_to_toml

    try:
        if conf:
            from slurmrl.cluster.from_slurm import load_slurm_cluster

            built = load_slurm_cluster(conf)
        else:
            built = _backend("cli", None).snapshot().cluster
            built = replace(built, scheduler=_live_scheduler())
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    text = cluster_to_toml(built)
    settings = f"scheduler: {built.scheduler.describe()}" if built.scheduler is not None else ""
    if out:
        Path(out).write_text(text)
        click.echo(f"wrote {out}: {built.describe()}")
        if settings:
            click.echo(settings)
    else:
        click.echo(text, nl=False)
        if settings:
            click.echo(settings, err=True)


def _live_scheduler() -> SchedulerSettings:
    """The running controller's scheduler settings, from ``scontrol show config``."""
    from slurmrl.slurm.run import call
    from slurmrl.slurm.scheduler_conf import settings_from_show_config

    return settings_from_show_config(call(["scontrol", "show", "config"]).stdout)
