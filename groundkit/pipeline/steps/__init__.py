"""The steps of an evaluation, one module per stage, each with a ``run`` function over artifact paths.

The DVC stage scripts and the in-process runner call these same functions, so `dvc repro` and
`groundkit run` cannot drift apart; every path is an argument, none is hard-coded. A module imports
only what its stage needs: each stage runs in a fresh interpreter, and its import closure is both its
start-up time and the list of code files DVC must watch for it. The report stage's step renders a
report, so it lives with the reports (groundkit/reports/step.py): the table names it, nothing here imports it.
"""
