"""The evaluation as stages: the stage table, the step each runs, and the in-process runner."""
