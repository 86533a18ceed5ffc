"""Measures and the scoring of a run against the gold spans."""
