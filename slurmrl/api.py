"""The Python API: replay workloads from a notebook or a script.

``simulate`` and ``compare`` take the same workload and simulator options as
the ``slurmrl simulate``/``compare`` commands, as keywords (``limit=200``,
``target_load=0.9``, ``speed_model="none"``, ...), and run through the same
:func:`~slurmrl.sim.experiment.prepare` and
:func:`~slurmrl.sim.experiment.run_policy`, so a run here and on the command
line give the same numbers. Options are read off ``prepare``'s keywords and
:class:`~slurmrl.sim.experiment.SimSettings`' fields, so a new option there is
accepted here with no change. Results carry the summary as a dict and the
jobs as a pandas DataFrame; pandas and the simulator load on first use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from slurmrl.errors import ConfigError, SlurmrlError

if TYPE_CHECKING:
    import pandas as pd

    from slurmrl.sim.experiment import RunOutput, SimSettings, Workload
    from slurmrl.sim.records import JobRecord, Sample
    from slurmrl.sim.results import Results

RUNS_DIR = "runs"  # where compare(...).save and `slurmrl compare --out` keep one folder per run


@dataclass(frozen=True)
class SimulationResult:
    """One policy's replay of one workload."""

    summary: dict[str, object]  # the headline metrics, as `slurmrl simulate --json` prints them
    meta: dict[str, object]  # policy, placement, workload, cluster, seed, settings, version
    records: tuple[JobRecord, ...]
    samples: tuple[Sample, ...]

    @property
    def label(self) -> str:
        """``policy+placement``: the run's name in tables, folders and the report."""
        return f"{self.meta.get('policy', '')}+{self.meta.get('placement', '')}"

    @cached_property
    def jobs(self) -> pd.DataFrame:
        """One row per job (every :class:`~slurmrl.sim.records.JobRecord` field) plus ``jct`` and ``wait``."""
        from slurmrl.sim.records import JobRecord
        from slurmrl.traces.frame import records_frame

        frame = records_frame(self.records, JobRecord)
        frame["jct"] = frame["end_time"] - frame["submit_time"]
        frame["wait"] = frame["start_time"] - frame["submit_time"]
        return frame

    @cached_property
    def timeline(self) -> pd.DataFrame:
        """Cluster state after each event time: busy GPUs, queue length, running jobs, fragmentation."""
        from slurmrl.sim.records import Sample
        from slurmrl.traces.frame import records_frame

        return records_frame(self.samples, Sample)

    def save(self, directory: str | Path) -> Path:
        """Write ``summary.json``, ``jobs.csv`` and ``timeline.csv`` (what ``--out`` writes)."""
        from slurmrl.sim.results import write_results

        return write_results(
            directory, summary=self.summary, records=self.records, samples=self.samples, meta=self.meta
        )


@dataclass(frozen=True)
class Comparison:
    """Several policies on one workload; indexed by ``policy+placement`` or by a policy name alone."""

    results: Mapping[str, SimulationResult]

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per run (index: ``policy+placement``), the summary's keys as columns."""
        import pandas as pd

        rows = [
            {
                "policy": r.meta.get("policy"),
                "placement": r.meta.get("placement"),
                "deployable": r.meta.get("deployable"),
                **r.summary,
            }
            for r in self.results.values()
        ]
        return pd.DataFrame(rows, index=pd.Index(list(self.results), name="run"))

    def __getitem__(self, key: str) -> SimulationResult:
        if key in self.results:
            return self.results[key]
        named = [r for r in self.results.values() if r.meta.get("policy") == key]
        if len(named) == 1:
            return named[0]
        raise KeyError(f"{key!r}; runs: {', '.join(self.results)}")

    def __iter__(self) -> Iterator[str]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def save(self, directory: str | Path) -> Path:
        """One result folder per run under ``DIR/runs`` (readable by `slurmrl report` and load_results)."""
        from slurmrl.sim.results import run_folder

        root = Path(directory)
        for label, result in self.results.items():
            result.save(root / RUNS_DIR / run_folder(label))
        return root


def simulate(
    trace: str | Path | None = None,
    cluster: str | Path | None = None,
    policy: str = "fifo",
    *,
    placement: str | None = None,
    **options: object,
) -> SimulationResult:
    """Replay one workload under one policy.

    ``trace`` is a trace file or ``embedded:NAME`` and ``cluster`` a spec
    (``2x4x8:v100``, a TOML file, ...); both default as on the command line.
    ``options`` are the workload options (``scenario``, ``limit``, ``start``,
    ``end``, ``vcs``, ``max_gpus``, ``arrival_scale``, ``target_load``,
    ``seed``, ...) and the simulator settings (``speed_model``, ``locality``,
    ...); an unknown one is an error naming the known ones.
    """
    from slurmrl.sim.experiment import run_policy

    workload, settings = _prepare(trace, cluster, options, "simulate")
    return _result(run_policy(workload, policy, placement=placement, settings=settings))


def compare(
    policies: str | Sequence[str] | None = None,
    trace: str | Path | None = None,
    cluster: str | Path | None = None,
    **options: object,
) -> Comparison:
    """Replay one workload under several policies (``"fifo"``, ``"tiresias+topology"``, ...).

    ``policies`` is a list or a comma-separated string; by default every
    registered heuristic and bound, as ``slurmrl compare`` runs. Other
    arguments are those of :func:`simulate`.
    """
    from slurmrl.sim.experiment import run_policy

    pairs = _policy_pairs(policies)
    workload, settings = _prepare(trace, cluster, options, "compare")
    results: dict[str, SimulationResult] = {}
    for name, place in pairs:
        result = _result(run_policy(workload, name, placement=place, settings=settings))
        results[result.label] = result
    return Comparison(results)


