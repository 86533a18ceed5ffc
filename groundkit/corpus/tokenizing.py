"""The tokenizer shared by indexing, querying and the corpus audit.

By default it is deliberately bare: lower-case, then every maximal run of
word characters (``\\w+``, Unicode-aware) is a token. No stopwords, no
stemming. A query therefore scores above zero against a chunk exactly when
the two share a token, which is what threshold-free abstention relies on.

The ``tokenize`` section of params.yaml can add, in this order (Lucene's
order: stop filter, then stemmer):

* ``stopwords: en``: drop the 33 English stopwords bm25s ships as
  ``bm25s.stopwords.STOPWORDS_EN``, the same list as Lucene's
  ``EnglishAnalyzer`` (and so Elasticsearch's and Anserini's);
* ``stemmer: <algorithm>``: a Snowball stemmer from PyStemmer, e.g.
  ``english`` (Porter2) or ``porter`` (the original Porter algorithm, which
  Lucene's ``PorterStemFilter`` implements).

The index records its tokenizer in its manifest, so queries are tokenized
the way the chunks were without the retrieve stage reading these params.

The corpus audit also needs *content words*: :func:`make_content_tokenizer`
is the configured tokenizer with English function words removed (the 179 of
``bm25s.stopwords.STOPWORDS_EN_PLUS``, NLTK's list). Lucene's 33 would keep
"how", "what" and "does", which nearly every question shares with nearly
every document.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Sequence
from functools import cache
from itertools import chain, islice
from pathlib import Path
from types import ModuleType

from groundkit.config import TokenizeParams

_WORD = re.compile(r"\w+")

Tokenizer = Callable[[str], Sequence[str]]
"""A tokenizer: a list of tokens, or inside a run a tuple shared by every step that asks (never to be changed)."""

WordTokenizer = Callable[[Sequence[str]], list[tuple[str, ...]]]
"""Many words (``\\w+`` runs) at once: each one's tokens."""

# For ASCII text, \w is exactly [A-Za-z0-9_]: lower-casing those and turning
# every other character into a space lets str.split() find the same tokens,
# about twice as fast as the regex (indexing a large corpus is mostly this).
_ASCII_WORDS = {
    code: (chr(code).lower() if chr(code).isalnum() or chr(code) == "_" else " ") for code in range(128)
}


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-cased ``\\w+`` tokens (the default tokenizer).

    >>> tokenize("Snapshot isolation, re-tried 3x!")
    ['snapshot', 'isolation', 're', 'tried', '3x']
    """
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    return _WORD.findall(text.lower())


def _stopwords(name: str) -> frozenset[str]:
    lists = _bm25s_stopwords()
    return frozenset({"en": lists.STOPWORDS_EN, "en_plus": lists.STOPWORDS_EN_PLUS}[name])


@cache
def _bm25s_stopwords() -> ModuleType:
    """bm25s's stopwords module, run on its own: ``import bm25s.stopwords`` would first run
    bm25s/__init__.py, which imports numpy and scipy (0.3 s), for two lists of words."""
    package = importlib.util.find_spec("bm25s")
    if package is None or not package.submodule_search_locations:
        raise ModuleNotFoundError("bm25s is not installed (pip install -e .)", name="bm25s")
    path = Path(next(iter(package.submodule_search_locations))) / "stopwords.py"
    spec = importlib.util.spec_from_file_location("groundkit._bm25s_stopwords", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_tokenizer(params: TokenizeParams | None = None) -> Tokenizer:
    """The tokenizer ``params`` describe; the bare default when ``params`` is None or default."""
    if params is None or params.is_default:
        return tokenize
    stop = _stopwords(params.stopwords) if params.stopwords != "none" else frozenset()
    return _filtered(stop, params.stemmer)


def make_content_tokenizer(params: TokenizeParams | None = None) -> Tokenizer:
    """The tokenizer ``params`` describe, less English function words: the words that carry content."""
    return _content(params)


def make_content_word_tokenizer(params: TokenizeParams | None = None) -> WordTokenizer:
    """For each of many words (each a ``\\w+`` run as written), what :func:`make_content_tokenizer` gives for it
    lower-cased, in one pass with one call of the stemmer: the report marks a passage's words by it."""
    return _content(params).words


def _content(params: TokenizeParams | None) -> _Filtered:
    stop = _stopwords("en_plus")
    if params is not None and params.stopwords != "none":
        stop |= _stopwords(params.stopwords)
    return _filtered(stop, params.stemmer if params is not None else "none")


class _Filtered:
    """``tokenize``, then drop ``stop``, then stem (Lucene's order)."""

    def __init__(self, stop: frozenset[str], stem_words: Callable[[list[str]], list[str]] | None) -> None:
        self._stop, self._stem_words = stop, stem_words

    def __call__(self, text: str) -> list[str]:
        tokens = [t for t in tokenize(text) if t not in self._stop]
        return self._stem_words(tokens) if self._stem_words is not None else tokens

    def words(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        """``tuple(self(word.lower()))`` for each of ``words``, each a ``\\w+`` run: an ASCII one lower-cased is
        its own one token, so only the others are tokenized, and the stemmer is called once."""
        stop = self._stop
        kept = [(() if w in stop else (w,)) if w.isascii() else tuple(t for t in tokenize(w) if t not in stop)
                for w in map(str.lower, words)]
        if self._stem_words is None:
            return kept
        stems = iter(self._stem_words(list(chain.from_iterable(kept))))
        return [tuple(islice(stems, len(tokens))) for tokens in kept]


def _filtered(stop: frozenset[str], stemmer: str) -> _Filtered:
    stem_words: Callable[[list[str]], list[str]] | None = None
    if stemmer != "none":
        import Stemmer

        stem_words = Stemmer.Stemmer(stemmer).stemWords
    return _Filtered(stop, stem_words)
