"""The ``slurmrl`` command line.

Subcommands are imported only when invoked (click's lazy-group pattern), so
``slurmrl daemon --help`` on a controller never pays for torch or pandas.
"""

from __future__ import annotations

import importlib

import click

from slurmrl._version import __version__
from slurmrl.errors import SlurmrlError
from slurmrl.process_settings import one_blas_thread, skip_last_collection

# name -> "module:attribute" of the click command
COMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("slurmrl.cli.simulate:simulate", "Replay a trace on a cluster under one policy."),
    "compare": ("slurmrl.cli.simulate:compare", "Replay a trace under several policies and tabulate them."),
    "sweep": (
        "slurmrl.cli.sweep:sweep",
        "Run a grid of workloads x policies x seeds x options locally or as Slurm job arrays.",
    ),
    "policies": ("slurmrl.cli.policies:policies", "List registered policies and placements."),
    "scenarios": ("slurmrl.cli.scenarios:scenarios", "List the named benchmark scenarios."),
    "slurm": ("slurmrl.cli.slurm:slurm", "Read the live Slurm queue, nodes and GPU topology."),
    "cluster": ("slurmrl.cli.slurm:cluster", "Build or convert cluster specs."),
    "replay": (
        "slurmrl.cli.replay:replay",
        "Replay a trace window on the live Slurm cluster beside its simulation.",
    ),
    "report": ("slurmrl.cli.report:report", "Render results as a static HTML site."),
    "train": ("slurmrl.cli.rl:train", "Train an RL scheduling policy with PPO on trace scenarios."),
    "evaluate": ("slurmrl.cli.rl:evaluate", "Replay a workload under a policy or a trained checkpoint."),
    "adapt": ("slurmrl.cli.adapt:adapt", "Adapt a meta-learned placement policy to a shifted workload."),
    "daemon": ("slurmrl.cli.daemon:daemon", "Run a policy beside slurmctld (check, revert)."),
    "status": ("slurmrl.cli.daemon:status", "Summarise the daemon's recent cycles."),
    "traces": ("slurmrl.cli.traces:traces", "List the public traces and fetch them, verified."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        target, _ = COMMANDS[cmd_name]
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Summaries come from the table so --help imports no subcommand module.
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        one_blas_thread()  # small matrices: BLAS threads cost CPU, not wall (slurmrl.process_settings)
        try:
            return super().invoke(ctx)
        except SlurmrlError as exc:
            raise click.ClickException(exc.format()) from None


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="slurmrl")
def main() -> None:
    """Scheduling policies for deep-learning GPU jobs on Slurm clusters.

    Replay DL job traces offline to compare policies, then run the chosen
    policy beside slurmctld with the daemon.
    """


def run() -> None:  # pragma: no cover - console-script shim
    try:
        main(prog_name="slurmrl")
    finally:
        skip_last_collection()  # the command is done: exiting need not walk what it built


if __name__ == "__main__":  # pragma: no cover
    run()
