"""``slurmrl evaluate`` and ``slurmrl train`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.rl.topdrl import shipped_policy_dir

ARGS = [
    "--trace",
    "embedded:philly-sample",
    "--cluster",
    "1x2x8:v100",
    "--limit",
    "150",
    "--json",
    "--no-progress",
]


def test_evaluate_checkpoint_dir_prints_the_simulate_keys() -> None:
    runner = CliRunner()
    sim = runner.invoke(main, ["simulate", "--policy", "fifo", *ARGS])
    ev = runner.invoke(main, ["evaluate", "--policy", str(shipped_policy_dir()), *ARGS])
    assert sim.exit_code == 0, sim.output
    assert ev.exit_code == 0, ev.output
    a, b = json.loads(sim.output), json.loads(ev.output)
    assert set(a) == set(b)
    assert b["finished"] == 150
    assert b["meta"]["placement"] == "type-aware"


def test_evaluate_by_registered_name_matches_the_folder() -> None:
    runner = CliRunner()
    by_name = json.loads(runner.invoke(main, ["evaluate", "--policy", "topdrl", *ARGS]).output)
    by_dir = json.loads(
        runner.invoke(main, ["evaluate", "--policy", str(shipped_policy_dir()), *ARGS]).output
    )
    assert by_name["avg_jct"] == by_dir["avg_jct"]


def test_unknown_policy_and_eval_scenario_are_user_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["evaluate", "--policy", "topdlr", *ARGS])
    assert res.exit_code != 0 and "did you mean" in res.output and "Traceback" not in res.output
    res = runner.invoke(main, ["train", "--scenario", "philly-512-week3", "--out", str(tmp_path / "r")])
    assert res.exit_code != 0 and "held out" in res.output
    res = runner.invoke(
        main, ["train", "--policy", "harmony", "--lead", "srtf-oracle", "--out", str(tmp_path / "h")]
    )
    assert isinstance(res.exception, SystemExit) and "deployable" in res.output and "srtf-limit" in res.output
    assert not (tmp_path / "h").exists()


def test_meta_rl_lead_names_the_ordering_its_checkpoint_places_under(tmp_path: Path) -> None:
    """The ordering given to meta-training is the one the checkpoint keeps (and the policy loads)."""
    from slurmrl.rl.harmony.policy import read_checkpoint

    runner = CliRunner()
    args = [
        "train",
        "--policy",
        "meta-rl",
        "--scenario",
        "gavel-msr-b436b2",
        "--steps",
        "60",
        "--episode-jobs",
        "20",
    ]
    res = runner.invoke(main, [*args, "--lead", "srtf-limit", "--out", str(tmp_path / "bad")])
    assert isinstance(res.exception, SystemExit) and "non-preemptive" in res.output
    assert not (tmp_path / "bad").exists()
    res = runner.invoke(main, [*args, "--lead", "sjf-limit", "--out", str(tmp_path / "led")])
    assert res.exception is None, res.output
    assert json.loads((tmp_path / "led" / "config.json").read_text())["ordering"] == "sjf-limit"
    assert read_checkpoint(tmp_path / "led")[0].ordering == "sjf-limit"


def test_harmony_lead_with_a_placement_trains_a_led_pointer(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(main, [*HARMONY, "--lead", "sjf-limit+nosuch", "--out", str(tmp_path / "bad")])
    assert isinstance(res.exception, SystemExit) and "not a placement" in res.output
    assert not (tmp_path / "bad").exists()
    led = ["--lead", "sjf-limit+type-aware", "--validate", "gavel-msr-b436b2"]
    res = runner.invoke(main, [*HARMONY, *led, "--out", str(tmp_path / "led")])
    assert res.exception is None, res.output
    config = json.loads((tmp_path / "led" / "config.json").read_text())
    assert (config["ordering"], config["placement"], config["lead"]) == ("sjf-limit", "type-aware", True)
    run = json.loads((tmp_path / "led" / "run.json").read_text())["harmony"]
    assert run["validate"] == ["gavel-msr-b436b2"] and run["eval_every"] == 100
    assert (
        config["training"]["episode"] == 0
    )  # the untrained pointer, checked on the whole VC before episode 1


def test_harmony_trains_under_a_preemptive_ordering(tmp_path: Path) -> None:
    """The checkpoint keeps the preemptive ordering, and its policy preempts."""
    from slurmrl.rl.harmony.policy import HarmonyPolicy

    args = ["--lead", "srtf-limit+type-aware", "--reward", "jct", "--out", str(tmp_path / "srtf")]
    res = CliRunner().invoke(main, [*HARMONY, *args])
    assert res.exception is None, res.output
    config = json.loads((tmp_path / "srtf" / "config.json").read_text())
    assert (config["ordering"], config["placement"], config["lead"]) == ("srtf-limit", "type-aware", True)
    assert HarmonyPolicy.from_dir(tmp_path / "srtf").preemptive


def test_compare_takes_a_checkpoint_folder_as_a_policy() -> None:
    runner = CliRunner()
    folder = str(shipped_policy_dir())
    args = ["--trace", "embedded:philly-sample", "--cluster", "1x2x8:v100", "--limit", "150", "--no-progress"]
    res = runner.invoke(main, ["compare", "--policies", f"{folder}+topology,topdrl", "--json", *args])
    assert res.exit_code == 0, res.output
    by_dir, by_name = json.loads(res.output)
    assert by_dir["policy"] == folder and by_dir["placement"] == "topology"
    assert by_dir["avg_jct"] == by_name["avg_jct"]  # topdrl places type-aware: topology on one GPU type


def test_every_trainable_policy_has_a_trainer() -> None:
    from slurmrl.cli.rl import TRAINERS, TrainRequest

    assert "topdrl" in TRAINERS
    runner = CliRunner()
    res = runner.invoke(main, ["train", "--policy", "nosuch", "--out", "/nonexistent/run"])
    assert res.exit_code != 0 and "trainable: " in res.output and "Traceback" not in res.output
    assert TrainRequest.__dataclass_params__.frozen  # type: ignore[attr-defined]


HARMONY = [
    "train",
    "--policy",
    "harmony",
    "--scenario",
    "philly-sample",
    "--steps",
    "40",
    "--episode-jobs",
    "20",
]


def _weights(out: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in sorted(out.glob("seed-*/model.safetensors"))}


def test_train_seeds_on_a_pool_equal_seeds_trained_one_by_one(tmp_path: Path) -> None:
    runner = CliRunner()
    for jobs in ("1", "2"):
        res = runner.invoke(main, [*HARMONY, "--seeds", "2", "--jobs", jobs, "--out", str(tmp_path / jobs)])
        assert res.exception is None, res.output
        assert "trained 2 seeds" in res.output
    serial, pooled = _weights(tmp_path / "1"), _weights(tmp_path / "2")
    assert sorted(serial) == ["seed-0", "seed-1"]
    assert serial == pooled
    assert serial["seed-0"] != serial["seed-1"]


def test_train_seeds_dry_run_shows_the_array(tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("submitit")
    args = [
        *HARMONY,
        "--seeds",
        "3",
        "--seed",
        "4",
        "--executor",
        "slurm",
        "--dry-run",
        "--out",
        str(tmp_path),
    ]
    res = CliRunner().invoke(main, args)
    assert res.exception is None, res.output
    assert "#SBATCH --array=0-2%3" in res.output
    assert f"seed 6 -> {tmp_path / 'seed-6'}" in res.output
    assert not any(tmp_path.glob("seed-*"))


def test_harmony_paired_reward_trains_warm_windows_without_the_reward_model(tmp_path: Path) -> None:
    runner = CliRunner()
    for bad, says in (
        (["--reward", "throughput"], "each job's slowdown (default) or 'jct'"),
        (["--reward", "jct", "--warm-policy", "fifo"], "scheduled by its ordering"),
        (["--warm-jobs", "10"], "warm_jobs needs reward 'jct'"),
    ):
        res = runner.invoke(main, [*HARMONY, *bad, "--out", str(tmp_path / "bad")])
        assert res.exit_code != 0 and says in res.output and "Traceback" not in res.output
        assert not (tmp_path / "bad").exists()
    args = ["--lead", "sjf-limit+type-aware", "--reward", "jct", "--warm-jobs", "10"]
    res = runner.invoke(main, [*HARMONY, *args, "--out", str(tmp_path / "jct")])
    assert res.exception is None, res.output
    run = json.loads((tmp_path / "jct" / "run.json").read_text())["harmony"]
    assert (run["env"]["reward"], run["env"]["warm_jobs"], run["replay_forced"]) == ("jct", 10, False)
    assert "0 predicted" in res.output


def test_harmony_checks_replay_each_validation_scenario_under_several_seeds(tmp_path: Path) -> None:
    from slurmrl.rl.harmony.env import EnvConfig, PlacementEnv
    from slurmrl.rl.harmony.train import HarmonyConfig, check_windows
    from tests.rl.harmony.common import small_workload

    env = PlacementEnv(EnvConfig(episode_jobs=30), workloads=[small_workload(60, 1)])
    windows = check_windows(HarmonyConfig(validate=("gavel-msr-b436b2",), validate_seeds=2), env)
    assert [(w.label, w.seed) for w in windows] == [(windows[0].label, 0), (windows[0].label, 1)]
    runner = CliRunner()
    for args in (
        ["train", "--policy", "harmony", "--validate-seeds", "2"],  # no --validate
        ["train", "--policy", "maifs", "--validate-seeds", "2"],
        ["train", "--policy", "topdrl", "--validate-seeds", "2"],  # unled: no default window
        ["train", "--policy", "meta-rl", "--validate", "philly-448-week2-val", "--validate-seeds", "2"],
    ):
        res = runner.invoke(main, [*args, "--out", str(tmp_path / "bad")])
        assert res.exit_code != 0 and "--validate-seeds" in res.output and "Traceback" not in res.output
        assert not (tmp_path / "bad").exists()
    led = ["--lead", "sjf-limit+type-aware", "--validate", "gavel-msr-b436b2", "--validate-seeds", "2"]
    res = runner.invoke(main, [*HARMONY, *led, "--out", str(tmp_path / "led")])
    assert res.exception is None, res.output
    run = json.loads((tmp_path / "led" / "run.json").read_text())["harmony"]
    assert run["validate_seeds"] == 2


def test_start_stride_reaches_topdrl_episodes_and_no_other_trainer(tmp_path: Path, monkeypatch) -> None:
    import slurmrl.rl.ppo as ppo

    asked = []
    monkeypatch.setattr(
        ppo, "train", lambda cfg, out, **_: asked.append(cfg) or ppo.TrainResult(out, 0, 0, 0.0, 0.0)
    )
    runner = CliRunner()
    args = ["train", "--scenario", "philly-512-week1", "--lead", "sjf-limit", "--no-progress"]
    res = runner.invoke(main, [*args, "--start-stride", "256", "--out", str(tmp_path / "run")])
    assert res.exception is None, res.output
    assert asked[0].env_overrides["start_stride"] == 256 and asked[0].env == "topdrl-philly-v2"
    res = runner.invoke(main, [*args, "--out", str(tmp_path / "plain")])
    assert res.exception is None and "start_stride" not in asked[1].env_overrides
    res = runner.invoke(main, [*HARMONY, "--start-stride", "8", "--out", str(tmp_path / "harmony")])
    assert res.exit_code == 1 and "--start-stride: only topdrl" in res.output and not asked[2:]
    res = runner.invoke(main, [*args, "--start-stride", "0", "--out", str(tmp_path / "zero")])
    assert res.exit_code == 2 and "--start-stride" in res.output


def record_ppo_trainers(monkeypatch) -> list[object]:
    """topdrl's and maifs's trainers replaced by ones that record the config they are given."""
    import slurmrl.rl.maifs.trainer as maifs
    import slurmrl.rl.ppo as ppo

    asked: list[object] = []
    monkeypatch.setattr(
        ppo, "train", lambda cfg, out, **_: asked.append(cfg) or ppo.TrainResult(out, 0, 0, 0.0, 0.0)
    )
    monkeypatch.setattr(
        maifs, "train", lambda cfg, out, **_: asked.append(cfg) or maifs.MaifsResult(out, 0, 0, 0.0, 0.0, 0.0)
    )
    return asked


def test_validate_seeds_reach_topdrl_and_maifs(tmp_path: Path, monkeypatch) -> None:
    """Both trainers replay each seed of their validation window per check (topdrl's led default window too)."""
    import slurmrl.rl.maifs.trainer as maifs

    asked = record_ppo_trainers(monkeypatch)
    runner = CliRunner()
    topdrl = ["train", "--scenario", "philly-512-week1", "--lead", "sjf-limit", "--no-progress"]
    res = runner.invoke(main, [*topdrl, "--validate-seeds", "3", "--out", str(tmp_path / "topdrl")])
    assert res.exception is None, res.output
    assert (asked[0].validate, asked[0].validate_seeds) == ("philly-512-week2-val", 3)
    maifs_args = ["train", "--policy", "maifs", "--scenario", "philly-512-week1", "--no-progress"]
    res = runner.invoke(
        main,
        [
            *maifs_args,
            "--validate",
            "philly-448-week2-val",
            "--validate-seeds",
            "2",
            "--out",
            str(tmp_path / "m"),
        ],
    )
    assert res.exception is None, res.output
    assert (asked[1].validate, asked[1].validate_seeds) == ("philly-448-week2-val", 2)
    from tests.rl.maifs.common import small_workload

    env = maifs.ElasticEnv(asked[1].env, workloads=[small_workload(20)])
    windows = maifs.checkpoint_windows(env, asked[1])
    assert [(w.label, w.seed) for w in windows] == [(windows[0].label, 0), (windows[0].label, 1)]


def test_update_epochs_reach_topdrl_and_maifs_and_no_other_trainer(tmp_path: Path, monkeypatch) -> None:
    """Both PPO trainers run the epochs asked; left out, each keeps its own default; harmony has none."""
    asked = record_ppo_trainers(monkeypatch)
    runner = CliRunner()
    topdrl = ["train", "--scenario", "philly-512-week1", "--lead", "sjf-limit", "--no-progress"]
    maifs_args = ["train", "--policy", "maifs", "--scenario", "philly-512-week1", "--no-progress"]
    for n, args in enumerate((topdrl, maifs_args)):
        res = runner.invoke(main, [*args, "--update-epochs", "2", "--out", str(tmp_path / f"two-{n}")])
        assert res.exception is None, res.output
        res = runner.invoke(main, [*args, "--out", str(tmp_path / f"default-{n}")])
        assert res.exception is None, res.output
    assert [cfg.update_epochs for cfg in asked] == [2, 4, 2, 4]
    res = runner.invoke(main, [*HARMONY, "--update-epochs", "2", "--out", str(tmp_path / "harmony")])
    assert res.exit_code == 1 and "--update-epochs: harmony" in res.output and len(asked) == 4
    assert not (tmp_path / "harmony").exists()
    res = runner.invoke(main, [*topdrl, "--update-epochs", "0", "--out", str(tmp_path / "zero")])
    assert res.exit_code == 2 and "--update-epochs" in res.output


def test_training_numbers_out_of_range_are_user_errors_before_anything_runs(tmp_path: Path) -> None:
    """A discount above 1 made the network's outputs NaN and a negative learning rate reached
    torch's optimiser: both, and the counts and limits that were taken silently, are refused
    by name, and no run folder is written."""
    runner = CliRunner()
    out = tmp_path / "run"
    for flag, value in [
        ("--gamma", "2"),
        ("--lr", "-1"),
        ("--steps", "0"),
        ("--target-kl", "-0.1"),
        ("--wall-limit", "-1"),
        ("--warm-jobs", "-3"),
        ("--makespan-weight", "-1"),
        ("--episode-jobs", "0"),
    ]:
        res = runner.invoke(main, ["train", "--policy", "topdrl", flag, value, "--out", str(out)])
        assert res.exit_code == 2 and isinstance(res.exception, SystemExit), (flag, res.output)
        assert f"Invalid value for '{flag}'" in res.output
        assert not out.exists()
