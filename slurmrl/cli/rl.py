"""``slurmrl train`` and ``slurmrl evaluate``: the RL commands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import click

from slurmrl.cli.numbers import Finite
from slurmrl.cli.options import (
    build_executor,
    build_settings,
    build_workload,
    executor_options,
    jobs_option,
    run_tasks,
    seed_list,
    sim_options,
    workload_options,
)
from slurmrl.errors import ConfigError


@dataclass(frozen=True)
class TrainRequest:
    """What ``slurmrl train`` was asked for; ``None`` leaves the trainer's own default."""

    scenarios: tuple[str, ...]
    steps: int
    workers: int
    vector: str
    seed: int
    out: Path
    resume: bool
    progress: bool
    episode_jobs: int | None = None
    reward: str | None = None
    gamma: float | None = None
    learning_rate: float | None = None
    target_kl: float | None = None
    update_epochs: int | None = None
    makespan_weight: float | None = None
    warm_policy: str | None = None
    warm_jobs: int | None = None
    wall_limit: float | None = None
    lead: str | None = None
    validate: str | None = None
    validate_seeds: int | None = None
    start_stride: int | None = None


def _given(**values: object) -> dict[str, object]:
    return {k: v for k, v in values.items() if v is not None}


def train_topdrl(req: TrainRequest) -> None:
    """PPO on ``topdrl-philly-v1`` episodes (warm-started, makespan-aware reward), gamma near 1, target KL.

    With ``--lead`` the episodes are ``topdrl-philly-v2``'s: the window follows that
    heuristic (a zero network output replays it), rewards are paired with its own
    replay of the same jobs, the critic is a network of its own, and the greedy
    policy is replayed on ``--validate`` (default ``philly-512-week2-val``) to keep
    the best weights in ``OUT/best``.
    """
    from slurmrl.rl.ppo import PPOConfig
    from slurmrl.rl.ppo import train as run_training

    led = bool(req.lead)
    overrides: dict[str, object] = {"scenarios": req.scenarios}
    if led:
        overrides["lead"] = req.lead
    overrides |= _given(
        episode_jobs=req.episode_jobs,
        reward=req.reward,
        makespan_weight=req.makespan_weight,
        warm_policy=req.warm_policy,
        warm_jobs=req.warm_jobs,
        start_stride=req.start_stride,
    )
    cfg = PPOConfig(
        env="topdrl-philly-v2" if led else "topdrl-philly-v1",
        env_overrides=overrides,
        total_steps=req.steps,
        num_envs=req.workers,
        vector=req.vector,
        seed=req.seed,
        num_steps=512,
        gamma=req.gamma if req.gamma is not None else 0.999,
        learning_rate=req.learning_rate if req.learning_rate is not None else 3e-3,
        target_kl=req.target_kl if req.target_kl is not None else 0.02,
        **_given(update_epochs=req.update_epochs),
        # No yardstick inside the run: a replay of a whole training week (the only
        # window long enough to queue, see held_out_workload) costs about a minute;
        # `slurmrl evaluate --policy DIR --scenario philly-512-week2` measures it after.
        eval_every=0,
        wall_limit_s=req.wall_limit or 0.0,
        separate_critic=led,
        validate_every=15,
        validate=(req.validate or "philly-512-week2-val") if led else (req.validate or ""),
        validate_seeds=req.validate_seeds or 1,
    )
    result = run_training(cfg, req.out, resume=req.resume, progress=req.progress, log=click.echo)
    click.echo(
        f"trained {result.updates} updates, {result.steps} decisions in {result.wall_seconds:.0f} s wall, "
        f"{result.cpu_seconds:.0f} s CPU; checkpoint in {result.out}"
    )
    if result.last_eval_jct == result.last_eval_jct:
        click.echo(f"held-out average JCT {result.last_eval_jct:.0f} s")


# Episodes between harmony's checks when they replay --validate scenarios whole (each check
# costs about as much as 100 episodes; the yardstick's last jobs are checked every 20).
HARMONY_VALIDATE_EVERY = 100


def _check_ordering(policy: str, lead: str | None, *, preemptive: bool = False) -> None:
    """A Harmony-style placement agent places the jobs of a deployable ordering.

    Harmony may train under a preemptive one (its episodes then preempt as the
    daemon does with ``preempt = "requeue"``); meta-rl's adaptation episodes
    have not been checked under preemption, so it keeps to the others.
    """
    from slurmrl.rl.harmony.policy import ORDERINGS, PREEMPTIVE_ORDERINGS

    allowed = ORDERINGS + PREEMPTIVE_ORDERINGS if preemptive else ORDERINGS
    if lead and lead not in allowed:
        kind = "deployable" if preemptive else "deployable and non-preemptive"
        raise click.ClickException(
            f"--lead: {policy}'s ordering must be {kind} ({', '.join(allowed)}), not '{lead}'"
        )


