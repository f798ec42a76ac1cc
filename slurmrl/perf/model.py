"""How fast a running job progresses, given where it runs and who it shares with.

A trace's run time is read as the job's time under the best placement this
cluster allows. The simulator advances a job by ``speed`` work-seconds per
second, so a worse placement or noisy neighbours stretch the job by measurable
amounts instead of a single tuning knob.

Placement. One training iteration costs compute plus gradient exchange, with
no overlap between the two: a conservative choice, because the measurements
we calibrate against (Gavel, OSDI'20) are end-to-end throughputs that already
include whatever overlap the frameworks achieved.

* All-reduce (ring): each GPU sends and receives ``2 (n-1)/n * S`` bytes over
  the slowest hop of the ring, S being the gradient size (Patarasuk & Yuan,
  JPDC'09, bandwidth-optimal all-reduce; the formula NCCL's bus-bandwidth
  figures assume). On multi-node rings every node's NIC carries one hop.
* Parameter server: one PS shard per node, colocated with the workers, each
  holding 1/m of the parameters (m = nodes). Per iteration a worker pushes a
  full gradient and pulls full parameters, split across the shards. Node k
  with g_k of the n workers then sends ``(n - g_k) S/m`` (parameters to remote
  workers) plus ``g_k (m-1) S/m`` (its workers' gradients to remote shards);
  the busiest node's link sets the time. On one node this degenerates to the
  all-to-all case, ``2 (n-1)/n * S`` per GPU link, like the ring.

The link a placement crosses is ``Cluster.worst_link``; a job that crosses a
tier also crosses every nearer one (GPU to NIC goes over PCIe), so the
effective bandwidth is the minimum over the tiers up to the worst, network
tiers derated by ``LinkBandwidths.network_efficiency``. With the defaults, an
8-GPU job split 4+4 over two racks keeps a median ``placement_factor`` of 0.65
over the 12 core model classes against one NVSwitch node (0.72 against a node
of two NVLink quads), and 0.79 (0.87) when split over two nodes of one rack.
That sits inside the band between Gavel's median of 0.43 for unconsolidated
V100 jobs (Narayanan et al. OSDI'20) and multi-machine penalties of 0.6-0.9
reported in later work (e.g. Synergy, Mohan et al. OSDI'22); the tests in
tests/perf/test_calibration.py
pins these bands. PS-trained VGG/AlexNet jobs fall lowest (0.17-0.45).

Because the parameter-server exchange spreads over more NICs when a job uses
more nodes, spreading a PS job can beat the "fewest nodes" placement we call
ideal; ``placement_factor`` is clamped to 1 so it never reports a speed-up.

GPU types. A trace's durations were measured on one GPU type (the
reference: ``reference_gpu``, or the cluster's most common type by GPU count
when that is empty, so a homogeneous cluster replays durations as recorded).
A placement runs at throughput(slowest type in it) / throughput(reference)
for its model, from the table in :mod:`slurmrl.perf.gpu_types` (Gavel's
measured K80/P100/V100 figures, NVIDIA's published A100 ones, documented
scalings elsewhere). The type factor multiplies the link factor, which stays
<= 1 and is priced against the reference type's best placement; a job on a
faster type than the reference may therefore run above speed 1. A type the
table lacks counts as the reference type; if the reference itself is such a
type, no type is charged, for want of a figure to compare with.

Co-location (``full`` only). We never share a GPU, so only host and network
resources are contended, and each term is set from a measurement of exactly
that:

* Separate GPUs of one server. Gandiva (Xiao et al., OSDI'18, Section 3,
  intra-server interference on a PCIe-switch server) measured two language
  model jobs each losing 19% when run side by side, and ResNet-50 losing
  nothing measurable next to a language model. ``NODE_CONTENTION`` is set so
  that two jobs of sensitivity 1 (the zoo's LSTM language model) lose exactly
  that 19%; every other pair loses less, scaled by the product of the two
  jobs' ``interference_sensitivity``.
* Jobs sharing the oversubscribed rack-to-core links. MLTCP (arXiv
  2402.09589, "Congestion Control for DNN Training") measured training jobs that compete for a
  bottleneck link running up to 2x slower per iteration than when their
  communication phases interleave; CASSINI (Rajasekaran et al., NSDI'24)
  recovers up to 1.6x average JCT on a 24-server testbed by avoiding such
  overlaps. ``CORE_CONTENTION`` = ln 2 makes two fully sensitive jobs that
  both cross racks lose that measured worst case (a factor 0.5); a pair of
  zoo-median jobs loses about a quarter.
* Multi-node jobs that merely share a rack switch are not charged: a
  top-of-rack switch is non-blocking (Philly's racks: 100 Gb/s InfiniBand,
  Jeon et al. ATC'19) and no measurement we found shows jobs on different
  nodes of one rack slowing each other. Jobs sharing a node's NIC are
  covered by the node term.

Losses enter as ``exp(-loss)`` so they add up across neighbours (the
simulator keeps the sums per node and on the core, which keeps a
co-location change O(nodes)), and an extra neighbour can only lower the
factor. The product is floored at 0.5: the largest slowdown any of these
measurements reports (MLTCP's 2x) is not exceeded however many neighbours
pile up.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from slurmrl.cluster.model import Cluster, LinkTier, Placement
from slurmrl.errors import ConfigError
from slurmrl.perf.gpu_types import GPU_TYPES, canonical_gpu, relative_throughput
from slurmrl.perf.links import DEFAULT_BANDWIDTHS, LinkBandwidths
from slurmrl.perf.zoo import MODELS, ModelProfile, canonical_model

# Loss exponent of two sensitivity-1 jobs on separate GPUs of one server:
# Gandiva (Xiao et al., OSDI'18, Section 3) measured two language-model jobs
# side by side on one server each losing 19%, so exp(-NODE_CONTENTION) = 0.81.
GANDIVA_LM_PAIR_SPEED = 0.81
NODE_CONTENTION = -math.log(GANDIVA_LM_PAIR_SPEED)
# Loss exponent of two sensitivity-1 jobs that both cross the rack-to-core
# links: MLTCP (Rajasekaran et al., arXiv 2402.09589) measured jobs competing
# for a bottleneck link iterating up to 2x slower than interleaved ones.
MLTCP_WORST_SLOWDOWN = 2.0
CORE_CONTENTION = math.log(MLTCP_WORST_SLOWDOWN)
# Multi-node jobs sharing only a (non-blocking) rack switch: no measured loss.
SWITCH_CONTENTION = 0.0
# Floor of the combined co-location factor: the largest measured slowdown
# above (MLTCP's 2x) is never exceeded, however many neighbours there are.
INTERFERENCE_FLOOR = 1.0 / MLTCP_WORST_SLOWDOWN
# The interference exponent beyond which a job runs at the floor.
FLOOR_EXPONENT = -math.log(INTERFERENCE_FLOOR)

_CACHE_LIMIT = 200_000  # entries per cache before it is dropped and rebuilt

# What a running job's speed depends on. ``none``: nothing, every job runs at
# its trace duration (the public simulators' assumption); ``placement``: the
# links its GPUs cross; ``full``: that and its neighbours on shared nodes and
# switches.
SPEED_MODELS = ("none", "placement", "full")
DEFAULT_SPEED_MODEL = "placement"


def check_speed_model(name: str) -> str:
    """``name`` if it is a speed model, else a one-line error listing the choices."""
    if name not in SPEED_MODELS:
        raise ConfigError(
            f"unknown speed model '{name}'",
            column="speed_model",
            hint=f"use one of {', '.join(SPEED_MODELS)}",
        )
    return name


@dataclass(frozen=True, slots=True)
class JobTerms:
    """Per-placement constants of one running job (see ``job_terms``)."""

    placement_factor: float
    sensitivity: float
    nodes: tuple[int, ...]
    racks: tuple[int, ...]  # racks whose switch it loads: multi-node jobs only
    crosses_core: bool
    # The most this job's leaving can lower a neighbour's interference
    # exponent, per unit of the neighbour's sensitivity: one node-load term
    # plus one network term per rack switch it loads and for the core.
    relief: float


@dataclass(frozen=True, slots=True)
class _Footprint:
    """What interference needs to know about a placement, computed once."""

    node_gpus: dict[int, int]
    racks: frozenset[int]
    tier: LinkTier
    multi_node: bool


class PerformanceModel:
    """Placement and co-location slowdowns for jobs on one cluster.

    Deterministic and cached: ``speed`` is called on every co-location change
    of a simulation, so per-placement terms are computed once and a call costs
    O(neighbours x nodes per job) dictionary lookups.
    """

    def __init__(
        self,
        cluster: Cluster,
        bandwidths: LinkBandwidths = DEFAULT_BANDWIDTHS,
        *,
        speed_model: str = "full",
        reference_gpu: str = "",
    ) -> None:
        self.cluster = cluster
        self.bandwidths = bandwidths
        self.speed_model = check_speed_model(speed_model)
        self.reference_gpu = reference_gpu
        # The table type the trace's durations were measured on (None: no
        # figure for it, so no type is charged), and each node's table type,
        # a type the table lacks counting as the reference.
        self.reference_type = _reference_type(cluster, reference_gpu)
        self._node_type = tuple(canonical_gpu(n.gpu_type) or self.reference_type for n in cluster.nodes)
        self._cluster_types = tuple(
            sorted({t for t, n in zip(self._node_type, cluster.nodes, strict=True) if n.gpus and t})
        )
        self._type_factors: dict[str, dict[str | None, float]] = {}
        # Whether a job's speed depends on its neighbours; without it a speed
        # is fixed at the start, and the simulator tracks no neighbourhoods.
        self.colocation = speed_model == "full"
        # Effective bytes/s per tier: the minimum over the tier and all nearer ones.
        eff: dict[LinkTier, float] = {}
        running = float("inf")
        for tier in sorted(LinkTier):
            running = min(running, bandwidths.effective(tier) * 1e9)
            eff[tier] = running
        self._bytes_per_s = eff
        self._max_island = max(
            (max(node.islands.count(i) for i in set(node.islands)) for node in cluster.nodes if node.gpus),
            default=0,
        )
        self._ideal: dict[tuple[str, int], float] = {}
        self._factor: dict[tuple[str, Placement], float] = {}
        self._footprints: dict[Placement, _Footprint] = {}
        self._terms: dict[tuple[str, Placement], JobTerms] = {}
        self._profiles: dict[str, ModelProfile] = {}

    # ---- model lookup ---------------------------------------------------------
    def profile(self, model: str) -> ModelProfile:
        """The zoo entry for ``model``; aliases and unknown names are resolved
        deterministically through :func:`canonical_model`."""
        found = self._profiles.get(model)
        if found is None:
            found = MODELS.get(model) or MODELS[canonical_model(model)]
            self._profiles[model] = found
        return found

    # ---- placement ------------------------------------------------------------
    def _comm_seconds(self, prof: ModelProfile, tier: LinkTier, counts: tuple[int, ...]) -> float:
        n = sum(counts)
        if n <= 1:
            return 0.0
        size = prof.gradient_bytes
        bandwidth = self._bytes_per_s[tier]
        m = len(counts)
        if prof.comm == "allreduce" or m == 1:
            return 2.0 * (n - 1) / n * size / bandwidth
        busiest = max(((n - g) + g * (m - 1)) / m for g in counts)
        return busiest * size / bandwidth

    def _shape_time(self, prof: ModelProfile, tier: LinkTier, counts: tuple[int, ...]) -> float:
        return prof.compute_ms_per_iter / 1000.0 + self._comm_seconds(prof, tier, counts)

    def exchange_seconds(self, prof: ModelProfile, tier: LinkTier, counts: tuple[int, ...]) -> float:
        """Seconds one gradient exchange of ``prof`` takes over ``tier`` with these per-node GPU counts."""
        return self._comm_seconds(prof, tier, counts)

    def ideal_shape(self, gpus: int) -> tuple[LinkTier, tuple[int, ...]]:
        """The best tier and per-node GPU counts this cluster allows for ``gpus`` (see ``_ideal_shape``)."""
        return self._ideal_shape(gpus)

    def iteration_time(self, model: str, placement: Placement) -> float:
        """Seconds per training iteration of ``model`` on ``placement``."""
        counts = tuple(sorted((len(a.gpus) for a in placement.allocs), reverse=True))
        return self._shape_time(self.profile(model), self.cluster.worst_link(placement), counts)

    def _ideal_shape(self, gpus: int) -> tuple[LinkTier, tuple[int, ...]]:
        """Best tier and per-node GPU counts this cluster allows for ``gpus``.

        One NVLink island if one is large enough, else one node, else the
        fewest nodes of one rack, else the fewest nodes overall. A request
        larger than the cluster is priced as if the largest nodes repeated.
        """
        if gpus <= 1 or gpus <= self._max_island:
            return LinkTier.NVLINK, (max(gpus, 0),)
        cluster = self.cluster
        if gpus <= cluster.max_gpus_per_node:
            return LinkTier.PCIE, (gpus,)
        best: tuple[int, ...] | None = None
        for rack in cluster.racks:
            counts = _fill(sorted((cluster.nodes[i].gpus for i in rack.nodes), reverse=True), gpus)
            if counts is not None and (best is None or len(counts) < len(best)):
                best = counts
        if best is not None:
            return LinkTier.SWITCH, best
        sizes = sorted((n.gpus for n in cluster.nodes if n.gpus), reverse=True)
        counts = _fill(sizes, gpus)
        if counts is None:
            biggest = max(cluster.max_gpus_per_node, 1)
            counts = tuple([biggest] * (gpus // biggest) + ([gpus % biggest] if gpus % biggest else []))
        tier = LinkTier.CROSS_RACK if len(cluster.racks) > 1 else LinkTier.SWITCH
        return tier, counts

    def ideal_placement_time(self, model: str, gpus: int) -> float:
        """Seconds per iteration under the best placement for ``gpus`` GPUs."""
        key = (model, gpus)
        cached = self._ideal.get(key)
        if cached is None:
            tier, counts = self._ideal_shape(gpus)
            cached = self._shape_time(self.profile(model), tier, counts)
            self._ideal[key] = cached
        return cached

    def type_factor(self, model: str, gpu_type: str | None) -> float:
        """Throughput of ``model`` on table type ``gpu_type`` over the reference type's."""
        factors = self._type_factors.get(model)
        if factors is None:
            factors = self._type_factors[model] = {}
        found = factors.get(gpu_type)
        if found is None:
            ref = self.reference_type
            if self.speed_model == "none" or ref is None or gpu_type is None:
                found = 1.0
            else:
                zoo = self.profile(model).name
                found = relative_throughput(gpu_type, zoo) / relative_throughput(ref, zoo)
            factors[gpu_type] = found
        return found

    def placement_type_factor(self, model: str, placement: Placement) -> float:
        """The type factor of the slowest GPU type in ``placement``: a synchronous job's pace."""
        node_type = self._node_type
        return min((self.type_factor(model, node_type[a.node]) for a in placement.allocs), default=1.0)

    def link_factor(self, model: str, placement: Placement) -> float:
        """Ideal over actual iteration time on the reference type: 1 when ideal, never above 1."""
        ideal = self.ideal_placement_time(model, placement.num_gpus)
        return min(1.0, ideal / self.iteration_time(model, placement))

    def static_speed(self, model: str, placement: Placement) -> float:
        """The speed of a job that no neighbour can slow: all a speed is without co-location."""
        if self.speed_model == "none":
            return 1.0
        return self.placement_factor(model, placement)

    def best_speed(self, model: str) -> float:
        """The fastest this model can run anywhere on the cluster: what bounds divide by.

        The largest type factor over the cluster's GPU types (a best placement
        has link factor 1); 1.0 under ``none``.
        """
        if self.speed_model == "none":
            return 1.0
        return max((self.type_factor(model, t) for t in self._cluster_types), default=1.0)

    def placement_factor(self, model: str, placement: Placement) -> float:
        """Link factor (<= 1) times the type factor of the slowest GPU type used.

        1 for an ideal placement on the reference type; above 1 only on a
        faster type than the reference.
        """
        if self.speed_model == "none":
            return 1.0
        key = (model, placement)
        cached = self._factor.get(key)
        if cached is None:
            cached = self.link_factor(model, placement) * self.placement_type_factor(model, placement)
            if len(self._factor) >= _CACHE_LIMIT:
                self._factor.clear()
            self._factor[key] = cached
        return cached

    # ---- co-location ----------------------------------------------------------
    def _footprint(self, placement: Placement) -> _Footprint:
        found = self._footprints.get(placement)
        if found is None:
            node_gpus: dict[int, int] = {}
            for alloc in placement.allocs:
                node_gpus[alloc.node] = node_gpus.get(alloc.node, 0) + len(alloc.gpus)
            racks = frozenset(self.cluster.nodes[n].rack for n in node_gpus)
            found = _Footprint(node_gpus, racks, self.cluster.worst_link(placement), len(node_gpus) > 1)
            if len(self._footprints) >= _CACHE_LIMIT:
                self._footprints.clear()
            self._footprints[placement] = found
        return found

    def interference_factor(
        self,
        model: str,
        placement: Placement,
        neighbours: Sequence[tuple[str, Placement]],
    ) -> float:
        """Throughput fraction left after sharing nodes and the core, in [INTERFERENCE_FLOOR, 1].

        ``neighbours`` are the other running jobs (model, placement); those
        sharing neither a node nor (for multi-node pairs) a rack or the core
        contribute nothing, so the caller may pass every running job.
        """
        if not neighbours:
            return 1.0
        terms = replace(self.job_terms(model, placement), placement_factor=1.0)
        mine = set(terms.nodes)
        # Loads as the simulator keeps them: every job's sensitivity, ours included.
        node_load: defaultdict[int, float] = defaultdict(float)
        rack_load: defaultdict[int, float] = defaultdict(float)
        for node in terms.nodes:
            node_load[node] += terms.sensitivity
        for rack in terms.racks:
            rack_load[rack] += terms.sensitivity
        core_load = terms.sensitivity if terms.crosses_core else 0.0
        for other_model, other_placement in neighbours:
            theirs = self.job_terms(other_model, other_placement)
            for node in theirs.nodes:
                if node in mine:
                    node_load[node] += theirs.sensitivity
            for rack in theirs.racks:
                rack_load[rack] += theirs.sensitivity
            if theirs.crosses_core:
                core_load += theirs.sensitivity
        return self.speed_from_loads(terms, node_load, rack_load, core_load)[0]

    def job_terms(self, model: str, placement: Placement) -> JobTerms:
        """Everything about one running job that its speed needs, computed once.

        The simulator keeps the summed loads per node and rack up to date and
        calls :meth:`speed_from_loads` with these terms on every co-location
        change, which keeps that hot path free of cache lookups. Cached
        itself, since a replay starts jobs of one model on one placement
        again and again.
        """
        key = (model, placement)
        found = self._terms.get(key)
        if found is not None:
            return found
        fp = self._footprint(placement)
        sensitivity = self.profile(model).interference_sensitivity if self.colocation else 0.0
        racks = tuple(sorted(fp.racks)) if fp.multi_node and SWITCH_CONTENTION > 0 else ()
        crosses_core = fp.multi_node and fp.tier == LinkTier.CROSS_RACK
        found = JobTerms(
            placement_factor=self.placement_factor(model, placement),
            sensitivity=sensitivity,
            nodes=tuple(fp.node_gpus),
            racks=racks,
            crosses_core=crosses_core,
            relief=sensitivity
            * (NODE_CONTENTION + SWITCH_CONTENTION * len(racks) + CORE_CONTENTION * crosses_core),
        )
        if len(self._terms) >= _CACHE_LIMIT:
            self._terms.clear()
        self._terms[key] = found
        return found

    @staticmethod
    def speed_from_loads(
        terms: JobTerms,
        node_load: Sequence[float] | defaultdict[int, float],
        rack_load: Sequence[float] | defaultdict[int, float],
        core_load: float,
    ) -> tuple[float, float]:
        """:meth:`speed` from summed sensitivities that include the job itself, and its slack.

        ``node_load[n]`` sums the sensitivities of the jobs on node n,
        ``rack_load[r]`` those of the multi-node jobs touching rack r and
        ``core_load`` those of the jobs crossing racks. Each co-located job
        costs a factor ``exp(-NODE_CONTENTION * s_self * s_other)`` (about
        ``1 - NODE_CONTENTION * s_self * s_other`` for one neighbour), the
        most crowded node setting the pace of a synchronous job; jobs crossing
        racks also lose ``CORE_CONTENTION`` per unit of the other cross-rack
        jobs' sensitivity (and ``SWITCH_CONTENTION`` per neighbour on a shared
        rack switch, 0 by default). O(nodes of the job), no cache lookups:
        this is the simulator's hot path.

        The slack is how far the exponent may fall before the speed rises
        off the floor (negative when it is not at the floor). With the
        neighbours' :attr:`JobTerms.relief` it lets the simulator skip jobs
        that provably stay at the floor when a neighbour leaves.
        """
        own = terms.sensitivity
        if own <= 0.0:
            return terms.placement_factor, -FLOOR_EXPONENT
        worst = 0.0
        for node in terms.nodes:
            if node_load[node] > worst:
                worst = node_load[node]
        worst -= own
        exponent = NODE_CONTENTION * own * worst if worst > 0.0 else 0.0
        if terms.racks:
            net = 0.0
            for rack in terms.racks:
                if rack_load[rack] > own:
                    net += rack_load[rack] - own
            exponent += SWITCH_CONTENTION * own * net
        if terms.crosses_core and core_load > own:
            exponent += CORE_CONTENTION * own * (core_load - own)
        if exponent <= 0.0:
            return terms.placement_factor, -FLOOR_EXPONENT
        return terms.placement_factor * max(
            INTERFERENCE_FLOOR, math.exp(-exponent)
        ), exponent - FLOOR_EXPONENT

    def speed(
        self,
        model: str,
        placement: Placement,
        neighbours: Sequence[tuple[str, Placement]] = (),
    ) -> float:
        """Work-seconds done per wall-second: above 1 only on a faster GPU type than the reference."""
        return self.placement_factor(model, placement) * self.interference_factor(
            model, placement, neighbours
        )


