"""The BM25 baseline: a Lucene-BM25 index over chunks, built in segments and searched from disk.

Three modules: ``build`` (counting and weighing), ``format`` (the files on disk and their one writer) and
``search`` (a loaded index, its queries, and the ``bm25`` kind's ranker).

groundkit owns the tokenizer, the vocabulary order, the on-disk format and
the ranking order, and computes the weights itself with numpy. The weights
are bit-identical to bm25s 0.3.16 (``method="lucene"``,
``build_index_from_ids``), which a test checks.

Lucene BM25 (Kamphuis et al., ECIR 2020, "Lucene" variant):

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = sum over query tokens t of
                  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

A repeated query token counts once per occurrence. Every term of a matching
chunk contributes a positive amount, so a chunk scores above zero exactly
when it shares a token with the query. Arithmetic follows bm25s exactly:
idf is rounded to float32, the term weight is computed in float64 and stored
as float32, and a query's score is summed in float32, token by token, in
query order.

Rows (chunks, in the order given) are cut into segments of ``SEGMENT_ROWS``
rows, and the index is built in two passes, which the Ray engine runs as tasks
(groundkit/retrieval/bm25/build.py):

1. :func:`count_segment` tokenizes one segment's texts into (row, term, tf)
   triples; its :meth:`SegmentCounts.summary` is the segment's vocabulary,
   document frequencies and token total.
2. :func:`merge_stats` adds the summaries up into exact corpus statistics
   (sorted vocabulary, df, N, average length), and :func:`weigh_segment`
   turns each segment's triples into a CSC matrix over global term ids.

A term's weight in a row depends only on the row and those global
statistics, so the segments are the columns of the whole-corpus matrix cut
by row, and a query scores each segment on its own (:meth:`Segment.top`)
before :func:`merge_top` keeps the best. :func:`write_index` streams rows
from an iterable, spilling each segment's triples to disk, so memory holds
one segment, the vocabulary and a few arrays of one number per row.

On disk an index is plain arrays and JSON, loaded without pickle, with a
SHA-256 of every file in its manifest, and the manifest's own beside it
(``manifest.json.sha256``), so a truncated or edited index is detected before
it is used; the arrays are memory-mapped, so a query reads only its terms'
postings. The manifest also records k1, b and the tokenizer configuration, so
a loaded index tokenizes queries the way its chunks were, and the retrieve
stage can check that the index was built with the params it reports.
"""

from groundkit.retrieval.bm25.build import (
    SegmentCounts,
    SegmentSummary,
    count_segment,
    merge_stats,
    weigh_segment,
    write_index,
)
from groundkit.retrieval.bm25.format import (
    FORMAT,
    MANIFEST,
    SEGMENT_ROWS,
    IndexSummary,
    IndexWriter,
    Segment,
    StoredIndex,
    read_index,
)
from groundkit.retrieval.bm25.search import BM25Index, IndexRanker, load_for, merge_top, query_terms, ranker, top_k
from groundkit.retrieval.bm25.stats import GlobalStats

__all__ = [
    "FORMAT",
    "MANIFEST",
    "SEGMENT_ROWS",
    "BM25Index",
    "GlobalStats",
    "IndexRanker",
    "IndexSummary",
    "IndexWriter",
    "Segment",
    "SegmentCounts",
    "SegmentSummary",
    "StoredIndex",
    "count_segment",
    "load_for",
    "merge_stats",
    "merge_top",
    "query_terms",
    "ranker",
    "read_index",
    "top_k",
    "weigh_segment",
    "write_index",
]
