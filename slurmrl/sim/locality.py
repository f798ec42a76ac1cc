"""How many nodes a job may span when its trace does not say.

Most DL traces record a GPU count and no node count. Reading that as "any
number of nodes" (Slurm's ``--gpus=N``) lets a 4-GPU job land on four
nodes, which no DL scheduler of the trace's era did: Philly's scheduler
waited for locality (Jeon et al., ATC'19, Sec. 3), and Tiresias, Gandiva
and the Helios/Alibaba simulators all pack a job into the fewest nodes.
So by default a job of g GPUs needs ``ceil(g / GPUs per node)`` nodes:

* ``pack``: that node count, always;
* ``relax:S``: that node count for the first S seconds of waiting, any after
  (delay scheduling, Zaharia et al., EuroSys'10; Philly relaxed locality
  after a wait in the same way);
* ``any``: no node count, as Slurm's ``--gpus=N``.

A node count the trace itself records is the user's request and always
binds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from slurmrl.cluster.model import Cluster
from slurmrl.errors import ConfigError

LOCALITY_MODES = ("pack", "relax", "any")
_HINT = "use pack, any, or relax:SECONDS (e.g. relax:3600)"


@dataclass(frozen=True, slots=True)
class Locality:
    mode: str = "pack"
    relax_after: float = math.inf  # seconds of waiting before a relax job may spread

    def __str__(self) -> str:
        return f"relax:{self.relax_after:g}" if self.mode == "relax" else self.mode

    def request(self, gpus: int, trace_nodes: int | None, cluster: Cluster) -> tuple[int | None, float]:
        """(node count, seconds after submission when it stops binding) for one job."""
        if trace_nodes is not None:
            return trace_nodes, math.inf
        if self.mode == "any":
            return None, math.inf
        per_node = max(cluster.max_gpus_per_node, 1)
        nodes = max(1, math.ceil(gpus / per_node))
        return nodes, (self.relax_after if self.mode == "relax" else math.inf)


def parse_locality(text: str | Locality) -> Locality:
    """``pack``, ``any`` or ``relax:SECONDS`` as a :class:`Locality`; one-line error otherwise."""
    if isinstance(text, Locality):
        return text
    mode, _, arg = str(text).strip().partition(":")
    if mode in ("pack", "any") and not arg:
        return Locality(mode)
    if mode == "relax":
        try:
            seconds = float(arg)
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds >= 0:
            return Locality("relax", seconds)
        raise ConfigError(f"locality '{text}' needs a wait in seconds", column="locality", hint=_HINT)
    raise ConfigError(f"unknown locality '{text}'", column="locality", hint=_HINT)
