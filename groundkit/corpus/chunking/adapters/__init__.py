"""Adapters to the splitters teams use: ``LIBRARY:CLASS``, ``chunk.options`` as the class's keyword arguments.

Each library is one module here, imported only when ``chunk.strategy`` names it, behind a guarded import
whose error names the extra to install. An adapter says how to call its library and which of its classes
are refused (their chunks are not verbatim text of the document: a heading splitter that strips the
headings, a splitter that re-serialises JSON); everything else is shared here:

* the class is looked up by name and built once with ``chunk.options``; the library's own error (a bad
  argument, a model it cannot load) becomes one ChunkerError;
* each document's chunks are checked (groundkit/corpus/chunking/checked.py): a library's own offsets are
  used where they check out, else the chunk's text is located in the document.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from groundkit.corpus.chunking.checked import Checker, Located
from groundkit.corpus.chunking.kinds import Adapter, Span
from groundkit.corpus.chunking.plugin import user_code
from groundkit.errors import DependencyError

EXTRA = "pip install 'groundkit[chunking]'"


@dataclass(frozen=True)
class Refused:
    """A class of a library whose chunks are not document text: why, and the built-in that covers the need."""

    why: str
    instead: str


@dataclass(frozen=True)
class Library:
    """How groundkit calls one library.

    Attributes:
        module: The module the classes are looked up in.
        package: The distribution to install, for the message when it is missing.
        accepts: Whether a class found there is one of its splitters (else it is refused as not one).
        split: ``(instance, text) -> chunks``: the chunks of one text, as str or :class:`Located`.
        refused: Classes refused by name, with why.
        arguments: ``chunk.options`` as the class takes them (YAML has lists where a library may want tuples).
    """

    module: str
    package: str
    accepts: Callable[[ModuleType, type], bool]
    split: Callable[[Any, str], list[Located | str]]
    refused: Mapping[str, Refused] = field(default_factory=dict)
    arguments: Callable[[dict[str, Any]], dict[str, Any]] = dict


def load(kind: Adapter, library: Library, checker: Checker) -> type:
    """The class ``kind`` names, from ``library`` (DependencyError when the library is not installed)."""
    try:
        module = importlib.import_module(library.module)
    except ImportError:
        raise DependencyError(f"chunk.strategy {kind.spec!r} needs {library.package}, which is not installed; "
                              f"{EXTRA}") from None
    refused = library.refused.get(kind.class_name)
    if refused is not None:
        checker.fail(f"{kind.class_name}'s chunks are not verbatim text of the document: {refused.why}, so "
                     "quote-anchored labels cannot be matched against them",
                     f"use chunk.strategy: {refused.instead}, which covers the need with spans of the document")
    found = getattr(module, kind.class_name, None)
    if not isinstance(found, type) or not library.accepts(module, found):
        checker.fail(f"{library.module} has no splitter class {kind.class_name!r}",
                     f"name one of {library.module}'s text splitter classes (docs/chunkers.md lists those tested)")
    return found


@dataclass
class AdapterSplitter:
    """A library's splitter, built once; each document's chunks checked."""

    library: Library
    instance: Any
    checker: Checker

    def spans(self, text: str, document: str) -> list[Span]:
        with user_code(self.checker, f"splitting the document {document!r}",
                       "check chunk.options against the library's documentation; --debug shows its traceback"):
            returned = self.library.split(self.instance, text)
        return self.checker.spans(returned, text, document)


def build(kind: Adapter, library: Library, options: Mapping[str, Any], source: str) -> AdapterSplitter:
    """The adapter for ``kind``: the class loaded and built with ``options`` as keyword arguments."""
    checker = Checker(kind.spec, source, fix="check that the class returns text of the document; docs/chunkers.md "
                      "lists the classes tested")
    cls = load(kind, library, checker)
    with user_code(checker, f"building {kind.class_name}(**chunk.options)",
                   f"give chunk.options the keyword arguments {kind.class_name} takes"):
        instance = cls(**library.arguments(copy.deepcopy(dict(options))))
    return AdapterSplitter(library, instance, checker)
