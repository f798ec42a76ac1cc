"""``slurmrl traces``: the public traces by name, and fetching them verified."""

from __future__ import annotations

import click


@click.group()
def traces() -> None:
    """List the public traces slurmrl knows and fetch them into a traces folder."""


@traces.command("list")
def list_traces() -> None:
    """Each trace: what it holds, its license, its checksums and where its files are."""
    from slurmrl.traces.registry import registry
    from slurmrl.traces.store import trace_roots

    roots = trace_roots()
    for entry in registry().values():
        here = sum(any((root / f.path).is_file() for root in roots) for f in entry.files)
        click.echo(f"{entry.name}: {entry.title}")
        click.echo(
            f"  license {entry.license}; checksums: {entry.checksums}; here: {here}/{len(entry.files)} files"
        )
        click.echo(f"  {entry.homepage}" + (f" (cite {entry.cite})" if entry.cite else ""))
        if entry.note:
            click.echo(f"  note: {entry.note}")


@traces.command("fetch")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--from",
    "source",
    default=None,
    metavar="DIR|URL",
    help="A mirror laid out as the shared traces folder (a folder, file:// or http(s):// URL); "
    "default: each file's upstream URL.",
)
@click.option(
    "--to",
    "dest",
    type=click.Path(file_okay=False),
    default=None,
    help="Traces folder to fill [default: $SLURMRL_TRACES, else the user cache].",
)
def fetch(names: tuple[str, ...], source: str | None, dest: str | None) -> None:
    """Fetch the named traces; each file is checked against its sha256 before it is put in place."""
    from pathlib import Path

    from slurmrl.traces.fetch import fetch_entry
    from slurmrl.traces.registry import get_entry
    from slurmrl.traces.store import fetch_dir

    entries = [get_entry(name) for name in names]  # every name checked before the first download
    folder = Path(dest) if dest else fetch_dir()
    if source is not None and "://" not in source and not Path(source).is_dir():
        raise click.BadParameter(f"{source} is not a folder", param_hint="--from")
    for entry in entries:
        report = fetch_entry(entry, folder, source)
        counts = {a: sum(d.action == a for d in report.done) for a in ("fetched", "refetched", "present")}
        summary = ", ".join(f"{n} {a}" for a, n in counts.items() if n)
        click.echo(f"{entry.name}: {summary} in {folder} (license {entry.license})")
        for item in report.done:
            if not item.verified:
                click.echo(f"  {item.path}: no published checksum; its sha256 is {item.sha256}", err=True)
        if report.mirror_only:
            click.echo(
                f"  left out {len(report.mirror_only)} file(s) only a mirror holds (converted subsets, e.g. "
                f"{report.mirror_only[0]}): add --from DIR|URL to get them",
                err=True,
            )