def _fill(sizes: list[int], gpus: int) -> tuple[int, ...] | None:
    """Per-node counts taking the largest nodes first; None if they run out."""
    counts: list[int] = []
    left = gpus
    for size in sizes:
        if left <= 0:
            break
        take = min(size, left)
        if take > 0:
            counts.append(take)
            left -= take
    return tuple(counts) if left <= 0 else None


def _reference_type(cluster: Cluster, reference_gpu: str) -> str | None:
    """The table type durations are read as measured on.

    An explicit ``reference_gpu`` must name a table type. Empty means the
    cluster's most common type by GPU count (ties broken by name), so that a
    homogeneous cluster replays its trace as recorded; None if that type is
    not in the table.
    """
    if reference_gpu.strip():
        found = canonical_gpu(reference_gpu)
        if found is None:
            raise ConfigError(
                f"unknown reference GPU type '{reference_gpu}'",
                column="reference_gpu",
                hint=f"use one of {', '.join(GPU_TYPES)}, or leave it empty for the cluster's most common type",
            )
        return found
    counts: dict[str, int] = {}
    for node in cluster.nodes:
        if node.gpus:
            key = canonical_gpu(node.gpu_type) or f"?{node.gpu_type.strip().lower()}"
            counts[key] = counts.get(key, 0) + node.gpus
    if not counts:
        return None
    best = min(counts, key=lambda k: (-counts[k], k))
    return None if best.startswith("?") else best