def sweep(
    policies: str | Sequence[str] | None = None,
    traces: str | Sequence[str] | None = None,
    clusters: str | Sequence[str] | None = None,
    *,
    out: str | Path,
    scenarios: str | Sequence[str] | None = None,
    placements: str | Sequence[str] | None = None,
    seeds: int | Sequence[int] | None = None,
    seed: int | None = None,
    config: str | Path | None = None,
    executor: str = "local",
    jobs: int | None = None,
    partition: str | None = None,
    time: str = "60",
    account: str | None = None,
    array_parallelism: int = 256,
    **options: object,
) -> pd.DataFrame:
    """Run a grid as ``slurmrl sweep`` does; one row per finished cell (``DIR/results.csv`` as a DataFrame).

    Workloads are ``scenarios`` and ``traces`` crossed with ``clusters``;
    each is crossed with ``policies`` (``"fifo"``, ``"tiresias+topology"``;
    default: every heuristic), ``placements``, ``seeds`` (a count from
    ``seed``, or a list) and ``options``: a list is an axis, a single value
    applies to every cell (``target_load=[0.8, 1.0], limit=400``). ``config``
    is a sweep file; arguments given here win over it. Cells finished in
    ``out`` by an earlier run are not run again. ``executor="slurm"`` runs
    the cells as one job array (``partition``, ``time``, ``account``,
    ``array_parallelism``); ``jobs`` sizes the local pool. A failed cell is
    an error once every other cell has ended.
    """
    import click
    import pandas as pd

    from slurmrl.cli.options import build_executor
    from slurmrl.cli.sweep import converted, grid_from
    from slurmrl.cli.sweep import sweep as command
    from slurmrl.grid.spec import read_sweep_file
    from slurmrl.grid.sweep import run_sweep

    ctx = click.Context(command)
    table = converted(ctx, read_sweep_file(Path(config))) if config is not None else {}
    given = {"policies": policies, "traces": traces, "clusters": clusters, "scenarios": scenarios}
    given |= {"placements": placements, "seeds": seeds, "seed": seed}
    table.update({k: list(v) if isinstance(v, tuple) else v for k, v in given.items() if v is not None})
    table.update(converted(ctx, options))
    grid = grid_from(table)
    root = Path(out).resolve()
    settings = {"executor": executor, "jobs": jobs, "partition": partition, "time_limit": time}
    settings |= {"account": account, "array_parallelism": array_parallelism}
    result = run_sweep(grid, build_executor(settings, root / "slurm"), root)
    if result.failed:
        shown = "; ".join(f"{cell.id}: {why}" for cell, why in result.failed[:3])
        raise SlurmrlError(
            f"{len(result.failed)} of {result.total} cells failed ({shown})",
            file=str(root),
            hint="the finished cells are in results.csv; run again to retry the failed ones",
        )
    return pd.DataFrame(list(result.rows))


def load_results(directory: str | Path) -> SimulationResult | Comparison:
    """Read a run folder (``simulate --out``) or a comparison folder (``compare --out``, ``Comparison.save``)."""
    from slurmrl.sim.results import SUMMARY_FILE, read_results

    root = Path(directory)
    if (root / SUMMARY_FILE).is_file():
        return _loaded(read_results(root))
    runs = (
        sorted(p for p in (root / RUNS_DIR).glob(f"*/{SUMMARY_FILE}")) if (root / RUNS_DIR).is_dir() else []
    )
    if not runs:
        raise SlurmrlError(
            f"no {SUMMARY_FILE} here nor in {RUNS_DIR}/*/",
            file=str(root),
            hint="pass a folder written by `slurmrl simulate --out` or `slurmrl compare --out`",
        )
    return Comparison({p.parent.name: _loaded(read_results(p.parent)) for p in runs})


# ---------------------------------------------------------------------------


def _prepare(
    trace: str | Path | None, cluster: str | Path | None, options: Mapping[str, object], caller: str
) -> tuple[Workload, SimSettings]:
    """Split ``options`` between the workload and the simulator settings; reject the rest."""
    from slurmrl.grid.cells import split_options
    from slurmrl.sim.experiment import prepare

    own = {k: v for k, v in options.items() if k in ("scenario", "seed")}
    given, settings = split_options({k: v for k, v in options.items() if k not in own}, caller, also=own)
    workload = prepare(
        trace=str(trace) if trace is not None else None,
        cluster=str(cluster) if cluster is not None else None,
        **own,  # type: ignore[arg-type]
        **given,
    )
    return workload, settings


def _policy_pairs(policies: str | Sequence[str] | None) -> list[tuple[str, str | None]]:
    """Names checked up front, so a typo fails before the first replay."""
    from slurmrl.policy.registry import placement_entry, policy_entry, policy_names

    if policies is None:
        return [(n, None) for n in policy_names() if not policy_entry(n).learned]
    items = policies.split(",") if isinstance(policies, str) else list(policies)
    pairs: list[tuple[str, str | None]] = []
    labels: set[str] = set()
    for item in (i.strip() for i in items):
        if item:
            name, _, place = item.partition("+")
            label = f"{name}+{place or policy_entry(name).default_placement}"
            if place:
                placement_entry(place)
            if label in labels:
                raise ConfigError(f"policy {label} is listed twice", column="policies")
            labels.add(label)
            pairs.append((name, place or None))
    if not pairs:
        raise ConfigError(
            "no policies given; pass names like ['fifo', 'tiresias+topology']", column="policies"
        )
    return pairs


def _result(run: RunOutput) -> SimulationResult:
    return SimulationResult(dict(run.summary), dict(run.meta), tuple(run.records), tuple(run.samples))


def _loaded(results: Results) -> SimulationResult:
    return SimulationResult(results.summary.to_dict(), dict(results.meta), results.records, results.samples)
