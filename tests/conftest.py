"""Test-wide switches.

Tests marked ``slurm`` need the local test cluster (``contrib/testcluster``,
started by ``contrib/run-tests``). Outside CI they are skipped when no
cluster answers; in CI (``CI`` set) they always run, so a broken cluster
fails the build instead of hiding.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from slurmrl.slurm.snapshot import Snapshot

TESTS = Path(__file__).resolve().parent
RECORDED_22_05 = TESTS / "slurm" / "fixtures" / "v22.05"


def _share(name: str, path: Path) -> None:
    """Make a helper module beside the tests importable by its short ``name``.

    The suite imports test files by path (``--import-mode=importlib``). Other
    helpers import as ``tests.<area>.<module>`` (pytest puts the repository
    root on ``sys.path``); these two, used across areas, keep short names.
    """
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]


_share("live_slurm", TESTS / "live_slurm.py")  # helpers of the tests against the local cluster
_share("fake_slurm", TESTS / "daemon" / "fake_slurm.py")  # a fake controller for the daemon tests


def slurm_cluster_up() -> bool:
    if not os.environ.get("SLURM_CONF"):
        return False
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The marker, not the keyword: a parameter id "slurm" (the policy, the command) is a keyword too.
    wanted = [item for item in items if item.get_closest_marker("slurm") is not None]
    if not wanted or os.environ.get("CI") or slurm_cluster_up():
        return
    skip = pytest.mark.skip(reason="no Slurm test cluster (set SLURM_CONF; see contrib/testcluster)")
    for item in wanted:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def daemon_logging():
    """A daemon command run in-process (CliRunner) sets the daemon's logging up: its own handler,
    no propagation. Undone after every test, so a later test's ``caplog`` still sees its records."""
    from slurmrl.daemon.logs import LOGGER

    handlers, propagate, level = list(LOGGER.handlers), LOGGER.propagate, LOGGER.level
    yield
    LOGGER.handlers[:] = handlers
    LOGGER.propagate = propagate
    LOGGER.setLevel(level)


@pytest.fixture
def recorded_snapshot() -> Callable[..., Snapshot]:
    """Builds the snapshot recorded on the 22.05 test cluster, with fields replaced as asked."""
    from slurmrl.cluster.from_slurm import load_slurm_cluster
    from slurmrl.slurm.parse_json import parse_nodes_json, parse_squeue_json

    def make(**changes: object) -> Snapshot:
        snap = Snapshot(
            time=1795321710.0,
            version="22.05.8",
            nodes=parse_nodes_json((RECORDED_22_05 / "sinfo.json").read_text()),
            jobs=parse_squeue_json((RECORDED_22_05 / "squeue.json").read_text()),
            cluster=load_slurm_cluster(RECORDED_22_05 / "conf" / "slurm.conf"),
            source="test",
        )
        return replace(snap, **changes)

    return make
