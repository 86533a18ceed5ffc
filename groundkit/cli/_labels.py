"""Labels from your own LLM, checked by a person: ``judgments judge|propose|sample|review`` (groundkit/labels/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from groundkit.cli._common import categories


def _judge_of(args: argparse.Namespace) -> Any:
    """The judge the command line (and its params file) names."""
    from groundkit.config import load_params
    from groundkit.labels.judges import build_judge

    params = load_params(args.params, args.set)
    return build_judge(params.judge, spec=args.judge, base_url=args.base_url, source=params.source)


def _cache_of(args: argparse.Namespace, out: Path) -> Any:
    from groundkit.labels.cache import Cache

    return Cache(args.cache if args.cache else out.parent / "judge-cache")


def _check_out(out: Path, command: str, force: bool, inputs: dict[str, Any]) -> None:
    from groundkit._outputs import check_file

    def is_machine(path: Path) -> bool:
        from groundkit.corpus.judgments import Origin, load_judgments
        from groundkit.errors import GroundkitError

        try:
            return all(j.origin is Origin.MACHINE for j in load_judgments(path, ordered=False))
        except GroundkitError:
            return False

    check_file(out, command=command, what="machine judgments", force=force, recognise=is_machine, inputs=inputs)


def _cmd_judge(args: argparse.Namespace) -> int:
    from groundkit._atomic import atomic_write_text
    from groundkit._progress import bar
    from groundkit.cli._common import corpus_by_path
    from groundkit.corpus.judgments import Category
    from groundkit.corpus.queries import read_queries
    from groundkit.errors import ParamsError
    from groundkit.labels import judging

    if args.depth < 1:
        raise ParamsError("--depth", f"is {args.depth}", fix="pool at least the top 1 of each run, e.g. --depth 10")
    if args.max_calls is not None and args.max_calls < 0:
        raise ParamsError("--max-calls", f"is {args.max_calls}", fix="give 0 or more calls")
    out = Path(args.out)
    pool_file = judging.pool_path(out)
    inputs = {"the queries file": args.queries, "the corpus folder": args.corpus,
              **{f"run {r}": r for r in args.runs}}
    _check_out(out, "judgments judge", args.force, inputs)
    queries = read_queries(args.queries)
    corpus = corpus_by_path(args.corpus, args)
    runs = _read_runs(args, corpus, queries)
    pools = judging.pooled(queries, runs, args.depth)
    judge = _judge_of(args)
    try:
        tally = judging.Tally(pairs=sum(len(p) for p in pools.values()))
        wanted = judging.questions(judge, queries, pools)
        tally.asked = len(wanted)
        cache = _cache_of(args, out)
        if args.dry_run:
            return _dry_run(judge, cache, wanted, tally, args)
        answers = judging.ask(judge, cache, wanted, tally, max_calls=args.max_calls,
                              progress=lambda: bar(total=len(wanted), desc="judge", unit="call"))
        done = judging.label(judge, queries, pools, answers, corpus, runs, args.depth,
                             Category(args.category), tally)
    finally:
        judge.close()
    atomic_write_text(pool_file, judging.pool_lines(done.rows))
    atomic_write_text(out, "".join(j.to_json() + "\n" for j in done.judgments))  # last: the commit point
    _summary(tally, args, out, pool_file)
    return 0


def _read_runs(args: argparse.Namespace, corpus: dict[str, Any], queries: list[Any]) -> list[Any]:
    from groundkit.errors import RunFileError
    from groundkit.reports import pool as pooling

    paths = [Path(r) for r in args.runs]
    names = [pooling.run_name(p) for p in paths]
    documents = frozenset(d.document_id for d in corpus.values())
    runs, known = [], {}
    for path, name in zip(paths, names, strict=True):
        if names.count(name) > 1:
            raise RunFileError(path, f"two runs are named {name!r} (their folder names)",
                               fix="give each run its own folder name")
        if not pooling.is_run_folder(path):
            raise RunFileError(path, "is not a results folder that `groundkit run` wrote (no run.trec)",
                               fix="rank the queries first: groundkit run --corpus DIR --queries FILE --out FOLDER")
        folder = pooling.read_folder(path)
        if folder.document_ids != documents:
            raise RunFileError(path / "documents.jsonl", "is another version of the corpus than --corpus: its "
                               "passages' offsets would be read against other text",
                               fix="run it again on the current corpus (groundkit run --queries)")
        for judgment in folder.spans:
            known.setdefault(judgment.query_id, (judgment.query, path))
        runs.append(folder.run)
    for query in queries:
        if query.query_id not in known:
            raise RunFileError(args.runs[0], f"no run ranked query {query.query_id!r} of {args.queries}",
                               fix=f"rank the queries first: groundkit run --queries {args.queries} --out FOLDER")
        text, path = known[query.query_id]
        if text != query.query:
            raise RunFileError(path, f"ranked query {query.query_id!r} as {text!r}, not {query.query!r} as "
                               f"{args.queries} has it", fix="rank the queries file again with groundkit run")
    return runs


def _dry_run(judge: Any, cache: Any, wanted: list[Any], tally: Any, args: argparse.Namespace) -> int:
    missing = [q for q in wanted if cache.get(q.key, q.asked) is None]
    calls = len(missing) if args.max_calls is None else min(len(missing), args.max_calls)
    tokens = sum(judge.estimate_tokens(q.query, q.passage.text) for q in missing[:calls])
    print(f"{tally.pairs} pooled passages, {len(wanted)} distinct questions, {len(wanted) - len(missing)} in the "
          f"cache: would make {calls} call{'s' if calls != 1 else ''}")
    if tokens:
        print(f"about {tokens} input tokens (four characters a token) and at most "
              f"{calls * _max_tokens(args)} output tokens")
    return 0


def _max_tokens(args: argparse.Namespace) -> int:
    from groundkit.config import load_params

    return load_params(args.params, args.set).judge.max_tokens


def _summary(tally: Any, args: argparse.Namespace, out: Path, pool_file: Path) -> None:
    from groundkit.labels._safe import on_terminal as plain
    from groundkit.labels.judging import GRADE_0, NO_QUOTE, NOT_UNIQUE, NOT_VERBATIM, RELEVANT

    o = tally.outcomes
    print(f"{tally.pairs} pooled passages, {tally.asked} distinct questions: {tally.calls} calls made, "
          f"{tally.cache_hits} answered from the cache, {tally.tokens} tokens used")
    print(f"quotes: {o[RELEVANT]} resolved ({tally.extended} extended to be unique), "
          f"{o[NOT_VERBATIM] + o[NOT_UNIQUE] + o[NO_QUOTE]} discarded ({o[NOT_VERBATIM]} not verbatim, "
          f"{o[NOT_UNIQUE]} not unique, {o[NO_QUOTE]} without a quote); {o[GRADE_0]} passages graded 0")
    width = max(len(name) for name in tally.judged)
    for name, share in tally.judged.items():
        print(f"{plain(name):<{width}}  judged {share:.4f} in the top {args.depth}, under the machine labels")
    if tally.pool_empty:
        print(f"{len(tally.pool_empty)} quer{'y' if len(tally.pool_empty) == 1 else 'ies'} with nothing relevant in "
              f"the pool, written as no_answer with pool_empty (for the person's check): "
              + ", ".join(tally.pool_empty))
    print(f"machine judgments written to {out}; the pool and every answer to {pool_file}")
    for line in tally.discards:
        print(f"note: {plain(line)}", file=sys.stderr)


def _cmd_propose(args: argparse.Namespace) -> int:
    from groundkit._atomic import atomic_write_text
    from groundkit._progress import bar
    from groundkit.cli._common import corpus_by_path
    from groundkit.config import load_params
    from groundkit.corpus.chunking import chunk_documents
    from groundkit.corpus.judgments import Category
    from groundkit.errors import JudgeError, ParamsError
    from groundkit.labels import proposing

    if args.n < 1:
        raise ParamsError("--n", f"is {args.n}", fix="propose at least one question, e.g. --n 200")
    if args.seed < 0:
        raise ParamsError("--seed", f"is {args.seed}", fix="give a seed of 0 or more, e.g. --seed 1")
    out = Path(args.out)
    _check_out(out, "judgments propose", args.force, {"the corpus folder": args.corpus})
    corpus = corpus_by_path(args.corpus, args)
    params = load_params(args.params, args.set)
    drawn = proposing.draw(chunk_documents(corpus.values(), params.chunk), args.n, args.seed)
    judge = _judge_of(args)
    try:
        if not judge.can_propose():
            raise JudgeError(f"judge {judge.id!r} has no propose(passage) method",
                             fix="add propose(passage) -> {\"query\": ..., \"quote\": ...} | None to the judge")
        tally = proposing.ProposeTally(drawn=len(drawn))
        judgments = proposing.propose(judge, _cache_of(args, out), drawn, corpus, Category(args.category), tally,
                                      progress=lambda: bar(total=len(drawn), desc="propose", unit="call"))
    finally:
        judge.close()
    from groundkit.labels._safe import on_terminal

    for line in tally.notes:
        print(f"note: {on_terminal(line)}", file=sys.stderr)
    if not judgments:
        raise JudgeError(f"none of the {len(drawn)} proposals has a quote that resolves in its passage",
                         fix="read the notes above; try another judge or prompt (judge.propose_prompt)")
    atomic_write_text(out, "".join(j.to_json() + "\n" for j in judgments))
    print(f"{len(drawn)} passages drawn (seed {args.seed}): {tally.calls} calls made, {tally.cache_hits} answered "
          f"from the cache, {tally.tokens} tokens used")
    print(f"{tally.kept} questions kept, {tally.discarded} discarded (quote not in its passage, or not unique), "
          f"{tally.none} passages without a question, {tally.repeated} questions repeated")
    print(f"machine judgments written to {out}")
    return 0


def add(actions: Any) -> None:
    """Add ``judge``, ``propose``, ``sample`` and ``review`` to ``groundkit judgments``."""
    judge = actions.add_parser(
        "judge", help="label the pooled passages of queries nobody labelled with your LLM (machine judgments)",
        description="Pools the top --depth passages of every --run for each query of --queries, asks the judge "
        "(judge.model in params.yaml, or --judge) about each distinct passage not already in the cache, resolves "
        "each quote exactly inside its passage, and writes machine judgments to --out (and the pool with every "
        "answer beside it, NAME.pool.jsonl). The same command again makes no call.")
    judge.add_argument("--queries", required=True, help="the queries (JSONL with query_id and query, or one a line)")
    judge.add_argument("--run", dest="runs", action="append", required=True, metavar="RESULTS",
                       help="a results folder of `groundkit run` (--queries or --judgments); repeatable")
    judge.add_argument("--depth", type=int, required=True, help="how many top passages of each run to pool (k)")
    judge.add_argument("--corpus", required=True, help="directory of documents")
    judge.add_argument("--out", required=True, help="the machine judgments file (JSONL) to write")
    _judge_options(judge)
    judge.add_argument("--category", default="factoid", choices=[c.value for c in categories() if
                                                                  c.value != "no_answer"],
                       help="the category of a machine judgment with gold (default factoid)")
    judge.add_argument("--max-calls", type=int, default=None, help="make at most this many calls, then stop "
                       "(what was answered is cached: run again to go on)")
    judge.add_argument("--dry-run", action="store_true", help="print how many calls a run would make and an "
                       "estimate of the tokens; call nothing, write nothing")
    judge.add_argument("--force", action="store_true", help="replace machine judgments written before at --out")
    judge.set_defaults(handler=_cmd_judge)

    propose = actions.add_parser(
        "propose", help="questions from passages, for a team with no query log: machine judgments whose quote resolves",
        description="Draws --n passages (the corpus's chunks, as params.yaml's chunk section cuts them) across "
        "documents with --seed, asks the judge for a question each answers and its verbatim quote, and writes the "
        "proposals whose quote resolves as machine judgments.")
    propose.add_argument("--corpus", required=True, help="directory of documents")
    propose.add_argument("--n", type=int, required=True, help="how many passages to draw")
    propose.add_argument("--seed", type=int, required=True, help="the seed of the drawing")
    propose.add_argument("--out", required=True, help="the machine judgments file (JSONL) to write")
    _judge_options(propose)
    propose.add_argument("--category", default="factoid", choices=[c.value for c in categories() if
                                                                    c.value != "no_answer"],
                         help="the category of the judgments written (default factoid)")
    propose.add_argument("--force", action="store_true", help="replace machine judgments written before at --out")
    propose.set_defaults(handler=_cmd_propose)


def _judge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", default=None, metavar="SPEC",
                        help="openai:MODEL or python:MODULE:FACTORY (default: judge.model of params.yaml)")
    parser.add_argument("--base-url", default=None, help="the OpenAI-compatible endpoint, up to /v1 (default: "
                        "judge.base_url)")
    parser.add_argument("--cache", default=None, help="the judge cache folder (default: judge-cache beside --out)")
    parser.add_argument("--params", default=None, help="params.yaml (its judge section; defaults when omitted)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter, e.g. --set judge.concurrency=8 (repeatable)")
