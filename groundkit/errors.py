"""The one exception tree of groundkit.

Every error a user can cause names where the problem is (file, line or key),
what was expected, and how to fix it. The command line prints ``str(error)``
and exits non-zero; tracebacks are shown only with ``--debug``.

    GroundkitError
    ├── InputError            a file the user wrote is wrong
    │   ├── ParamsError       params.yaml or a --set override
    │   ├── CorpusError       a document in the corpus
    │   ├── JudgmentsError    judgments.jsonl
    │   ├── SpanError         a gold quote that does not resolve exactly once
    │   ├── DatasetError      a BEIR dataset being imported (import-beir)
    │   ├── ArtifactError     a build artifact is missing, truncated or edited by hand
    │   ├── RunFileError      an external run file (JSONL) handed to score-run
    │   └── RetrieverError    a python: retriever that breaks its contract
    ├── DependencyError       an optional extra (e.g. dense) is not installed
    └── MeasureError          a metric name no registered measure writes
"""

from __future__ import annotations

from pathlib import Path


class GroundkitError(Exception):
    """Base class: a problem groundkit can explain without a traceback."""


class InputError(GroundkitError):
    """A problem in an input file, located by file and line or key.

    Args:
        path: The file (or directory) the problem is in.
        problem: What is wrong, as a sentence fragment.
        fix: How to fix it.
        line: 1-based line number, when the file is line-oriented.
        key: Dotted key or field name, when the file is structured.
    """

    def __init__(
        self,
        path: str | Path,
        problem: str,
        *,
        fix: str = "",
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        self.line = line
        self.key = key
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        if self.key is not None:
            where += f": key '{self.key}'"
        message = f"{where}: {self.problem}"
        if self.fix:
            message += f"\n  fix: {self.fix}"
        return message


class ParamsError(InputError):
    """params.yaml (or a ``--set`` override) holds a bad value or an unknown key."""


class CorpusError(InputError):
    """A corpus document is missing, unreadable, or outside the corpus root."""


class JudgmentsError(InputError):
    """judgments.jsonl is malformed, out of order, or inconsistent."""


class SpanError(InputError):
    """A gold quote resolves zero times or more than once in its document."""


class DatasetError(InputError):
    """A BEIR dataset given to ``groundkit import-beir`` is missing a file or holds a bad record."""


class ArtifactError(InputError):
    """A build artifact is missing, truncated, or was edited after it was written."""


class RunFileError(InputError):
    """An external run file has a bad line: JSON, fields, ranks, documents, offsets or text."""


class RetrieverError(InputError):
    """A ``python:`` retriever cannot be loaded or returned something outside its contract."""


class DependencyError(GroundkitError):
    """An optional dependency is missing; the message says which extra to install."""


class MeasureError(GroundkitError):
    """A metric name (a --metric option, a per_query.csv column) that no registered measure writes.

    It carries no location: the reader that met the name raises its own InputError naming the file or option.
    """
