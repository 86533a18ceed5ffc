"""The files of a documentation folder that groundkit cannot read as documents, known by their names.

groundkit reads a document as UTF-8 text and quotes it character for character. A real documentation
folder holds more than that: PDFs, Word files, images beside the Markdown, an HTML export. Read as
text, a PDF or an image fails on its first byte with a message about encodings; HTML reads, and its
tags and attributes would be indexed as words and quoted as text. So each such file is refused by its
name, all of them in one message, with how to turn it into text or leave it out (``corpus.exclude``).

HTML is markup, not binary: a team that means to index it as it is selects it on purpose, with a
``corpus.include`` pattern ending in its suffix (``**/*.html``); nothing reads it without that word.
Markdown, reStructuredText and plain text are read as they are: their markup is light, and it is
what the team's readers see too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from groundkit.inputs.globs import Patterns


@dataclass(frozen=True)
class Format:
    """Files groundkit refuses, by suffix: what they are and how to make them documents."""

    name: str
    suffixes: tuple[str, ...]
    convert: str
    markup: bool = False
    """Text, but markup: read only when a ``corpus.include`` pattern ending in the suffix selects it."""


FORMATS: tuple[Format, ...] = (
    Format("PDF", (".pdf",), "convert each to text (pdftotext FILE.pdf FILE.txt) and check what came out"),
    Format("word-processor", (".docx", ".doc", ".odt", ".rtf", ".pages"),
           "convert each to Markdown (pandoc FILE.docx -t gfm -o FILE.md)"),
    Format("slides or spreadsheet", (".pptx", ".ppt", ".odp", ".key", ".xlsx", ".xls", ".ods", ".numbers"),
           "export the text to quote as Markdown or plain text"),
    Format("e-book", (".epub", ".mobi"), "convert each to Markdown (pandoc FILE.epub -t gfm -o FILE.md)"),
    Format("image", (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico", ".svg", ".heic"),
           "an image holds no text to quote: leave it out"),
    Format("audio or video", (".mp3", ".wav", ".m4a", ".mp4", ".mov", ".webm", ".avi"),
           "a recording holds no text to quote: leave it out, or add its transcript as text"),
    Format("archive", (".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".jar"),
           "unpack it into the corpus folder, or leave it out"),
    Format("HTML", (".html", ".htm", ".xhtml"),
           "convert each to Markdown or text (pandoc FILE.html -t gfm -o FILE.md), so that tags and attributes "
           "are not indexed as words", markup=True),
)

_BY_SUFFIX = {suffix: fmt for fmt in FORMATS for suffix in fmt.suffixes}


def refused_format(path: str, include: Patterns) -> Format | None:
    """The format ``path`` (corpus-relative) is refused as, or None when groundkit reads it as a document.

    Markup is read when an include pattern ending in its suffix selects it: the team chose to index it as it is.
    """
    suffix = _suffix(path).lower()
    found = _BY_SUFFIX.get(suffix)
    if found is None:
        return None
    if found.markup:
        chosen = include.which(path)
        if chosen is not None and chosen.lower().endswith(suffix):
            return None
    return found


def _suffix(path: str) -> str:
    """``PurePosixPath(path).suffix``, as pathlib finds it, without building a path per document (a corpus is
    thousands of files; the paths were a fifth of listing SciFact's)."""
    name = path[path.rfind("/") + 1:]
    at = name.rfind(".")
    return name[at:] if 0 < at < len(name) - 1 else ""


def refusal(refused: Sequence[tuple[str, Format]]) -> tuple[str, str]:
    """The problem and the fix for the files of ``refused`` (corpus-relative path, format), all named."""
    by_format: dict[Format, list[str]] = {}
    for path, fmt in refused:
        by_format.setdefault(fmt, []).append(path)
    shown = 10
    parts, fixes, patterns = [], [], []
    for fmt, paths in sorted(by_format.items(), key=lambda item: FORMATS.index(item[0])):
        listed = ", ".join(paths[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")
        parts.append(f"{len(paths)} {fmt.name} file{'s' if len(paths) != 1 else ''} ({listed})")
        fixes.append(f"{fmt.name}: {fmt.convert}")
        patterns += sorted({f"*{PurePosixPath(p).suffix}" for p in paths})  # matching is case-sensitive
    problem = (f"holds files groundkit cannot read as documents: {'; '.join(parts)}. A document is UTF-8 text, "
               "quoted character for character")
    exclude = ", ".join(f"'{p}'" for p in patterns)
    markup = [fmt for fmt in by_format if fmt.markup]
    fix = (f"{'; '.join(fixes)}; or leave them out: corpus.exclude: [{exclude}] in params.yaml (or --set "
           f"\"corpus.exclude=[{exclude}]\")")
    if markup:
        fix += (f"; to index {markup[0].name} as the markup it is, select it with a corpus.include pattern ending in "
                f"its suffix, e.g. '**/*{markup[0].suffixes[0]}'")
    return problem, fix
