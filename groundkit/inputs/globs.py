"""Glob patterns over corpus-relative paths, as ``corpus.include`` and ``corpus.exclude`` write them.

The rules are those of ``.gitignore`` and ``.dvcignore``, which a team already writes:

* ``*`` matches any characters but ``/``, ``?`` one such character, ``[abc]`` / ``[!abc]`` one of a set;
* ``**`` matches any number of folders (``docs/**/*.md``, ``**/drafts``), or everything below (``drafts/**``);
* a pattern without a ``/`` (``*.pdf``) matches a file or folder name in any folder; one with a ``/`` is
  matched from the corpus root (a leading ``/`` is allowed and means the same);
* a pattern that matches a folder matches everything in it (``drafts`` leaves out all of ``drafts/``).

Matching is case-sensitive, as paths in judgments are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from groundkit.errors import FixableValueError


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used, or None."""
    if not pattern.strip():
        return "is empty"
    if pattern != pattern.strip():
        return "begins or ends with a space"
    body = pattern.strip("/")
    if not body:
        return "names the corpus root itself"
    if any(part in ("..", ".") for part in body.split("/")):
        return "holds '.' or '..' as a folder: patterns are matched inside the corpus root"
    try:
        _compile(pattern)
    except re.error as exc:
        return f"is not a valid pattern ({exc.msg})"
    return None


def checked_patterns(patterns: list[str], key: str) -> list[str]:
    """``patterns``, the value of params key ``key``, once each is known usable; else the refusal, with its fix."""
    for pattern in patterns:
        problem = pattern_problem(pattern)
        if problem is not None:
            raise FixableValueError(f"pattern {pattern!r} {problem}",
                                    f"write {key} as a list of glob patterns relative to corpus.root, as .gitignore "
                                    "writes them, e.g. ['*.pdf', 'drafts/**']")
    if len(set(patterns)) != len(patterns):
        raise FixableValueError("names a pattern twice", f"keep each pattern of {key} once")
    return patterns


def _compile(pattern: str) -> tuple[re.Pattern[str], bool]:
    """The regular expression of ``pattern`` and whether it matches names in any folder (no ``/`` in it)."""
    anywhere = "/" not in pattern.rstrip("/")
    body = pattern.strip("/")
    out = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("/**", i) and i + 3 == len(body):
            out.append("/.*")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        elif body[i] == "[":
            close = body.find("]", i + 2 if body[i + 1:i + 2] in ("!", "]") else i + 1)
            if close < 0:
                raise re.error("a [ without its ]")
            inner = body[i + 1:close]
            out.append("[" + ("^" + inner[1:] if inner.startswith("!") else inner).replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    return re.compile("".join(out)), anywhere


class Patterns:
    """Patterns compiled once, to test every path of a corpus against them."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self._compiled = [_compile(pattern) for pattern in self.patterns]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def which(self, path: str) -> str | None:
        """The first pattern that selects the corpus-relative POSIX ``path`` (or a folder holding it), or None."""
        parts = path.split("/")
        prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        for pattern, (regex, anywhere) in zip(self.patterns, self._compiled, strict=True):
            if any(regex.fullmatch(part) for part in (parts if anywhere else prefixes)):
                return pattern
        return None

    def select(self, path: str) -> bool:
        """Whether any pattern selects ``path``."""
        return self.which(path) is not None
