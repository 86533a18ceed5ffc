"""Loading the corpus: every regular file under the corpus root is a document.

The loader is strict because everything downstream trusts it: a document that
is not UTF-8, uses CRLF line endings, is empty, or is a link leading outside
the root is an error, never silently skipped. So is any entry that is not a
regular file: it is recognised from its metadata and never opened, since
reading a FIFO waits forever and reading a device may never end. So is a file
of a kind groundkit cannot read as text (a PDF, an image, HTML: see
groundkit/corpus/formats.py), by its name.

Which files are documents is the team's to say, with glob patterns
(``corpus.include``, ``corpus.exclude``; groundkit/inputs/globs.py): a file is read
when an include pattern selects it (every file, when there is none) and no
exclude pattern does. Left out, an entry is neither read nor checked.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from groundkit.artifacts.models import assembled
from groundkit.corpus.formats import refusal, refused_format
from groundkit.corpus.passage import Document, content_id
from groundkit.errors import CorpusError
from groundkit.inputs.globs import Patterns
from groundkit.inputs.suggest import near_path_text
from groundkit.inputs.text import decode_utf8_lf


def decode_document(path: str | Path, data: bytes, *, name: str | None = None) -> str:
    """Decode one document's bytes, rejecting what would make offsets or hashes unstable."""
    shown = name or str(path)
    text = decode_utf8_lf(shown, data, error=CorpusError, hashed_as="corpus_hash")
    if "\0" in text:
        raise CorpusError(
            shown,
            "contains a NUL character; it looks like a binary file",
            fix="remove the file from the corpus, leave it out with corpus.exclude, or strip the NUL bytes",
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


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe: reading it waits for a writer, possibly forever)"),
    (stat.S_ISCHR, "a character device (reading one may never end)"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_ONLY = "only regular files (and symlinks to them inside the corpus root) are documents"
_REMOVE = "remove it or move it out of the corpus root"
_RELINK = "remove the link, or point it at a regular file inside the corpus root"


def _kind(mode: int) -> str:
    for test, kind in _SPECIAL:
        if test(mode):
            return kind
    return "not a regular file"


def _refusal(path: Path, real_root: Path) -> tuple[str, str] | None:
    """Why ``path`` is not a document, and the fix; None when it is a regular file (or links to one inside the root).

    Only ``lstat`` and ``stat`` look at the entry: opening a FIFO blocks and a device never ends.
    """
    mode = os.lstat(path).st_mode
    if stat.S_ISREG(mode):
        return None
    if not stat.S_ISLNK(mode):
        return _kind(mode), _REMOVE
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop (following it leads back to a link, never to a file)", _RELINK
        if exc.errno == errno.ENOENT:
            return f"a broken symlink (its target {os.readlink(path)} does not exist)", _RELINK
        return f"a symlink that cannot be followed ({exc.strerror})", _RELINK
    target = Path(os.path.realpath(path))
    if not target.is_relative_to(real_root):
        return (f"a symlink pointing outside the corpus root (to {target})",
                "copy the file into the corpus or remove the link")
    if not stat.S_ISREG(mode):
        return f"a symlink to {_kind(mode)}", _RELINK
    return None


def corpus_files(root: Path, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Return ``(relative posix path, path)`` for every document under ``root``, the path as ``os.scandir``
    gives it (``root`` joined with the relative path): a string, since a corpus is thousands of files and a
    ``Path`` per file cost a fifth of reading them.

    Hidden files and directories (name starting with ``.``) are ignored, and so is every entry the glob
    patterns leave out: one ``include`` does not select (when there are any), or one ``exclude`` does (a
    folder ``exclude`` selects is not walked). Every other entry must be a regular file, or a symlink
    that resolves inside the root to one; anything else (a FIFO, a device, a socket, a symlink loop, a
    broken link, a linked directory) is refused, and all such entries are named in one error. So are
    files of a kind groundkit cannot read as text (groundkit/corpus/formats.py), in another.
    """
    if not root.exists():
        raise CorpusError(root, f"corpus root does not exist{near_path_text(root)}",
                          fix="check corpus.root in params.yaml or --corpus")
    if not root.is_dir():
        raise CorpusError(root, "corpus root is not a directory", fix="point corpus.root at the folder of documents")
    real_root = root.resolve()
    found: list[tuple[str, str]] = []
    refused: list[tuple[Path, str, str]] = []
    chosen, left_out = Patterns(include), Patterns(exclude)

    # A stack, not recursion: no depth limit, and no function that refers to itself, which would keep
    # every path found alive until the garbage collector next ran.
    folders = [(os.fspath(root), "")]
    while folders:
        folder, prefix = folders.pop()
        # scandir reports each entry's type from the directory listing itself: a regular file needs no
        # lstat of its own (a corpus is thousands of them); links and special files get the full check.
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)  # in no particular order: what is found is sorted at the end
        except OSError as exc:
            # A folder that cannot be listed is an error: skipped, its documents would silently drop out
            # of the corpus, and out of every ranking.
            refused.append((Path(exc.filename), f"a folder that cannot be read ({exc.strerror})",
                            "give the user running groundkit read and execute permission on it, or move it out"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if not left_out.select(rel):
                    folders.append((entry.path, f"{rel}/"))
                continue
            if (chosen and not chosen.select(rel)) or left_out.select(rel):
                continue
            if entry.is_file(follow_symlinks=False):
                found.append((f"{prefix}{entry.name}", entry.path))
            elif entry.is_symlink() and os.path.isdir(entry.path):  # isdir, unlike DirEntry.is_dir, survives a loop
                refused.append((Path(entry.path), "a symlinked directory (groundkit does not follow directory links)",
                                "copy the directory into the corpus instead of linking it"))
            elif (why := _refusal(Path(entry.path), real_root)) is None:
                found.append((f"{prefix}{entry.name}", entry.path))
            else:
                refused.append((Path(entry.path), *why))

    if refused:
        raise _refused_error(root, sorted(refused))
    found.sort()
    unreadable = [(rel, fmt) for rel, _ in found if (fmt := refused_format(rel, chosen)) is not None]
    if unreadable:
        problem, fix = refusal(unreadable)
        raise CorpusError(root, problem, fix=fix)
    if not found:
        selected = f" that corpus.include ({', '.join(include)}) and corpus.exclude ({', '.join(exclude)}) select" \
            if include or exclude else ""
        raise CorpusError(root, f"corpus root holds no documents{selected}",
                          fix="add .md or .txt files under it" + (", or widen the patterns" if selected else ""))
    return found


def _refused_error(root: Path, refused: list[tuple[Path, str, str]]) -> CorpusError:
    if len(refused) == 1:
        path, reason, fix = refused[0]
        return CorpusError(path, f"is {reason}; {_ONLY}", fix=fix)
    listing = "; ".join(f"{path.relative_to(root).as_posix()} is {reason}" for path, reason, _ in refused)
    by_fix: dict[str, list[str]] = {}
    for path, _, fix in refused:
        by_fix.setdefault(fix, []).append(path.relative_to(root).as_posix())
    return CorpusError(root, f"holds {len(refused)} entries that are not documents: {listing}; {_ONLY}",
                       fix="; ".join(f"{', '.join(paths)}: {fix}" for fix, paths in by_fix.items()))


def read_document_bytes(path: str | Path) -> bytes:
    """Read a document that :func:`corpus_files` accepted, refusing it if it stopped being a regular file since."""
    # O_NONBLOCK: should a FIFO have replaced the file after the check, opening it must not wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CorpusError(path, f"is {_kind(info.st_mode)}, no longer a regular file (it changed while the "
                              f"corpus was read); {_ONLY}", fix=_REMOVE)
        # A regular file reads short only at its end; one that grew since fstat is read on to its end.
        data = os.read(fd, info.st_size + 1)
        if len(data) <= info.st_size:
            return data
        blocks = [data]
        while blocks[-1]:
            blocks.append(os.read(fd, 1 << 20))
        return b"".join(blocks)
    finally:
        os.close(fd)


def load_corpus(root: str | Path, *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[Document]:
    """Read and validate every document under ``root`` that the glob patterns select (see :func:`corpus_files`),
    sorted by path."""
    return load_corpus_hashed(root, include=include, exclude=exclude)[0]


def load_corpus_hashed(root: str | Path, *, include: Sequence[str] = (),
                       exclude: Sequence[str] = ()) -> tuple[list[Document], str]:
    """:func:`load_corpus` and :func:`corpus_hash` of the same bytes, each document read once: the corpus hash a
    run records is the hash of the very documents it read, even if a file changes meanwhile."""
    documents = []
    listing = []
    root = Path(root)
    shown = root.as_posix().rstrip("/")
    for rel, path in corpus_files(root, include, exclude):
        data = read_document_bytes(path)
        listing.append(f"{hashlib.sha256(data).hexdigest()}  {rel}\n")
        text = decode_document(path, data, name=f"{shown}/{rel}")
        # Built, not validated: a path corpus_files found is a non-empty str, decode_document's text a str, and
        # the id is derived as Document derives it (tests/corpus/test_documents.py compares with validation).
        documents.append(assembled(Document, {"path": rel, "text": text, "document_id": content_id(rel, text)}))
    return documents, hashlib.sha256("".join(listing).encode("utf-8")).hexdigest()


def corpus_hash(root: str | Path, *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> str:
    """SHA-256 over the corpus: the ``sha256sum``-style listing of every document, sorted by path.

    It hashes raw bytes, so it changes with any byte of any document (line
    endings included) and with any rename, and with nothing else: a file the
    patterns leave out is no document, and changes nothing.
    """
    listing = "".join(
        f"{hashlib.sha256(read_document_bytes(path)).hexdigest()}  {rel}\n"
        for rel, path in corpus_files(Path(root), include, exclude)
    )
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()
