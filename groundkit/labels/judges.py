"""Judges: who answers "does this passage help answer this query, and which words of it do?".

Two kinds, named in ``judge.model`` (or ``--judge``) and parsed once (groundkit/labels/spec.py):

* ``openai:MODEL``: an OpenAI-compatible chat-completions endpoint (groundkit/labels/endpoint.py), asked
  with a prompt template, the one groundkit ships (prompts/judge.txt) unless ``judge.prompt`` names
  another. The template's SHA-256 is part of every label's provenance and of every cache key.
* ``python:MODULE:FACTORY``: ``FACTORY(options)`` (``judge.options``) returns an object with
  ``judge(query: str, passage: str) -> {"grade": int, "quote": str | None}`` and, for ``judgments
  propose``, optionally ``propose(passage: str) -> {"query": str, "quote": str} | None``. It is called
  one call at a time.

Whatever a judge answers is checked here: a grade is an integer from 0 to 3, a quote a string or null.
Anything else, and anything the plugin raises (SystemExit included), is a :class:`JudgeFault` the caller turns
into one JudgeError naming the query and the passage. KeyboardInterrupt passes through.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import os
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from groundkit.errors import FixableValueError, JudgeError, JudgeFault, ParamsError, Terminated
from groundkit.labels.endpoint import Endpoint, parse_json_answer
from groundkit.labels.spec import FIX, JudgeSpec, parse_judge

if TYPE_CHECKING:
    from groundkit.config import JudgeParams

MAX_GRADE = 3
_SHOWN = 200
_FROM_OUTSIDE = (KeyboardInterrupt, Terminated)

JUDGE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["grade", "quote"],
                "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": MAX_GRADE},
                               "quote": {"type": ["string", "null"]}}}
PROPOSE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["query", "quote"],
                  "properties": {"query": {"type": "string"}, "quote": {"type": "string"}}}


@dataclass(frozen=True)
class Verdict:
    """A judge's answer for one (query, passage) pair."""

    grade: int
    quote: str | None
    tokens: int = 0


@dataclass(frozen=True)
class Proposal:
    """A judge's question for one passage, with the verbatim quote that answers it."""

    query: str
    quote: str


def _shown(value: object) -> str:
    try:
        shown = repr(value)
    except _FROM_OUTSIDE:
        raise
    except BaseException:
        shown = f"<{type(value).__name__} that cannot be shown>"
    return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."


def check_verdict(raw: object) -> tuple[int, str | None]:
    """The grade and quote of a judge's answer, or a JudgeFault saying what is wrong with it."""
    if not isinstance(raw, dict) or "grade" not in raw or "quote" not in raw:
        raise JudgeFault(f"the judge answered {_shown(raw)}, not an object with \"grade\" and \"quote\"",
                    'a judge answers {"grade": 0-3, "quote": "verbatim text" or null}')
    grade, quote = raw["grade"], raw["quote"]
    if isinstance(grade, float) and grade.is_integer():
        grade = int(grade)
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise JudgeFault(f"the judge's grade is {_shown(grade)}, not an integer", "a grade is an integer from 0 to 3")
    if not 0 <= grade <= MAX_GRADE:
        raise JudgeFault(f"the judge's grade {grade} is outside 0 to {MAX_GRADE}", "a grade is an integer from 0 to 3")
    if quote is not None and not isinstance(quote, str):
        raise JudgeFault(f"the judge's quote is {_shown(quote)}, not a string or null",
                    "a quote is verbatim text of the passage, or null")
    return grade, quote


