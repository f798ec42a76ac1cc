"""CLI backend against a fake runner, write validation, and the pyslurm backend on a fake module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.errors import SlurmError
from slurmrl.slurm.cli_backend import CliBackend, json_flag, parse_version
from slurmrl.slurm.run import CommandResult, ControllerUnreachable

FIX = Path(__file__).resolve().parent / "fixtures"


def _load_fake():
    spec = importlib.util.spec_from_file_location("pyslurm", Path(__file__).with_name("fake_pyslurm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class FakeRunner:
    """Answers like Slurm of ``version`` from the recorded/constructed fixtures."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.calls: list[list[str]] = []

    def __call__(self, cmd, *, timeout=30, env=None) -> CommandResult:
        self.calls.append(list(cmd))
        folder = FIX / f"v{'.'.join(self.version.split('.')[:2])}"
        if cmd[:2] == ["sinfo", "--version"]:
            out = f"slurm {self.version}\n"
        elif cmd[0] == "squeue":
            out = (folder / "squeue.json").read_text()
        elif cmd[0] == "sinfo":
            out = (folder / "sinfo.json").read_text()
        elif cmd[:3] == ["scontrol", "show", "nodes"]:
            out = (folder / "scontrol_show_nodes.json").read_text()
        elif cmd[:2] in (["scontrol", "update"], ["scontrol", "requeue"]):
            out = ""
        else:
            raise AssertionError(f"unexpected command {cmd}")
        return CommandResult(tuple(cmd), 0, out, "", 0.0)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("22.05.8", [["squeue", "--all", "--json"], ["sinfo", "--json"]]),
        ("23.11.10", [["squeue", "--all", "--json"], ["scontrol", "show", "nodes", "--json"]]),
        ("24.11.5", [["squeue", "--all", "--json=v0.0.42"], ["scontrol", "show", "nodes", "--json=v0.0.42"]]),
    ],
)
def test_one_bulk_query_per_kind(version: str, expected: list[list[str]]) -> None:
    runner = FakeRunner(version)
    snap = CliBackend(conf=FIX / "v22.05" / "conf" / "slurm.conf", runner=runner).snapshot()
    assert runner.calls[1:] == expected
    assert snap.version == version and len(snap.jobs) == 14
    assert [r.name for r in snap.cluster.racks] == ["rack1", "rack2"]


def test_no_conf_gives_one_rack(tmp_path: Path) -> None:
    snap = CliBackend(conf=tmp_path / "missing.conf", runner=FakeRunner("22.05.8")).snapshot()
    assert len(snap.cluster.racks) == 1 and snap.cluster.total_gpus == 32
    assert snap.warnings and "no slurm.conf" in snap.warnings[0]


def test_writes_are_validated_argv() -> None:
    runner = FakeRunner("22.05.8")
    backend = CliBackend(runner=runner)
    backend.set_site_factor("13", 100)
    backend.set_priority("7_3", 5000)
    backend.set_required_nodes("14", ["node01", "node02"])
    backend.set_required_nodes("14", None)
    backend.set_admin_comment("14", "slurmrl: placed; x=$(y)")
    backend.requeue("7_3")
    assert runner.calls == [
        ["scontrol", "update", "JobId=13", "SiteFactor=100"],
        ["scontrol", "update", "JobId=7_3", "Priority=5000"],
        ["scontrol", "update", "JobId=14", "ReqNodeList=node01,node02"],
        ["scontrol", "update", "JobId=14", "ReqNodeList="],
        ["scontrol", "update", "JobId=14", "AdminComment=slurmrl: placed; x=$(y)"],
        ["scontrol", "requeue", "7_3"],
    ]
    for bad in (
        lambda: backend.set_priority("13; rm", 1),
        lambda: backend.set_priority("13", 0),
        lambda: backend.set_site_factor("13", 2**40),
        lambda: backend.set_required_nodes("1", ["a b"]),
        lambda: backend.set_required_nodes("1", "node01"),
        lambda: backend.set_admin_comment("1", "a\nb"),
        lambda: backend.set_priority("13", True),
        lambda: backend.requeue("13,14"),
    ):
        with pytest.raises(SlurmError):
            bad()
    assert len(runner.calls) == 6


def test_configured_conf_reaches_every_command(tmp_path: Path) -> None:
    seen: list[dict | None] = []

    def runner(cmd, *, timeout=30, env=None):
        seen.append(env)
        return CommandResult(tuple(cmd), 0, "", "", 0.0)

    CliBackend(conf=tmp_path / "slurm.conf", runner=runner).set_priority("5", 10)
    CliBackend(runner=runner).set_priority("5", 10)
    assert seen == [{"SLURM_CONF": str(tmp_path / "slurm.conf")}, None]


def test_version_helpers() -> None:
    assert parse_version("slurm-wlm 22.05.8") == (22, 5, 8)
    assert json_flag((24, 11, 1)) == "--json=v0.0.42" and json_flag((26, 5, 0)) == "--json=v0.0.42"
    assert json_flag((24, 5, 8)) == "--json" and json_flag((26, 11, 0)) == "--json"
    with pytest.raises(SlurmError):
        parse_version("nothing")


def test_pyslurm_missing_or_wrong_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from slurmrl.slurm.pyslurm_backend import import_pyslurm

    monkeypatch.setitem(sys.modules, "pyslurm", None)  # import raises ImportError
    with pytest.raises(SlurmError, match="not installed") as err:
        import_pyslurm()
    assert "slurmrl[pyslurm]" in err.value.format()
    fake = _load_fake()
    fake.__version__ = "24.5.0"
    monkeypatch.setitem(sys.modules, "pyslurm", fake)
    with pytest.raises(SlurmError, match="supports pyslurm 25.11"):
        import_pyslurm()


def test_cli_commands(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import slurmrl.cli.slurm as cli_slurm

    conf = FIX / "v22.05" / "conf" / "slurm.conf"
    monkeypatch.setattr(
        cli_slurm,
        "_backend",
        lambda name, c, mode="json": CliBackend(conf=conf, runner=FakeRunner("22.05.8")),
    )
    runner = CliRunner()
    result = runner.invoke(main, ["slurm", "snapshot"])
    assert result.exit_code == 0, result.output
    assert "node01       [#######.] 7/8" in result.output and "14" in result.output
    result = runner.invoke(main, ["slurm", "snapshot", "--json"])
    assert result.exit_code == 0 and '"job_id": "7_[3-5]"' in result.output
    out = tmp_path / "spec.toml"
    result = runner.invoke(main, ["cluster", "from-slurm", "--conf", str(conf), "--out", str(out)])
    assert result.exit_code == 0 and 'intra = "nvlink:4"' in out.read_text()

    def down(*a, **k):
        raise ControllerUnreachable("'squeue' failed (exit 1): Unable to contact slurm controller")

    monkeypatch.setattr(cli_slurm, "_backend", down)
    result = runner.invoke(main, ["slurm", "snapshot"])
    assert result.exit_code == 1 and "Unable to contact" in result.output and "Traceback" not in result.output


def test_a_priority_is_handed_back_with_one_release_and_no_hold() -> None:
    seen: list[list[str]] = []

    def runner(cmd, **kw):
        seen.append(list(cmd))
        return CommandResult(tuple(cmd), 0, "", "", 0.0)

    CliBackend(runner=runner).reset_priority("7_2")
    assert seen == [["scontrol", "release", "7_2"]]  # a hold would reset the job's begin/accrue time
