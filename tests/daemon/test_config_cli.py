"""Daemon config validation, the state file, the planning helpers and the CLI entry points."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cli import main
from slurmrl.daemon.config import load_config, parse_config
from slurmrl.daemon.plan import compose_comment, site_factor_for, strip_note
from slurmrl.daemon.record import Record, Touched
from slurmrl.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "contrib" / "daemon.example.toml"


def test_every_problem_is_reported_at_once_with_its_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        'polcy = "fifo"\ninterval = "30"\nmode = "fast"\nmax_site_factor = -1\n'
        'dry_run = 1\nmetrics_port = 70000\n[scope]\npartitions = "gpu"\nparitions = ["gpu"]\n'
        "[slurm]\ntimeout = 0\n"
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = err.value.format()
    for needle in (
        "polcy: unknown key; did you mean 'policy'?",
        "interval: must be a number",
        "mode: must be one of",
        "max_site_factor: must be between",
        "dry_run: must be true or false",
        "metrics_port: must be between",
        "[scope].partitions: must be a list of strings",
        "[scope].paritions: unknown key; did you mean 'partitions'",
        "[slurm].timeout: must be greater than 0",
        str(path),
    ):
        assert needle in text, needle


def test_nan_and_inf_are_refused_where_a_number_is_asked(tmp_path: Path) -> None:
    """TOML reads nan and inf as floats: an interval of inf would never cycle again."""
    path = tmp_path / "d.toml"
    path.write_text("interval = inf\nstarvation_wait = nan\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = err.value.format()
    assert "interval: must be a finite number, not inf" in text
    assert "starvation_wait: must be a finite number, not nan" in text


def test_policy_names_are_checked_and_oracles_refused() -> None:
    with pytest.raises(ConfigError, match="did you mean 'fifo-backfill'"):
        parse_config({"policy": "fifo-backfil"})
    with pytest.raises(ConfigError, match="cannot be deployed"):
        parse_config({"policy": "sjf-oracle"})
    with pytest.raises(ConfigError, match="placement: unknown placement 'topolgy'"):
        parse_config({"policy": "fifo", "placement": "topolgy"})


def test_defaults_types_and_relative_paths(tmp_path: Path) -> None:
    path = tmp_path / "d.toml"
    path.write_text(
        'policy = "fifo-backfill"\nplacement = "topology"\ninterval = 10\nstate_file = "s.json"\n'
        '[scope]\npartitions = ["gpu"]\n[slurm]\nconf = "etc/slurm.conf"\n'
    )
    with pytest.raises(ConfigError, match=r"\[slurm\]\.conf: no file .*etc/slurm.conf"):
        load_config(path)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text("ClusterName=t\n")
    cfg = load_config(path)
    assert cfg.interval == 10.0 and isinstance(cfg.interval, float)
    assert cfg.state_file == str(tmp_path / "s.json")
    assert cfg.slurm.conf == str(tmp_path / "etc" / "slurm.conf")
    assert (
        cfg.scope.partitions == ("gpu",) and cfg.mode == "site_factor" and cfg.max_changes_per_cycle == 20_000
    )
    assert cfg.policy_label == "fifo-backfill+topology"
    with pytest.raises(AttributeError):
        cfg.interval = 5  # type: ignore[misc]


def test_shipped_example_config_is_valid() -> None:
    cfg = load_config(EXAMPLE)
    assert cfg.placement_hold == 300 and cfg.dry_run is False


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text("policy = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)
    with pytest.raises(ConfigError, match="no daemon config at"):
        load_config(tmp_path / "missing.toml")


def test_record_round_trip_and_damaged_file(tmp_path: Path) -> None:
    rec = Record(
        {
            "7": Touched(
                "7",
                1.0,
                site_factor=5,
                nodes=("node01",),
                nodes_since=2.0,
                admin_comment="n",
                orig_admin_comment="o",
            )
        },
        cycle=3,
    )
    path = tmp_path / "sub" / "state.json"
    rec.save(path)
    back = Record.load(path)
    assert back.jobs == rec.jobs and back.cycle == 3
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]  # no temporary left behind
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="state file"):
        Record.load(path)


@pytest.mark.parametrize(
    ("field", "value"),
    [("orig_site_factor", "x"), ("orig_priority", 1.5), ("orig_nodes", "node01"), ("first_touched", None)],
)
def test_a_state_entry_of_the_wrong_kind_stops_the_load_naming_the_field(
    tmp_path: Path, field: str, value: object
) -> None:
    """Revert sends the orig_ values to scontrol: a damaged one must not be sent."""
    path = tmp_path / "state.json"
    Record({"7": Touched("7", 1.0, site_factor=5)}, cycle=3).save(path)
    data = json.loads(path.read_text())
    data["jobs"]["7"][field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=f"field '{field}' of job '7' is"):
        Record.load(path)
    data["jobs"]["7"][field] = Touched("7", 1.0).to_json()[field]
    data["cycle"] = "x"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="cycle is 'x'"):
        Record.load(path)


def test_every_state_field_has_a_kind_to_check() -> None:
    from slurmrl.daemon.record import _TOUCHED_KINDS

    assert set(_TOUCHED_KINDS) == set(Touched.__dataclass_fields__)


@given(st.integers(1, 5000), st.integers(1, 10**6))
def test_site_factors_are_bounded_and_monotone(count: int, top: int) -> None:
    values = [site_factor_for(r, count, top) for r in range(min(count, 300))]
    assert values[0] == top and all(0 <= v <= top for v in values)
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))
    if count <= 300 and count > 1:
        assert values[-1] == 0


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40))
def test_notes_strip_back_to_the_admin_text(orig: str) -> None:
    note = "slurmrl: sf=3 policy=fifo"
    if "slurmrl:" not in orig:
        assert strip_note(compose_comment(orig, note)) == orig


def test_daemon_help_imports_no_torch() -> None:
    code = (
        "import sys; from slurmrl.cli import main\n"
        "try:\n    main(['daemon', '--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "check" in out.stdout and "revert" in out.stdout


def test_cli_bad_config_fails_fast_naming_keys(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('policy = "sjf-oracle"\nmax_changes_per_cycle = 0\n')
    runner = CliRunner()
    for args in (
        ["daemon", "--config", str(path), "--once"],
        ["daemon", "check", "--config", str(path)],
        ["daemon", "revert", "--config", str(path)],
    ):
        res = runner.invoke(main, args)
        assert res.exit_code != 0
        assert "max_changes_per_cycle: must be greater than 0" in res.output and "Traceback" not in res.output
        # revert needs no policy, so its name is not checked there
        assert ("cannot be deployed" in res.output) == (args[1] != "revert")


def test_revert_gives_back_whatever_policy_the_config_names(tmp_path: Path) -> None:
    """A policy deleted or misnamed since the daemon ran must not keep its values from being restored."""
    path = tmp_path / "site.toml"
    state = tmp_path / "state.json"
    path.write_text(f'policy = "nosuch/ckpt"\nstate_file = "{state}"\naudit_log = "{tmp_path / "a.jsonl"}"\n')
    runner = CliRunner()
    assert "no checkpoint folder" in runner.invoke(main, ["daemon", "check", "--config", str(path)]).output
    res = runner.invoke(main, ["daemon", "revert", "--config", str(path)])
    assert res.exception is None, res.output
    assert "0 job(s) in the record" in res.output


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["kind", "cycle", "time", "seconds", "field", "error", "ok", "jobs", "problem"]),
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=True, allow_infinity=True)
            | st.text(max_size=4)
            | st.sampled_from(["cycle", "change", "revert", "history", "preempt", "error"])
            | st.lists(st.integers(), max_size=2),
        ),
        max_size=6,
    )
)
def test_status_reads_any_damaged_or_edited_audit_log(
    tmp_path_factory: pytest.TempPathFactory, records
) -> None:
    """A cycle number of 'x' or a time of 1e400 in the log once ended status in a traceback."""
    tmp = tmp_path_factory.mktemp("status")
    (tmp / "audit.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg = tmp / "d.toml"
    cfg.write_text('state_file = "state.json"\naudit_log = "audit.jsonl"\n')
    res = CliRunner().invoke(main, ["status", "--config", str(cfg)])
    assert res.exception is None, res.output


def test_status_summarises_cycles(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    lines = [
        {
            "time": 1.0,
            "kind": "cycle",
            "cycle": 1,
            "ok": True,
            "seconds": 0.2,
            "in_scope": 3,
            "planned": 4,
            "sent": 4,
            "deferred": 0,
        },
        {"time": 0.5, "kind": "history", "jobs": 482, "unreadable": 0, "problem": ""},
        {"time": 1.0, "kind": "change", "cycle": 1, "job": "5", "field": "site_factor", "dry_run": False},
        {"time": 2.0, "kind": "cycle", "cycle": 2, "ok": False, "error": "slurmctld down"},
    ]
    audit.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    Record({"5": Touched("5", 1.0, site_factor=9)}, cycle=2).save(tmp_path / "state.json")
    cfg = tmp_path / "d.toml"
    cfg.write_text('state_file = "state.json"\naudit_log = "audit.jsonl"\n')
    res = CliRunner().invoke(main, ["status", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    assert "jobs with daemon-set values: 1 (site_factor=1)" in res.output
    assert "last cycle: #2" in res.output and "FAILED" in res.output
    assert "site_factor=1" in res.output and "slurmctld down" in res.output
    assert "history at the last start" in res.output and "482 ended jobs from accounting" in res.output
    assert "requeued" not in res.output  # said only where the daemon preempts


def test_status_counts_requeues_and_shows_a_refused_one(tmp_path: Path) -> None:
    from slurmrl.daemon.record import Preempted

    lines = [
        {"time": 1.0, "kind": "preempt", "cycle": 1, "job": "5", "times": 1, "dry_run": False},
        {"time": 1.0, "kind": "preempt", "cycle": 1, "job": "6", "dry_run": True},
        {
            "time": 2.0,
            "kind": "preempt_error",
            "cycle": 2,
            "job": "7",
            "error": "Only batch jobs are accepted",
        },
    ]
    (tmp_path / "audit.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ended = Preempted("6", 1.0, 40.0, 1, ended=2.0)  # kept for the history, no longer listed
    Record(preempted={"5": Preempted("5", 1.0, 80.0, 1), "6": ended}).save(tmp_path / "state.json")
    assert Record.load(tmp_path / "state.json").preempted["6"] == ended
    cfg = tmp_path / "d.toml"
    cfg.write_text('state_file = "state.json"\naudit_log = "audit.jsonl"\n')
    res = CliRunner().invoke(main, ["status", "--config", str(cfg)])
    assert res.exception is None, res.output
    assert "jobs it requeued, still listed: 1 (requeues in the audit log: 1)" in res.output
    assert "Only batch jobs are accepted" in res.output


def test_a_subcommand_reads_the_config_given_before_it(tmp_path: Path) -> None:
    """``daemon --config FILE revert`` once read /etc/slurmrl/daemon.toml: another daemon's state file."""
    path = tmp_path / "site.toml"
    path.write_text("max_changes_per_cycle = 0\n")
    runner = CliRunner()
    for sub in ("check", "revert"):
        res = runner.invoke(main, ["daemon", "--config", str(path), sub])
        assert res.exit_code != 0 and "max_changes_per_cycle" in res.output, res.output
        same = runner.invoke(main, ["daemon", "--config", str(path), sub, "--config", str(path)])
        assert "max_changes_per_cycle" in same.output, same.output
        other = runner.invoke(
            main, ["daemon", "--config", str(path), sub, "--config", str(tmp_path / "b.toml")]
        )
        assert other.exit_code == 2 and "give one" in other.output


@pytest.mark.parametrize("flag", ["--dry-run", "--once"])
def test_loop_flags_before_a_subcommand_are_refused(tmp_path: Path, flag: str) -> None:
    """``daemon --dry-run revert`` would give everything back while looking like a dry run."""
    path = tmp_path / "site.toml"
    path.write_text('policy = "fifo"\n')
    res = CliRunner().invoke(main, ["daemon", flag, "--config", str(path), "revert"])
    assert res.exit_code == 2 and "takes neither" in res.output


def test_a_checkpoint_folder_is_taken_relative_to_the_config_and_checked(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    cfg = parse_config({"policy": "./ckpt"}, base=tmp_path)
    assert cfg.policy == str(folder)
    with pytest.raises(ConfigError, match="no checkpoint folder .*nowhere"):
        parse_config({"policy": "nowhere/ckpt"}, base=tmp_path)
