"""Ended jobs read back from the test cluster's accounting (slurmdbd), as the daemon does at start.

Run with ``eval "$(contrib/testcluster/testcluster env)"; pytest -m slurm tests/slurm``.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from live_slurm import sbatch, wait_for  # loaded by tests/conftest.py

from slurmrl.slurm.cli_backend import CliBackend

pytestmark = pytest.mark.slurm


def test_a_finished_gpu_job_comes_back_with_its_gpus_limit_and_model_a_cancelled_one_does_not() -> None:
    tag = f"slurmrl-acct-{os.getpid()}"
    since = time.time() - 5
    done = sbatch("--gres=gpu:2", "--time=3", "--comment=model=resnet50", account=tag, wrap="sleep 1")
    held = sbatch("-H", "--gres=gpu:1", account=tag, wrap="sleep 1")
    try:
        subprocess.run(["scancel", held], capture_output=True, timeout=30)
        backend = CliBackend(conf=os.environ.get("SLURM_CONF"))

        def read():
            got = backend.finished_jobs(since, time.time() + 1)
            return got if any(j.job_id == done for j in got.jobs) else None

        accounted = wait_for(read, 60, f"job {done} in sacct")  # slurmdbd hears of it shortly after
    finally:
        subprocess.run(["scancel", done, held], capture_output=True, timeout=30)
    by_id = {j.job_id: j for j in accounted.jobs}
    job = by_id[done]
    assert accounted.gpus_tracked and accounted.unreadable == 0
    assert (job.state, job.name, job.gpus.total, job.time_limit, job.model) == (
        "COMPLETED",
        tag,
        2,
        180.0,
        "resnet50",
    )
    assert job.start_time is not None and job.end_time is not None
    assert since - 1 <= job.start_time <= job.end_time <= time.time() + 1
    assert held not in by_id  # cancelled before it ran
