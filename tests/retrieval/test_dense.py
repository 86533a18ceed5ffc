"""The dense retriever for real: the packaged all-MiniLM-L6-v2 on the tiny corpus (needs the dense extra)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from groundkit.config import ChunkParams, DenseParams, load_params
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.passage import Document
from groundkit.errors import ArtifactError
from groundkit.execution.local import LocalEngine
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.dense import DenseRetriever, Encoder, load_embeddings, save_embeddings
from groundkit.retrieval.hybrid import reciprocal_rank_fusion
from groundkit.retrieval.ports import Sources
from groundkit.retrieval.rankers import build
from tests.conftest import REPO
from tests.dvc_helpers import env


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder(DenseParams(batch_size=4))


@pytest.fixture
def chunks(tiny_corpus):
    corpus, _ = tiny_corpus
    documents = [Document(path=p.relative_to(corpus).as_posix(), text=p.read_text()) for p in corpus.rglob("*.md")]
    return chunk_documents(documents, ChunkParams(size=70))


def test_embeddings_match_sentence_transformers(encoder, chunks):
    """An independent implementation of the same model (pulled in by the model package) as reference."""
    from sentence_transformers import SentenceTransformer

    texts = [c.text for c in chunks] + ["how often do incremental backups run"]
    reference = SentenceTransformer(str(encoder.model_dir), device="cpu").encode(
        texts, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    ours = encoder.encode(texts)
    assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_embeddings_artifact_is_byte_identical_and_checked(encoder, chunks, tmp_path):
    first = save_embeddings(tmp_path / "a", chunks, encoder.params, encoder)
    save_embeddings(tmp_path / "b", chunks, encoder.params, Encoder(encoder.params))
    for name in ("embeddings.npy", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (first["num_chunks"], first["dim"]) == (len(chunks), 384)
    assert str(tmp_path) not in (tmp_path / "a" / "manifest.json").read_text()
    vectors = load_embeddings(tmp_path / "a", chunks, encoder)
    assert vectors.shape == (len(chunks), 384)

    with pytest.raises(ArtifactError, match="embeds other chunks"):
        load_embeddings(tmp_path / "a", chunks[1:], encoder)
    with pytest.raises(ArtifactError, match="another batch_size"):
        load_embeddings(tmp_path / "a", chunks, Encoder(DenseParams(batch_size=8)))
    damaged = tmp_path / "b" / "embeddings.npy"
    damaged.write_bytes(damaged.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(ArtifactError, match="does not match the SHA-256"):
        load_embeddings(tmp_path / "b", chunks, encoder)
    save_embeddings(tmp_path / "none", chunks, None)
    with pytest.raises(ArtifactError, match="holds no embeddings"):
        load_embeddings(tmp_path / "none", chunks, encoder)


def test_dense_search_is_exact_cosine_and_never_abstains(encoder, chunks, tmp_path):
    save_embeddings(tmp_path / "e", chunks, encoder.params, encoder)
    dense = DenseRetriever(chunks, load_embeddings(tmp_path / "e", chunks, encoder), encoder)
    query = "how often do incremental backups run"
    ranking = dense.search(query, 100)
    # Cosine by hand: dot products of unit vectors, recomputed here from fresh embeddings.
    vectors = encoder.encode([c.text for c in chunks]).astype(np.float64)
    cosine = vectors @ encoder.encode([query])[0].astype(np.float64)
    by_id = {c.chunk_id: i for i, c in enumerate(chunks)}
    assert [s for _, s in ranking] == pytest.approx([cosine[by_id[c]] for c, _ in ranking])
    assert [s for _, s in ranking] == sorted((s for _, s in ranking), reverse=True)
    assert len(ranking) == len(chunks)  # every chunk, even the unrelated ones
    best = chunks[by_id[ranking[0][0]]]
    assert "Incremental backups run hourly" in best.text
    assert len(dense.search("sourdough hydration ratio", 3)) == 3  # an out-of-corpus query still gets results


def build_retriever(params, chunks, index_dir, embeddings_dir):
    """The retriever the kind builds, as the retrieve step builds it."""
    sources = Sources(chunks=lambda: list(chunks), documents=list, index_dir=index_dir, embeddings_dir=embeddings_dir)
    return build(params.retrieve.kind, sources, params, LocalEngine()).retriever


def test_hybrid_is_rrf_of_bm25_and_dense(encoder, chunks, tmp_path):
    BM25Index.build(chunks, k1=1.2, b=0.75).save(tmp_path / "index")
    save_embeddings(tmp_path / "emb", chunks, encoder.params, encoder)
    params = load_params(None, ["retrieve.retriever=hybrid", "hybrid.rrf_k=10", "dense.batch_size=4"])
    hybrid = build_retriever(params, chunks, tmp_path / "index", tmp_path / "emb")
    params_dense = load_params(None, ["retrieve.retriever=dense", "dense.batch_size=4"])
    dense = build_retriever(params_dense, chunks, tmp_path / "index", tmp_path / "emb")
    bm25 = BM25Index.load(tmp_path / "index")
    query = "snapshot transfer speed limit"
    order = {c.chunk_id: (c.document, c.start_offset) for c in chunks}
    expected = reciprocal_rank_fusion([bm25.search(query, 5), dense.search(query, 5)], order, 10, 5)
    assert hybrid.search(query, 5) == expected
    top = dict(expected)
    assert top[bm25.search(query, 5)[0][0]] >= 1 / 11  # rank 1 in bm25 alone contributes 1 / (10 + 1)


def test_bm25_pipeline_never_imports_torch(tiny_corpus, tmp_path):
    """The embed step for the default retriever writes a manifest and nothing else, with torch unavailable."""
    chunks_file = tmp_path / "chunks.jsonl"
    chunks_file.write_text("")
    script = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "from pathlib import Path\n"
        "from groundkit.pipeline.steps import embed as embed_step\n"
        "from groundkit.config import load_params\n"
        "from groundkit.pipeline.store import Store\n"
        f"m = embed_step.run(Path({str(chunks_file)!r}), load_params(None), Path({str(tmp_path / 'emb')!r}),\n"
        "                    store=Store())\n"
        "assert not m['embedded']\n"
        "p = load_params(None, ['retrieve.retriever=dense'])\n"
        "from groundkit.retrieval.dense import Encoder\n"
        "Encoder(p.dense).encode(['x'])\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env(), cwd=REPO,
                            check=False)
    assert "DependencyError" in result.stderr and "pip install -e '.[dense]'" in result.stderr
    assert json.loads((tmp_path / "emb" / "manifest.json").read_text())["embedded"] is False
