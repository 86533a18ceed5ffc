"""Quote resolution, and the passages a resolved span makes relevant."""

import pytest

from groundkit.corpus.judgments import GoldSpan, Judgment
from groundkit.corpus.passage import Chunk, Document
from groundkit.corpus.spans import (
    relevant_passage_ids,
    resolve_gold_span,
    resolve_judgments,
)
from groundkit.errors import SpanError

DOC = Document(path="a.md", text="The lease lasts 6 seconds.\nA lease transfer is cheap. The lease lasts long.\n")


def judgment(quote: str, document: str = "a.md") -> Judgment:
    return Judgment(query_id="q7", query="q", category="factoid", gold=[GoldSpan(document=document, quote=quote)])


def test_resolves_to_half_open_character_span():
    j = judgment("lasts 6 seconds")
    span = resolve_gold_span(j, j.gold[0], DOC)
    assert (span.start, span.end) == (10, 25)
    assert DOC.text[span.start : span.end] == "lasts 6 seconds"


def test_whole_document_span_covers_the_text_and_every_chunk_of_it():
    j = Judgment(query_id="q7", query="q", category="factoid", gold=[GoldSpan(document="a.md", whole_document=True)])
    span = resolve_gold_span(j, j.gold[0], DOC)
    assert (span.quote, span.start, span.end) == (None, 0, len(DOC.text) - 1)  # the final line break left out
    other = Document(path="b.md", text="The lease lasts 6 seconds.\n")
    chunks = [Chunk(document="a.md", start_offset=0, end_offset=26, text=DOC.text[:26]),
              Chunk(document="a.md", start_offset=27, end_offset=51, text=DOC.text[27:51]),
              Chunk(document="a.md", start_offset=52, end_offset=72, text=DOC.text[52:72]),
              Chunk(document="b.md", start_offset=0, end_offset=26, text=other.text[:26])]
    (resolved,) = resolve_judgments([j], {"a.md": DOC, "b.md": other})
    assert relevant_passage_ids([resolved], chunks) == {"q7": {c.chunk_id: 1 for c in chunks[:3]}}


def test_zero_matches_names_judgment_and_document():
    j = judgment("lasts 7 seconds")
    with pytest.raises(SpanError, match=r"judgment 'q7', document 'a.md': quote not found"):
        resolve_gold_span(j, j.gold[0], DOC)


def test_several_matches_lists_each_place():
    j = judgment("The lease lasts")
    with pytest.raises(SpanError) as info:
        resolve_gold_span(j, j.gold[0], DOC)
    message = str(info.value)
    assert "occurs 2 times" in message
    assert "line:col 1:1 (offset 0)" in message and "line:col 2:28 (offset 54)" in message


@pytest.mark.parametrize(
    ("text", "quote", "hint"),
    [
        ("café au lait", "cafe\u0301 au", "Unicode normalisation"),
        ("it's here", "it\u2019s here", "curly quotes"),
        ("split\nacross lines", "split across", "whitespace"),
        ("Upper Case", "upper case", "case-insensitively"),
    ],
)
def test_near_misses_say_what_differs(text, quote, hint):
    doc = Document(path="a.md", text=text)
    j = judgment(quote)
    with pytest.raises(SpanError, match=hint):
        resolve_gold_span(j, j.gold[0], doc)


def test_quote_longer_than_document():
    doc = Document(path="a.md", text="short")
    j = judgment("short and then some")
    with pytest.raises(SpanError, match="longer than the document"):
        resolve_gold_span(j, j.gold[0], doc)


@pytest.mark.parametrize("path", ["../outside.md", "/etc/passwd", "missing.md"])
def test_document_paths_must_be_inside_the_corpus(path):
    with pytest.raises(SpanError, match=repr(path)):
        resolve_judgments([judgment("lease", document=path)], {"a.md": DOC})


