"""``slurmrl sweep``: a grid of replays on a local process pool or as Slurm job arrays."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from slurmrl.cli.options import build_executor, executor_options, progress_bar, sim_options, workload_options
from slurmrl.errors import ConfigError, SlurmrlError
from slurmrl.grid.spec import AXES, Grid, as_list, option_axes, read_sweep_file, seeds_of

# Flags that name an axis rather than an option of every cell.
_AXIS_FLAGS = {"trace": "traces", "cluster": "clusters", "scenario": "scenarios", "policies": "policies"}
_AXIS_FLAGS |= {"placements": "placements", "seeds": "seeds", "seed": "seed"}
# Flags of the sweep itself (neither axis nor option).
_OWN_FLAGS = {
    "config",
    "vary",
    "out",
    "report",
    "as_json",
    "no_progress",
    "executor",
    "jobs",
    "partition",
    "time_limit",
    "account",
    "array_parallelism",
    "mem_gb",
    "dry_run",
}
SHOWN = ["avg_jct", "p95_jct", "avg_wait", "makespan", "gpu_utilization", "jct_over_bound"]


def _convert(ctx: click.Context, key: str, value: Any) -> Any:
    """An option's value read as its flag reads it (type, range, parser), so a file and a flag agree."""
    param = next((p for p in ctx.command.params if p.name == key), None)
    if param is None or key in _AXIS_FLAGS or key in _OWN_FLAGS:
        return value  # a prepare() keyword without a flag (min_gpus, time_limits): checked by normal_options
    try:
        return param.process_value(ctx, list(value) if param.multiple else value)
    except click.BadParameter as exc:
        raise ConfigError(f"{key}: {exc.message}") from None


def as_values(value: Any) -> list[Any]:
    """An option's values: a list is an axis, anything else one value for every cell."""
    return list(value) if isinstance(value, list) else [value]


def converted(ctx: click.Context, table: Mapping[str, Any]) -> dict[str, Any]:
    """Options of a table (a file, --vary, the API's keywords) read as their flags read them."""
    return {
        key: value if key in AXES else [_convert(ctx, key, v) for v in as_values(value)]
        for key, value in table.items()
    }


def grid_from(table: Mapping[str, Any]) -> Grid:
    """The grid of a table of axes and converted options."""
    from slurmrl.cli.simulate import _policy_pairs

    policies = table.get("policies")
    placements = table.get("placements")
    pairs = _policy_pairs(
        ",".join(as_list(policies)) if policies is not None else None,
        ",".join(as_list(placements)) if placements else None,
    )
    first = table.get("seed", 0)
    if isinstance(first, bool) or not isinstance(first, int):
        raise ConfigError(f"seed must be a whole number, got {first!r}", column="seed")
    options = {key: as_values(value) for key, value in table.items() if key not in AXES}
    grid = Grid(
        policies=tuple(pairs),
        scenarios=tuple(map(str, as_list(table.get("scenarios")))),
        traces=tuple(map(str, as_list(table.get("traces")))),
        clusters=tuple(map(str, as_list(table.get("clusters")))) or (None,),
        seeds=seeds_of(table.get("seeds", 1), first),
        options=option_axes(options),
    )
    _check_workloads(grid)
    return grid


def _check_workloads(grid: Grid) -> None:
    """Fail on an unknown scenario, a missing trace file or an unusable cluster spec before any cell runs.

    Otherwise every cell of such a workload would start, fail alike and
    leave a results table of failures behind. A cluster read from a live
    Slurm controller is left to the cells, which read it where they run.
    """
    from slurmrl.cluster import load_cluster
    from slurmrl.scenarios import get_scenario
    from slurmrl.traces.load import EMBEDDED_PREFIX

    for name in grid.scenarios:
        get_scenario(name)
    for trace in grid.traces:
        path = Path(trace).expanduser()
        if not trace.startswith(EMBEDDED_PREFIX) and not path.is_file():
            raise SlurmrlError(f"{trace}: trace file not found", hint="check the path")
    for spec in grid.clusters:
        if spec is not None and spec.strip() != "slurm" and not spec.strip().startswith("slurm:"):
            load_cluster(spec)


