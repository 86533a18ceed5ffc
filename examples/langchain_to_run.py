"""Turn a RAG framework's retrieved documents into a groundkit run file, then score it.

Retrievers in LangChain return ``Document`` objects: ``page_content`` (the
passage) and ``metadata`` with ``source`` (the file it came from) and, when
the splitter ran with ``add_start_index=True``, ``start_index`` (its character
offset). LlamaIndex nodes carry the same facts as ``node.text``,
``node.metadata["file_path"]``, ``node.start_char_idx`` and ``node.end_char_idx``.
Either maps onto one line of a groundkit run::

    {"query_id": "q001", "rank": 1, "document": "snapshots/backup-snapshots.md", "start": 0, "end": 412}
    {"query_id": "q001", "rank": 2, "document": "leases/lease-basics.md", "text": "A lease is ..."}

with offsets when the framework kept them, and the passage text otherwise
(groundkit then finds it in the document; it must occur there exactly once).

So that this example runs offline and without installing a framework, a
``Document`` dataclass stands in for ``langchain_core.documents.Document`` and
a toy keyword retriever stands in for ``vectorstore.similarity_search``. With
a real framework, only ``retrieve`` changes. Run from the repository root::

    python examples/langchain_to_run.py --corpus evals/corpus --judgments evals/judgments.jsonl \\
        --out examples/runs/langchain_example.jsonl
    groundkit score-run examples/runs/langchain_example.jsonl --corpus evals/corpus \\
        --judgments evals/judgments.jsonl --params params.yaml --out runs/langchain
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Document:
    """Stands in for ``langchain_core.documents.Document``."""

    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)


def split_paragraphs(path: Path, *, add_start_index: bool) -> list[Document]:
    """Like a text splitter on blank lines: one Document per paragraph."""
    text = path.read_text(encoding="utf-8")
    documents, cursor = [], 0
    for paragraph in text.split("\n\n"):
        start = text.index(paragraph, cursor)
        cursor = start + len(paragraph)
        content = paragraph.strip()
        if not content:
            continue
        metadata: dict[str, Any] = {"source": path.as_posix()}
        if add_start_index:
            metadata["start_index"] = start + paragraph.index(content)
        documents.append(Document(page_content=content, metadata=metadata))
    return documents


def retrieve(store: list[Document], query: str, k: int) -> list[Document]:
    """A toy stand-in for ``similarity_search``: count the query's longer words in each passage."""
    words = {w for w in WORD.findall(query.lower()) if len(w) > 3}

    def overlap(doc: Document) -> int:
        return len(words & set(WORD.findall(doc.page_content.lower())))

    ranked = sorted(store, key=lambda d: (-overlap(d), d.metadata["source"], d.page_content))
    return [d for d in ranked[:k] if overlap(d) > 0]


def to_run_records(query_id: str, documents: list[Document], corpus_root: Path) -> list[dict[str, Any]]:
    """One run record per retrieved Document, ranks 1..n in the framework's order."""
    records = []
    for rank, doc in enumerate(documents, start=1):
        source = PurePosixPath(doc.metadata["source"])
        record: dict[str, Any] = {
            "query_id": query_id,
            "rank": rank,
            "document": source.relative_to(corpus_root.as_posix()).as_posix(),
        }
        if "start_index" in doc.metadata:
            record["start"] = doc.metadata["start_index"]
            record["end"] = doc.metadata["start_index"] + len(doc.page_content)
        else:
            record["text"] = doc.page_content
        records.append(record)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, type=Path)
    parser.add_argument("--judgments", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("-k", type=int, default=5, help="passages per query")
    parser.add_argument("--text", action="store_true", help="emit passage text instead of offsets")
    args = parser.parse_args(argv)

    store = [doc for path in sorted(p for p in args.corpus.rglob("*") if p.is_file())
             for doc in split_paragraphs(path, add_start_index=not args.text)]
    lines = []
    for line in args.judgments.read_text(encoding="utf-8").splitlines():
        if line.strip():
            judgment = json.loads(line)
            found = retrieve(store, judgment["query"], args.k)
            lines += [json.dumps(r) for r in to_run_records(judgment["query_id"], found, args.corpus)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    print(f"wrote {len(lines)} passages to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