def check_proposal(raw: object) -> tuple[str, str] | None:
    """The query and quote of a proposal, None for no proposal, or a JudgeFault."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("query"), str) or not isinstance(raw.get("quote"), str):
        raise JudgeFault(f"the judge proposed {_shown(raw)}, not {{\"query\": str, \"quote\": str}} or null",
                    'propose answers {"query": "a question", "quote": "verbatim text"} or null')
    if not raw["query"].strip():
        raise JudgeFault("the judge proposed an empty query", "propose a question the quote answers")
    return raw["query"].strip(), raw["quote"]


class Judge:
    """A judge ready to answer: its id and prompt digests (the provenance of its labels) and its calls."""

    id: str
    prompt_sha256: str | None = None
    propose_sha256: str | None = None
    concurrency: int = 1

    def judge(self, query: str, passage: str) -> Verdict:
        raise NotImplementedError

    def propose(self, passage: str) -> tuple[Proposal | None, int]:
        """A question about ``passage`` (None: the judge saw none) and the tokens the call took."""
        raise NotImplementedError

    def can_propose(self) -> bool:
        return True

    def estimate_tokens(self, query: str, passage: str) -> int:
        """Input tokens one call would take, estimated (four characters a token); 0 for a python: judge."""
        return 0

    def scrub(self, text: str) -> str:
        return text

    def close(self) -> None:
        pass


def _template(path: str, shipped: str, key: str, source: str, names: tuple[str, ...]) -> tuple[Template, str]:
    if path:
        file = Path(path)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise ParamsError(source, f"the prompt template {path!r} cannot be read ({exc.strerror})", key=key,
                              fix="name a text file with the placeholders " + ", ".join(f"${{{n}}}" for n in names)
                              ) from None
    else:
        data = resources.files("groundkit.labels").joinpath("prompts", shipped).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ParamsError(source, f"the prompt template {path!r} is not UTF-8", key=key, fix="save it as UTF-8"
                          ) from None
    missing = [n for n in names if f"${{{n}}}" not in text]
    if missing:
        raise ParamsError(source, f"the prompt template {path or shipped!r} lacks " + ", ".join(
            f"${{{n}}}" for n in missing), key=key, fix="put the placeholders where the texts go")
    return Template(text), hashlib.sha256(data).hexdigest()


class OpenAIJudge(Judge):
    """``openai:MODEL``: asked over HTTP with the prompt template."""

    def __init__(self, spec: JudgeSpec, params: JudgeParams, *, base_url: str | None, source: str) -> None:
        self.id = spec.spec
        self.concurrency = params.concurrency
        self._judge, self.prompt_sha256 = _template(params.prompt, "judge.txt", "judge.prompt", source,
                                                    ("query", "passage"))
        self._propose, self.propose_sha256 = _template(params.propose_prompt, "propose.txt", "judge.propose_prompt",
                                                       source, ("passage",))
        self.endpoint = Endpoint(base_url=base_url or params.base_url, model=spec.model,
                                 api_key=os.environ.get(params.api_key_env), key_env=params.api_key_env,
                                 timeout=params.timeout, retries=params.retries, backoff=params.backoff,
                                 max_tokens=params.max_tokens, structured=params.structured)

    def _ask(self, prompt: str, schema: dict[str, Any]) -> tuple[Any, int]:
        text, tokens = self.endpoint.complete(prompt, schema)
        try:
            return parse_json_answer(text), tokens
        except (ValueError, RecursionError):
            raise JudgeFault(f"the model answered something that is not JSON: {self.endpoint._shown(text)}",
                        "use a model that follows the prompt (or one with structured output), or raise "
                        "judge.max_tokens if answers are cut short") from None

    def judge(self, query: str, passage: str) -> Verdict:
        raw, tokens = self._ask(self._judge.substitute(query=query, passage=passage), JUDGE_SCHEMA)
        return Verdict(*check_verdict(raw), tokens=tokens)

    def propose(self, passage: str) -> tuple[Proposal | None, int]:
        raw, tokens = self._ask(self._propose.substitute(passage=passage), PROPOSE_SCHEMA)
        found = check_proposal(raw)
        return (None if found is None else Proposal(*found)), tokens

    def estimate_tokens(self, query: str, passage: str) -> int:
        return len(self._judge.substitute(query=query, passage=passage)) // 4 + 1

    def scrub(self, text: str) -> str:
        return self.endpoint.scrub(text)

    def close(self) -> None:
        self.endpoint.close()


class PythonJudge(Judge):
    """``python:MODULE:FACTORY``: the team's own code, its answers checked."""

    def __init__(self, spec: JudgeSpec, params: JudgeParams, *, source: str) -> None:
        self.id = spec.spec
        added = str(Path.cwd())
        sys.path.insert(0, added)  # like `python -m`: a module next to params.yaml is found
        try:
            module = self._run(lambda: importlib.import_module(spec.module), f"importing module {spec.module!r}")
        finally:
            if added in sys.path:
                sys.path.remove(added)
        factory = getattr(module, spec.factory, None)
        if not callable(factory):
            raise JudgeFault(f"judge {self.id!r}: module {spec.module!r} has no callable {spec.factory!r}",
                        "name a function (or class) taking (options) that returns an object with judge(query, "
                        "passage)")
        options = copy.deepcopy(dict(params.options))
        self._inner = self._run(lambda: factory(options), "the factory")
        if not callable(getattr(self._inner, "judge", None)):
            raise JudgeFault(f"judge {self.id!r}: the factory returned {type(self._inner).__name__}, which has no "
                        "judge(query, passage) method", "return an object with judge(query, passage)")

    def _run(self, call: Any, step: str) -> Any:
        try:
            return call()
        except _FROM_OUTSIDE:
            raise
        except SystemExit as exc:
            raise JudgeFault(f"judge {self.id!r}: {step} tried to end the process (SystemExit {_shown(exc.code)})",
                        "plugin code must return or raise, never exit") from exc
        except BaseException as exc:
            raise JudgeFault(f"judge {self.id!r}: {step} raised {type(exc).__name__}: {_shown(str(exc))}",
                        "fix the judge; re-run with --debug for its traceback") from exc

    def judge(self, query: str, passage: str) -> Verdict:
        raw = self._run(lambda: self._inner.judge(query, passage), "judge(query, passage)")
        return Verdict(*check_verdict(raw))

    def can_propose(self) -> bool:
        return callable(getattr(self._inner, "propose", None))

    def propose(self, passage: str) -> tuple[Proposal | None, int]:
        found = check_proposal(self._run(lambda: self._inner.propose(passage), "propose(passage)"))
        return (None if found is None else Proposal(*found)), 0


def build_judge(params: JudgeParams, *, spec: str | None = None, base_url: str | None = None,
                source: str = "params.yaml") -> Judge:
    """The judge ``spec`` (or ``judge.model``) names.

    Raises:
        ParamsError: no judge named, or a name groundkit does not know, or an unreadable prompt template.
        JudgeError: (through the caller) a python: judge that cannot be built.
    """
    name = spec or params.model
    if not name:
        raise ParamsError(source, "names no judge", key="judge.model", fix="set judge.model, or pass --judge; " + FIX)
    try:
        parsed = parse_judge(name)
    except FixableValueError as exc:
        raise ParamsError("--judge" if spec else source, str(exc), key=None if spec else "judge.model",
                          fix=exc.fix) from None
    if parsed.kind == "openai":
        return OpenAIJudge(parsed, params, base_url=base_url, source=source)
    try:
        return PythonJudge(parsed, params, source=source)
    except JudgeFault as fault:
        raise JudgeError(fault.problem, fix=fault.fix) from fault
