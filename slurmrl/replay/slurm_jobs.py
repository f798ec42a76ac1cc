"""Submitting, watching and cancelling a replay's jobs, every call through :func:`slurmrl.slurm.run.call`.

Jobs are watched with ``scontrol -d -o show job``: one call lists every job
the controller still holds, finished ones included for ``MinJobAge``
seconds, with start and end times, nodes and the GPU indices each node gave
(``GRES=gpu:v100:2(IDX:0-1)``), which ``squeue`` does not show in 22.05.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from slurmrl.replay.plan import NAME_PREFIX, ReplayJob
from slurmrl.slurm.parse_text import output_lines, parse_hosts, parse_scontrol_jobs, parse_timestamp
from slurmrl.slurm.run import CommandFailed, JobNotFound, call
from slurmrl.slurm.snapshot import SlurmJob

CANCEL_BATCH = 100  # job ids per scancel call


class SlurmJobs:
    """The Slurm side of a replay, for one controller (``SLURM_CONF`` in ``env``)."""

    def __init__(self, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
        self.env = dict(env) if env else None
        self.timeout = timeout

    def sbatch_argv(self, job: ReplayJob, partition: str = "") -> list[str]:
        argv = [
            "sbatch",
            "--parsable",
            f"--job-name={job.name}",
            f"--account={job.account}",
            f"--nodes={job.nodes}",
            f"--gpus={job.gpus}",
            "--output=/dev/null",
            "--error=/dev/null",
        ]
        if job.minutes:
            argv.append(f"--time={job.minutes}")
        if partition:
            argv.append(f"--partition={partition}")
        argv.append(f"--wrap=sleep {job.sleep:.3f}")
        return argv

    def submit(self, job: ReplayJob, partition: str = "") -> str:
        """Submit one job; its Slurm id."""
        out = call(self.sbatch_argv(job, partition), timeout=self.timeout, env=self.env).stdout.strip()
        job_id = out.split(";", 1)[0]
        if not job_id.isdigit():
            raise CommandFailed(f"sbatch answered {out!r}, not a job id")
        return job_id

    def jobs(self) -> tuple[SlurmJob, ...]:
        """Every job the controller holds (pending, running and recently ended)."""
        text = call(["scontrol", "-d", "-o", "show", "job"], timeout=self.timeout, env=self.env).stdout
        return parse_scontrol_jobs(text)

    def accounted(self, job_ids: Sequence[str]) -> tuple[SlurmJob, ...]:
        """Jobs the controller has already let go, from accounting (``sacct``); no GPU indices there."""
        if not job_ids:
            return ()
        text = call(
            [
                "sacct",
                "-n",
                "-X",
                "-P",
                "-j",
                ",".join(job_ids),
                "-o",
                "JobID,State,Submit,Start,End,NodeList",
            ],
            timeout=self.timeout,
            env=self.env,
        ).stdout
        out = []
        for line in output_lines(text):
            parts = line.split("|")
            if len(parts) != 6:
                continue
            job_id, state, submit, start, end, nodes = parts
            base = state.split()[0].upper() if state.split() else ""
            out.append(
                SlurmJob(
                    job_id,
                    state=base,
                    submit_time=parse_timestamp(submit) or 0.0,
                    start_time=parse_timestamp(start),
                    end_time=parse_timestamp(end),
                    nodes=parse_hosts(nodes),
                )
            )
        return tuple(out)

    def leftovers(self) -> tuple[str, ...]:
        """Ids of live (pending or running) jobs named as a replay's, from any earlier run."""
        text = call(
            ["squeue", "-h", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED", "-o", "%i|%j"],
            timeout=self.timeout,
            env=self.env,
        ).stdout
        ids = []
        for line in output_lines(text):
            job_id, _, name = line.partition("|")
            if name.startswith(NAME_PREFIX):
                ids.append(job_id.strip())
        return tuple(ids)

    def cancel(self, job_ids: Iterable[str]) -> None:
        """Cancel ``job_ids`` (already ended ones are fine), a batch per call."""
        ids = sorted(set(job_ids), key=_numeric)
        for i in range(0, len(ids), CANCEL_BATCH):
            batch = ids[i : i + CANCEL_BATCH]
            try:
                call(["scancel", *batch], timeout=self.timeout, env=self.env)
            except JobNotFound:
                for one in batch:  # one of them is gone; the others still need cancelling
                    try:
                        call(["scancel", one], timeout=self.timeout, env=self.env)
                    except JobNotFound:
                        pass


def _numeric(job_id: str) -> tuple[int, str]:
    head = job_id.split("_", 1)[0]
    return (int(head) if head.isdigit() else 0, job_id)
