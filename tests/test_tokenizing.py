from groundkit.tokenizing import tokenize


def test_lowercases_and_splits_on_non_word_characters():
    assert tokenize("Snapshot-isolation, RE-tried 3x!") == ["snapshot", "isolation", "re", "tried", "3x"]


def test_keeps_underscores_and_unicode_letters_inside_tokens():
    assert tokenize("gc.ttl_seconds café") == ["gc", "ttl_seconds", "café"]


def test_no_stopwords_removed():
    assert tokenize("what is the") == ["what", "is", "the"]


def test_punctuation_only_text_has_no_tokens():
    assert tokenize("--- !!! ...") == []
