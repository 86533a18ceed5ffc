"""The embed stage's folder when the retriever uses no embeddings: a manifest saying so.

Kept apart from groundkit/retrieval/dense.py, which imports numpy, so that the embed stage of the
default BM25 pipeline starts without numpy (a tenth of a second of every `dvc repro`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundkit.artifacts.atomic import atomic_directory, atomic_write_text
from groundkit.artifacts.lines import dumps_json

FORMAT = "groundkit-embeddings/1"


def save_no_embeddings(directory: str | Path) -> dict[str, Any]:
    """Write ``directory`` atomically, holding only a manifest saying no embeddings were needed."""
    manifest: dict[str, Any] = {"format": FORMAT, "embedded": False,
                                "reason": "the retriever in params.yaml uses no embeddings"}
    with atomic_directory(directory) as tmp:
        atomic_write_text(tmp / "manifest.json", dumps_json(manifest), seal=True)
    return manifest
