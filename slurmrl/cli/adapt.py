"""``slurmrl adapt``: a few episodes of training on a shifted workload, and the adaptation curve."""

from __future__ import annotations

from pathlib import Path

import click

from slurmrl.errors import ConfigError


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(s.strip() for s in (text or "").split(",") if s.strip())


def _checkpoint_dir(policy: str) -> Path:
    """``meta-rl`` means the shipped meta-learned checkpoint; anything else must be a checkpoint folder."""
    from slurmrl.rl.checkpoints import shipped_policy_dir
    from slurmrl.rl.meta.policy import DEFAULT_POLICY

    if policy == "meta-rl":
        return shipped_policy_dir(DEFAULT_POLICY)
    if Path(policy).is_dir():
        return Path(policy)
    raise ConfigError(f"--policy '{policy}' is neither 'meta-rl' nor a checkpoint folder")


def _split(scenario: str, eval_scenarios: tuple[str, ...], held_out_jobs: int, seed: int):
    from slurmrl.rl.meta.adapt import Split, split_last
    from slurmrl.scenarios import get_scenario
    from slurmrl.sim.experiment import prepare

    if get_scenario(scenario).role == "eval":
        raise ConfigError(
            f"scenario '{scenario}' is held out for evaluation; adapt on another one",
            hint="pass it with --eval-scenario instead",
        )
    workload = prepare(scenario=scenario, seed=seed)
    if not any(j.model for j in workload.trace.jobs):
        click.echo(f"note: {scenario} records no model class; interference-aware placement is blind there")
    if not eval_scenarios:
        return split_last(workload, held_out_jobs)
    held = tuple(prepare(scenario=name, seed=seed) for name in eval_scenarios)
    return Split(workload, held)


@click.command()
@click.option(
    "--policy",
    default="meta-rl",
    show_default=True,
    help="'meta-rl' (the shipped meta-learned checkpoint) or a Harmony-format checkpoint folder.",
)
@click.option("--scenario", required=True, help="The shifted workload to adapt on (see `slurmrl scenarios`).")
@click.option("--episodes", type=int, default=20, show_default=True, help="Adaptation episodes (K).")
@click.option(
    "--eval-scenario",
    "eval_scenarios",
    default=None,
    help="Comma-separated scenarios the curve is measured on; default: the last --held-out-jobs "
    "jobs of --scenario, which adaptation then never sees.",
)
@click.option("--held-out-jobs", type=int, default=500, show_default=True)
@click.option("--episode-jobs", type=int, default=256, show_default=True, help="Jobs per adaptation episode.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for the adapted checkpoint (loadable by `slurmrl evaluate --policy DIR`) and the curve.",
)
def adapt(
    policy: str,
    scenario: str,
    episodes: int,
    eval_scenarios: str | None,
    held_out_jobs: int,
    episode_jobs: int,
    seed: int,
    out: Path,
) -> None:
    """Adapt a meta-learned placement policy to a workload; print the adaptation curve."""
    from slurmrl.extras import require_extra

    require_extra("train")
    from slurmrl.rl.meta.adapt import CURVE_CSV, AdaptConfig, run_adaptation

    if (out / CURVE_CSV).is_file():
        raise ConfigError(f"{out} already holds an adaptation run", hint="pick another output folder")
    from slurmrl.scenarios import get_scenario

    cfg = AdaptConfig(episodes=episodes, episode_jobs=episode_jobs, seed=seed)
    for name in (scenario, *_names(eval_scenarios)):
        get_scenario(name)  # an unknown name fails here, before any loading
    source = _checkpoint_dir(policy)
    split = _split(scenario, _names(eval_scenarios), held_out_jobs, seed)
    curve = run_adaptation(source, split, cfg, out)
    click.echo(f"held-out: {', '.join(w.label for w in split.held_out)}")
    click.echo(f"{'init':<10} {'episodes':>8} {'avg JCT (s)':>12} {'train wall (s)':>14}")
    for p in curve:
        click.echo(f"{p.init:<10} {p.episodes:>8} {p.avg_jct:>12.1f} {p.train_wall_s:>14.1f}")
    click.echo(f"adapted checkpoint and {CURVE_CSV} in {out}")
