"""``slurmrl report``: render result folders as a static HTML site."""

from __future__ import annotations

from pathlib import Path

import click

from slurmrl.errors import SlurmrlError


@click.command()
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
    help="Folder of trained policies with <name>/card.md; default: policies/ beside the repository.",
)
def report(results: tuple[Path, ...], out: Path, cards: Path | None) -> None:
    """Render RESULTS (run folders, or folders holding them such as DIR/runs) as HTML.

    Runs are grouped into scenarios by workload; open the printed index.html
    in a browser, no server needed.
    """
    from slurmrl.extras import require_extra

    try:
        require_extra("report")
        from slurmrl.report import render_report

        index = render_report(list(results), out, cards=cards)
    except SlurmrlError as exc:
        raise click.ClickException(exc.format()) from None
    click.echo(str(index.resolve()))
