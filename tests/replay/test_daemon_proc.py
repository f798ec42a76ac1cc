"""The config a replay gives the daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmrl.daemon.config import load_config
from slurmrl.errors import SlurmrlError
from slurmrl.replay.daemon_proc import DaemonProcess, DaemonSetup, daemon_config_text


def test_made_config_runs_the_policy_on_trace_time(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\n")
    text = daemon_config_text(DaemonSetup("qssf", "topology"), tmp_path, 200.0, str(conf))
    proc = DaemonProcess(tmp_path, text)
    proc.check()
    cfg = load_config(str(proc.config_path))
    assert (cfg.policy, cfg.placement, cfg.mode, cfg.time_scale) == ("qssf", "topology", "priority", 200.0)
    assert cfg.interval == 1.0 and cfg.placement_hold == 2.0  # 300 trace seconds, at least 2 wall seconds
    assert cfg.state_file == str(tmp_path / "state.json") and cfg.slurm.conf == str(conf)


def test_admin_config_keeps_its_keys_with_replay_paths(tmp_path: Path) -> None:
    admin = tmp_path / "admin.toml"
    admin.write_text(
        'policy = "fifo-backfill"\ninterval = 5\nstate_file = "/var/lib/slurmrl/state.json"\n'
        '[scope]\npartitions = ["gpu"]\n[slurm]\ntimeout = 7\n'
    )
    folder = tmp_path / "daemon"
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\n")
    proc = DaemonProcess(folder, daemon_config_text(DaemonSetup(config_file=admin), folder, 50.0, str(conf)))
    cfg = load_config(str(proc.config_path))
    assert cfg.interval == 5.0 and cfg.scope.partitions == ("gpu",) and cfg.slurm.timeout == 7.0
    assert cfg.state_file == str(folder / "state.json") and cfg.time_scale == 50.0
    assert cfg.slurm.conf == str(conf) and cfg.metrics_port == 0


def test_unreadable_admin_config_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("policy = [")
    with pytest.raises(SlurmrlError) as err:
        daemon_config_text(DaemonSetup(config_file=bad), tmp_path, 10.0, "")
    assert str(bad) in err.value.format()


def test_an_admin_config_that_requeues_is_refused_before_anything_is_submitted(tmp_path: Path) -> None:
    admin = tmp_path / "admin.toml"
    admin.write_text('policy = "srtf-limit"\npreempt = "requeue"\n')
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\n")
    folder = tmp_path / "daemon"
    proc = DaemonProcess(folder, daemon_config_text(DaemonSetup(config_file=admin), folder, 50.0, str(conf)))
    with pytest.raises(SlurmrlError, match="cannot requeue"):
        proc.check()
