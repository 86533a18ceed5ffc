import pytest

from groundkit.config import DEFAULT_HEADLINE, DEFAULT_MEASURES, load_params, validate_params
from groundkit.errors import ParamsError


def write(tmp_path, text: str):
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_and_overrides(tmp_path):
    params = load_params(write(tmp_path, "chunk:\n  size: 400\n"),
                         ["bm25.k1=0.9", "score.measures=[recall@1, ndcg@5]", "score.headline=[ndcg@5]"])
    assert (params.chunk.size, params.bm25.k1, params.score.measures, params.retrieve.depth) == (
        400, 0.9, ["recall@1", "ndcg@5"], 100)
    assert (params.score.headline, params.score.deepest_rank, params.score.min_overlap) == (["ndcg@5"], 5, 0.0)


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("chunk:\n  size: 0\n", "chunk.size", "greater than 0"),
        ("chunk:\n  size: 100\n  overlap: 100\n", "chunk", "must be smaller than size"),
        ("chunk:\n  strategy: semantic\n", "chunk.strategy", "unknown chunk strategy; use one of fixed, document"),
        ("bm25:\n  k1: -1\n", "bm25.k1", "greater than or equal to 0"),
        ("bm25:\n  b: 1.5\n", "bm25.b", "less than or equal to 1"),
        ("score:\n  measures: []\n", "score.measures", "lists no metric"),
        ("score:\n  measures: [ndcg@10, recall@x]\n", "score.measures", "'recall@x' is not a metric name"),
        ("score:\n  measures: [ndcg@10, ndcg@10]\n  headline: [ndcg@10]\n", "score.measures", "twice"),
        ("score:\n  headline: [ndcg@4]\n", "score", "score.measures does not compute"),
        ("score:\n  min_overlap: 1.5\n", "score.min_overlap", "less than or equal to 1"),
        ("retrieve:\n  depth: 5\n", "retrieve.depth", "smaller than the deepest k of score.measures (10)"),
        ("chunk:\n  sise: 400\n", "chunk.sise", "not a known field"),
        ("chunkk:\n  size: 400\n", "chunkk", "not a known field"),
        ("tokenize:\n  stemmer: klingon\n", "tokenize.stemmer", "unknown stemmer; use none or one of"),
        ("tokenize:\n  stopwords: fr\n", "tokenize.stopwords", "Input should be 'none' or 'en'"),
        ("tokenize:\n  lowercase: false\n", "tokenize.lowercase", "not a known field"),
        ("retrieve:\n  retriever: no-such-kind\n", "retrieve.retriever", "unknown retriever"),
        ("retrieve:\n  retriever: python:mymodule\n", "retrieve.retriever", "python:MODULE:FACTORY"),
        ("retrieve:\n  retriever: external\n", "retrieve", "needs retrieve.run"),
        ("dense:\n  batch_size: 0\n", "dense.batch_size", "greater than 0"),
        ("hybrid:\n  rrf_k: -1\n", "hybrid.rrf_k", "greater than or equal to 0"),
    ],
)
def test_bad_values_name_the_key(tmp_path, text, key, fragment):
    with pytest.raises(ParamsError) as info:
        load_params(write(tmp_path, text))
    assert info.value.key == key
    assert fragment in str(info.value)


def test_yaml_syntax_error_names_the_line(tmp_path):
    with pytest.raises(ParamsError) as info:
        load_params(write(tmp_path, "chunk:\n  size: 400\n bad: [\n"))
    assert info.value.line == 3  # ` bad:` is indented less than `size:` and more than `chunk:`


def test_result_params_keep_only_what_the_retriever_reads():
    bm25 = load_params(None).result_params()
    assert sorted(bm25) == ["bm25", "chunk", "retrieve", "score", "tokenize"]
    assert bm25["retrieve"] == {"depth": 100, "retriever": "bm25"}
    dense = load_params(None, ["retrieve.retriever=dense"]).result_params()
    assert sorted(dense) == ["chunk", "dense", "retrieve", "score"]
    hybrid = load_params(None, ["retrieve.retriever=hybrid"]).result_params()
    assert sorted(hybrid) == ["bm25", "chunk", "dense", "hybrid", "retrieve", "score", "tokenize"]
    external = load_params(None, ["retrieve.retriever=external", "retrieve.run=/abs/run.jsonl"]).result_params()
    assert external == {"retrieve": {"depth": 100, "retriever": "external"},
                        "score": {"measures": list(DEFAULT_MEASURES), "headline": list(DEFAULT_HEADLINE),
                                  "min_overlap": 0.0}}
    custom = load_params(None, ["retrieve.retriever=python:m:f", "retrieve.options={a: 1}"]).result_params()
    assert custom["retrieve"]["options"] == {"a": 1}


