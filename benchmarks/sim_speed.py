"""Simulator speed as a user sees it: process wall of the real commands, and scale.

For each case the real ``slurmrl`` command runs as a child process (its
output thrown away) and the benchmark prints its process wall, its CPU time
(user + sys: the machine may be shared, and CPU time is what a busy
neighbour does not inflate), its peak resident memory and the load average
around it. CPU time counts every process the command starts: ``compare``
runs its policies on a process pool whose workers are children of a fork
server, so the benchmark adopts orphaned descendants (it is their child
subreaper) and adds what they used. A second, instrumented child runs the
same command in-process with timers around its phases (``compare`` with
``--jobs 1``, so its runs happen where the timers are; the fingerprint does
not depend on the process count), and prints where the time went:

    imports   modules the command needs (the rest of ``startup`` is the interpreter)
    load      reading and parsing the trace file
    limits    seeding time limits for traces without them
    setup     building the simulator (per-job views, arrival events)
    run       the event loop under the policy
    summary   the metrics of each run, less the bounds
    bounds    the lower bounds on mean JCT and makespan
    other     cluster spec, selection, output

and a fingerprint of the results (sha256 over every run's per-job records,
timeline samples and summary less its wall time) that must not change when
the simulator gets faster.

Cases (targets in seconds of process wall, the issue's; compare's is for 2 cores):

    fifo           46,070 shared Philly jobs on 8x8x8, --speed-model none --json      3
    sjf-oracle     the same                                                          4
    fifo-backfill  the same jobs under the default speed model, +topology            6
    slurm          46,070 jobs as for fifo, stock Slurm's emulation (no target)       -
    tiresias       --scenario philly-4w-512 (default speed model)                    30
    compare        slurmrl compare --scenario philly-sample (the README's command)   20

Scale (``--scale``): fifo-backfill under the default settings on 10x8x8 (the
cluster philly-4w sizes to the shared weeks, offered load 0.94, so the
pending queue stays bounded however long the trace) on the shared weeks and
on a synthetic 1,000,000-job trace made of the same weeks repeated with
submit times shifted by whole repetitions (written to a temporary folder,
deleted afterwards); it prints both and how wall, CPU and memory grow.

    python benchmarks/sim_speed.py [--only fifo,tiresias] [--repeat 1] [--scale] [--scale-jobs 1000000]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

PHILLY_FILE = "philly/philly_jobs_2017-10-02_to_2017-10-30.csv.gz"
PHILLY_JOBS = 46_070
SCALE_CLUSTER = "10x8x8"
PHASES = ("startup", "imports", "load", "limits", "setup", "run", "summary", "bounds", "other")


def philly() -> str:
    """The shared Philly weeks, wherever slurmrl finds public traces."""
    from slurmrl.traces.store import locate

    return str(locate(PHILLY_FILE))


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # the slurmrl command line
    target_s: float | None
    one_process: tuple[str, ...] = ()  # added for the instrumented run: keep every run in its process


def cases() -> tuple[Case, ...]:
    sim = ("simulate", "--json", "--no-progress")
    on_512 = ("--trace", philly(), "--cluster", "8x8x8")
    none = ("--speed-model", "none")
    return (
        Case("fifo", (*sim, *on_512, *none, "--policy", "fifo"), 3.0),
        Case("sjf-oracle", (*sim, *on_512, *none, "--policy", "sjf-oracle"), 4.0),
        Case("fifo-backfill", (*sim, *on_512, "--policy", "fifo-backfill", "--placement", "topology"), 6.0),
        Case("slurm", (*sim, *on_512, *none, "--policy", "slurm"), None),
        Case("tiresias", (*sim, "--scenario", "philly-4w-512", "--policy", "tiresias"), 30.0),
        Case("compare", ("compare", "--scenario", "philly-sample"), 20.0, ("--jobs", "1")),
    )


def scale_case(name: str, trace: str) -> Case:
    args = ("simulate", "--json", "--no-progress", "--trace", trace, "--cluster", SCALE_CLUSTER)
    return Case(name, (*args, "--policy", "fifo-backfill"), None)


# ---------------------------------------------------------------- measuring a child


@dataclass(frozen=True)
class Measure:
    wall: float
    cpu: float  # user + sys
    rss_mb: float
    load: float  # 1-minute load average at the end


def adopt_orphans() -> None:
    """Become the child subreaper (Linux), so a command's orphaned descendants are ours to reap and count."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux: only waited-for descendants are counted
        pass


