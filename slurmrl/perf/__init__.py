"""Workload and performance model: how fast a job runs where it is placed."""

from slurmrl.perf.links import LinkBandwidths
from slurmrl.perf.model import PerformanceModel
from slurmrl.perf.zoo import MODELS, ModelProfile, canonical_model, model_for

__all__ = ["MODELS", "LinkBandwidths", "ModelProfile", "PerformanceModel", "canonical_model", "model_for"]