def test_depth_has_a_documented_bound():
    assert load_params(None, ["retrieve.depth=100000"]).retrieve.depth == 100_000
    with pytest.raises(ParamsError) as info:
        load_params(None, ["retrieve.depth=100000001"])
    assert info.value.key == "retrieve.depth"
    assert "above 100,000" in info.value.problem and "at most 100000" in info.value.fix


@pytest.mark.parametrize("key", ["corpus.root", "corpus.judgments", "retrieve.run"])
@pytest.mark.parametrize(("value", "fragment"), [
    ("evals/it's", "single quote"),
    ("evals/two\nlines", "control character U+000A"),
    ("evals/tab\there", "control character U+0009"),
    ("evals/bell\x07", "control character U+0007"),
])
def test_path_params_refuse_what_single_quotes_cannot_carry(key, value, fragment):
    section, name = key.split(".")
    with pytest.raises(ParamsError) as info:
        validate_params({section: {name: value}}, source="other.yaml")
    assert info.value.path == "other.yaml"
    assert info.value.key == key
    assert fragment in info.value.problem
    assert key in info.value.fix


def test_path_params_may_hold_what_the_shell_would_expand():
    odd = "evals/my corpus $(touch PWNED) `id` $HOME; \\ \" * ?"
    params = validate_params({"corpus": {"root": odd, "judgments": odd}, "retrieve": {"run": odd}}, source="p.yaml")
    assert (params.corpus.root, params.corpus.judgments, params.retrieve.run) == (odd, odd, odd)


@pytest.mark.parametrize(
    ("text", "line", "key", "first"),
    [
        ("chunk:\n  size: 800\n  size: 400\n", 3, "chunk.size", 2),
        ("chunk:\n  size: 400\nbm25:\n  k1: 1.0\nchunk:\n  overlap: 0\n", 5, "chunk", 1),
        ("retrieve:\n  retriever: python:m:f\n  options:\n    top: 5\n    model: a\n    top: 6\n",
         6, "retrieve.options.top", 4),
        ("retrieve:\n  options: {layers: [{n: 1, n: 2}]}\n", 2, "retrieve.options.layers.0.n", 2),
    ],
)
def test_a_key_written_twice_names_the_file_line_and_dotted_key(tmp_path, text, line, key, first):
    path = write(tmp_path, text)
    with pytest.raises(ParamsError) as info:
        load_params(path)
    assert (info.value.path, info.value.line, info.value.key) == (str(path), line, key)
    assert f"duplicate key (first set on line {first})" in str(info.value)


def test_a_merge_key_may_be_overridden_beside_it(tmp_path):
    # `<<` copies defaults that the keys next to it are meant to replace: not a duplicate.
    text = "retrieve:\n  retriever: python:m:f\n  options:\n    <<: {top: 5, model: a}\n    top: 6\n"
    assert load_params(write(tmp_path, text)).retrieve.options == {"top": 6, "model": "a"}


# --- YAML 1.2, as DVC reads params.yaml

# Plain scalars whose reading differs between YAML 1.1 (PyYAML) and YAML 1.2 (ruamel.yaml, DVC's reader), or
# between YAML and the grammar of `dvc exp run -S`, besides forms every reader takes alike.
SCALARS = ["010", "0x10", "0o10", "0b11", "1:20", "0:9", "00", "1_000", "yes", "off", "1e3", "1.0e+3", ".5", "400",
           "0.9", "-0", "true", "Null", "~", "2020-01-01", ".inf", "[1, 3]", "{a: 1}", "'010'", '"0x10"']


@pytest.mark.parametrize("scalar", SCALARS)
def test_params_values_are_read_as_dvc_reads_them(tmp_path, scalar):
    # DVC's own reader of params.yaml (dvc.utils.serialize.parse_yaml), called as DVC calls it: the reference.
    from dvc.utils.serialize import parse_yaml
    from ruamel.yaml import YAML

    from groundkit.config import read_params_file

    text = f"retrieve:\n  options:\n    value: {scalar}\n"
    expected = parse_yaml(text, "params.yaml")
    assert expected == YAML(typ="safe").load(text)
    assert read_params_file(write(tmp_path, text)) == expected