def test_straddling_span_makes_both_chunks_relevant():
    j = judgment("cheap. The lease")
    resolved = resolve_judgments([j], {"a.md": DOC})
    chunks = [Chunk(document="a.md", start_offset=s, end_offset=e, text=DOC.text[s:e])
              for s, e in [(0, 26), (27, 53), (54, 75)]]
    assert relevant_passage_ids(resolved, chunks) == {"q7": {chunks[1].chunk_id: 1, chunks[2].chunk_id: 1}}


def test_resolved_span_must_be_as_long_as_its_quote():
    from pydantic import ValidationError

    from groundkit.corpus.spans import ResolvedSpan

    assert ResolvedSpan(document="a.md", quote="abc", start=4, end=7).end == 7
    for start, end in ((5, 7), (4, 8)):
        with pytest.raises(ValidationError, match="is not as long as its quote"):
            ResolvedSpan(document="a.md", quote="abc", start=start, end=end)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        ResolvedSpan(document="a.md", quote="abc", start=-1, end=2)

def test_a_whole_document_span_is_the_text_a_whole_document_chunk_holds():
    # An imported BEIR document: title, a blank line, text, a final line break; and one with leading blank lines.
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking import chunk_documents

    beir = Document(path="d1.txt", text="A title\n\nThe abstract.\n")
    padded = Document(path="d2.txt", text="\n\n  Text after blank lines.\n\n")
    whole = Judgment(query_id="q7", query="q", category="factoid",
                     gold=[GoldSpan(document="d1.txt", whole_document=True),
                           GoldSpan(document="d2.txt", whole_document=True)])
    (resolved,) = resolve_judgments([whole], {"d1.txt": beir, "d2.txt": padded})
    assert [(s.start, s.end) for s in resolved.spans] == [(0, 22), (4, 27)]
    chunks = chunk_documents([beir, padded], ChunkParams(strategy="document"))
    # The report flags a chunk that holds part of a span ("a chunk boundary cuts it"): here each holds its span whole.
    assert [(c.start, c.end) for c in chunks] == [(s.start, s.end) for s in resolved.spans]
    assert relevant_passage_ids([resolved], chunks) == {"q7": {c.chunk_id: 1 for c in chunks}}


def test_an_ambiguous_short_quote_in_a_large_document_lists_the_first_places_and_the_count():
    line = "the quick brown fox jumps over the lazy dog\n"  # 44 characters, "the" at columns 1 and 32
    doc = Document(path="a.md", text=line * 50_000)  # 2.2 MB
    j = judgment("the")
    with pytest.raises(SpanError) as info:
        resolve_gold_span(j, j.gold[0], doc)
    assert ("quote occurs 100000 times, first at line:col 1:1 (offset 0), line:col 1:32 (offset 31), "
            "line:col 2:1 (offset 44), line:col 2:32 (offset 75), line:col 3:1 (offset 88) and 99995 more: 'the'"
            ) in str(info.value)


def test_overlapping_matches_make_a_quote_ambiguous():
    doc = Document(path="a.md", text="xaaa\n")
    j = judgment("aa")
    with pytest.raises(SpanError, match=r"occurs 2 times, at line:col 1:2 \(offset 1\), line:col 1:3 \(offset 2\):"):
        resolve_gold_span(j, j.gold[0], doc)


