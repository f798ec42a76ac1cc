"""``slurmrl simulate`` and ``slurmrl compare``."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmrl.cli.options import (
    build_settings,
    build_workload,
    cell_of,
    jobs_option,
    progress_bar,
    report_left_out,
    run_tasks,
    seed_list,
    sim_options,
    workload_header,
    workload_options,
)
from slurmrl.errors import PolicyError, SlurmrlError
from slurmrl.policy.base import Policy
from slurmrl.sim.experiment import ROW_FLAGS, RunOutput, SimSettings, Workload, run_policy, save_run
from slurmrl.sim.seeds import SeedStat

if TYPE_CHECKING:
    from slurmrl.grid.cells import Replay

TABLE_COLUMNS = [
    "policy",
    "placement",
    "finished",
    "killed",
    "avg_jct",
    "p50_jct",
    "p95_jct",
    "avg_wait",
    "makespan",
    "gpu_utilization",
    "multi_gpu_local_fraction",
    "jct_over_bound",
    "makespan_over_bound",
]


def table_columns(workload: Workload) -> list[str]:
    """TABLE_COLUMNS, and for a warm-started workload the inherited backlog's mean JCT beside them."""
    return TABLE_COLUMNS + (["backlog_avg_jct"] if workload.handover is not None else [])


def run_one(
    workload: Workload, policy: str, placement: str | None, settings: SimSettings, show_progress: bool
) -> RunOutput:
    """One run of a policy (a name or a checkpoint folder, loaded afresh) with a progress bar."""
    from slurmrl.grid.cells import policy_target

    label = f"{policy}" + (f"+{placement}" if placement else "")
    target: str | Policy = policy_target(policy, placement)  # a name, or a `slurmrl train --out` folder
    with progress_bar(len(workload.trace.jobs), label, show_progress) as bar:
        return run_policy(workload, target, placement=placement, settings=settings, progress=bar)


def _replays(
    opts: dict,
    settings: SimSettings,
    pairs: Sequence[tuple[str, str | None]],
    seeds: Sequence[int],
    folder: Callable[[int], Path | None],
    runs: bool,
) -> tuple[list[Replay], dict[int, Workload]]:
    """One replay per seed and policy (seed-major), and each seed's workload for the headers.

    The workloads come from the same cache the replays use, so a run on one
    process loads each trace once.
    """
    from slurmrl.grid.cells import Replay, cell_workload

    tasks: list[Replay] = []
    workloads: dict[int, Workload] = {}
    for seed in seeds:
        for name, place in pairs:
            cell = cell_of(opts, settings, name, place, seed)
            where = folder(seed)
            tasks.append(Replay(cell, None if where is None else str(where), runs))
        workloads[seed] = cell_workload(tasks[-1].cell)
        if seed == seeds[0]:  # the same rows for every seed
            report_left_out(workloads[seed])
    return tasks, workloads


def _run_replays(tasks: Sequence[Replay], jobs: int | None, show_progress: bool) -> list[dict[str, object]]:
    """Every replay's row in task order, on ``jobs`` processes (default: every core)."""
    from slurmrl.executors.local import LocalExecutor
    from slurmrl.grid.cells import replay

    return run_tasks(LocalExecutor(jobs), replay, tasks, "runs", show_progress, [t.cell.cost for t in tasks])


