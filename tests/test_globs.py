"""Glob patterns over corpus-relative paths: .gitignore's rules, worked out case by case."""

from __future__ import annotations

import pytest

from groundkit.inputs.globs import Patterns, pattern_problem


@pytest.mark.parametrize(("pattern", "path", "selected"), [
    ("*.pdf", "manual.pdf", True),
    ("*.pdf", "guides/2024/manual.pdf", True),     # no "/" in the pattern: a name in any folder
    ("*.pdf", "manual.pdf.md", False),
    ("*.PDF", "manual.pdf", False),                # case-sensitive, as judgments' paths are
    ("drafts", "drafts/wip.md", True),             # a folder the pattern names: everything in it
    ("drafts", "team/drafts/wip.md", True),
    ("/drafts", "team/drafts/wip.md", False),      # a leading "/": from the corpus root only
    ("drafts/**", "drafts/a/b.md", True),
    ("docs/*.md", "docs/a.md", True),
    ("docs/*.md", "docs/sub/a.md", False),         # "*" stops at "/"
    ("docs/**/*.md", "docs/a.md", True),           # "**/" is zero or more folders
    ("docs/**/*.md", "docs/x/y/a.md", True),
    ("docs/**/*.md", "other/docs/a.md", False),    # a pattern with "/" is anchored at the root
    ("**/img", "a/b/img/logo.png", True),
    ("note?.md", "note1.md", True),
    ("note?.md", "note10.md", False),
    ("[!a]*.md", "b.md", True),
    ("[!a]*.md", "a.md", False),
    ("v[0-9].md", "v7.md", True),
])
def test_a_pattern_selects_as_gitignore_would(pattern, path, selected):
    assert Patterns([pattern]).select(path) is selected


def test_which_pattern_selected_a_path():
    patterns = Patterns(["*.md", "**/*.html"])
    assert patterns.which("a/index.html") == "**/*.html" and patterns.which("x.txt") is None
    assert not Patterns([]) and Patterns(["*.md"])


@pytest.mark.parametrize(("pattern", "problem"), [
    ("", "is empty"), (" *.md", "begins or ends with a space"), ("/", "names the corpus root itself"),
    ("../shared/*.md", "holds '.' or '..' as a folder"), ("[ab", "is not a valid pattern"),
])
def test_a_pattern_that_cannot_be_used_says_why(pattern, problem):
    assert (pattern_problem(pattern) or "").startswith(problem)
    assert pattern_problem("docs/**/*.md") is None
