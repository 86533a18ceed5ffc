"""What the verdict judges by unless told otherwise.

Standard library only: ``groundkit compare --help`` and ``groundkit report --help`` name it before anything runs.
"""

DEFAULT_GATE = ("ndcg@10", "coverage@1000chars")
"""Ranking quality, and how much of the gold a context window of 1,000 characters holds (size-fair), so that a
larger chunk cannot win by reading more."""
