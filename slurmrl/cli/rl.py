"""``slurmrl train`` and ``slurmrl evaluate``: the RL commands."""

from __future__ import annotations

from pathlib import Path

import click

from slurmrl.cli.options import (
    build_settings,
    build_workload,
    progress_bar,
    seed_list,
    sim_options,
    workload_options,
)
from slurmrl.errors import ConfigError

TRAINABLE = {"topdrl": "topdrl-philly-v0"}


@click.command()
@click.option("--policy", default="topdrl", show_default=True, help="Which agent to train.")
@click.option(
    "--scenario",
    "scenarios",
    default="philly-512-week1,philly-512-week2",
    show_default=True,
    help="Comma-separated training scenarios (same cluster).",
)
@click.option("--steps", type=int, default=400_000, show_default=True, help="Agent decisions to train for.")
@click.option("--workers", type=int, default=2, show_default=True, help="Environments stepped in parallel.")
@click.option(
    "--vector",
    type=click.Choice(["sync", "async"]),
    default="sync",
    show_default=True,
    help="Step environments in this process (sync) or one process each (async).",
)
@click.option("--episode-jobs", type=int, default=None, help="Jobs per training episode.")
@click.option(
    "--reward", type=click.Choice(["jct", "throughput", "makespan"]), default="jct", show_default=True
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Run folder: checkpoints, log.csv, run.json.",
)
@click.option("--resume", is_flag=True, help="Continue the run in --out from its last checkpoint.")
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def train(
    policy: str,
    scenarios: str,
    steps: int,
    workers: int,
    vector: str,
    episode_jobs: int | None,
    reward: str,
    seed: int,
    out: Path,
    resume: bool,
    no_progress: bool,
) -> None:
    """Train an RL policy with PPO; the run folder is a loadable checkpoint."""
    from slurmrl.extras import require_extra

    require_extra("train")
    from slurmrl.rl.ppo import PPOConfig
    from slurmrl.rl.ppo import train as run_training
    from slurmrl.scenarios import get_scenario

    if policy not in TRAINABLE:
        raise ConfigError(f"no trainer for policy '{policy}'; trainable: {', '.join(TRAINABLE)}")
    names = tuple(s.strip() for s in scenarios.split(",") if s.strip())
    for name in names:
        sc = get_scenario(name)
        if sc.role == "eval":
            raise ConfigError(
                f"scenario '{name}' is held out for evaluation; train on the 'train' scenarios",
                hint="see `slurmrl scenarios`",
            )
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    overrides: dict[str, object] = {"scenarios": names, "reward": reward}
    if episode_jobs is not None:
        overrides["episode_jobs"] = episode_jobs
    cfg = PPOConfig(
        env=TRAINABLE[policy],
        env_overrides=overrides,
        total_steps=steps,
        num_envs=workers,
        vector=vector,
        seed=seed,
    )
    result = run_training(cfg, out, resume=resume, progress=not no_progress)
    click.echo(f"trained {result.steps} decisions in {result.wall_seconds:.0f} s; checkpoint in {result.out}")
    if result.last_eval_jct == result.last_eval_jct:
        click.echo(f"held-out average JCT {result.last_eval_jct:.0f} s")


@click.command()
@workload_options
@sim_options
@click.option("--policy", required=True, help="A registered policy name or a checkpoint folder.")
@click.option("--placement", default=None, help="Placement name; default: the policy's own.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (as simulate --json).")
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def evaluate(policy: str, placement: str | None, as_json: bool, no_progress: bool, **opts) -> None:
    """Replay a workload under a policy, by name or from a trained checkpoint folder."""
    from slurmrl.cli.simulate import print_run, print_seeds
    from slurmrl.sim.experiment import run_policy

    settings = build_settings(opts)
    seeds = seed_list(opts)
    results = []
    for seed in seeds:
        workload = build_workload(opts, seed=seed)
        target: object = policy
        if Path(policy).is_dir():  # a fresh policy per seed: its history of finished jobs starts empty
            from slurmrl.policy.registry import make_placement
            from slurmrl.rl.topdrl import TopDRLPolicy

            target = TopDRLPolicy.from_dir(policy, make_placement(placement) if placement else None)
        with progress_bar(len(workload.trace.jobs), Path(policy).name, not no_progress) as bar:
            results.append(run_policy(workload, target, placement=placement, settings=settings,  # type: ignore[arg-type]
                                      progress=bar))
    if len(seeds) == 1:
        print_run(workload, results[0], as_json, settings)
    else:
        print_seeds(workload, [r.summary for r in results], results[0].meta, seeds, as_json, settings, None)
