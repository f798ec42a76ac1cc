"""The scenario catalogue and how a scenario becomes a workload."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from importlib import resources

from slurmrl.errors import SlurmrlError

DAY = 86400.0
WEEK = 7 * DAY
OPENB_START = 114 * DAY  # the busy part of the openb trace starts here
OPENB_CLUSTER = "1x4x8:t4"
PHILLY = "philly/philly_jobs_2017-10-02_to_2017-10-30.csv.gz"
OPENB = "alibaba/openb_pods_v2023.csv.gz"
PHILLY_LATE = "embedded:philly-late"  # weeks 5-8 of the same clock: days 28-56
PHILLY_TAIL = "embedded:philly-tail"  # days 42-84 of the same clock: weeks 7-8 again, 9-10, the thin end


@dataclass(frozen=True)
class Scenario:
    """A trace window on a cluster, replayed on the trace's own timeline (arrival scale 1)."""

    name: str
    summary: str
    trace: str  # "embedded:NAME" or a path relative to a traces folder (slurmrl.traces.store)
    cluster: str  # a cluster spec as --cluster takes it; "data:FILE" = shipped spec
    start: float | None = None  # window on submit time, seconds
    end: float | None = None
    vcs: tuple[str, ...] = ()  # keep only these VCs; () = all
    role: str = "benchmark"  # "train" or "eval" for the RL split, else "benchmark"
    # GPU type the trace's durations were measured on ("" = the cluster's most
    # common type, which leaves a homogeneous cluster at trace speed).
    reference_gpu: str = ""
    # Warm start: the jobs submitted from ``warmup_start`` up to ``start`` are
    # replayed first by the deployable heuristic ``warm_policy``, and the
    # policy under test takes over the busy cluster at ``start``; only the
    # jobs of [start, end) are measured. None: the replay starts empty.
    warmup_start: float | None = None
    warm_policy: str = ""

    def window(self) -> str:
        """The submit-time window in days, e.g. ``days 7-14``, or ``whole trace``."""
        if self.start is None and self.end is None:
            return "whole trace"
        lo = f"{(self.start or 0.0) / DAY:g}"
        hi = f"{self.end / DAY:g}" if self.end is not None else "end"
        warm = ""
        if self.warmup_start is not None:
            warm = f" after days {self.warmup_start / DAY:g}-{lo} under {self.warm_policy}"
        return f"days {lo}-{hi}{warm}"

    def cluster_spec(self) -> str:
        if self.cluster.startswith("data:"):
            name = self.cluster.removeprefix("data:")
            return str(resources.files("slurmrl.scenarios") / "data" / name)
        return self.cluster

    def trace_path(self) -> str:
        if self.trace.startswith("embedded:"):
            return self.trace
        from slurmrl.traces.store import locate

        return str(locate(self.trace))


def may_share_jobs(a: Scenario, b: Scenario) -> bool:
    """Whether two scenarios' measured windows can hold a common job.

    Same trace, a common VC (or no VC filter on either) and overlapping
    submit windows. A warm-started scenario's warm-up jobs do not count: a
    heuristic schedules them, not the policy under test.
    """
    if a.trace != b.trace or (a.vcs and b.vcs and not set(a.vcs) & set(b.vcs)):
        return False
    lo, hi = max(a.start or 0.0, b.start or 0.0), min(a.end or math.inf, b.end or math.inf)
    return lo < hi


def _philly_week(week: int, role: str) -> Scenario:
    what = "RL training" if role == "train" else "RL evaluation, unseen in training"
    return Scenario(
        f"philly-512-week{week}",
        f"Philly week {week} of the shared window on 512 V100 GPUs, contended by size ({what})",
        PHILLY,
        RL_CLUSTER,
        (week - 1) * WEEK,
        week * WEEK,
        role=role,
    )


def _week2_val(name: str, cluster: str, description: str, reference_gpu: str = "") -> Scenario:
    """The validation window, days 11-14 of the shared month after days 7-11 under slurm, on ``cluster``."""
    return Scenario(
        name,
        description,
        PHILLY,
        cluster,
        WEEK + 4 * DAY,
        2 * WEEK,
        role="train",
        warmup_start=WEEK,
        warm_policy="slurm",
        reference_gpu=reference_gpu,
    )


