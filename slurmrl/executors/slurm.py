"""Tasks as one Slurm job array, through submitit.

submitit pickles the task and each item into ``folder``, submits one
``sbatch --array`` script whose tasks run ``python -m submitit.core._submit``
and pickles each result back. The array task must import the same slurmrl
as this process: the script runs this interpreter (``sys.executable``) and
puts the folder slurmrl was imported from first on ``PYTHONPATH`` (sbatch
passes the rest of the environment, as it does by default). ``folder`` must
be on a file system the compute nodes share with this machine.
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import slurmrl
from slurmrl.errors import ConfigError
from slurmrl.executors import Outcome, error_line
from slurmrl.process_settings import one_blas_thread

POLL_SECONDS = 1.0
# What a partition list, an account or a job name may hold in an sbatch script's header.
_SBATCH_WORD = re.compile(r"[A-Za-z0-9_.+:@-]+(?:,[A-Za-z0-9_.+:@-]+)*")
# After Ctrl-C, how long to wait for the cancelled array's tasks to leave the queue.
CANCEL_WAIT_SECONDS = 30.0
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_time(text: str) -> int:
    """Slurm's time formats (``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``) as whole minutes, rounded up."""
    match = _TIME.match(text.strip())
    if not match:
        raise ConfigError(
            f"--time {text!r} is not a Slurm time", column="time", hint="use MINUTES, H:MM:SS or D-HH:MM"
        )
    days, first, second, third = match.groups()
    if days is not None:  # D-H[:M[:S]]
        seconds = int(days) * 86400 + int(first) * 3600 + int(second or 0) * 60 + int(third or 0)
    elif third is not None:  # H:M:S
        seconds = int(first) * 3600 + int(second) * 60 + int(third)
    elif second is not None:  # M:S
        seconds = int(first) * 60 + int(second)
    else:  # M
        seconds = int(first) * 60
    if seconds <= 0:
        raise ConfigError(f"--time {text!r} must be longer than zero", column="time")
    return -(-seconds // 60)


@dataclass(frozen=True)
class SlurmOptions:
    """Where and how long the array tasks run; ``None`` leaves Slurm's default."""

    folder: Path = Path("slurm-logs")  # submitit's pickles and each task's stdout/stderr
    partition: str | None = None
    time_min: int = 60
    account: str | None = None
    array_parallelism: int = 256  # array tasks running at once (sbatch --array=...%N)
    cpus_per_task: int = 1
    mem_gb: float | None = None
    job_name: str = "slurmrl"
    extra: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # other sbatch flags

    def __post_init__(self) -> None:
        # Each value becomes a "#SBATCH --flag=value" line of the array's script: a line
        # break there would start a line of its own, run as a command.
        for flag, value in (
            ("partition", self.partition),
            ("account", self.account),
            ("job-name", self.job_name),
        ):
            if value is not None and not _SBATCH_WORD.fullmatch(value):
                raise ConfigError(
                    f"--{flag} {value!r} is not a Slurm name",
                    hint="letters, digits and _ . - + : @ (partitions: a comma list)",
                )

    def parameters(self) -> dict[str, Any]:
        """submitit's SlurmExecutor parameters."""
        params: dict[str, Any] = {
            "job_name": self.job_name,
            "time": self.time_min,
            "cpus_per_task": self.cpus_per_task,
            "array_parallelism": self.array_parallelism,
            "setup": [f"export PYTHONPATH={shlex.quote(package_root())}${{PYTHONPATH:+:$PYTHONPATH}}"],
        }
        if self.partition:
            params["partition"] = self.partition
        if self.account:
            params["account"] = self.account
        if self.mem_gb:
            params["mem"] = _mem(self.mem_gb)
        if self.extra:
            params["additional_parameters"] = dict(self.extra)
        return params


def package_root() -> str:
    """The folder holding the ``slurmrl`` package this process imported (a checkout or site-packages)."""
    return str(Path(slurmrl.__file__).resolve().parent.parent)


def _mem(gb: float) -> str:
    return f"{int(gb)}GB" if gb == int(gb) else f"{int(gb * 1024)}MB"


def _require_submitit() -> None:
    from slurmrl.extras import require_extra

    require_extra("submitit")


class SlurmExecutor:
    """Every item one task of one job array on the cluster ``sbatch`` talks to (``SLURM_CONF``)."""

    name = "slurm"

    def __init__(self, options: SlurmOptions, announce: Callable[[str], None] | None = None) -> None:
        self.options = options
        self.announce = announce  # told one line once the array is submitted (its job id)
        self.array_id: str | None = None  # the last array submitted, for sacct and scancel

    def describe(self, count: int) -> str:
        where = f"partition {self.options.partition}" if self.options.partition else "the default partition"
        running = min(count, self.options.array_parallelism)
        return f"{count} array task(s) on {where}, {running} at a time, {self.options.time_min} min each"

    def script(self, count: int) -> str:
        """The sbatch script an array of ``count`` tasks is submitted with (what ``--dry-run`` shows)."""
        _require_submitit()
        from submitit.slurm.slurm import _make_sbatch_string

        folder = self.options.folder.resolve() / "%j"
        command = " ".join(
            [shlex.quote(sys.executable), "-u -m submitit.core._submit", shlex.quote(str(folder))]
        )
        return _make_sbatch_string(
            command=command, folder=folder, map_count=count, **self.options.parameters()
        )

    def _submitit(self) -> Any:
        _require_submitit()
        import submitit

        try:
            executor = submitit.SlurmExecutor(folder=self.options.folder.resolve() / "%j", max_num_timeout=0)
        except RuntimeError as exc:  # no srun on PATH
            raise ConfigError(f"cannot use the slurm executor here: {exc}", column="executor") from None
        executor.update_parameters(**self.options.parameters())
        return executor

    def run(self, task: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Outcome]:
        if not items:
            return
        executor = self._submitit()
        try:
            jobs = executor.map_array(functools.partial(_on_one_blas_thread, task), items)
        except Exception as exc:  # sbatch refused the script (partition, account, time)
            raise ConfigError(f"sbatch refused the job array: {error_line(exc)}", column="executor") from None
        self.array_id = str(jobs[0].job_id).split("_")[0]
        if self.announce is not None:
            self.announce(
                f"submitted job array {self.array_id} ({len(items)} tasks; logs in {self.options.folder})"
            )
        remaining = dict(enumerate(jobs))
        try:
            while remaining:
                for index, job in list(remaining.items()):
                    if job.done():
                        del remaining[index]
                        yield _outcome(index, job)
                if remaining:
                    time.sleep(POLL_SECONDS)
        except BaseException:
            # Ctrl-C: cancel the array's tasks that have not ended; finished ones keep their results.
            _cancel(self.array_id)
            raise


def _on_one_blas_thread(task: Callable[[Any], Any], item: Any) -> Any:
    """An array task: ``task(item)`` on one BLAS thread, as a local worker runs it (slurmrl.process_settings)."""
    one_blas_thread()
    return task(item)


def _cancel(array_id: str, wait: float = CANCEL_WAIT_SECONDS) -> None:
    """``scancel`` the array, then wait until none of its tasks is left in the queue.

    scancel only asks slurmctld to signal the tasks; one about to end may
    still write its result. Waiting until the queue holds none of them
    (bounded, as the controller may be gone) lets the tables written next
    list every cell that finished.
    """
    try:
        subprocess.run(["scancel", array_id], capture_output=True, timeout=60)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            queued = subprocess.run(
                ["squeue", "-h", "-j", array_id, "-o", "%i"], capture_output=True, text=True, timeout=30
            )
            if queued.returncode != 0 or not queued.stdout.strip():
                return
            time.sleep(0.5)
    except (OSError, subprocess.SubprocessError):
        return  # the table is written anyway; a re-run picks up what it missed


def _outcome(index: int, job: Any) -> Outcome:
    """A finished array task's value, or one line on why it failed (the job's log has the rest)."""
    failure = job.exception()
    if failure is None:
        return Outcome(index, job.result())
    lines = [ln for ln in str(failure).splitlines() if ln.strip() and not ln.startswith("-" * 10)]
    reason = next(
        (ln for ln in reversed(lines) if not ln.startswith(("You can check", "or at paths", "  -"))), ""
    )
    return Outcome(index, None, f"array task {job.job_id}: {reason.strip()} (log: {job.paths.stderr})")
