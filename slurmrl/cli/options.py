"""Options shared by the commands that replay a workload."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmrl.cli.numbers import Finite
from slurmrl.errors import SlurmrlError
from slurmrl.executors import longest_first
from slurmrl.perf.model import DEFAULT_SPEED_MODEL, SPEED_MODELS
from slurmrl.sim.elastic import ElasticRule, parse_elastic
from slurmrl.sim.experiment import DEFAULT_CLUSTER, DEFAULT_TRACE, SimSettings, Workload, prepare
from slurmrl.sim.limit_models import DEFAULT_LIMIT_MODEL, LIMIT_MODELS
from slurmrl.sim.locality import Locality, parse_locality
from slurmrl.traces.load import FORMATS

if TYPE_CHECKING:
    from slurmrl.executors import Executor
    from slurmrl.grid.cells import Cell


def _positive(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise click.BadParameter(f"must be positive, got {value:g}")
    return value


def _removed_load(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
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
            type=Finite(),
            default=None,
            callback=_positive,
            help="Divide inter-arrival times by X (2 = twice the arrivals per hour).",
        ),
        click.option(
            "--target-load",
            type=Finite(),
            default=None,
            callback=_positive,
            help="Pick the arrival scale that makes the offered load (GPU-time asked over "
            "GPU-time available while jobs arrive) equal L.",
        ),
        click.option(
            "--load",
            type=str,  # any value: it only says the option is gone
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
            "--start", type=Finite(), default=None, help="Keep jobs submitted at or after this many seconds."
        ),
        click.option(
            "--end", type=Finite(), default=None, help="Keep jobs submitted before this many seconds."
        ),
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
            "--handover-history",
            type=Finite(min=0),
            default=0.0,
            metavar="DAYS",
            help="Warm-started scenarios: hand the policy under test the warm-up's jobs that ended "
            "in the last DAYS days as finished, as the daemon reads them from accounting (history_days) "
            "[default: 0, none].",
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
        handover_history=opts.pop("handover_history", 0.0),
    )


def build_workload(opts: dict, seed: int | None = None) -> Workload:
    """The workload of the parsed options; ``seed`` overrides ``--seed`` (one of several seeds)."""
    workload = prepare(
        trace=opts.get("trace"),
        cluster=opts.get("cluster"),
        scenario=opts.get("scenario"),
        seed=opts.get("seed", 0) if seed is None else seed,
        **workload_keywords(opts),
    )
    report_left_out(workload)
    return workload


def workload_keywords(opts: dict) -> dict[str, Any]:
    """``prepare``'s keywords among the parsed options (those absent keep ``prepare``'s defaults).

    One list for the command's own workload and for the cells that replay it
    (``compare``, ``--seeds``): an option missing from it would be silently
    dropped on the way to the replays.
    """
    given = {k: opts[k] for k in CELL_WORKLOAD_OPTIONS if k in opts}
    if "vcs" in given:
        given["vcs"] = tuple(given["vcs"] or ())
    return given


def report_left_out(workload: Workload) -> None:
    """One line on stderr for each kind of trace row the replays leave out.

    Bad rows ``--skip-bad`` skipped, and rows the format's loader drops by
    its documented rules (a job that never ran, one that asked for no GPU):
    the job count alone hides both, and the second is about a quarter of
    the openb pod list.
    """
    trace = workload.trace
    if trace.skipped:
        reasons = "; ".join(trace.skip_reasons[:3])
        click.echo(f"skipped {trace.skipped} bad rows of {trace.source}: {reasons}", err=True)
    if trace.dropped:
        counts = ", ".join(f"{n:,} {why}" for why, n in trace.dropped.items())
        click.echo(
            f"left out by the {trace.format} format's rules, rows of {trace.source}: {counts}", err=True
        )


# prepare()'s keywords the CLI offers besides trace, cluster, scenario and seed (the
# cell's own fields): what a command's workload and each cell replaying it are built from.
CELL_WORKLOAD_OPTIONS = (
    "arrival_scale",
    "target_load",
    "skip_bad",
    "start",
    "end",
    "vcs",
    "max_gpus",
    "limit",
    "trace_format",
    "limit_model",
)


def cell_of(opts: dict, settings: SimSettings, policy: str, placement: str | None, seed: int) -> Cell:
    """The cell that replays the parsed options' workload under one policy and seed."""
    from slurmrl.grid.cells import Cell, normal_options

    options = {k: opts.get(k) for k in CELL_WORKLOAD_OPTIONS} | settings.as_meta()
    return Cell(
        policy=policy,
        placement=placement,
        seed=seed,
        trace=opts.get("trace"),
        cluster=opts.get("cluster"),
        scenario=opts.get("scenario"),
        options=normal_options(options),
    )


