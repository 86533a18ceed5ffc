"""The one exception tree of groundkit.

Every error a user can cause names where the problem is (file, line or key),
what was expected, and how to fix it. The command line prints ``str(error)``
and exits non-zero; tracebacks are shown only with ``--debug``.

    GroundkitError
    ├── InputError            a file the user wrote is wrong
    │   ├── ParamsError       params.yaml or a --set override
    │   ├── CorpusError       a document in the corpus
    │   ├── JudgmentsError    judgments.jsonl, or the qrels of score-trec
    │   ├── SpanError         a gold quote that does not resolve exactly once
    │   ├── DatasetError      a dataset being imported (import-beir, import-squad)
    │   ├── ArtifactError     a build artifact is missing, truncated or edited by hand
    │   ├── RunFileError      an external run file: JSONL for score-run, TREC for score-trec
    │   ├── RetrieverError    a python: retriever that breaks its contract
    │   ├── ChunkerError      a chunker (python: or a library's) that fails or breaks its contract
    │   ├── OutputError       an --out that is an input, or holds files groundkit did not write
    │   ├── CompareError      a side of `groundkit compare` cannot be read, or the sides do not match
    │   ├── SweepError        the experiments of `groundkit sweep-plot` cannot be tabulated
    │   ├── ReviewError       a review sheet of `groundkit pool` that a reviewer edited
    │   └── RepositoryError   a repository groundkit init sets up, or whose dvc.yaml a stage runs from
    ├── DependencyError       an optional extra (e.g. dense) is not installed
    ├── EngineError           the Ray cluster a step ran on was lost while it ran
    ├── JudgeError            a judge (an LLM endpoint, a python: judge) failed or broke its contract
    └── MeasureError          a metric name no registered measure writes

Four more classes are signals inside groundkit, never shown as they are:

    JSONLineError (ValueError)    one JSON line is unacceptable; the reader wraps it in its InputError
    FixableValueError (ValueError) a params validator's complaint that carries its own fix
    DuplicateKeyError (ValueError) a YAML key written twice; read_params_file turns it into a ParamsError
    Terminated (BaseException)    SIGTERM arrived; the guard exits 143 after cleanup
    JudgeFault (Exception)        one judge call failed; the caller names the query and passage in a JudgeError

They live here too, so that every exception groundkit raises is found in one file.
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
    """judgments.jsonl is malformed, out of order, or inconsistent; or score-trec's qrels have a bad line."""


class SpanError(InputError):
    """A gold quote resolves zero times or more than once in its document."""


class DatasetError(InputError):
    """A dataset being imported (``import-beir``, ``import-squad``) is missing a file or holds a bad record."""


class ArtifactError(InputError):
    """A build artifact is missing, truncated, or was edited after it was written."""


class RunFileError(InputError):
    """An external run file has a bad line: JSON, fields, ranks, documents, offsets or text (score-run's JSONL), or
    fields and scores (score-trec's TREC run)."""


class RetrieverError(InputError):
    """A ``python:`` retriever cannot be loaded or returned something outside its contract."""


class ChunkerError(InputError):
    """A ``python:`` chunker or a library's splitter failed, or returned chunks that are not spans of the document."""


class DependencyError(GroundkitError):
    """An optional dependency is missing; the message says which extra to install."""


class EngineError(GroundkitError):
    """The engine running a step failed under it: a Ray cluster (a node, or its head) was lost while the step ran.

    Not an input error: the inputs may be fine, and the step can be run again once the cluster is back.
    """

    def __init__(self, problem: str, *, fix: str) -> None:
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}\n  fix: {fix}")


class JudgeFault(Exception):
    """One judge call failed (groundkit/labels/): ``problem`` and ``fix`` are sentences, the key scrubbed out.

    Neither the endpoint nor the answer's checker knows the pair asked about; their caller does, and raises
    a JudgeError naming the query and the passage.
    """

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem, self.fix = problem, fix


class JudgeError(GroundkitError):
    """A judge failed on one (query, passage) pair: the endpoint is down, refused the key, kept answering 429,
    answered something that is not the JSON asked for; or a ``python:`` judge raised or returned the wrong type.

    The message names the judge, the query and the passage; it never holds the API key.
    """

    def __init__(self, problem: str, *, fix: str) -> None:
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}\n  fix: {fix}")


class MeasureError(GroundkitError):
    """A metric name (a --metric option, a per_query.csv column) that no registered measure writes.

    It carries no location: the reader that met the name raises its own InputError naming the file or option.
    """


class OutputError(InputError):
    """An ``--out`` that is an input, or would replace files groundkit did not write."""


class CompareError(InputError):
    """A side cannot be read, or the two sides are not comparable."""


class SweepError(InputError):
    """The experiments cannot be read or lack a requested parameter or metric."""


class ReviewError(InputError):
    """A review sheet (review.csv of ``groundkit pool``) has lost its columns or holds an unknown mark."""


class RepositoryError(InputError):
    """The repository ``groundkit init`` works in, or that a stage runs in, cannot be set up or run as it is."""


class JSONLineError(ValueError):
    """One line of a JSONL file is not acceptable JSON; ``problem`` says why in one sentence.

    A ValueError, not an InputError: the line reader knows neither the file nor the line; its
    caller does, and raises its own InputError with them.
    """

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)


class FixableValueError(ValueError):
    """A bad params value whose validator knows better than the generic hint how to fix it.

    A ValueError, so that pydantic reports it as a validation error of its key.
    """

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.fix = fix


class DuplicateKeyError(ValueError):
    """A YAML mapping names ``key`` twice: on ``first_line`` and again on ``line`` (both 1-based)."""

    def __init__(self, key: str, line: int, first_line: int) -> None:
        super().__init__(key)
        self.key, self.line, self.first_line = key, line, first_line


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, so that no ``except Exception`` swallows it on the way out."""
