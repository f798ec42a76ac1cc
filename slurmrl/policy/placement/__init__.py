"""Placement heuristics: choose which free GPUs a job gets."""
