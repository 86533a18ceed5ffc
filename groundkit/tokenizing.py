"""The tokenizer shared by indexing, querying and the corpus audit.

It is deliberately bare: lower-case, then every maximal run of word
characters (``\\w+``, Unicode-aware) is a token. No stopwords, no stemming.
A query therefore scores above zero against a chunk exactly when the two
share a token, which is what threshold-free abstention relies on.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")

# For ASCII text, \w is exactly [A-Za-z0-9_]: lower-casing those and turning
# every other character into a space lets str.split() find the same tokens,
# about twice as fast as the regex (indexing a large corpus is mostly this).
_ASCII_WORDS = {
    code: (chr(code).lower() if chr(code).isalnum() or chr(code) == "_" else " ") for code in range(128)
}


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-cased ``\\w+`` tokens.

    >>> tokenize("Snapshot isolation, re-tried 3x!")
    ['snapshot', 'isolation', 're', 'tried', '3x']
    """
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    return _WORD.findall(text.lower())