GAVEL_MSR = "benchmarks/gavel/msr_seed0/{vc}.trace.gz"


CHRONUS = "benchmarks/chronus/trace_job_Philly_{mix}.csv.gz"
CHRONUS_MIX1 = CHRONUS.format(mix="MIX1")


def _chronus_vc(vc: str, cluster: str, role: str, mix: str = "MIX1") -> Scenario:
    what = (
        "meta-rl adaptation" if role == "train" else "meta-rl evaluation, unseen in training and adaptation"
    )
    return Scenario(
        f"chronus-{mix.lower()}-{vc}",
        f"Chronus {mix} jobs of Philly VC {vc} (model classes recorded, time unit as the trace's) on {cluster} ({what})",
        CHRONUS.format(mix=mix),
        cluster,
        vcs=(vc,),
        role=role,
    )


def _chronus_heldout(mix: str, vc: str, cluster: str) -> Scenario:
    """A Chronus trace other than MIX1, on a VC no policy trained, adapted or was evaluated on."""
    return Scenario(
        f"chronus-{mix.lower()}-{vc}",
        f"Chronus {mix} jobs of Philly VC {vc} (model classes recorded, time unit as the trace's) "
        f"on {cluster} (held-out suite)",
        CHRONUS.format(mix=mix),
        cluster,
        vcs=(vc,),
        role="eval",
    )


def _gavel_vc(vc: str, cluster: str, role: str) -> Scenario:
    what = {"train": "RL training", "eval": "RL evaluation, unseen in training"}.get(role, role)
    return Scenario(
        f"gavel-msr-{vc}",
        f"Gavel msr trace of Philly VC {vc} (model classes recorded) on {cluster} ({what})",
        GAVEL_MSR.format(vc=vc),
        cluster,
        role=role,
    )


# Cluster sizes. 640 GPUs carry the Philly weeks at an offered load near 0.9
# (the first week: 0.89; all four: 0.94); contended variants take GPUs away
# from the same timeline instead of compressing it.
SIZED = "10x8x8:v100"
# The RL weeks run on 512 GPUs of 8-GPU nodes: the TopDRL network pools its
# grid features over racks, nodes and GPUs (slurmrl.rl.nets.torch_nets), so the shipped
# checkpoint, trained on 2x4x8, runs on this shape unchanged; 8 GPUs per node
# keeps the node-level features (largest free block per node) on the scale it
# was trained on.
RL_CLUSTER = "8x8x8:v100"

