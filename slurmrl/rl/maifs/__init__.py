"""MAIFS-style multi-agent scheduling of elastic ("fungible") GPU jobs.

One agent per pending job of a window of the ranking; each chooses, together,
the job's GPU count (within ``JobView.gpu_range``) and where it goes (a rack,
or anywhere), GPUs then picked closest-first by the ``topology`` placement.
Agents read each other's demands through a self-attention layer and resolve
conflicts for free GPUs along a coordination graph in rank order. Trained with
MAPPO (centralised critic, shared actor); decisions run in numpy.

Modules: :mod:`.obs` (what an agent reads), :mod:`.window` (which jobs are
agents), :mod:`.coordination` (the sequential, masked resolution),
:mod:`.reservation` (the head job's reservation that masks the agents' GPUs),
:mod:`slurmrl.rl.nets` (the network, shared with the other families),
:mod:`.policy` (the deployable policy and its checkpoint), :mod:`.env`
(episodes and rewards), :mod:`.trainer` (MAPPO).
"""
