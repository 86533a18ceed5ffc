"""The tokenizer shared by indexing, querying and the corpus audit.

It is deliberately bare: lower-case, then every maximal run of word
characters (``\\w+``, Unicode-aware) is a token. No stopwords, no stemming.
A query therefore scores above zero against a chunk exactly when the two
share a token, which is what threshold-free abstention relies on.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-cased ``\\w+`` tokens.

    >>> tokenize("Snapshot isolation, re-tried 3x!")
    ['snapshot', 'isolation', 're', 'tried', '3x']
    """
    return _WORD.findall(text.lower())