_LIST = [
    Scenario(
        "philly-sample",
        "embedded first Philly week (11,386 jobs) on 640 V100 GPUs sized to it",
        "embedded:philly-sample",
        SIZED,
    ),
    Scenario(
        "philly-sample-512",
        "embedded first Philly week on 512 V100 GPUs: the same timeline, contended by size",
        "embedded:philly-sample",
        "8x8x8:v100",
    ),
    Scenario(
        "philly-sample-448",
        "embedded first Philly week on 448 V100 GPUs: the same timeline, more contended",
        "embedded:philly-sample",
        "7x8x8:v100",
    ),
    Scenario(
        "philly-4w",
        "the 4 shared Philly weeks (46,070 jobs) on 640 V100 GPUs sized to them",
        PHILLY,
        SIZED,
    ),
    Scenario(
        "philly-4w-512",
        "the 4 shared Philly weeks on 512 V100 GPUs: contended by size",
        PHILLY,
        "8x8x8:v100",
    ),
    Scenario(
        "philly-hetero",
        "the 4 shared Philly weeks on 640 GPUs of V100/P100/K80 nodes, durations read as P40 times",
        PHILLY,
        "data:hetero-640.toml",
        # Philly's durations were run mostly on its 8-GPU, 24 GB machines
        # (231 of 552 machines, 1,848 of its 2,490 GPUs in the shared machine
        # list), P40-class boards: read them as P40 times, so the V100 nodes
        # run faster than recorded and the K80 nodes slower.
        reference_gpu="p40",
    ),
    # Per-VC scenarios: one VC's jobs on its node quota (philly_vc_nodes.csv,
    # the quotas the Helios/QSSF authors assumed, 8 GPUs per node). Only the
    # VCs whose jobs queue on their quota are kept; on the other nine the
    # average wait under fifo-backfill is under 0.2 h and every policy ties.
    Scenario(
        "philly-vc-ee9e8c",
        "Philly VC ee9e8c (500 jobs, 4 weeks) on its quota of 64 nodes",
        PHILLY,
        "8x8x8:v100",
        vcs=("ee9e8c",),
    ),
    Scenario(
        "philly-vc-2869ce",
        "Philly VC 2869ce (160 jobs, 4 weeks) on its quota of 16 nodes",
        PHILLY,
        "2x8x8:v100",
        vcs=("2869ce",),
    ),
    _philly_week(1, "train"),
    _philly_week(2, "train"),
    # Week 2 split for led training: its first four days train, its last
    # three validate (a checkpoint is chosen there), taken over from the
    # slurm replay of the days before them as the held-out warm scenario is.
    Scenario(
        "philly-512-week2-head",
        "Philly week 2, days 7-11, on 512 V100 GPUs (RL training)",
        PHILLY,
        RL_CLUSTER,
        WEEK,
        WEEK + 4 * DAY,
        role="train",
    ),
    _week2_val(
        "philly-512-week2-val",
        RL_CLUSTER,
        "Philly week 2, days 11-14, on 512 V100 GPUs after days 7-11 under slurm (RL validation)",
    ),
    # The same validation window on 448 GPUs (7x8x8, offered load 1.02), the
    # size of the contended held-out weeks 3-4: a queue that stays long is where
    # a led policy holding long jobs back shows in the makespan.
    _week2_val(
        "philly-448-week2-val",
        "7x8x8:v100",
        "Philly week 2, days 11-14, on 448 V100 GPUs after days 7-11 under slurm (contended RL validation)",
    ),
    # The validation window once more on the heterogeneous cluster of
    # philly-hetero: where a policy's placement meets several GPU types.
    _week2_val(
        "philly-hetero-week2-val",
        "data:hetero-640.toml",
        "Philly week 2, days 11-14, on the 640-GPU V100/P100/K80 cluster after days 7-11 under slurm "
        "(heterogeneous RL validation)",
        reference_gpu="p40",
    ),
    # Training ground as contended as the held-out suites' (offered load near
    # their 1.53): weeks 1 and 2 of the shared window on 384 GPUs, where the
    # preemptive clairvoyant bound is 3-8% below gittins-limit, against about
    # 1% on the 512-GPU weeks; and the validation window on 320 GPUs, where it
    # is 11% below (`slurmrl compare --scenario NAME --seed 0 --policies
    # gittins-limit+topology,srtf-oracle+topology`).
    Scenario(
        "philly-384-week1",
        "Philly week 1 of the shared window on 384 V100 GPUs, contended as the held-out suites (RL training)",
        PHILLY,
        "6x8x8:v100",
        0.0,
        WEEK,
        role="train",
    ),
    Scenario(
        "philly-384-week2-head",
        "Philly week 2, days 7-11, on 384 V100 GPUs (contended RL training)",
        PHILLY,
        "6x8x8:v100",
        WEEK,
        WEEK + 4 * DAY,
        role="train",
    ),
    _week2_val(
        "philly-320-week2-val",
        "5x8x8:v100",
        "Philly week 2, days 11-14, on 320 V100 GPUs after days 7-11 under slurm (contended RL validation)",
    ),
    # The validation window on a heterogeneous cluster as contended: hetero-416
    # (offered load 1.09 here, against 0.71 on hetero-640), where a led
    # policy's placement is chosen.
    _week2_val(
        "philly-hetero416-week2-val",
        "data:hetero-416.toml",
        "Philly week 2, days 11-14, on the 416-GPU V100/P100/K80 cluster after days 7-11 under slurm "
        "(contended heterogeneous RL validation)",
        reference_gpu="p40",
    ),
    _philly_week(3, "eval"),
    _philly_week(4, "eval"),
    # Gavel's msr per-VC traces (Gavel job types on Philly arrivals; the trace
    # records each job's model class), each VC on a cluster sized to an
    # offered load near 0.9, for placement agents under `--speed-model full`:
    # two VCs train, two others are held out.
    _gavel_vc("6c71a0", "2x5x8:v100", "train"),
    _gavel_vc("b436b2", "1x6x8:v100", "train"),
    _gavel_vc("ee9e8c", "2x5x8:v100", "eval"),
    _gavel_vc("0e4a51", "1x4x8:v100", "eval"),
    # The shifted workload for meta-rl: Chronus MIX1 (Philly arrivals and sizes,
    # another model mix: alexnet, vgg16, inception_v3, resnet101, mobilenet_v2,
    # none of them in the Gavel traces), one VC per scenario on a cluster sized
    # to an offered load near 0.9. One VC adapts, two others are held out.
    _chronus_vc("ed69ec", "1x12x8:v100", "train"),
    _chronus_vc("7f04ca", "1x13x8:v100", "eval"),
    _chronus_vc("6214e9", "1x13x8:v100", "eval"),
    # openb: 24 pods are created in the first 114 days, most of them running
    # for months (up to 3,483 h) and censored at the trace end; the other
    # 6,179 GPU pods arrive from day 114 to the end (day 149.3). The window
    # keeps that busy part, about 22 GPUs busy on average.
    Scenario(
        "alibaba-openb",
        "Alibaba 2023 openb GPU pods of the busy last 35 days on 32 T4 GPUs",
        OPENB,
        OPENB_CLUSTER,
        OPENB_START,
    ),
]

