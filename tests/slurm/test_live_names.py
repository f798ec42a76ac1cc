"""Job names a user may type, read back whole from the test cluster in both read modes.

Run with ``eval "$(contrib/testcluster/testcluster env)"; pytest -m slurm tests/slurm``.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from live_slurm import sbatch

from slurmrl.slurm.cli_backend import CliBackend

pytestmark = pytest.mark.slurm
ODD = "odd\x0cname\x1eend"  # a form feed and a record separator: line breaks to str.splitlines


@pytest.mark.parametrize("mode", ["json", "text"])
def test_a_name_with_line_breaks_other_than_newline_reads_whole(mode: str) -> None:
    account = f"slurmrl-names-{os.getpid()}"
    job = sbatch("-H", "--gres=gpu:2", "-t", "30", f"--job-name={ODD}", account=account)
    try:
        by_id = {j.job_id: j for j in CliBackend(mode=mode).snapshot().jobs}
    finally:
        subprocess.run(["scancel", job], capture_output=True, timeout=30)
    got = by_id[job]
    assert (got.name, got.state, got.gpus.total, got.time_limit, got.account) == (
        ODD,
        "PENDING",
        2,
        1800.0,
        account,
    )
