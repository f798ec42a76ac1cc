"""Options shared by the commands that replay a workload."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from slurmrl.sim.experiment import DEFAULT_CLUSTER, DEFAULT_TRACE, Workload, prepare


def workload_options(f: Callable) -> Callable:
    """--trace/--cluster/--scenario/--load/--seed and the selection filters."""
    decorators = [
        click.option("--trace", default=None, help=f"Trace file or embedded:NAME [default: {DEFAULT_TRACE}]."),
        click.option("--format", "trace_format", default="auto", show_default=True,
                     help="Trace format when the file name does not tell."),
        click.option("--cluster", default=None,
                     help=f"Cluster spec: RxNxG[:type], a TOML spec, a CSV spec or a slurm.conf [default: {DEFAULT_CLUSTER}]."),
        click.option("--scenario", default=None, help="A named scenario (see `slurmrl scenarios`); fixes trace, cluster and load."),
        click.option("--load", type=float, default=None, help="Compress inter-arrival times by this factor (2 = twice the arrivals per hour)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed for model assignment and time-limit estimates."),
        click.option("--skip-bad", is_flag=True, help="Skip malformed trace rows and report how many, instead of stopping."),
        click.option("--start", type=float, default=None, help="Keep jobs submitted at or after this many seconds."),
        click.option("--end", type=float, default=None, help="Keep jobs submitted before this many seconds."),
        click.option("--vc", "vcs", multiple=True, help="Keep only jobs of this VC (repeatable)."),
        click.option("--max-gpus", type=int, default=None, help="Keep only jobs asking for at most this many GPUs."),
        click.option("--limit", type=int, default=None, help="Keep only the first N jobs."),
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def build_workload(opts: dict) -> Workload:
    if opts.get("trace_format", "auto") != "auto" and opts.get("trace"):
        # The loader detects formats by name; an explicit format is passed through the path prefix.
        opts = dict(opts, trace=f"{opts['trace_format']}:{opts['trace']}")
    workload = prepare(
        trace=opts.get("trace"),
        cluster=opts.get("cluster"),
        scenario=opts.get("scenario"),
        load=opts.get("load"),
        seed=opts.get("seed", 0),
        skip_bad=opts.get("skip_bad", False),
        start=opts.get("start"),
        end=opts.get("end"),
        vcs=tuple(opts.get("vcs") or ()),
        max_gpus=opts.get("max_gpus"),
        limit=opts.get("limit"),
    )
    if workload.trace.skipped:
        reasons = "; ".join(workload.trace.skip_reasons[:3])
        click.echo(f"skipped {workload.trace.skipped} bad rows of {workload.trace.source}: {reasons}", err=True)
    return workload


@contextmanager
def progress_bar(total: int, label: str, enabled: bool = True) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar on stderr that shows up only for runs longer than a couple of seconds."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=label, unit="job", delay=2.0, file=sys.stderr, leave=False) as bar:
        yield bar.update
