"""``slurmrl daemon``, ``slurmrl daemon check|revert`` and ``slurmrl status``.

Kept light: ``--help`` imports click and this file only; the policy (which
may pull in torch) loads when the daemon actually starts.
"""

from __future__ import annotations

import sys

import click

from slurmrl.errors import SlurmrlError

DEFAULT_CONFIG = "/etc/slurmrl/daemon.toml"
_config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=DEFAULT_CONFIG,
    show_default=True,
    help="The daemon's TOML config.",
)
# A subcommand's --config: its own, else the one given to `slurmrl daemon` before it.
_sub_config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help=f"The daemon's TOML config [default: the one given to 'slurmrl daemon', else {DEFAULT_CONFIG}].",
)


def _config_of(ctx: click.Context, own: str | None) -> str:
    """The config a subcommand reads: ``daemon --config A revert`` must not revert the default's jobs.

    Given both before and after the subcommand, the two must agree.
    """
    parent = ctx.parent
    if parent is None or parent.command is not daemon:
        return own or DEFAULT_CONFIG
    before = parent.params["config_path"]
    given_before = parent.get_parameter_source("config_path") is not click.core.ParameterSource.DEFAULT
    if own is None:
        return before
    if given_before and before != own:
        raise click.UsageError(
            f"--config {before} before '{ctx.info_name}' and --config {own} after it; give one"
        )
    return own


def _load(config_path: str, dry_run: bool = False, *, policy_checked: bool = True):
    from dataclasses import replace

    from slurmrl.daemon.config import load_config

    config = load_config(config_path, policy_checked=policy_checked)
    return replace(config, dry_run=True) if dry_run else config


@click.group(invoke_without_command=True)
@_config_option
@click.option("--once", is_flag=True, help="Run one cycle and exit (changes stay; revert undoes them).")
@click.option("--dry-run", is_flag=True, help="Log and audit what would change; change nothing in Slurm.")
@click.pass_context
def daemon(ctx: click.Context, config_path: str, once: bool, dry_run: bool) -> None:
    """Apply the configured policy to a live Slurm queue, every interval.

    Ordering goes through the additive SiteFactor (or explicit priorities),
    placement through ReqNodeList; every change is bounded, audited and
    given back on SIGTERM/SIGINT (or with 'slurmrl daemon revert').
    """
    if ctx.invoked_subcommand is not None:
        if once or dry_run:
            # 'daemon --dry-run revert' must not look safe and give everything back.
            raise click.UsageError(
                f"--once and --dry-run are the daemon loop's; '{ctx.invoked_subcommand}' takes neither"
            )
        return
    from slurmrl.daemon.logs import setup_logging
    from slurmrl.daemon.loop import Daemon, make_backend

    try:
        config = _load(config_path, dry_run)
        setup_logging(config.log_level.upper())
        runner = Daemon(config, make_backend(config))  # takes the state file's lock
        code = runner.run(once=once)
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    sys.exit(code)


@daemon.command()
@_sub_config_option
@click.pass_context
def check(ctx: click.Context, config_path: str | None) -> None:
    """Validate the config and policy, and check that Slurm is reachable and suitable."""
    from slurmrl.daemon.checks import run_checks

    try:
        config = _load(_config_of(ctx, config_path))
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    results = run_checks(config)
    click.echo(
        f"policy {config.policy_label}, mode {config.mode}, interval {config.interval:g} s, "
        f"max_site_factor {config.max_site_factor}, max_changes_per_cycle {config.max_changes_per_cycle}, "
        f"placement_hold {config.placement_hold:g} s, starvation_wait {config.starvation_wait:g} s"
        f"{', DRY RUN' if config.dry_run else ''}"
    )
    scope = config.scope
    click.echo(
        f"scope: partitions={','.join(scope.partitions) or 'all'} qos={','.join(scope.qos) or 'all'} "
        f"accounts={','.join(scope.accounts) or 'all'} opt-out='{scope.opt_out_keyword}' in the job comment"
    )
    click.echo(
        f"state {config.state_file}; audit {config.audit_log or 'off'}; "
        f"metrics {config.metrics_address + ':' + str(config.metrics_port) if config.metrics_port else 'off'}; "
        f"log level {config.log_level}"
    )
    for r in results:
        click.echo(f"  [{'ok' if r.ok else 'FAIL'}] {r.name}: {r.detail}")
    if not all(r.ok for r in results):
        raise click.ClickException("checks failed; fix the items marked FAIL before starting the daemon")
    click.echo("all checks passed")


@daemon.command()
@_sub_config_option
@click.pass_context
def revert(ctx: click.Context, config_path: str | None) -> None:
    """Give back every value the daemon set (from its state file), then exit."""
    from slurmrl.daemon.logs import setup_logging
    from slurmrl.daemon.loop import Daemon, make_backend
    from slurmrl.policy.ordering.fifo import make_fifo
    from slurmrl.policy.placement.first_fit import FirstFit

    try:
        # Reverting needs no policy: its name is not checked (a bad one must not block the give-back),
        # and a light stand-in avoids loading (say) a torch checkpoint.
        config = _load(_config_of(ctx, config_path), policy_checked=False)
        setup_logging(config.log_level.upper())
        runner = Daemon(config, make_backend(config), policy=make_fifo(FirstFit()))
        try:
            tracked = len(runner.record.jobs)
            out = runner.revert("slurmrl daemon revert")
        finally:
            runner.close()
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    click.echo(
        f"{tracked} job(s) in the record: {out.reverted} restored, {out.gone} already gone, "
        f"{out.remaining} left"
    )
    if out.remaining:
        raise click.ClickException(
            f"{out.remaining} job(s) could not be restored; they stay in {config.state_file} - "
            "run 'slurmrl daemon revert' again once slurmctld answers"
        )


@click.command()
@_config_option
@click.option(
    "--cycles",
    default=10,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="How many recent cycles to show.",
)
def status(config_path: str, cycles: int) -> None:
    """Summarise the daemon's last cycles from its audit log and state file."""
    from slurmrl.daemon.status import render, summarise

    try:
        config = _load(config_path)
        click.echo(render(config, summarise(config, cycles)))
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
