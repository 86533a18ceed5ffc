"""Step resolve-spans: snapshot the corpus and resolve every gold quote to a character span."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts import write_models
from groundkit.corpus.documents import load_corpus
from groundkit.corpus.judgments import load_judgments
from groundkit.corpus.passage import Document
from groundkit.corpus.spans import ResolvedJudgment, resolve_judgments

if TYPE_CHECKING:
    from groundkit.config import Params



def run(corpus_root: Path, judgments: Path, out_documents: Path, out_spans: Path) -> list[ResolvedJudgment]:
    """Load the corpus and resolve every gold quote; write the corpus snapshot and the spans."""

    documents = load_corpus(corpus_root)
    loaded = load_judgments(judgments)
    resolved = resolve_judgments(
        loaded, {d.path: d for d in documents}, judgments_path=judgments, corpus_root=corpus_root
    )
    # Spans first: the documents snapshot is what unblocks chunking, so it is written last.
    write_models(out_spans, resolved, ResolvedJudgment)
    write_models(out_documents, documents, Document)
    return resolved


def summary(resolved: list[ResolvedJudgment], params: Params) -> str:
    """What the stage did, in a line."""
    return f"resolve-spans: {sum(len(r.spans) for r in resolved)} gold quotes resolved exactly once"
