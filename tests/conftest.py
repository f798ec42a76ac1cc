"""Test-wide switches.

Tests marked ``slurm`` need the local test cluster (``contrib/testcluster``,
started by ``contrib/run-tests``). Outside CI they are skipped when no
cluster answers; in CI (``CI`` set) they always run, so a broken cluster
fails the build instead of hiding.
"""

from __future__ import annotations

import os
import subprocess

import pytest


def slurm_cluster_up() -> bool:
    if not os.environ.get("SLURM_CONF"):
        return False
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = [item for item in items if "slurm" in item.keywords]
    if not wanted or os.environ.get("CI") or slurm_cluster_up():
        return
    skip = pytest.mark.skip(reason="no Slurm test cluster (set SLURM_CONF; see contrib/testcluster)")
    for item in wanted:
        item.add_marker(skip)
