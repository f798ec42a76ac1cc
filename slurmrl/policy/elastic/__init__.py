"""Policies that choose GPU counts for elastic jobs (``JobView.gpu_range``)."""
