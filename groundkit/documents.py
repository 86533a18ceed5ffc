"""Loading the corpus: every regular file under the corpus root is a document.

The loader is strict because everything downstream trusts it: a document that
is not UTF-8, uses CRLF line endings, is empty, or is a link leading outside
the root is an error, never silently skipped.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from groundkit._text import decode_utf8_lf
from groundkit.contracts import Document
from groundkit.errors import CorpusError


def decode_document(path: Path, data: bytes, *, name: str | None = None) -> str:
    """Decode one document's bytes, rejecting what would make offsets or hashes unstable."""
    shown = name or str(path)
    text = decode_utf8_lf(shown, data, error=CorpusError, hashed_as="corpus_hash")
    if "\0" in text:
        raise CorpusError(
            shown,
            "contains a NUL character; it looks like a binary file",
            fix="remove the file from the corpus or strip the NUL bytes",
            line=text.count("\n", 0, text.index("\0")) + 1,
        )
    if not text.strip():
        raise CorpusError(
            shown,
            "is empty (or only whitespace): it can hold no gold span and would distort BM25's "
            "average length",
            fix="add the document's text or delete the file",
        )
    return text


def corpus_files(root: Path) -> list[tuple[str, Path]]:
    """Return ``(relative posix path, absolute path)`` for every document under ``root``.

    Hidden files and directories (name starting with ``.``) are ignored. A
    symlink is followed only if it resolves inside the root.
    """
    if not root.exists():
        raise CorpusError(root, "corpus root does not exist", fix="check corpus.root in params.yaml or --corpus")
    if not root.is_dir():
        raise CorpusError(root, "corpus root is not a directory", fix="point corpus.root at the folder of documents")
    real_root = root.resolve()
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        base = Path(dirpath)
        for dirname in dirnames:
            if (base / dirname).is_symlink():
                raise CorpusError(
                    base / dirname,
                    "is a symlinked directory; groundkit does not follow directory links",
                    fix="copy the directory into the corpus instead of linking it",
                )
        for filename in sorted(filenames):
            if filename.startswith("."):
                continue
            path = base / filename
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(real_root):
                    raise CorpusError(
                        path,
                        f"is a symlink pointing outside the corpus root (to {target})",
                        fix="copy the file into the corpus or remove the link",
                    )
                if not target.is_file():
                    raise CorpusError(path, "is a symlink to something that is not a file", fix="remove the link")
            found.append((rel, path))
    found.sort()
    if not found:
        raise CorpusError(root, "corpus root holds no documents", fix="add .md or .txt files under it")
    return found


def load_corpus(root: str | Path) -> list[Document]:
    """Read and validate every document under ``root``, sorted by path."""
    root = Path(root)
    documents = []
    for rel, path in corpus_files(root):
        text = decode_document(path, path.read_bytes(), name=f"{root.as_posix().rstrip('/')}/{rel}")
        documents.append(Document(path=rel, text=text))
    return documents


def corpus_hash(root: str | Path) -> str:
    """SHA-256 over the corpus: the ``sha256sum``-style listing of every file, sorted by path.

    It hashes raw bytes, so it changes with any byte of any document (line
    endings included) and with any rename, and with nothing else.
    """
    listing = "".join(
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {rel}\n" for rel, path in corpus_files(Path(root))
    )
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def file_hash(path: str | Path) -> str:
    """SHA-256 of a file's raw bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