def test_a_value_yaml_1_1_reads_as_a_number_is_text_to_dvc_and_refused_where_a_number_is_due(tmp_path):
    # PyYAML (YAML 1.1) reads 1:40 as 100 (sexagesimal); DVC (YAML 1.2) reads the text '1:40'.
    with pytest.raises(ParamsError) as info:
        load_params(write(tmp_path, "retrieve:\n  depth: 1:40\n"))
    assert (info.value.key, info.value.problem) == ("retrieve.depth", "Input should be a valid integer (got '1:40')")
    assert "plain decimal number, unquoted" in info.value.fix
    # As `dvc exp run -S chunk.size=010` writes it: quoted, because YAML 1.2 would read 010 as 10.
    with pytest.raises(ParamsError) as info:
        load_params(write(tmp_path, "chunk:\n  size: '010'\n"))
    assert (info.value.key, info.value.problem) == ("chunk.size", "Input should be a valid integer (got '010')")


@pytest.mark.parametrize(("value", "told"), [
    ("010", "10 by YAML 1.2 (how DVC and groundkit read params.yaml), 8 by YAML 1.1, the text '010' by "
            "`dvc exp run -S`"),
    ("0x10", "16 by YAML 1.2 (how DVC and groundkit read params.yaml) and YAML 1.1, the text '0x10' by "
             "`dvc exp run -S`"),
    ("1:20", "the text '1:20' by YAML 1.2 (how DVC and groundkit read params.yaml), 80 by YAML 1.1"),
    ("0o10", "8 by YAML 1.2 (how DVC and groundkit read params.yaml), the text '0o10' by YAML 1.1 and "
             "`dvc exp run -S`"),
    ("1_000", "1000 by YAML 1.2 (how DVC and groundkit read params.yaml) and YAML 1.1, the text '1_000' by "
              "`dvc exp run -S`"),
], ids=["010", "0x10", "1:20", "0o10", "1_000"])
def test_a_set_value_the_readers_disagree_on_is_refused_and_says_why(value, told):
    with pytest.raises(ParamsError) as info:
        load_params(None, [f"chunk.size={value}"])
    assert (info.value.path, info.value.key) == ("--set", "chunk.size")
    assert info.value.problem == f"chunk.size={value} is not read alike: {told}"
    assert "plain decimal" in info.value.fix


@pytest.mark.parametrize(("value", "read"), [("400", 400), ("1e3", 1000.0), (".5", 0.5), ("1.", 1.0), ("-0", 0),
                                             ("yes", "yes"), ("'010'", "010"), ("[1, 5]", [1, 5])])
def test_a_set_value_every_reader_takes_alike_is_read_as_yaml_1_2(value, read):
    from groundkit.config import apply_overrides

    assert apply_overrides({}, [f"retrieve.options.x={value}"]) == {"retrieve": {"options": {"x": read}}}


@pytest.mark.parametrize(("value", "problem"), [
    ("['../elsewhere/*.md']", "pattern '../elsewhere/*.md' holds '.' or '..' as a folder"),
    ("['*.pdf', '*.pdf']", "names a pattern twice"), ("['']", "pattern '' is empty"),
])
def test_corpus_patterns_are_checked_before_any_work(value, problem):
    with pytest.raises(ParamsError) as info:
        load_params(None, [f"corpus.exclude={value}"])
    assert info.value.key == "corpus.exclude" and problem in info.value.problem and "corpus.exclude" in info.value.fix
    assert load_params(None, ["corpus.include=['**/*.md']"]).corpus.include == ["**/*.md"]


@pytest.mark.parametrize(("old", "new"), [("true", "warn"), ("false", "error")])
def test_the_replaced_no_answer_key_names_the_new_key_and_the_value_to_write(tmp_path, old, new):
    # Issue 35 item 9: audit.no_answer_may_share_words became audit.no_answer_shares_words: warn | error.
    path = tmp_path / "params.yaml"
    path.write_text(f"audit:\n  no_answer_may_share_words: {old}\n", encoding="utf-8")
    for load in (lambda: load_params(path), lambda: load_params(None, [f"audit.no_answer_may_share_words={old}"])):
        with pytest.raises(ParamsError) as caught:
            load()
        message = str(caught.value)
        assert message.count("no_answer_shares_words") == 2, message  # one message: the new key, then the value
        assert "key 'audit.no_answer_may_share_words'" in message
        assert f"write `no_answer_shares_words: {new}` in the audit section" in message
    assert load_params(None).audit.no_answer_shares_words == "warn"
    assert load_params(None, ["audit.no_answer_shares_words=error"]).audit.no_answer_shares_words == "error"
    with pytest.raises(ParamsError, match=r"audit\.no_answer_shares_words"):
        load_params(None, ["audit.no_answer_shares_words=true"])
