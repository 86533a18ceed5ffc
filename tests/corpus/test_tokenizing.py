import pytest

from groundkit.config import TokenizeParams
from groundkit.corpus.tokenizing import make_tokenizer, tokenize


def test_lowercases_and_splits_on_non_word_characters():
    assert tokenize("Snapshot-isolation, RE-tried 3x!") == ["snapshot", "isolation", "re", "tried", "3x"]


def test_keeps_underscores_and_unicode_letters_inside_tokens():
    assert tokenize("gc.ttl_seconds café") == ["gc", "ttl_seconds", "café"]


def test_no_stopwords_removed():
    assert tokenize("what is the") == ["what", "is", "the"]


def test_punctuation_only_text_has_no_tokens():
    assert tokenize("--- !!! ...") == []


def test_default_params_give_the_bare_tokenizer_itself():
    assert make_tokenizer(TokenizeParams()) is tokenize
    assert make_tokenizer(None) is tokenize


def test_english_stopwords_are_lucenes_33():
    # Lucene's EnglishAnalyzer stop set, as bm25s ships it: "what" and "how" are not in it.
    drop = make_tokenizer(TokenizeParams(stopwords="en"))
    assert drop("What is the state of THE art, and how is it measured?") == [
        "what", "state", "art", "how", "measured"]


@pytest.mark.parametrize(
    ("stemmer", "expected"),
    [
        # Porter2 ("english") and the original Porter algorithm differ on "generously" and "fairly".
        ("english", ["run", "run", "generous", "fair", "isol", "replica"]),
        ("porter", ["run", "run", "gener", "fairli", "isol", "replica"]),
    ],
)
def test_snowball_stemmers(stemmer, expected):
    stem = make_tokenizer(TokenizeParams(stemmer=stemmer))
    assert stem("Running runs generously fairly isolation replicas") == expected


def test_stopwords_are_removed_before_stemming():
    # Stemming first would turn "this" into "thi", which is not a stopword and would survive.
    both = make_tokenizer(TokenizeParams(stopwords="en", stemmer="porter"))
    assert make_tokenizer(TokenizeParams(stemmer="porter"))("this was") == ["thi", "wa"]
    assert both("this was replicated") == ["replic"]


def test_unknown_stemmer_is_rejected():
    with pytest.raises(ValueError, match="unknown stemmer"):
        TokenizeParams(stemmer="klingon")


def test_ascii_fast_path_matches_the_regex_on_every_ascii_character():
    # The ASCII path (translate + split) must give exactly what lower() + \w+ gives.
    import random
    import re

    word = re.compile(r"\w+")
    every = "".join(chr(c) for c in range(128))
    # In code-point order: digits, A-Z (lower-cased), "[\\]^" split, "_" alone before "`", then a-z.
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    assert tokenize(every) == word.findall(every.lower()) == ["0123456789", alphabet, "_", alphabet]
    rng = random.Random(3)
    for _ in range(500):
        text = "".join(rng.choice(every) for _ in range(rng.randint(0, 60)))
        assert tokenize(text) == word.findall(text.lower())
        mixed = text + rng.choice(["é", "ß", "İ", "Ⅻ", "\u00a0"])  # non-ASCII: the regex path
        assert tokenize(mixed) == word.findall(mixed.lower())


@pytest.mark.parametrize("settings", [{}, {"stemmer": "english", "stopwords": "en"}, {"stemmer": "porter"}])
def test_words_at_once_are_tokenized_as_one_by_one(settings):
    from groundkit.config import TokenizeParams
    from groundkit.corpus.tokenizing import make_content_tokenizer, make_content_word_tokenizer

    params = TokenizeParams(**settings)
    words = ["Running", "THE", "snapshots", "İstanbul", "ΣΊΣΥΦΟΣ", "straße", "x_y", "3X", "ﬁle", "a\u0301b", "of",
             "Éclairs", "ǅemal", "½", "2²"]
    one_by_one = make_content_tokenizer(params)
    assert make_content_word_tokenizer(params)(words) == [tuple(one_by_one(w.lower())) for w in words]
    assert make_content_word_tokenizer(params)(["İstanbul"]) == [tuple(one_by_one("i̇stanbul"))]
