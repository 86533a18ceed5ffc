"""Which entries of a corpus root are documents: regular files only, and links to them inside the root."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from groundkit.corpus.documents import corpus_hash, load_corpus
from groundkit.errors import CorpusError

# /dev/null's numbers: should a regression open the device, it reads nothing and fails fast instead of
# reading /dev/zero until memory runs out; the loader must refuse it from its metadata alone either way.
NULL_DEVICE = os.makedev(1, 3)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "notes.md").write_text("Snapshots are taken hourly.\n", encoding="utf-8")
    return root


@contextmanager
def fifo(path: Path) -> Iterator[None]:
    """A FIFO with a writer that closes at once, so code that wrongly opens it reads EOF instead of hanging."""
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)), daemon=True)
    writer.start()
    try:
        yield
    finally:
        # The writer's open waits for a reader; be that reader if the code under test never was.
        release = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        writer.join()
        os.close(release)


def refusal(root: Path, load=load_corpus) -> str:
    with pytest.raises(CorpusError) as info:
        load(root)
    message = str(info.value)
    assert "\n  fix: " in message, message
    return message


@pytest.mark.parametrize("load", [load_corpus, corpus_hash])
def test_a_fifo_is_refused_without_being_opened(corpus, load):
    with fifo(corpus / "pipe.md"):
        message = refusal(corpus, load)
    assert message.startswith(f"{corpus / 'pipe.md'}: is a FIFO (named pipe: reading it waits for a writer"), message
    assert message.endswith("only regular files (and symlinks to them inside the corpus root) are documents\n"
                            "  fix: remove it or move it out of the corpus root"), message


def test_a_character_device_is_refused(corpus):
    os.mknod(corpus / "zero.md", stat.S_IFCHR | 0o644, NULL_DEVICE)
    message = refusal(corpus)
    assert message.startswith(f"{corpus / 'zero.md'}: is a character device"), message


def test_a_block_device_is_refused(corpus):
    os.mknod(corpus / "disk.md", stat.S_IFBLK | 0o644, os.makedev(240, 0))  # no driver behind these numbers
    assert refusal(corpus).startswith(f"{corpus / 'disk.md'}: is a block device")


def test_a_socket_is_refused(corpus, monkeypatch):
    monkeypatch.chdir(corpus)  # a relative name keeps the socket path under the 108-byte limit
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock.md")
    assert refusal(corpus).startswith(f"{corpus / 'sock.md'}: is a socket")


def test_a_symlink_loop_names_both_links(corpus):
    os.symlink("b.md", corpus / "a.md")
    os.symlink("a.md", corpus / "b.md")
    message = refusal(corpus)
    assert message.startswith(f"{corpus}: holds 2 entries that are not documents: a.md is a symlink loop"), message
    assert "; b.md is a symlink loop" in message


def test_a_broken_symlink_names_its_target(corpus):
    os.symlink("gone.md", corpus / "dangling.md")
    assert refusal(corpus).startswith(f"{corpus / 'dangling.md'}: is a broken symlink (its target gone.md does "
                                      "not exist)")


def test_a_symlink_to_a_fifo_is_refused(corpus):
    with fifo(corpus / "pipe"):
        os.symlink("pipe", corpus / "linked.md")
        message = refusal(corpus)
    assert "linked.md is a symlink to a FIFO" in message and "pipe is a FIFO" in message


def test_every_refused_entry_is_named_in_one_error(corpus):
    (corpus / "sub").mkdir()
    os.mknod(corpus / "sub" / "null.md", stat.S_IFCHR | 0o644, NULL_DEVICE)
    os.symlink("gone.md", corpus / "dangling.md")
    outside = corpus.parent / "outside.md"
    outside.write_text("Outside.\n", encoding="utf-8")
    os.symlink(outside, corpus / "out.md")
    with fifo(corpus / "pipe.md"):
        message = refusal(corpus)
    assert message.startswith(f"{corpus}: holds 4 entries that are not documents: dangling.md is a broken symlink")
    for part in ("out.md is a symlink pointing outside the corpus root", "pipe.md is a FIFO",
                 "sub/null.md is a character device",
                 "fix: dangling.md: remove the link, or point it at a regular file inside the corpus root; "
                 "out.md: copy the file into the corpus or remove the link; "
                 "pipe.md, sub/null.md: remove it or move it out of the corpus root"):
        assert part in message, message


def test_hidden_entries_and_links_to_documents_inside_the_root_are_fine(corpus):
    os.symlink("notes.md", corpus / "alias.md")
    with fifo(corpus / ".pipe"):
        documents = load_corpus(corpus)
    assert [(d.path, d.text) for d in documents] == [("alias.md", "Snapshots are taken hourly.\n"),
                                                     ("notes.md", "Snapshots are taken hourly.\n")]



def test_a_folder_that_cannot_be_listed_is_refused_not_skipped(corpus):
    (corpus / "private").mkdir()
    (corpus / "private" / "plan.md").write_text("The restore plan.\n", encoding="utf-8")
    (corpus / "private").chmod(0)
    # Root reads any folder: as root, the probe runs without the two capabilities that bypass permissions.
    drop = (["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else [])
    probe = ("import sys\nfrom groundkit.console.guard import guarded\n"
             "from groundkit.corpus.documents import load_corpus\n"
             "sys.exit(guarded(lambda argv: print(len(load_corpus(argv[0]))) or 0, [sys.argv[1]]))\n")
    try:
        result = subprocess.run([*drop, sys.executable, "-c", probe, str(corpus)], capture_output=True, text=True)
    finally:
        (corpus / "private").chmod(0o755)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith(f"error: {corpus}/private: is a folder that cannot be read (Permission denied)")
    assert "fix: give the user running groundkit read and execute permission" in result.stderr


def test_documents_are_built_as_validation_would_build_them(tmp_path):
    """load_corpus builds its records without validating them again: they must equal validated ones."""
    from groundkit.corpus.passage import Document

    root = tmp_path / "corpus"
    (root / "deep" / "er").mkdir(parents=True)
    texts = {"a.md": "Alpha.\n", "deep/er/b c.txt": "\u00e9t\u00e9 \U0001f600\n\n\tend\n", "deep/z.md": "z\n"}
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8")
    loaded = load_corpus(root)
    validated = [Document(path=name, text=texts[name]) for name in sorted(texts)]
    assert loaded == validated
    def seen(documents):
        return [(repr(d), hash(d), d.model_dump()) for d in documents]

    assert seen(loaded) == seen(validated)
    assert [Document.model_validate_json(d.model_dump_json()) for d in loaded] == loaded


# --- a real documentation folder: what groundkit reads, what it refuses by name, and the patterns that choose


def documentation_folder(root: Path) -> Path:
    """What a team's docs/ holds: Markdown, reStructuredText and text, an HTML export, a PDF, a Word file, an image."""
    (root / "guides" / "img").mkdir(parents=True)
    (root / "drafts").mkdir()
    (root / "guides" / "deploy.md").write_text("# Deploys\n\nA failed deploy is rolled back.\n", encoding="utf-8")
    (root / "guides" / "api.rst").write_text("API\n===\n\nEvery call needs a token.\n", encoding="utf-8")
    (root / "notes.txt").write_text("Backups run nightly.\n", encoding="utf-8")
    (root / "drafts" / "wip.md").write_text("Half a thought.\n", encoding="utf-8")
    (root / "guides" / "index.html").write_text("<html><body><p>Deploys roll back.</p></body></html>\n",
                                                encoding="utf-8")
    (root / "manual.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n")
    (root / "spec.docx").write_bytes(b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00")
    (root / "guides" / "img" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    return root


def test_files_groundkit_cannot_read_are_refused_by_name_in_one_message(tmp_path):
    root = documentation_folder(tmp_path / "docs")
    message = refusal(root)
    problem, fix = message.split("\n  fix: ")
    assert problem.startswith(f"{root}: holds files groundkit cannot read as documents: ")
    for named in ("1 PDF file (manual.pdf)", "1 word-processor file (spec.docx)", "1 image file (guides/img/logo.png)",
                  "1 HTML file (guides/index.html)"):
        assert named in problem
    assert "pdftotext" in fix and "pandoc" in fix
    assert "corpus.exclude: ['*.pdf', '*.docx', '*.png', '*.html']" in fix
    assert "select it with a corpus.include pattern ending in its suffix, e.g. '**/*.html'" in fix


def test_exclude_leaves_files_out_and_include_chooses_which_are_read(tmp_path):
    root = documentation_folder(tmp_path / "docs")
    # The refusal's own fix, as written: the text documents remain.
    excluded = ["*.pdf", "*.docx", "*.png", "*.html"]
    assert [d.path for d in load_corpus(root, exclude=excluded)] == [
        "drafts/wip.md", "guides/api.rst", "guides/deploy.md", "notes.txt"]
    assert [d.path for d in load_corpus(root, exclude=[*excluded, "drafts"])] == [
        "guides/api.rst", "guides/deploy.md", "notes.txt"]
    # Only what include selects is read, and only then checked: the PDF and the image are never looked at.
    assert [d.path for d in load_corpus(root, include=["*.md", "*.rst"], exclude=["drafts/**"])] == [
        "guides/api.rst", "guides/deploy.md"]
    # HTML is read, as the markup it is, only when a pattern naming its suffix selects it.
    read = load_corpus(root, include=["*.md", "**/*.html"])
    assert [d.path for d in read] == ["drafts/wip.md", "guides/deploy.md", "guides/index.html"]
    assert read[-1].text.startswith("<html>")
    with pytest.raises(CorpusError, match=r"1 HTML file \(guides/index\.html\)"):
        load_corpus(root, include=["guides/**"], exclude=["*.png"])
    # A file left out is no document: the corpus hash is that of the documents read.
    assert corpus_hash(root, exclude=excluded) == corpus_hash(root, exclude=[*excluded, ".unused"])
    assert corpus_hash(root, exclude=excluded) != corpus_hash(root, exclude=[*excluded, "notes.txt"])
    with pytest.raises(CorpusError, match=r"holds no documents that corpus\.include"):
        load_corpus(root, include=["*.md"], exclude=["*.md"])


def test_the_default_reads_what_it_always_read():
    # The committed corpus, with no patterns: the hash the committed baseline was computed from.
    import json

    from tests.conftest import REPO

    recorded = json.loads((REPO / "metrics" / "run.json").read_text(encoding="utf-8"))["corpus_hash"]
    assert corpus_hash(REPO / "evals" / "corpus") == recorded
    assert corpus_hash(REPO / "evals" / "corpus", include=["**"]) == recorded


def test_a_files_suffix_is_found_as_pathlib_finds_it():
    from pathlib import PurePosixPath

    from groundkit.corpus.formats import _suffix

    names = ["a", "a.txt", "a.PDF", ".hidden", ".x.md", "x.", "x..", "..", "a.b.c", "a.tar.gz", "é.Pdf", "a b.docx"]
    paths = [f"{folder}{name}" for folder in ("", "d/", "d.e/", "d/.f/", "a.b/c.d/") for name in names]
    assert [_suffix(p) for p in paths] == [PurePosixPath(p).suffix for p in paths]
    assert _suffix("docs/manual.pdf") == ".pdf" and _suffix("docs.pdf/readme") == ""