def _table(ctx: click.Context, config: Path | None, vary: tuple[str, ...], params: dict[str, Any]) -> dict:
    """The sweep file's table with every flag given on the command line on top."""
    table: dict[str, Any] = {}
    if config is not None:
        read = read_sweep_file(config)
        try:
            table = converted(ctx, read)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=str(config)) from None
    for name, value in params.items():
        if name in _OWN_FLAGS or ctx.get_parameter_source(name) in (
            ParameterSource.DEFAULT,
            None,
        ):
            continue
        table[_AXIS_FLAGS.get(name, name)] = value
    for item in vary:
        key, sep, values = item.partition("=")
        if not sep or not values.strip():
            raise ConfigError(f"--vary {item!r}: expected OPTION=VALUE,VALUE,...", column="vary")
        key = key.strip().replace("-", "_")
        table.update(converted(ctx, {key: as_list(values)}))
    return table


@click.command()
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="TOML sweep file: axes (scenarios, traces, clusters, policies, placements, seeds) and options; "
    "flags given on the command line win.",
)
@workload_options
@sim_options
@click.option(
    "--policies",
    default=None,
    help="Comma-separated policies (NAME or NAME+PLACEMENT) [default: every heuristic].",
)
@click.option("--placements", default=None, help="Comma-separated placements crossed with every policy.")
@click.option(
    "--vary",
    multiple=True,
    metavar="OPTION=V1,V2",
    help="Cross these values of an option (e.g. target_load=0.8,1.0); repeatable.",
)
@executor_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Sweep folder: results.csv/json and one result folder per cell; a re-run runs only missing cells.",
)
@click.option(
    "--report",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also render the HTML report.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
@click.pass_context
def sweep(ctx: click.Context, **params: Any) -> None:
    """Run a grid: workloads (--scenario, or --trace x --cluster; comma lists) x policies x seeds x options.

    Each cell is one replay, as `slurmrl simulate` runs it, in its own
    result folder under OUT/cells; OUT/results.csv has one row per cell.
    --executor local runs cells on every core, --executor slurm as one job
    array on the cluster of SLURM_CONF.
    """
    from slurmrl.grid.sweep import pending_cells, run_sweep

    out: Path = params["out"].resolve()
    if params["report"] is not None:
        from slurmrl.extras import require_extra

        require_extra("report")
    grid = grid_from(_table(ctx, params["config"], params["vary"], params))
    executor = build_executor(params, out / "slurm")
    cells, todo = pending_cells(grid, out)
    click.echo(
        f"{len(cells)} cells, {len(cells) - len(todo)} finished before; {executor.describe(len(todo))}",
        err=True,
    )
    if params["dry_run"]:
        _dry_run(executor, todo)
        return
    with progress_bar(len(todo), "cells", not params["no_progress"], unit="cell") as bar:
        try:
            result = run_sweep(grid, executor, out, progress=bar)
        except KeyboardInterrupt:
            click.echo(
                f"interrupted: finished cells are kept in {out}; run the same command again to run the rest",
                err=True,
            )
            raise click.exceptions.Exit(130) from None
    _print(result, grid, params["as_json"])
    if params["report"] is not None and result.rows:
        from slurmrl.grid.store import CELLS
        from slurmrl.report import render_report

        index = render_report([out / CELLS / row["id"] for row in result.rows], params["report"])
        click.echo(f"report written: open {index}")
    if result.failed:
        shown = "; ".join(f"{cell.id}: {why}" for cell, why in result.failed[:3])
        raise SlurmrlError(
            f"{len(result.failed)} of {result.total} cells failed ({shown})",
            hint="fix the cause and run the same command again: only missing and failed cells run",
        )


def _dry_run(executor: Any, todo: list) -> None:
    """The cells in the order they would be submitted (array task 0 first), and the array's script."""
    from slurmrl.grid.sweep import in_submission_order

    for cell in in_submission_order(todo):
        click.echo(f"  {cell.id}")
    if executor.name == "slurm" and todo:
        click.echo("sbatch script of the array:")
        click.echo(executor.script(len(todo)))


def _print(result: Any, grid: Grid, as_json: bool) -> None:
    from slurmrl.sim.results import format_table

    if as_json:
        click.echo(json.dumps(list(result.rows), indent=2))
        return
    columns = ["workload"] + (["cluster"] if len(set(grid.clusters)) > 1 else [])
    columns += [*grid.varied(), "policy", "placement", "seed", *SHOWN]
    if result.rows:
        click.echo(format_table(list(result.rows), columns))
    click.echo(
        f"{len(result.rows)} of {result.total} cells finished ({result.ran} run now); table: {result.table}"
    )