def reap_rest() -> float:
    """Wait for every remaining child (adopted fork servers end once their parent has); the CPU they used."""
    cpu = 0.0
    while True:
        try:
            _, _, usage = os.wait4(-1, 0)
        except ChildProcessError:
            return cpu
        cpu += usage.ru_utime + usage.ru_stime


def child(argv: Sequence[str], env: dict[str, str] | None = None) -> Measure:
    """Run argv to completion; wall, CPU of it and all its descendants, and its peak RSS."""
    with tempfile.TemporaryFile() as err:  # progress bars and warnings; shown only on failure
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        rest_cpu = reap_rest()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}:\n{tail}")
    cpu = usage.ru_utime + usage.ru_stime + rest_cpu
    return Measure(wall, cpu, usage.ru_maxrss / 1024, os.getloadavg()[0])


def command(case: Case) -> list[str]:
    """The console script's entry, run by this interpreter (so PYTHONPATH picks the package).

    ``-P``: never the current folder's package, so a comparison with
    ``PYTHONPATH=<other checkout>`` measures that checkout even when run from
    this one's root.
    """
    return [
        sys.executable,
        "-P",
        "-c",
        "import sys; from slurmrl.cli import run; sys.exit(run())",
        *case.args,
    ]


def phases(case: Case) -> dict[str, object]:
    """Run the instrumented child; its phase times and fingerprint."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = [sys.executable, __file__, "--phases-of", out.name, "--", *case.args, *case.one_process]
        t0 = time.perf_counter()
        child(argv)
        wall = time.perf_counter() - t0
        report = json.loads(Path(out.name).read_text())
    report["wall"]["startup"] = max(0.0, wall - report["in_process"])
    return report


# ---------------------------------------------------------------- the instrumented child


class Clock:
    """Exclusive wall and CPU time per phase (a phase inside another is taken out of it)."""

    def __init__(self) -> None:
        self.wall = dict.fromkeys(PHASES, 0.0)
        self.cpu = dict.fromkeys(PHASES, 0.0)
        self._stack: list[list[float]] = []

    def wrap(self, phase: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            frame = [time.perf_counter(), time.process_time(), 0.0, 0.0]  # start, cpu, inner wall, inner cpu
            self._stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                self._stack.pop()
                wall = time.perf_counter() - frame[0]
                cpu = time.process_time() - frame[1]
                self.wall[phase] += wall - frame[2]
                self.cpu[phase] += cpu - frame[3]
                if self._stack:
                    self._stack[-1][2] += wall
                    self._stack[-1][3] += cpu

        return timed


def fingerprint(runs: Sequence[object]) -> str:
    """sha256 over each run's records, samples and summary (less wall_seconds), runs in name order
    (policy, placement, seed): a pool takes them in the order of the policies' costs, which is no result."""
    digest = hashlib.sha256()
    for run in sorted(runs, key=_run_name):
        summary = {k: v for k, v in run.summary.items() if k != "wall_seconds"}  # type: ignore[attr-defined]
        digest.update(repr(sorted(summary.items())).encode())
        for rows in (run.records, run.samples):  # type: ignore[attr-defined]
            if rows:
                names = [f.name for f in fields(rows[0])]
                for row in rows:
                    digest.update(repr([getattr(row, n) for n in names]).encode())
    return digest.hexdigest()[:16]