def run_tasks(
    executor: Executor,
    task: Callable,
    items: Sequence,
    label: str,
    show_progress: bool,
    costs: Sequence[float] | None = None,
) -> list:
    """Every item's result in item order, with a bar of finished items; the first failure stops the rest.

    With ``costs`` (one per item) the executor gets the costliest items first.
    """
    order = longest_first(costs) if costs is not None else list(range(len(items)))
    results: list = [None] * len(items)
    with progress_bar(len(items), label, show_progress and len(items) > 1, unit="run") as bar:
        for outcome in executor.run(task, [items[i] for i in order]):
            index = order[outcome.index]
            if not outcome.ok:
                raise SlurmrlError(f"{label} {index + 1} of {len(items)} failed: {outcome.error}")
            results[index] = outcome.value
            if bar is not None:
                bar(1)
    return results


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
    if settings.handover_history > 0 and workload.handover is not None:
        flags += f", {settings.handover_history:g} days of history at the hand-over"
    if settings.reveal_models:
        flags += "; REVEALED MODELS (policies saw drawn model classes)"
    return (
        f"{workload.label}: {workload.cluster.describe()}; {len(workload.trace.jobs)} jobs, "
        f"offered load {workload.offered_load:.2f}{scale}{flags}"
    )


@contextmanager
def progress_bar(
    total: int, label: str, enabled: bool = True, unit: str = "job"
) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar on stderr that shows up only for runs longer than a couple of seconds."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=label, unit=unit, delay=2.0, file=sys.stderr, leave=False) as bar:
        yield bar.update


def jobs_option(f: Callable) -> Callable:
    """--jobs: worker processes of the local executor."""
    return click.option(
        "--jobs",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes [default: every core this process may use; 1 runs here, in order].",
    )(f)


def executor_options(f: Callable) -> Callable:
    """--executor local|slurm with --jobs and the job-array settings (see slurmrl.executors)."""
    decorators = [
        click.option(
            "--executor",
            type=click.Choice(["local", "slurm"]),
            default="local",
            show_default=True,
            help="local: a process pool on this machine; slurm: one job array on the cluster of SLURM_CONF.",
        ),
        jobs_option,
        click.option("--partition", default=None, help="Slurm partition of the array [default: Slurm's]."),
        click.option(
            "--time",
            "time_limit",
            default="60",
            show_default=True,
            help="Time limit of each array task (MINUTES, H:MM:SS or D-HH:MM).",
        ),
        click.option("--account", default=None, help="Slurm account charged for the array."),
        click.option(
            "--array-parallelism",
            type=click.IntRange(min=1),
            default=256,
            show_default=True,
            help="Array tasks that may run at once.",
        ),
        click.option(
            "--mem-gb",
            type=Finite(min=0, min_open=True),
            default=None,
            help="Memory per array task.",
        ),
        click.option(
            "--dry-run", is_flag=True, help="Show what would run (and the sbatch script) without running it."
        ),
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def build_executor(opts: dict, logs: Path) -> Executor:
    """The executor of the parsed options (they are removed from ``opts``); array logs go under ``logs``."""
    from slurmrl.executors import make_executor
    from slurmrl.executors.slurm import SlurmOptions, parse_time

    name = opts.pop("executor", "local")
    slurm = SlurmOptions(
        folder=logs,
        partition=opts.pop("partition", None),
        time_min=parse_time(str(opts.pop("time_limit", "60"))),
        account=opts.pop("account", None),
        array_parallelism=opts.pop("array_parallelism", 256),
        mem_gb=opts.pop("mem_gb", None),
    )
    return make_executor(
        name, jobs=opts.pop("jobs", None), slurm=slurm, announce=lambda line: click.echo(line, err=True)
    )
