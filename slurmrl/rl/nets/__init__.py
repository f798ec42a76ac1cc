"""The network toolkit every learned policy builds on: one config module, torch layers and their numpy twins.

* :mod:`.config` (no torch): each family's constructor arguments and the
  state-dict tensors they imply, checked against a checkpoint before use.
* :mod:`.torch_layers` / :mod:`.numpy_layers`: the shared building blocks
  (initialisation, MLPs, 3x3 convolutions, attention, masking) in torch for
  training and in numpy for deciding, reading the same state-dict names.
* :mod:`.torch_nets` / :mod:`.numpy_nets`: the TopDRL, Harmony and MAIFS
  networks composed from them. The daemon and evaluation import only the
  numpy side, so a deployment without torch still decides.

Checkpoint reading and writing lives in :mod:`slurmrl.rl.checkpoints`.
"""