# The held-out suite's ground (slurmrl/scenarios/data/heldout.toml): windows
# and VCs that no shipped policy trained, adapted or was evaluated on when the
# suite was frozen. Contended Philly: weeks 3-4 on 448 GPUs, once from an
# empty cluster and once after weeks 1-2 replayed by stock Slurm's policy, so
# the policy under test takes over a busy cluster with its backlog (only
# weeks 3-4 are measured; the backlog left at hand-over may hold jobs of
# weeks 1-2, which only a heuristic scheduled before).
_HELDOUT = [
    Scenario(
        "philly-448-weeks3-4",
        "Philly weeks 3-4 on 448 V100 GPUs: contended by size (held-out suite)",
        PHILLY,
        "7x8x8:v100",
        2 * WEEK,
        4 * WEEK,
        role="eval",
    ),
    Scenario(
        "philly-448-weeks3-4-warm",
        "Philly weeks 3-4 on 448 V100 GPUs, taken over after weeks 1-2 under slurm (held-out suite)",
        PHILLY,
        "7x8x8:v100",
        2 * WEEK,
        4 * WEEK,
        role="eval",
        warmup_start=0.0,
        warm_policy="slurm",
    ),
    Scenario(
        "philly-hetero-weeks3-4",
        "Philly weeks 3-4 on the 640-GPU V100/P100/K80 cluster, durations read as P40 times (held-out suite)",
        PHILLY,
        "data:hetero-640.toml",
        2 * WEEK,
        4 * WEEK,
        role="eval",
        reference_gpu="p40",
    ),
    # Gavel msr VCs no scenario used before (6214e9: 2,000 jobs, 7f04ca: 972),
    # each on a cluster sized to an offered load near 0.85.
    _gavel_vc("6214e9", "1x16x8:v100", "eval"),
    _gavel_vc("7f04ca", "1x5x8:v100", "eval"),
    # Chronus MIX2 and SLO (other model mixes and arrivals than MIX1) on VCs
    # none of the MIX1 scenarios uses, sized to an offered load near 0.9.
    _chronus_heldout("MIX2", "103959", "1x13x8:v100"),
    _chronus_heldout("MIX2", "e13805", "1x12x8:v100"),
    _chronus_heldout("SLO", "11cb48", "1x14x8:v100"),
    _chronus_heldout("SLO", "2869ce", "1x13x8:v100"),
    # Adaptation windows for those two shifts: VC ed69ec (MIX1's adaptation VC)
    # of each trace, sized the same way (offered load near 0.9).
    _chronus_vc("ed69ec", "1x14x8:v100", "train", mix="MIX2"),
    _chronus_vc("ed69ec", "1x15x8:v100", "train", mix="SLO"),
]
# The second held-out suite's ground (slurmrl/scenarios/data/heldout-late.toml):
# the four Philly weeks after the shared window (embedded as philly-late), which
# no policy, design or card had read when the suite was frozen. Sized by a rule
# fixed beforehand: 8-GPU nodes, as many as make the offered load of weeks 5-6
# nearest that of the first suite's cold entry (1.534 on 448 GPUs): 35 nodes,
# 1.531 (34 give 1.576, 36 give 1.489; the first line of `slurmrl simulate
# --trace embedded:philly-late --start 2419200 --end 3628800 --cluster
# 2x17x8:v100 --policy fifo`, to two places), in 5 racks of 7. The heterogeneous
# cluster is hetero-640 with every rack's node count scaled by the same
# 280/448 = 5/8 and rounded half up (416 GPUs).
_HELDOUT_LATE = [
    Scenario(
        "philly-280-weeks5-6",
        "Philly weeks 5-6 (after the shared window) on 280 V100 GPUs: contended by size (second held-out suite)",
        PHILLY_LATE,
        "5x7x8:v100",
        4 * WEEK,
        6 * WEEK,
        role="eval",
    ),
    Scenario(
        "philly-280-weeks7-8-warm",
        "Philly weeks 7-8 on 280 V100 GPUs, taken over after weeks 5-6 under slurm (second held-out suite)",
        PHILLY_LATE,
        "5x7x8:v100",
        6 * WEEK,
        8 * WEEK,
        role="eval",
        warmup_start=4 * WEEK,
        warm_policy="slurm",
    ),
    Scenario(
        "philly-hetero416-weeks5-6",
        "Philly weeks 5-6 on a 416-GPU V100/P100/K80 cluster (hetero-640 at 5/8), durations read as P40 times "
        "(second held-out suite)",
        PHILLY_LATE,
        "data:hetero-416.toml",
        4 * WEEK,
        6 * WEEK,
        role="eval",
        reference_gpu="p40",
    ),
]
# The third held-out suite's ground (slurmrl/scenarios/data/heldout-tail.toml):
# weeks 9-10 of the same clock (2017-11-27 to 12-11, days 56-70 of the
# embedded philly-tail), which nothing had read when the suite was frozen.
# Sized by the second suite's rule: 8-GPU nodes, as many as make the offered
# load of weeks 9-10 nearest the first suite's cold entry's 1.534: 28 nodes,
# 1.54 (27 give 1.60, 29 give 1.49; the first line of `slurmrl simulate
# --trace embedded:philly-tail --start 4838400 --end 6048000 --cluster
# 1x28x8:v100 --policy fifo`), in 4 racks of 7. The warm entry is taken over
# after weeks 7-8 (read by the second suite) under slurm; the heterogeneous
# cluster is hetero-640 with every rack's node count halved (320 GPUs).
_HELDOUT_TAIL = [
    Scenario(
        "philly-224-weeks9-10",
        "Philly weeks 9-10 (the list's last busy fortnight) on 224 V100 GPUs: contended by size "
        "(third held-out suite)",
        PHILLY_TAIL,
        "4x7x8:v100",
        8 * WEEK,
        10 * WEEK,
        role="eval",
    ),
    Scenario(
        "philly-224-weeks9-10-warm",
        "Philly weeks 9-10 on 224 V100 GPUs, taken over after weeks 7-8 under slurm (third held-out suite)",
        PHILLY_TAIL,
        "4x7x8:v100",
        8 * WEEK,
        10 * WEEK,
        role="eval",
        warmup_start=6 * WEEK,
        warm_policy="slurm",
    ),
    Scenario(
        "philly-hetero320-weeks9-10",
        "Philly weeks 9-10 on a 320-GPU V100/P100/K80 cluster (hetero-640 at 1/2), durations read as P40 times "
        "(third held-out suite)",
        PHILLY_TAIL,
        "data:hetero-320.toml",
        8 * WEEK,
        10 * WEEK,
        role="eval",
        reference_gpu="p40",
    ),
]
SCENARIOS: dict[str, Scenario] = {s.name: s for s in _LIST + _HELDOUT + _HELDOUT_LATE + _HELDOUT_TAIL}


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def get_scenario(name: str) -> Scenario:
    if name in SCENARIOS:
        return SCENARIOS[name]
    close = difflib.get_close_matches(name, list(SCENARIOS), n=3, cutoff=0.5)
    raise SlurmrlError(
        f"unknown scenario '{name}'; known: {', '.join(SCENARIOS)}",
        hint=f"did you mean {', '.join(repr(c) for c in close)}?" if close else "see `slurmrl scenarios`",
    )
