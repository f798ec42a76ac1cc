"""``slurmrl simulate`` and ``slurmrl compare``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from slurmrl.cli.options import build_workload, progress_bar, workload_options
from slurmrl.errors import SlurmrlError
from slurmrl.sim.experiment import RunOutput, Workload, run_policy

TABLE_COLUMNS = [
    "policy", "placement", "completed", "avg_jct", "p50_jct", "p95_jct", "avg_wait",
    "makespan", "gpu_utilization", "multi_gpu_local_fraction", "jct_over_bound", "makespan_over_bound",
]


def _run(workload: Workload, policy: str, placement: str | None, show_progress: bool) -> RunOutput:
    label = f"{policy}" + (f"+{placement}" if placement else "")
    with progress_bar(len(workload.trace.jobs), label, show_progress) as bar:
        return run_policy(workload, policy, placement=placement, progress=bar)


def _strict(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@click.command()
@workload_options
@click.option("--policy", default="fifo", show_default=True, help="Policy name (see `slurmrl policies`).")
@click.option("--placement", default=None, help="Placement name; default: the policy's own.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write summary.json, jobs.csv and timeline.csv here.")
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def simulate(policy: str, placement: str | None, as_json: bool, out: Path | None, no_progress: bool, **opts) -> None:
    """Replay a trace on a cluster under one policy and print its metrics."""
    from slurmrl.sim.results import write_results

    workload = build_workload(opts)
    result = _run(workload, policy, placement, not no_progress)
    if out is not None:
        write_results(out, summary=result.summary, records=result.records, samples=result.samples, meta=result.meta)
    print_run(workload, result, as_json)
    if out is not None and not as_json:
        click.echo(f"results written to {out}")


def print_run(workload: Workload, result: RunOutput, as_json: bool) -> None:
    """One run's summary: strict JSON (NaN as null) or an aligned listing."""
    if as_json:
        payload: dict[str, object] = {k: _strict(v) for k, v in result.summary.items()}
        payload["meta"] = result.meta
        click.echo(json.dumps(payload, indent=2, sort_keys=True))
        return
    click.echo(f"{workload.label}: {workload.cluster.describe()}; {len(workload.trace.jobs)} jobs, "
               f"offered load {workload.offered_load:.2f}")
    click.echo(f"policy {result.meta['policy']} + {result.meta['placement']}")
    width = max(len(k) for k in result.summary)
    for key, value in result.summary.items():
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        click.echo(f"  {key:<{width}}  {shown}")


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


@click.command()
@workload_options
@click.option("--policies", default=None,
              help="Comma-separated policies, each optionally NAME+PLACEMENT; default: every heuristic and bound.")
@click.option("--placements", default=None,
              help="Comma-separated placements to cross with every policy; default: each policy's own.")
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write comparison.csv/json and one result folder per run here.")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also render the HTML report into this folder.")
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def compare(policies: str | None, placements: str | None, as_json: bool, out: Path | None,
            report: Path | None, no_progress: bool, **opts) -> None:
    """Replay one workload under several policies and print a comparison table."""
    from slurmrl.policy.registry import policy_entry, policy_names
    from slurmrl.sim.results import format_table, write_results, write_table_csv, write_table_json

    if policies is None:
        pairs = [(n, None) for n in policy_names() if not policy_entry(n).learned]
    else:
        pairs = parse_policy_list(policies)
    if placements:
        places = [p.strip() for p in placements.split(",") if p.strip()]
        pairs = [(n, p) for n, fixed in pairs for p in ([fixed] if fixed else places)]
    for name, place in pairs:  # fail on a typo before spending minutes on the first runs
        policy_entry(name)
        if place:
            from slurmrl.policy.registry import placement_entry

            placement_entry(place)
    workload = build_workload(opts)
    rows: list[dict[str, object]] = []
    runs_dir = (out or report)
    for name, place in pairs:
        result = _run(workload, name, place, not no_progress)
        row: dict[str, object] = {"policy": name, "placement": result.meta["placement"],
                                  "deployable": result.meta["deployable"]}
        row.update(result.summary)
        rows.append(row)
        if runs_dir is not None:
            write_results(runs_dir / "runs" / f"{name}+{result.meta['placement']}", summary=result.summary,
                          records=result.records, samples=result.samples, meta=result.meta)
    if out is not None:
        write_table_csv(out / "comparison.csv", rows)
        write_table_json(out / "comparison.json", rows, meta={"workload": workload.label,
                                                              "cluster": workload.cluster.describe()})
    if as_json:
        click.echo(json.dumps([{k: _strict(v) for k, v in r.items()} for r in rows], indent=2))
    else:
        click.echo(f"{workload.label}: {workload.cluster.describe()}; {len(workload.trace.jobs)} jobs, "
                   f"offered load {workload.offered_load:.2f}")
        shown = [dict(r, policy=f"{r['policy']}*") if not r["deployable"] else r for r in rows]
        click.echo(format_table(shown, TABLE_COLUMNS))
        if len(shown) != sum(1 for r in rows if r["deployable"]):
            click.echo("* reads true durations: a bound, not a deployable policy.")
    if report is not None:
        from slurmrl.report import render_report

        index = render_report([runs_dir / "runs"], report)
        click.echo(f"report written: open {index}")
