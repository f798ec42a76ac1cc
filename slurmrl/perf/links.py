"""Bandwidth of each link tier, the physical input to communication time.

The defaults describe a Philly-era V100 cluster. Within a rack they follow
Jeon et al. (ATC'19, Philly: servers in a rack joined by 100 Gb/s InfiniBand);
the intra-node and cross-rack figures are chosen so that their ratios agree
with the relative link costs used by Proximity-DRL (NVLink 1/40, machine to
rack switch 1/4, rack to core 1/2), i.e. NVLink ten times the rack switch and
the core path half of it. Clusters with other hardware override any tier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from slurmrl.cluster.model import LinkTier
from slurmrl.errors import ConfigError

# Proximity-DRL relative link weights (cost per unit of traffic; lower is
# faster): NVLink 1/40, machine-rack 1/4, rack-core 1/2. Kept for policies
# that reason in relative costs rather than GB/s.
PROXIMITY_DRL_WEIGHTS: dict[LinkTier, float] = {
    LinkTier.NVLINK: 1 / 40,
    LinkTier.SWITCH: 1 / 4,
    LinkTier.CROSS_RACK: 1 / 2,
}


@dataclass(frozen=True, slots=True)
class LinkBandwidths:
    """Bandwidth per direction, in GB/s (1e9 bytes/s), per tier."""

    # V100 NVLink2 carries 25 GB/s per link per direction and each V100 has 6
    # links (NVIDIA Tesla V100 whitepaper); NCCL rings over a DGX-1V reach about
    # 125 GB/s bus bandwidth. 125 is also 10x the rack tier, as the Proximity-DRL
    # weights (1/40 vs 1/4) put it. A100 NVSwitch: 300 GB/s (NVIDIA A100 datasheet).
    nvlink: float = 125.0
    # PCIe 3.0 x16: 15.75 GB/s theoretical, ~12 GB/s achieved for large copies
    # (NVIDIA CUDA bandwidthTest on x16 Gen3 hosts); GPUs on different CPU sockets
    # go through QPI/UPI and lose more, which this single tier does not split out.
    pcie: float = 12.0
    # 100 Gb/s EDR InfiniBand = 12.5 GB/s line rate, as in Philly's racks
    # (Jeon et al. ATC'19, Section 2). One NIC per node is shared by its GPUs.
    switch: float = 12.5
    # Rack to core: 2:1 oversubscribed, half the rack rate (Proximity-DRL's
    # rack-core weight 1/2 vs machine-rack 1/4).
    cross_rack: float = 6.25
    # Fraction of the network line rate the gradient exchange achieves. A
    # calibration constant, not a measurement: 0.4 is what makes this model
    # reproduce the published multi-machine penalties (Gavel OSDI'20: median
    # 0.43 of consolidated throughput unconsolidated; Synergy OSDI'22: 0.6-0.9
    # across machines; see tests/perf/test_calibration.py). It stands for what
    # line rate leaves out: TCP/gRPC or IPoIB overheads, latency-bound small
    # tensors, stragglers. Set it near 1 for a tuned RDMA/NCCL fabric.
    network_efficiency: float = 0.4

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ConfigError(
                    f"link setting '{f.name}' is {value!r}; it must be a positive number",
                    column=f.name,
                    hint="e.g. nvlink = 125, pcie = 12, switch = 12.5, cross_rack = 6.25",
                )
        if self.network_efficiency > 1:
            raise ConfigError(
                f"network_efficiency is {self.network_efficiency!r}; it is a fraction of line rate",
                column="network_efficiency",
                hint="use a value in (0, 1], e.g. 0.4",
            )

    def for_tier(self, tier: LinkTier) -> float:
        """GB/s of ``tier``."""
        if tier == LinkTier.NVLINK:
            return self.nvlink
        if tier == LinkTier.PCIE:
            return self.pcie
        if tier == LinkTier.SWITCH:
            return self.switch
        return self.cross_rack

    def effective(self, tier: LinkTier) -> float:
        """GB/s a gradient exchange achieves over ``tier`` (network tiers derated)."""
        raw = self.for_tier(tier)
        return raw * self.network_efficiency if tier >= LinkTier.SWITCH else raw

    def with_overrides(self, **gbps: float) -> LinkBandwidths:
        """A copy with some tiers replaced, e.g. from a cluster spec.

        Unknown tier names are rejected by name so a typo in a spec does not
        silently fall back to the default.
        """
        known = {f.name for f in fields(self)}
        for key in gbps:
            if key not in known:
                raise ConfigError(
                    f"unknown link tier '{key}'",
                    column=key,
                    hint=f"use one of {', '.join(sorted(known))}",
                )
        return replace(self, **gbps)

    @classmethod
    def ethernet(cls, gbit: float, oversubscription: float = 2.0) -> LinkBandwidths:
        """Defaults with the network tiers set from an Ethernet line rate.

        For clusters wired with 10/25/40 GbE instead of InfiniBand: the rack
        tier gets the line rate in GB/s, the core tier that divided by the
        rack uplink oversubscription.
        """
        if not math.isfinite(oversubscription) or oversubscription < 1:
            raise ConfigError(
                f"oversubscription {oversubscription!r} must be at least 1",
                column="oversubscription",
                hint="1 means a non-blocking core, 2 means half the rack bandwidth",
            )
        rate = gbit / 8.0
        return cls(switch=rate, cross_rack=rate / oversubscription)


DEFAULT_BANDWIDTHS = LinkBandwidths()