def _run_name(run: object) -> tuple[str, str, str]:
    meta = run.meta  # type: ignore[attr-defined]
    return (str(meta.get("policy", "")), str(meta.get("placement", "")), str(meta.get("seed", "")))


def instrumented(out: str, args: list[str]) -> None:
    """Run ``slurmrl ARGS`` in this process with phase timers; write the report to ``out``."""
    start, cpu_start = time.perf_counter(), time.process_time()
    clock = Clock()
    import slurmrl.cli
    import slurmrl.cli.simulate as cli_sim
    import slurmrl.grid.cells as cells
    import slurmrl.sim.experiment as experiment
    import slurmrl.sim.metrics as metrics
    import slurmrl.traces as traces
    from slurmrl.sim.simulator import Simulator

    clock.wall["imports"] = time.perf_counter() - start
    clock.cpu["imports"] = time.process_time() - cpu_start
    runs: list[object] = []
    run_policy = cli_sim.run_policy

    def keep(*a, **k):
        result = run_policy(*a, **k)
        runs.append(result)
        return result

    cli_sim.run_policy = keep
    cells.run_policy = keep  # compare's and simulate --seeds' runs
    traces.load_trace = clock.wrap("load", traces.load_trace)
    experiment.seed_time_limits = clock.wrap("limits", experiment.seed_time_limits)
    Simulator.__init__ = clock.wrap("setup", Simulator.__init__)
    Simulator.run = clock.wrap("run", Simulator.run)
    metrics.summarize = clock.wrap("summary", metrics.summarize)
    metrics._bounds = clock.wrap("bounds", metrics._bounds)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the command prints; nobody reads it
    try:
        slurmrl.cli.main(args, prog_name="slurmrl", standalone_mode=False)
    finally:
        sys.stdout = sys.__stdout__
    in_process = time.perf_counter() - start
    in_cpu = time.process_time() - cpu_start
    t0 = time.perf_counter()
    mark = fingerprint(runs)
    hashing = time.perf_counter() - t0
    named_wall = sum(v for k, v in clock.wall.items() if k != "other")
    named_cpu = sum(v for k, v in clock.cpu.items() if k != "other")
    clock.wall["other"] = max(0.0, in_process - named_wall)
    clock.cpu["other"] = max(0.0, in_cpu - named_cpu)
    report = {
        "in_process": in_process + hashing,  # the hashing is no phase of the command
        "wall": clock.wall,
        "cpu": clock.cpu,
        "fingerprint": mark,
        "runs": len(runs),
        "decisions": sum(r.meta["decisions"] for r in runs),  # type: ignore[attr-defined]
    }
    Path(out).write_text(json.dumps(report))


# ---------------------------------------------------------------- printing


@dataclass(frozen=True)
class Row:
    case: Case
    best: Measure
    worst_wall: float
    report: dict[str, object]


def measure(case: Case, repeat: int) -> Row:
    runs = [child(command(case)) for _ in range(max(1, repeat))]
    best = min(runs, key=lambda m: m.wall)
    return Row(case, best, max(m.wall for m in runs), phases(case))


def print_header() -> None:
    print(
        f"{'case':<15}{'wall s':>8}{'worst':>7}{'cpu s':>7}{'target':>8}{'RSS MB':>8}{'load':>6}"
        f"  {'fingerprint':<17}breakdown, wall s (cpu s)"
    )


def print_row(row: Row) -> None:
    m, r = row.best, row.report
    target = f"{row.case.target_s:g}" if row.case.target_s is not None else "-"
    parts = " ".join(
        f"{p} {r['wall'][p]:.2f}" + (f" ({r['cpu'][p]:.2f})" if p != "startup" else "")
        for p in PHASES
        if r["wall"][p] >= 0.005
    )
    print(
        f"{row.case.name:<15}{m.wall:>8.2f}{row.worst_wall:>7.2f}{m.cpu:>7.2f}{target:>8}{m.rss_mb:>8.0f}"
        f"{m.load:>6.2f}  {r['fingerprint']:<17}{parts}"
    )