def _check_validate_seeds(policy: str, opts: dict[str, object]) -> None:
    """``--validate-seeds`` needs a validation window: ``--validate`` (or, for topdrl, ``--lead``'s default)."""
    if opts["validate_seeds"] is None:
        return
    if policy == "meta-rl":
        raise click.ClickException(
            "--validate-seeds: meta-rl keeps its last meta-weights, it validates nothing"
        )
    if not opts["validate"] and not (policy == "topdrl" and opts["lead"]):
        raise click.ClickException(
            f"--validate-seeds: {policy} replays no validation window here; give --validate too"
        )


def train_harmony(req: TrainRequest) -> None:
    """Harmony placement agent (slurmrl.rl.harmony.train); ``--steps`` counts placement decisions, ``--lead`` names the ordering.

    ``--reward jct`` pays the paired waiting area instead of each job's own
    slowdown, ``--warm-jobs N`` lets the ordering schedule N earlier jobs before
    each episode's window.
    """
    from slurmrl.policy.registry import placement_names
    from slurmrl.rl.harmony.env import EnvConfig
    from slurmrl.rl.harmony.train import HarmonyConfig
    from slurmrl.rl.harmony.train import train as run_harmony

    ordering, _, placement = (req.lead or "").partition("+")
    _check_ordering("harmony", ordering, preemptive=True)
    if placement and placement not in placement_names():
        raise click.ClickException(
            f"--lead: '{placement}' is not a placement ({', '.join(placement_names())}); "
            "ORDERING+PLACEMENT leads the pointer by that placement"
        )
    if req.reward not in (None, "jct"):
        raise click.ClickException(
            f"--reward: harmony's rewards are each job's slowdown (default) or 'jct', not '{req.reward}'"
        )
    if req.warm_policy:
        raise click.ClickException("--warm-policy: harmony's warm-up is scheduled by its ordering (--lead)")
    led = {"fallback": placement, "lead": True} if placement else {}
    env = EnvConfig(
        scenarios=req.scenarios,
        **_given(
            episode_jobs=req.episode_jobs,
            ordering=ordering or None,
            reward=req.reward,
            warm_jobs=req.warm_jobs,
        ),
        **led,
    )
    validate = tuple(s.strip() for s in (req.validate or "").split(",") if s.strip())
    cfg = HarmonyConfig(
        env=env,
        episodes=max(1, req.steps // env.episode_jobs),
        **({"validate": validate, "eval_every": HARMONY_VALIDATE_EVERY} if validate else {}),
        **_given(validate_seeds=req.validate_seeds),
        # Paired episodes are warm-started, where most decisions have one node to go to.
        replay_forced=env.reward == "slowdown",
        seed=req.seed,
        **_given(gamma=req.gamma, learning_rate=req.learning_rate, wall_limit_s=req.wall_limit),
    )
    result = run_harmony(cfg, req.out)
    click.echo(
        f"trained {result.episodes} episodes, {result.decisions} placements ({result.real_rewards} rewards "
        f"from the simulator, {result.predicted_rewards} predicted) in {result.wall_seconds:.0f} s wall, "
        f"{result.cpu_seconds:.0f} s CPU; checkpoint in {result.out}"
    )


def train_maifs(req: TrainRequest) -> None:
    """MAIFS agents (slurmrl.rl.maifs.trainer): MAPPO on elastic episodes (fraction:0.5), wall-limited; ``--lead`` names the heuristic they follow."""
    from slurmrl.policy.registry import policy_entry
    from slurmrl.rl.maifs.trainer import config_from_request
    from slurmrl.rl.maifs.trainer import train as run_maifs

    if req.lead:
        entry = policy_entry(req.lead)
        if not entry.deployable or entry.learned:
            raise click.ClickException(f"--lead: maifs follows a deployable heuristic, not '{req.lead}'")
    cfg = config_from_request(
        req.scenarios,
        steps=req.steps,
        seed=req.seed,
        episode_jobs=req.episode_jobs,
        gamma=req.gamma,
        learning_rate=req.learning_rate,
        target_kl=req.target_kl,
        update_epochs=req.update_epochs,
        wall_limit=req.wall_limit,
        lead=req.lead,
        validate=req.validate,
        validate_seeds=req.validate_seeds,
    )
    result = run_maifs(cfg, req.out)
    click.echo(
        f"trained {result.updates} updates, {result.steps} multi-agent steps in {result.wall_seconds:.0f} s wall, "
        f"{result.cpu_seconds:.0f} s CPU; best yardstick average JCT {result.best_eval_jct:.0f} s; "
        f"checkpoint in {result.out}"
    )


def train_meta(req: TrainRequest) -> None:
    """Reptile meta-training of the Harmony placement network over a workload family (slurmrl.rl.meta); ``--lead`` names the ordering."""
    from slurmrl.rl.meta.reptile import train_request

    _check_ordering("meta-rl", req.lead)
    click.echo(
        train_request(
            req.scenarios,
            steps=req.steps,
            seed=req.seed,
            out=req.out,
            episode_jobs=req.episode_jobs,
            wall_limit=req.wall_limit,
            ordering=req.lead,
        )
    )


# Policy name -> trainer; another agent adds its own entry here.
TRAINERS: dict[str, Callable[[TrainRequest], None]] = {
    "topdrl": train_topdrl,
    "harmony": train_harmony,
    "maifs": train_maifs,
    "meta-rl": train_meta,
}


@dataclass(frozen=True)
class SeedRun:
    """One seed of ``train --seeds``: the trainer and its request, as a pool worker or an array task gets it."""

    policy: str
    request: TrainRequest


def train_seed(run: SeedRun) -> str:
    """Train one seed into its folder (any process: every trainer seeds itself and uses one torch thread)."""
    TRAINERS[run.policy](run.request)
    return str(run.request.out)


def _train_seeds(policy: str, req: TrainRequest, count: int, opts: dict[str, object]) -> None:
    """Seeds SEED..SEED+N-1 into OUT/seed-S, on a local pool or as one Slurm job array."""
    executor = build_executor(opts, req.out / "slurm")
    runs = [
        SeedRun(policy, replace(req, seed=seed, out=req.out / f"seed-{seed}", progress=False))
        for seed in range(req.seed, req.seed + count)
    ]
    click.echo(f"training {count} seeds: {executor.describe(count)}", err=True)
    if opts.pop("dry_run", False):
        for run in runs:
            click.echo(f"  seed {run.request.seed} -> {run.request.out}")
        if executor.name == "slurm":
            click.echo(executor.script(count))  # type: ignore[attr-defined]
        return
    folders = run_tasks(executor, train_seed, runs, "seeds", req.progress)
    click.echo(f"trained {count} seeds: {', '.join(folders)}")


@click.command()
@click.option("--policy", default="topdrl", show_default=True, help="Which agent to train.")
@click.option(
    "--scenario",
    "scenarios",
    default="philly-512-week1,philly-512-week2",
    show_default=True,
    help="Comma-separated training scenarios (same cluster).",
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=400_000,
    show_default=True,
    help="Agent decisions to train for.",
)
@click.option("--workers", type=int, default=2, show_default=True, help="Environments stepped in parallel.")
@click.option(
    "--vector",
    type=click.Choice(["sync", "async"]),
    default="sync",
    show_default=True,
    help="Step environments in this process (sync) or one process each (async).",
)
@click.option("--episode-jobs", type=click.IntRange(min=1), default=None, help="Jobs per training episode.")
@click.option(
    "--reward",
    type=click.Choice(["jct", "throughput", "makespan"]),
    default=None,
    help="topdrl: the episode reward; harmony: jct pays the waiting area paired with its fallback "
    "placement's replay (default: each placed job's own slowdown).",
)
@click.option("--gamma", type=Finite(0.0, 1.0), default=None, help="Discount factor; default: the trainer's.")
@click.option(
    "--lr",
    "learning_rate",
    type=Finite(min=0.0),
    default=None,
    help="Learning rate; default: the trainer's.",
)
@click.option(
    "--target-kl",
    type=Finite(min=0.0, min_open=True),
    default=None,
    help="Early-stop KL per update; default: the trainer's.",
)
@click.option(
    "--update-epochs",
    type=click.IntRange(min=1),
    default=None,
    help="topdrl, maifs: passes over each rollout per PPO update; default: the trainer's (4).",
)
@click.option(
    "--makespan-weight",
    type=Finite(min=0.0),
    default=None,
    help="Weight of the elapsed-time reward term.",
)
@click.option("--warm-policy", default=None, help="Heuristic that schedules before the agent takes over.")
@click.option(
    "--warm-jobs",
    type=click.IntRange(min=0),
    default=None,
    help="Jobs the warm-start heuristic (harmony: its ordering) replays first.",
)
@click.option(
    "--wall-limit",
    type=Finite(min=0.0, min_open=True),
    default=None,
    help="Stop after the update that passes this many seconds.",
)
@click.option(
    "--start-stride",
    type=click.IntRange(min=1),
    default=None,
    help="topdrl: start episodes only at every N-th job, so each start's warm-up is played once "
    "and reused (default 1: any job).",
)
@click.option(
    "--lead",
    default=None,
    help="topdrl: a deployable heuristic the window follows (paired rewards, separate critic, validation); "
    "harmony, meta-rl: the ordering that picks which jobs start (meta-rl: non-preemptive; "
    "harmony: ORDERING+PLACEMENT also starts the pointer as that placement, a logit bonus on its node); "
    "maifs: a deployable heuristic the agents follow (zero logits replay it).",
)
@click.option(
    "--validate",
    default=None,
    help="topdrl, maifs: a training-side scenario the greedy policy is replayed on to keep the best weights "
    "(maifs: instead of the last jobs of its training scenarios); harmony: comma-separated training-side "
    "scenarios replayed whole instead of its yardstick, every 100 episodes.",
)
@click.option(
    "--validate-seeds",
    type=click.IntRange(min=1),
    default=None,
    help="harmony, topdrl, maifs: workload seeds each validation scenario is replayed under per check, "
    "their mean compared (default 1).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Run folder: checkpoints, log.csv, run.json.",
)
@click.option("--resume", is_flag=True, help="Continue the run in --out from its last checkpoint.")
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Train seeds SEED..SEED+N-1, each into OUT/seed-S, in parallel (--executor).",
)
@executor_options
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def train(policy: str, scenarios: str, seeds: int, no_progress: bool, **opts: object) -> None:
    """Train an RL policy; the run folder is a loadable checkpoint.

    With --seeds N every seed is one task: on a local process pool (--jobs,
    every core by default) or one Slurm job array (--executor slurm).
    """
    from slurmrl.extras import require_extra

    require_extra("train")
    from slurmrl.scenarios import get_scenario

    if policy not in TRAINERS:
        raise ConfigError(f"no trainer for policy '{policy}'; trainable: {', '.join(sorted(TRAINERS))}")
    names = tuple(s.strip() for s in scenarios.split(",") if s.strip())
    for name in names:
        sc = get_scenario(name)
        if sc.role == "eval":
            raise ConfigError(
                f"scenario '{name}' is held out for evaluation; train on the 'train' scenarios",
                hint="see `slurmrl scenarios`",
            )
    _check_validate_seeds(policy, opts)
    if opts["update_epochs"] is not None and policy not in ("topdrl", "maifs"):
        raise click.ClickException(
            f"--update-epochs: {policy} trains without PPO epochs; topdrl and maifs have them"
        )
    if opts["start_stride"] is not None and policy != "topdrl":
        raise click.ClickException(
            f"--start-stride: only topdrl's episodes start at a stride, not {policy}'s"
        )
    if int(opts["workers"]) < 1:  # type: ignore[call-overload]
        raise ConfigError(f"--workers must be at least 1, got {opts['workers']}")
    run_opts = {k: opts.pop(k) for k in list(opts) if k not in _REQUEST_FIELDS}
    req = TrainRequest(scenarios=names, progress=not no_progress, **opts)  # type: ignore[arg-type]
    if seeds == 1 and run_opts["executor"] == "local" and not run_opts["dry_run"]:
        TRAINERS[policy](req)
    else:
        _train_seeds(policy, req, seeds, run_opts)


_REQUEST_FIELDS = set(TrainRequest.__dataclass_fields__)


@click.command()
@workload_options
@sim_options
@click.option(
    "--policy",
    required=True,
    help="A registered policy name or a checkpoint folder, or either +PLACEMENT as in compare.",
)
@click.option("--placement", default=None, help="Placement name; default: the policy's own.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (as simulate --json).")
@jobs_option
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
def evaluate(
    policy: str, placement: str | None, as_json: bool, jobs: int | None, no_progress: bool, **opts
) -> None:
    """Replay a workload under a policy, by name or from a trained checkpoint folder.

    With --seeds N the seeds run in parallel, one process per core (--jobs), as simulate's do.
    """
    from slurmrl.cli.simulate import one_policy, print_run, run_one, run_seeds

    policy, placement = one_policy(policy, placement)
    settings = build_settings(opts)
    seeds = seed_list(opts)
    if len(seeds) > 1:
        run_seeds(opts, settings, policy, placement, seeds, jobs, as_json, not no_progress, None)
        return
    workload = build_workload(opts, seed=seeds[0])
    result = run_one(workload, policy, placement, settings, not no_progress)
    print_run(workload, result, as_json, settings)
