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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

_WORD = re.compile(r"\w+")

Tokenizer = Callable[[str], list[str]]

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


@cache
def _stemmer_algorithms() -> frozenset[str]:
    import Stemmer  # PyStemmer; imported lazily so the default tokenizer needs nothing

    return frozenset(Stemmer.algorithms())


class TokenizeParams(BaseModel):
    """The ``tokenize`` section of params.yaml.

    Attributes:
        stopwords: ``none``, or ``en`` for the English list of bm25s (= Lucene's).
        stemmer: ``none``, or a Snowball algorithm name known to PyStemmer.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    stopwords: Literal["none", "en"] = "none"
    stemmer: str = "none"

    @field_validator("stemmer")
    @classmethod
    def _known_stemmer(cls, stemmer: str) -> str:
        if stemmer != "none" and stemmer not in _stemmer_algorithms():
            known = ", ".join(sorted(_stemmer_algorithms()))
            raise ValueError(f"unknown stemmer; use none or one of PyStemmer's algorithms: {known}")
        return stemmer

    @property
    def is_default(self) -> bool:
        return self.stopwords == "none" and self.stemmer == "none"

    def describe(self) -> dict[str, str]:
        """The tokenizer as recorded in an index manifest."""
        return {"pattern": "lowercase \\w+", "stemmer": self.stemmer, "stopwords": self.stopwords}


def _stopwords(name: str) -> frozenset[str]:
    from bm25s import stopwords

    return frozenset({"en": stopwords.STOPWORDS_EN}[name])


def make_tokenizer(params: TokenizeParams | None = None) -> Tokenizer:
    """The tokenizer ``params`` describe; the bare default when ``params`` is None or default."""
    if params is None or params.is_default:
        return tokenize
    stop = _stopwords(params.stopwords) if params.stopwords != "none" else frozenset()
    stem_words: Callable[[list[str]], list[str]] | None = None
    if params.stemmer != "none":
        import Stemmer

        stem_words = Stemmer.Stemmer(params.stemmer).stemWords

    def configured(text: str) -> list[str]:
        tokens = [t for t in tokenize(text) if t not in stop]
        return stem_words(tokens) if stem_words is not None else tokens

    return configured
