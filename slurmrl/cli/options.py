"""Options shared by the commands that replay a workload."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from slurmrl.errors import SlurmrlError
from slurmrl.perf.model import DEFAULT_SPEED_MODEL, SPEED_MODELS
from slurmrl.sim.elastic import ElasticRule, parse_elastic
from slurmrl.sim.experiment import DEFAULT_CLUSTER, DEFAULT_TRACE, SimSettings, Workload, prepare
from slurmrl.sim.limit_models import DEFAULT_LIMIT_MODEL, LIMIT_MODELS
from slurmrl.sim.locality import Locality, parse_locality
from slurmrl.traces.load import FORMATS


def _positive(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise click.BadParameter(f"must be positive, got {value:g}")
    return value


def _removed_load(ctx: click.Context, param: click.Parameter, value: float | None) -> None:
    """``--load`` meant an arrival factor on traces and silently overrode scenarios; it is gone."""
    if value is not None:
        raise click.ClickException(
            "--load is gone: use --arrival-scale X to divide inter-arrival times by X, "
            "or --target-load L to pick the scale that makes the offered load L"
        )


def _locality(ctx: click.Context, param: click.Parameter, value: str) -> Locality:
    try:
        return parse_locality(value)
    except SlurmrlError as exc:
        raise click.BadParameter(f"{exc.message} ({exc.hint})" if exc.hint else exc.message) from None


def _elastic(ctx: click.Context, param: click.Parameter, value: str) -> ElasticRule:
    try:
        return parse_elastic(value)
    except SlurmrlError as exc:
        raise click.BadParameter(f"{exc.message} ({exc.hint})" if exc.hint else exc.message) from None


def workload_options(f: Callable) -> Callable:
    """--trace/--cluster/--scenario, the load options, --seed and the selection filters."""
    decorators = [
        click.option(
            "--trace", default=None, help=f"Trace file or embedded:NAME [default: {DEFAULT_TRACE}]."
        ),
        click.option(
            "--format",
            "trace_format",
            type=click.Choice(("auto", *FORMATS)),
            default="auto",
            show_default=True,
            help="Trace format, when the file name and first line do not tell.",
        ),
        click.option(
            "--cluster",
            default=None,
            help=f"Cluster spec: RxNxG[:type], a TOML spec, a CSV spec or a slurm.conf [default: {DEFAULT_CLUSTER}].",
        ),
        click.option(
            "--scenario",
            default=None,
            help="A named scenario (see `slurmrl scenarios`); fixes trace window and cluster, "
            "on the trace's own timeline.",
        ),
        click.option(
            "--arrival-scale",
            type=float,
            default=None,
            callback=_positive,
            help="Divide inter-arrival times by X (2 = twice the arrivals per hour).",
        ),
        click.option(
            "--target-load",
            type=float,
            default=None,
            callback=_positive,
            help="Pick the arrival scale that makes the offered load (GPU-time asked over "
            "GPU-time available while jobs arrive) equal L.",
        ),
        click.option(
            "--load",
            type=float,
            default=None,
            hidden=True,
            expose_value=False,
            callback=_removed_load,
            is_eager=True,
        ),
        click.option(
            "--seed",
            type=int,
            default=0,
            show_default=True,
            help="Seed for model assignment and time-limit estimates.",
        ),
        click.option(
            "--limits",
            "limit_model",
            type=click.Choice(LIMIT_MODELS),
            default=DEFAULT_LIMIT_MODEL,
            show_default=True,
            help="Time limits for jobs the trace gives none: user (as users write them: round "
            "values, a share at the 7-day maximum, large over- and some under-estimates) or "
            "lognormal (duration x a log-normal factor, a far better hint than users give).",
        ),
        click.option(
            "--skip-bad",
            is_flag=True,
            help="Skip malformed trace rows and report how many, instead of stopping.",
        ),
        click.option(
            "--start", type=float, default=None, help="Keep jobs submitted at or after this many seconds."
        ),
        click.option("--end", type=float, default=None, help="Keep jobs submitted before this many seconds."),
        click.option("--vc", "vcs", multiple=True, help="Keep only jobs of this VC (repeatable)."),
        click.option(
            "--max-gpus", type=int, default=None, help="Keep only jobs asking for at most this many GPUs."
        ),
        click.option("--limit", type=int, default=None, help="Keep only the first N jobs."),
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def sim_options(f: Callable) -> Callable:
    """The simulator's settings (see :class:`slurmrl.sim.experiment.SimSettings`) and --seeds."""
    decorators = [
        click.option(
            "--speed-model",
            type=click.Choice(SPEED_MODELS),
            default=DEFAULT_SPEED_MODEL,
            show_default=True,
            help="none: trace durations; placement: slowed by the links a job crosses; "
            "full: also by its neighbours.",
        ),
        click.option(
            "--locality",
            default="pack",
            show_default=True,
            callback=_locality,
            help="Nodes a job without a trace node count may span: pack (fewest), "
            "relax:SECONDS (fewest until it waited that long), any.",
        ),
        click.option("--enforce-limits", is_flag=True, help="Kill jobs at their time limit, as Slurm does."),
        click.option(
            "--reveal-models",
            is_flag=True,
            help="Let policies see model classes the simulator drew where the trace has none.",
        ),
        click.option(
            "--reference-gpu",
            default="",
            help="GPU type the trace's durations were measured on [default: the cluster's most common].",
        ),
        click.option(
            "--elastic",
            default="off",
            show_default=True,
            callback=_elastic,
            help="Elastic jobs: off, or fraction:F (a seeded share F of jobs may run on half to "
            "twice their GPUs, in powers of two; see slurmrl.sim.elastic).",
        ),
        click.option(
            "--seeds",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Run seeds SEED..SEED+N-1 and report mean and 95% CI per metric.",
        ),
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def build_settings(opts: dict) -> SimSettings:
    """The simulator settings out of the parsed options (they are removed from ``opts``)."""
    return SimSettings(
        speed_model=opts.pop("speed_model", DEFAULT_SPEED_MODEL),
        locality=opts.pop("locality", Locality()),
        enforce_limits=opts.pop("enforce_limits", False),
        reveal_models=opts.pop("reveal_models", False),
        reference_gpu=opts.pop("reference_gpu", ""),
        elastic=opts.pop("elastic", ElasticRule()),
    )


def build_workload(opts: dict, seed: int | None = None) -> Workload:
    """The workload of the parsed options; ``seed`` overrides ``--seed`` (one of several seeds)."""
    workload = prepare(
        trace=opts.get("trace"),
        cluster=opts.get("cluster"),
        scenario=opts.get("scenario"),
        arrival_scale=opts.get("arrival_scale"),
        target_load=opts.get("target_load"),
        seed=opts.get("seed", 0) if seed is None else seed,
        skip_bad=opts.get("skip_bad", False),
        start=opts.get("start"),
        end=opts.get("end"),
        vcs=tuple(opts.get("vcs") or ()),
        max_gpus=opts.get("max_gpus"),
        limit=opts.get("limit"),
        trace_format=opts.get("trace_format", "auto"),
        limit_model=opts.get("limit_model", DEFAULT_LIMIT_MODEL),
    )
    if workload.trace.skipped:
        reasons = "; ".join(workload.trace.skip_reasons[:3])
        click.echo(
            f"skipped {workload.trace.skipped} bad rows of {workload.trace.source}: {reasons}", err=True
        )
    return workload


def seed_list(opts: dict) -> list[int]:
    """``--seed S --seeds N`` -> [S, ..., S+N-1]."""
    first = int(opts.get("seed", 0))
    return list(range(first, first + int(opts.get("seeds", 1))))


def workload_header(workload: Workload, settings: SimSettings) -> str:
    """The line printed above results: what ran, at what load, and anything non-default."""
    scale = "" if workload.arrival_scale == 1.0 else f", arrivals x{workload.arrival_scale:.3g}"
    flags = f"; speed model {settings.speed_model}, locality {settings.locality}"
    if workload.time_limits != DEFAULT_LIMIT_MODEL:
        flags += f", time limits {workload.time_limits}"
    if settings.enforce_limits:
        flags += ", time limits enforced"
    if settings.elastic.on:
        flags += f", elastic {settings.elastic}"
    if settings.reveal_models:
        flags += "; REVEALED MODELS (policies saw drawn model classes)"
    return (
        f"{workload.label}: {workload.cluster.describe()}; {len(workload.trace.jobs)} jobs, "
        f"offered load {workload.offered_load:.2f}{scale}{flags}"
    )


@contextmanager
def progress_bar(total: int, label: str, enabled: bool = True) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar on stderr that shows up only for runs longer than a couple of seconds."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=label, unit="job", delay=2.0, file=sys.stderr, leave=False) as bar:
        yield bar.update