@pytest.mark.parametrize(
    ("text", "quote", "hint"),
    [
        ("Write skew is possible.\n", "Write sk\u200bew",
         "the quote holds U+200B ZERO WIDTH SPACE at position 9, which the document does not have"),
        ("snap\u2060shot\n", "snapshot",
         "the document holds U+2060 WORD JOINER at line:col 1:5 (offset 4), which the quote leaves out"),
        ("Intro.\nWrite sk\u00adew is possible.\n", "Write skew is",
         "the document holds U+00AD SOFT HYPHEN at line:col 2:9 (offset 15), which the quote leaves out"),
        ("Snapshot isolation.\n", "iso\u00adlation",
         "the quote holds U+00AD SOFT HYPHEN at position 4, which the document does not have"),
        ("Write skew is possible.\n", "Write\u00a0skew",
         "the quote holds U+00A0 NO-BREAK SPACE at position 6, where the document has ' '"),
        ("Write\u202fskew is possible.\n", "Write skew",
         "the document holds U+202F NARROW NO-BREAK SPACE at line:col 1:6 (offset 5), where the quote has ' '"),
        ("the first reader\n", "the \ufb01rst reader",
         "the quote holds U+FB01 LATIN SMALL LIGATURE FI at position 5, where the document has 'fi'"),
        ("one\nthe \ufb02ow\n", "the flow",
         "the document holds U+FB02 LATIN SMALL LIGATURE FL at line:col 2:5 (offset 8), where the quote has 'fl'"),
        ("x = a - b\n", "a \u2212 b", "the quote holds U+2212 MINUS SIGN at position 3, where the document has '-'"),
        ("x = a \u2212 b\n", "a - b",
         "the document holds U+2212 MINUS SIGN at line:col 1:7 (offset 6), where the quote has '-'"),
    ],
)
def test_invisible_and_look_alike_characters_are_named_with_their_place(text, quote, hint):
    doc = Document(path="a.md", text=text)
    j = judgment(quote)
    with pytest.raises(SpanError) as info:
        resolve_gold_span(j, j.gold[0], doc)
    message = str(info.value)
    assert (f"quote not found: {quote!r}; it matches only if invisible and look-alike characters are ignored: "
            f"{hint}; the quote must be verbatim") in message, message


def test_only_the_odd_characters_inside_the_match_are_named():
    # Line 1 shifts the plain text against the original (a ligature widens, a zero-width space vanishes).
    doc = Document(path="a.md", text="\ufb01\u200b\ufb01\nWrite sk\u00adew\n")
    j = judgment("Write skew")
    with pytest.raises(SpanError) as info:
        resolve_gold_span(j, j.gold[0], doc)
    message = str(info.value)
    assert ("ignored: the document holds U+00AD SOFT HYPHEN at line:col 2:9 (offset 12), which the quote leaves "
            "out; the quote must be verbatim") in message, message


def test_every_broken_quote_is_listed_in_one_message_that_names_repair():
    # One edit ("lasts 6" -> "lasts 9") breaks two quotes of two judgments; a third judgment names a missing file.
    edited = Document(path="a.md", text=DOC.text.replace("lasts 6", "lasts 9").replace("is cheap", "is free"))
    broken = [Judgment(query_id="q1", query="q", category="factoid",
                       gold=[GoldSpan(document="a.md", quote="lasts 6 seconds")]),
              Judgment(query_id="q2", query="q", category="factoid",
                       gold=[GoldSpan(document="a.md", quote="The lease lasts long"),
                             GoldSpan(document="a.md", quote="transfer is cheap")])]
    with pytest.raises(SpanError) as info:
        resolve_judgments(broken, {"a.md": edited}, judgments_path="j.jsonl", corpus_root="docs")
    problem = str(info.value)
    assert problem.startswith("j.jsonl: 2 gold quotes do not resolve:\n")
    assert "quote not found: 'lasts 6 seconds'" in problem and "quote not found: 'transfer is cheap'" in problem
    assert "`groundkit judgments repair --corpus docs --judgments j.jsonl`" in info.value.fix
    # One broken quote: its own message, and the same command in its fix.
    with pytest.raises(SpanError) as one:
        resolve_judgments(broken[:1], {"a.md": edited}, judgments_path="j.jsonl", corpus_root="docs")
    assert "quote not found: 'lasts 6 seconds'" in one.value.problem and "judgments repair" in one.value.fix
    missing = Judgment(query_id="q3", query="q", category="factoid", gold=[GoldSpan(document="b.md", quote="x")])
    with pytest.raises(SpanError) as both:
        resolve_judgments([*broken, missing], {"a.md": edited}, judgments_path="j.jsonl", corpus_root="docs")
    assert both.value.problem.startswith("3 gold quotes and document names do not resolve:")
    assert "document 'b.md' is not a file" in both.value.problem