def run_targets(wanted: set[str], repeat: int) -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"Process wall of each command, best of {repeat}; {os.cpu_count()} CPUs, load average {load} (1, 5, 15 min)"
    )
    print_header()
    for case in cases():
        if not wanted or case.name in wanted:
            print_row(measure(case, repeat))


# ---------------------------------------------------------------- scale


def write_repeated(source: str, dest: Path, jobs: int) -> int:
    """The shared weeks again and again, each copy shifted by one span plus a day; ``jobs`` rows."""
    with gzip.open(source, "rt", newline="") as fh:
        rows = list(csv.DictReader(fh))
    submits = [float(r["submit_time"]) for r in rows]
    shift = max(submits) - min(submits) + 86_400.0
    columns = ["job_id", "user", "vc", "submit_time", "duration_s", "num_gpus", "num_nodes"]
    written = 0
    with dest.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(columns)
        copy = 0
        while written < jobs:
            for r in rows:
                if written == jobs:
                    break
                submit = float(r["submit_time"]) + copy * shift
                out.writerow(
                    [
                        f"{r['job_id']}-c{copy}",
                        r["user"],
                        r["vc"],
                        f"{submit:.17g}",
                        r["duration_s"],
                        r["num_gpus"],
                        r["num_nodes"],
                    ]
                )
                written += 1
            copy += 1
    return written


def run_scale(jobs: int, repeat: int) -> None:
    print()
    print(
        f"Scale: fifo-backfill, default settings, on {SCALE_CLUSTER} (offered load 0.94, the queue stays bounded)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / f"philly-repeated-{jobs}.csv"
        t0 = time.perf_counter()
        n = write_repeated(philly(), big, jobs)
        print(f"wrote {n:,} jobs ({big.stat().st_size / 2**20:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        print_header()
        small = measure(scale_case(f"{PHILLY_JOBS // 1000}k jobs", philly()), repeat)
        print_row(small)
        large = measure(scale_case(f"{n / 1e6:g}M jobs", str(big)), 1)
        print_row(large)
    k = n / PHILLY_JOBS
    small_m, large_m = small.best, large.best
    print(
        f"{k:.1f}x the jobs: CPU x{large_m.cpu / small_m.cpu:.1f} "
        f"({1e6 * small_m.cpu / PHILLY_JOBS:.0f} -> {1e6 * large_m.cpu / n:.0f} us per job), "
        f"peak RSS x{large_m.rss_mb / small_m.rss_mb:.1f} "
        f"({small_m.rss_mb * 1024 / PHILLY_JOBS:.1f} -> {large_m.rss_mb * 1024 / n:.1f} KB per job), "
        f"wall x{large_m.wall / small_m.wall:.1f} (wall follows the machine's load)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=1, help="command runs per case; the best is printed")
    parser.add_argument("--only", default="", help="comma-separated cases (fifo,sjf-oracle,...); none: all")
    parser.add_argument("--scale", action="store_true", help="also the 46k-to-1M scale run")
    parser.add_argument("--scale-only", action="store_true", help="only the scale run")
    parser.add_argument("--scale-jobs", type=int, default=1_000_000)
    parser.add_argument("--phases-of", default=None, help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.phases_of:
        from slurmrl.process_settings import skip_last_collection

        instrumented(opts.phases_of, opts.args)
        skip_last_collection()  # as the command's own process ends (slurmrl.cli.run)
        return
    adopt_orphans()
    if not opts.scale_only:
        run_targets({c for c in opts.only.split(",") if c}, opts.repeat)
    if opts.scale or opts.scale_only:
        run_scale(opts.scale_jobs, opts.repeat)
    print(f"peak RSS of this driver: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
