"""What a led job-ordering agent could gain over its lead if it knew every run time.

A led topdrl agent acts on one thing: at each pick of a pass it starts one
row of a window (the lead heuristic's starts first, then the rest of its
rank) or stops; the lead's preemptions and wake-ups stand. Whatever
training finds, it finds within that action space and with what Slurm
knows. This benchmark separates the two: it replaces the network by a
clairvoyant scorer (the window job with the least true remaining run time,
or GPU-time, first, never "stop"; it reads true durations, so it is a
bound, never deployable) and replays the same windows under

    lead        the heuristic alone (a zero network: the untrained agent)
    SCORE:K     the lead's window of K rows (topdrl's is 32), picked by the
                clairvoyant scorer: "time" (remaining run time) or "gpu-time"
    O           the clairvoyant reference of the lead's kind (srtf-oracle for a
                preemptive lead, sjf-oracle otherwise), free to rank every job

on training-side windows only (scenarios of role "train"; the default is the
contended validation window), several workload seeds. If a window row sits
near the lead, even knowing every run time earns little there and better
training is unlikely to help; if it sits near O, the action space has the
room and the agent lacks the knowledge.

    python benchmarks/window_ceiling.py [--scenario philly-448-week2-val] [--seeds 0,1,2]
        [--leads gittins-limit,sjf-limit] [--windows time:32,gpu-time:128] [--placement topology] [--jobs 2]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from slurmrl.policy.registry import make_placement
from slurmrl.policy.view import ClusterView
from slurmrl.rl.features import ObsConfig
from slurmrl.rl.lead import lead_policy
from slurmrl.rl.window_policy import LedStep, WindowPolicy
from slurmrl.scenarios.catalog import get_scenario
from slurmrl.sim.experiment import prepare, run_policy

NEVER = -1e15  # the score of "stop": below any job's
SCORES = ("time", "gpu-time")  # least remaining run time, or least remaining GPU-time (x GPUs)


class WindowOracle(WindowPolicy):
    """The led window, picked by least true remaining work (a bound: it reads true durations)."""

    deployable = False

    def __init__(self, lead: str, placement: str, *, score: str = "time", window: int = 32) -> None:
        super().__init__(
            ObsConfig(window=window),
            make_placement(placement),
            name=f"window-oracle({lead})",
            lead=lead_policy(lead, placement),
        )
        self.score = score
        self._durations: Mapping[str, float] = {}

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        self._durations = durations

    def _step_logits(self, step: LedStep, view: ClusterView) -> np.ndarray:
        # Seconds, in float64: the prior's unit steps only break ties within a minute.
        scores = np.full(len(step.mask), NEVER)
        for i, job in enumerate(step.window):
            gpus = max(job.gpus, 1)
            left = max(self._durations[job.job_id] - job.attained_service / gpus, 0.0)
            scores[i] = -left * (gpus if self.score == "gpu-time" else 1)
        return scores


def reference(lead: str) -> str:
    preemptive = getattr(lead_policy(lead, "first-fit"), "preemptive", False)
    return "srtf-oracle" if preemptive else "sjf-oracle"


def one(args: tuple[str, int, str, str, str]) -> tuple[str, str, int, float]:
    """(lead, row, seed, avg JCT) of one replay; a row is "lead", "O" or a window variant SCORE:K."""
    scenario, seed, lead, row, placement = args
    workload = prepare(scenario=scenario, seed=seed)
    if row == "lead":
        policy = lead_policy(lead, placement)
    elif row == "O":
        policy = lead_policy(reference(lead), placement)
    else:
        score, _, k = row.partition(":")
        policy = WindowOracle(lead, placement, score=score, window=int(k))
    out = run_policy(workload, policy)  # type: ignore[arg-type]
    return lead, row, seed, float(out.summary["avg_jct"])  # type: ignore[arg-type]


def variants(text: str) -> list[str]:
    out = []
    for item in text.split(","):
        score, _, k = item.partition(":")
        if score not in SCORES or not k.isdigit() or int(k) < 1:
            raise SystemExit(f"--windows: '{item}' is not SCORE:K with SCORE one of {', '.join(SCORES)}")
        out.append(item)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="philly-448-week2-val")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--leads", default="gittins-limit,sjf-limit")
    parser.add_argument(
        "--windows", default="time:32", help="scorers as SCORE:K (time or gpu-time, window K)"
    )
    parser.add_argument("--placement", default="topology")
    parser.add_argument("--jobs", type=int, default=2)
    a = parser.parse_args()
    role = get_scenario(a.scenario).role
    if role != "train":
        raise SystemExit(
            f"--scenario {a.scenario} has role '{role}': this benchmark reads training-side windows only"
        )
    seeds = [int(s) for s in a.seeds.split(",")]
    leads = a.leads.split(",")
    rows = ("lead", *variants(a.windows), "O")
    cells = [(a.scenario, s, lead, row, a.placement) for lead in leads for row in rows for s in seeds]
    with ProcessPoolExecutor(a.jobs) as pool:
        results = list(pool.map(one, cells))
    jct = {(lead, row, seed): v for lead, row, seed, v in results}
    assert all(math.isfinite(v) for v in jct.values())
    print(f"{a.scenario}, placement {a.placement}, seeds {a.seeds}: avg JCT (s), mean over seeds;")
    print("window rows SCORE:K, closure = (lead - row) / (lead - O), mean over seeds")
    for lead in leads:
        print(f"{lead} (O: {reference(lead)})")
        for row in rows:
            mean = statistics.fmean(jct[lead, row, s] for s in seeds)
            per = "  ".join(f"{jct[lead, row, s]:,.1f}" for s in seeds)
            gaps = [
                (jct[lead, "lead", s] - jct[lead, row, s]) / (jct[lead, "lead", s] - jct[lead, "O", s])
                for s in seeds
                if jct[lead, "lead", s] != jct[lead, "O", s]
            ]
            closes = f"{100 * statistics.fmean(gaps):6.1f}%" if gaps else "n/a"
            print(f"  {row:<14}{mean:>12,.1f}  closure {closes}  seeds: {per}")


if __name__ == "__main__":
    main()
