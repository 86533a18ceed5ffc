"""groundkit's version, in one place: the package re-exports it, pyproject.toml reads it, and every module
that writes it (run.json, a report's footer, ``groundkit init``) imports it from here.

A leaf, so that a module naming the version does not import the package facade (which names the whole API).
"""

__version__ = "0.1.0"
