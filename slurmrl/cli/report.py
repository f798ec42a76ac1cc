"""``slurmrl report``: render result folders as a static HTML site, or compare live runs with simulated ones.

``slurmrl report RESULTS... --out DIR`` renders the site (the ``site``
subcommand, which a bare ``report`` falls through to); ``slurmrl report
fidelity RESULTS...`` prints how runs measured on a live Slurm cluster compare
with their simulated twins.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from slurmrl.errors import SlurmrlError

DEFAULT_COMMAND = "site"


class ReportGroup(click.Group):
    """A group whose first argument, when not a subcommand name, goes to :data:`DEFAULT_COMMAND`.

    Keeps ``slurmrl report RESULTS... --out DIR`` working as it did before the
    group had subcommands.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)


@click.group(cls=ReportGroup, subcommand_metavar="[site] RESULTS... --out DIR | fidelity RESULTS...")
def report() -> None:
    """Render result folders as HTML, or compare live Slurm runs with simulated ones.

    RESULTS are run folders, or folders holding them such as DIR/runs.
    """


@report.command(DEFAULT_COMMAND)
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write the site into (created if needed).",
)
@click.option(
    "--cards",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of trained policies with <name>/card.md (and history.md, linked from it); default: policies/ beside the repository.",
)
def site(results: tuple[Path, ...], out: Path, cards: Path | None) -> None:
    """Render RESULTS (run folders, or folders holding them such as DIR/runs) as HTML.

    Runs are grouped into scenarios by workload; open the printed index.html
    in a browser, no server needed. The default when `report` is given folders.
    """
    from slurmrl.extras import require_extra

    try:
        require_extra("report")
        from slurmrl.report import render_report

        index = render_report(list(results), out, cards=cards)
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    click.echo(str(index.resolve()))


@report.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON, one object per scenario with live runs.")
def fidelity(results: tuple[Path, ...], as_json: bool) -> None:
    """Set runs measured on live Slurm beside their simulated twins, per scenario.

    A live run (written by `slurmrl replay`) pairs with the simulated run of
    the same policy and placement; stock Slurm with the simulated `slurm`
    policy. Prints mean and p95 JCT, makespan and finished jobs in both worlds
    and whether both rank the policies alike by mean JCT.
    """
    from slurmrl.report.fidelity import format_fidelity, load_fidelity

    try:
        found = load_fidelity(list(results))
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    if as_json:
        click.echo(json.dumps({"scenarios": [f.to_dict() for f in found]}, indent=2, allow_nan=False))
        return
    for i, fid in enumerate(found):
        if i:
            click.echo()
        click.echo(f"{fid.scenario} on {fid.cluster}")
        click.echo(format_fidelity(fid))