def _strict(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _seed_dir(out: Path, seed: int) -> Path:
    return out / f"seed-{seed}"


@click.command()
@workload_options
@sim_options
@click.option(
    "--policy",
    default="fifo",
    show_default=True,
    help="Policy name (see `slurmrl policies`), or NAME+PLACEMENT as in compare.",
)
@click.option("--placement", default=None, help="Placement name; default: the policy's own.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write summary.json, jobs.csv and timeline.csv here (one folder per seed with --seeds).",
)
@jobs_option
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def simulate(
    policy: str,
    placement: str | None,
    as_json: bool,
    out: Path | None,
    jobs: int | None,
    no_progress: bool,
    **opts,
) -> None:
    """Replay a trace on a cluster under one policy and print its metrics.

    With --seeds N the seeds run in parallel, one process per core (--jobs).
    """
    policy, placement = one_policy(policy, placement)
    settings = build_settings(opts)
    seeds = seed_list(opts)
    if len(seeds) == 1:
        workload = build_workload(opts)
        result = run_one(workload, policy, placement, settings, not no_progress)
        if out is not None:
            save_run(out, result)
        print_run(workload, result, as_json, settings)
    else:
        run_seeds(opts, settings, policy, placement, seeds, jobs, as_json, not no_progress, out)
    if out is not None and not as_json:
        click.echo(f"results written to {out}")


def run_seeds(
    opts: dict,
    settings: SimSettings,
    policy: str,
    placement: str | None,
    seeds: list[int],
    jobs: int | None,
    as_json: bool,
    show_progress: bool,
    out: Path | None,
) -> None:
    """One policy on every seed, on the local executor (``jobs`` processes), and the table over the seeds.

    ``simulate --seeds`` and ``evaluate --seeds`` both run this; a policy
    may be a checkpoint folder, loaded afresh for every seed.
    """
    _check_policy(policy, placement)
    tasks, workloads = _replays(
        opts, settings, [(policy, placement)], seeds, lambda s: out and _seed_dir(out, s), False
    )
    rows = _run_replays(tasks, jobs, show_progress)
    summaries = [{k: v for k, v in r.items() if k not in ("policy", "placement", *ROW_FLAGS)} for r in rows]
    print_seeds(workloads[seeds[-1]], summaries, rows[0], seeds, as_json, settings, out)


def print_run(workload: Workload, result: RunOutput, as_json: bool, settings: SimSettings) -> None:
    """One run's summary: strict JSON (NaN as null) or an aligned listing."""
    if as_json:
        payload: dict[str, object] = {k: _strict(v) for k, v in result.summary.items()}
        payload["speed_model"] = result.meta["speed_model"]
        payload["meta"] = result.meta
        click.echo(json.dumps(payload, indent=2, sort_keys=True))
        return
    click.echo(workload_header(workload, settings))
    click.echo(f"policy {result.meta['policy']} + {result.meta['placement']}")
    width = max(len(k) for k in result.summary)
    for key, value in result.summary.items():
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        click.echo(f"  {key:<{width}}  {shown}")


def print_seeds(
    workload: Workload,
    summaries: Sequence[Mapping[str, object]],
    meta: Mapping[str, object],
    seeds: list[int],
    as_json: bool,
    settings: SimSettings,
    out: Path | None,
) -> None:
    """One policy's mean and 95% CI per metric over the seeds' runs (and aggregate.json under ``out``)."""
    row = {"policy": meta["policy"], "placement": meta["placement"], **{f: meta[f] for f in ROW_FLAGS}}
    print_seed_table(
        workload, [[dict(row, **summary)] for summary in summaries], seeds, as_json, settings, out
    )


def parse_policy_list(text: str) -> list[tuple[str, str | None]]:
    """``fifo,sjf-oracle+topology`` -> [(fifo, None), (sjf-oracle, topology)]."""
    pairs = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, place = item.partition("+")
        pairs.append((name, place or None))
    if not pairs:
        raise SlurmrlError("--policies is empty; give names like fifo,fifo-backfill+topology")
    return pairs


def one_policy(policy: str, placement: str | None) -> tuple[str, str | None]:
    """``--policy NAME+PLACEMENT`` as compare writes it, or ``--policy NAME [--placement P]``.

    A checkpoint folder whose own name holds a ``+`` stays whole.
    """
    if "+" not in policy or (Path(policy) / "config.json").is_file():
        return policy, placement
    name, _, place = policy.partition("+")
    if place and placement and place != placement:
        raise SlurmrlError(
            f"--policy {policy} names placement '{place}' and --placement names '{placement}'; give one"
        )
    return name, place or placement


def _check_policy(name: str, place: str | None) -> None:
    """Fail on an unknown policy or placement before any run starts (a checkpoint folder is checked when it loads)."""
    from slurmrl.policy.registry import placement_entry, policy_entry

    if not Path(name).is_dir():
        policy_entry(name)
    if place:
        placement_entry(place)


def _policy_pairs(policies: str | None, placements: str | None) -> list[tuple[str, str | None]]:
    """The (policy, placement) runs asked for, checked before any minutes are spent on them."""
    from slurmrl.policy.registry import policy_entry, policy_names

    if policies is None:
        pairs = [(n, None) for n in policy_names() if not policy_entry(n).learned]
    else:
        pairs = parse_policy_list(policies)
    if placements:
        places = [p.strip() for p in placements.split(",") if p.strip()]
        pairs = [(n, p) for n, fixed in pairs for p in ([fixed] if fixed else places)]
    asked: dict[tuple[str, str], str] = {}
    for name, place in pairs:
        _check_policy(name, place)
        key, given = _run_key(name, place), f"{name}+{place}" if place else name
        if key in asked:
            # Both runs would write one result folder and print two equal rows.
            raise PolicyError(f"the runs ask for {'+'.join(key)} twice ({asked[key]}, {given})")
        asked[key] = given
    return pairs


def _run_key(name: str, place: str | None) -> tuple[str, str]:
    """What a (policy, placement) pair runs: a registered policy with its default placement filled in."""
    from slurmrl.policy.registry import policy_entry

    if Path(name).is_dir():
        return str(Path(name).resolve()), place or ""
    return name, place or policy_entry(name).default_placement


def _write_comparison(
    out: Path, rows: list[dict[str, object]], workload: Workload, settings: SimSettings
) -> None:
    from slurmrl.sim.experiment import workload_meta
    from slurmrl.sim.results import write_table_csv, write_table_json

    write_table_csv(out / "comparison.csv", rows)
    meta = {
        "workload": workload.label,
        "cluster": workload.cluster.describe(),
        "seed": workload.seed,
        **workload_meta(workload),
        **settings.as_meta(),
    }
    write_table_json(out / "comparison.json", rows, meta=meta)


@click.command()
@workload_options
@sim_options
@click.option(
    "--policies",
    default=None,
    help="Comma-separated policies, each optionally NAME+PLACEMENT; default: every heuristic and bound.",
)
@click.option(
    "--placements",
    default=None,
    help="Comma-separated placements to cross with every policy; default: each policy's own.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write comparison.csv/json and one result folder per run here (one folder per seed with --seeds).",
)
@click.option(
    "--report",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also render the HTML report into this folder.",
)
@jobs_option
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def compare(
    policies: str | None,
    placements: str | None,
    as_json: bool,
    out: Path | None,
    report: Path | None,
    jobs: int | None,
    no_progress: bool,
    **opts,
) -> None:
    """Replay one workload under several policies and print a comparison table.

    Runs (every policy, every seed) go to one process per core (--jobs);
    each gives the row a run on its own gives.
    """
    from slurmrl.sim.results import format_table

    if report is not None:  # fail on a missing extra before spending minutes on the runs
        from slurmrl.extras import require_extra

        require_extra("report")
    settings = build_settings(opts)
    pairs = _policy_pairs(policies, placements)
    seeds = seed_list(opts)
    base = out or report

    def where(seed: int) -> Path | None:
        return base if base is None or len(seeds) == 1 else _seed_dir(base, seed)

    tasks, workloads = _replays(opts, settings, pairs, seeds, where, True)
    rows = _run_replays(tasks, jobs, not no_progress)
    per_seed = [rows[i * len(pairs) : (i + 1) * len(pairs)] for i in range(len(seeds))]
    runs_dirs = [folder / "runs" for folder in map(where, seeds) if folder is not None]
    workload = workloads[seeds[-1]]
    if out is not None:
        for seed, seed_rows in zip(seeds, per_seed, strict=True):
            target = out if len(seeds) == 1 else _seed_dir(out, seed)
            _write_comparison(target, seed_rows, workloads[seed], settings)
    if len(seeds) > 1:
        print_seed_table(workload, per_seed, seeds, as_json, settings, out)
    elif as_json:
        click.echo(json.dumps([{k: _strict(v) for k, v in r.items()} for r in per_seed[0]], indent=2))
    else:
        rows = per_seed[0]
        click.echo(workload_header(workload, settings))
        shown = [dict(r, policy=f"{r['policy']}*") if not r["deployable"] else r for r in rows]
        click.echo(format_table(shown, table_columns(workload)))
        if len(shown) != sum(1 for r in rows if r["deployable"]):
            click.echo("* reads true durations: a bound, not a deployable policy.")
    if not as_json:
        print_gaps(per_seed, settings)
    if report is not None:
        from slurmrl.report import render_report

        index = render_report(runs_dirs, report)
        click.echo(f"report written: open {index}")


def print_gaps(per_seed: list[list[dict[str, object]]], settings: SimSettings) -> None:
    """Gap closure of every learned policy in the run, when a heuristic and an oracle ran beside it."""
    from slurmrl.report.gap import format_gaps, gap_closures, table_row

    text = format_gaps(
        gap_closures([[table_row(r) for r in rows] for rows in per_seed], elastic=settings.elastic.on)
    )
    if text:
        click.echo(text)


def print_seed_table(
    workload: Workload,
    per_seed: list[list[dict[str, object]]],
    seeds: list[int],
    as_json: bool,
    settings: SimSettings,
    out: Path | None,
) -> None:
    """Per (policy, placement): mean +- 95% CI of every metric over the seeds; the table shows :func:`table_columns`."""
    from slurmrl.sim.experiment import workload_meta
    from slurmrl.sim.seeds import aggregate, format_seed_table

    rows: list[dict[str, object]] = []
    for i, first in enumerate(per_seed[0]):
        stats = aggregate([{k: v for k, v in runs[i].items() if k not in ROW_FLAGS} for runs in per_seed])
        rows.append(
            {
                "policy": first["policy"],
                "placement": first["placement"],
                **{flag: first[flag] for flag in ROW_FLAGS},
                **stats,
            }
        )
    meta = {
        "workload": workload.label,
        "cluster": workload.cluster.describe(),
        "seeds": seeds,
        **workload_meta(workload),
        **settings.as_meta(),
    }
    payload = {
        "speed_model": settings.speed_model,
        "meta": meta,
        "rows": [{k: v.to_dict() if isinstance(v, SeedStat) else v for k, v in r.items()} for r in rows],
    }
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "aggregate.json").write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    if as_json:
        click.echo(json.dumps(payload, indent=2))
        return
    click.echo(workload_header(workload, settings))
    click.echo(f"seeds {seeds[0]}..{seeds[-1]}: mean ± 95% CI")
    shown = [dict(r, policy=f"{r['policy']}*") if not r["deployable"] else r for r in rows]
    click.echo(format_seed_table(shown, table_columns(workload)))
    if any(not r["deployable"] for r in rows):
        click.echo("* reads true durations: a bound, not a deployable policy.")
