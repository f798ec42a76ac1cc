"""The slurmrl daemon in a replay's loop: its own process, as on a controller.

The replay writes the daemon a config of its own (state, audit log and
log under the output folder; ``time_scale`` = the speedup), starts
``slurmrl daemon`` on it, and stops it with SIGTERM, which makes the daemon
give back every change it made; the exit status and the state file tell
whether it did.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from slurmrl.daemon.record import Record
from slurmrl.errors import ConfigError, SlurmrlError

STOP_TIMEOUT = 120.0  # seconds for the daemon to revert and exit after SIGTERM
START_TIMEOUT = 60.0  # seconds for its first cycle


@dataclass(frozen=True)
class DaemonSetup:
    """What the daemon runs: a policy by name, or an admin's config file."""

    policy: str = ""
    placement: str | None = None
    config_file: Path | None = None


def _toml_value(value: object) -> str:
    return json.dumps(value)  # strings, numbers and booleans read the same in TOML


def daemon_config_text(setup: DaemonSetup, folder: Path, speedup: float, slurm_conf: str) -> str:
    """A daemon config for the replay: the admin's file with replay paths, or one made for ``policy``.

    Made configs decide every second, in explicit priorities (so the
    cluster's own priority weights cannot reorder the policy's ranking), and
    leave starvation to the policy (the simulated twin has no such guard).
    Holds are scaled to the trace's clock.
    """
    keys: dict[str, object] = {}
    if setup.config_file is not None:
        try:
            keys = tomllib.loads(setup.config_file.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SlurmrlError(f"cannot read the daemon config: {exc}", file=str(setup.config_file)) from None
    else:
        keys = {
            "policy": setup.policy,
            "interval": 1.0,
            "mode": "priority",
            "max_site_factor": 100_000,
            "max_changes_per_cycle": 1000,
            "placement_hold": max(2.0, 300.0 / speedup),
            "starvation_wait": 1e9,
        }
        if setup.placement:
            keys["placement"] = setup.placement
    keys.update(
        state_file=str(folder / "state.json"),
        audit_log=str(folder / "audit.jsonl"),
        metrics_port=0,
        dry_run=False,
        time_scale=speedup,
        # Cold, as the simulated replay starts: the cluster's accounting holds earlier replays' jobs.
        history_days=0,
    )
    slurm = dict(keys.pop("slurm", {}) or {})
    slurm["conf"] = slurm_conf
    lines = [f"{k} = {_toml_value(v)}" for k, v in keys.items() if not isinstance(v, dict)]
    for table, values in [(k, v) for k, v in keys.items() if isinstance(v, dict)] + [("slurm", slurm)]:
        lines.append(f"\n[{table}]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in values.items())
    return "\n".join(lines) + "\n"


class DaemonProcess:
    """``slurmrl daemon`` on a replay's config, started and stopped by the replay."""

    def __init__(self, folder: Path, config_text: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.config_path = folder / "daemon.toml"
        self.config_path.write_text(config_text, encoding="utf-8")
        self.log_path = folder / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def check(self) -> None:
        """The config as the daemon will read it: any mistake as one error before anything is submitted."""
        from slurmrl.daemon.config import load_config

        if load_config(str(self.config_path)).preempt != "off":
            raise SlurmrlError(
                "a replay cannot requeue: its jobs sleep their trace duration and would sleep it "
                "again from the start",
                file=str(self.config_path),
                hint='set preempt = "off" in the daemon config for the replay',
            )

    def start(self) -> None:
        argv = [
            sys.executable,
            "-c",
            "from slurmrl.cli import run; run()",
            "daemon",
            "--config",
            str(self.config_path),
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SlurmrlError(
                    f"the daemon exited with status {self.proc.returncode} at start", file=str(self.log_path)
                )
            if self._cycles() > 0:
                return
            time.sleep(0.2)
        raise SlurmrlError(f"the daemon ran no cycle within {START_TIMEOUT:g} s", file=str(self.log_path))

    def _record(self) -> Record | None:
        """The daemon's state file as it reads it; None while it cannot be read."""
        try:
            return Record.load(self.folder / "state.json")
        except ConfigError:
            return None

    def _cycles(self) -> int:
        record = self._record()
        return record.cycle if record is not None else 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int:
        """SIGTERM (the daemon reverts its changes), then wait; its exit status."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise SlurmrlError(
                    f"the daemon did not exit within {STOP_TIMEOUT:g} s of SIGTERM; run "
                    f"`slurmrl daemon revert --config {self.config_path}`",
                    file=str(self.log_path),
                ) from None
        return int(self.proc.returncode or 0)

    def leftover_changes(self) -> int:
        """Jobs the daemon's record still lists (0 once it gave everything back)."""
        record = self._record()
        if record is None:
            raise SlurmrlError("the daemon's state file cannot be read", file=str(self.folder / "state.json"))
        return len(record.jobs)
