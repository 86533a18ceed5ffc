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
    from groundkit.artifacts.outputs import check_file

    def is_machine(path: Path) -> bool:
        from groundkit.corpus.judgments import Origin, load_judgments
        from groundkit.errors import GroundkitError

        try:
            return all(j.origin is Origin.MACHINE for j in load_judgments(path, ordered=False))
        except GroundkitError:
            return False

    check_file(out, command=command, what="machine judgments", force=force, recognise=is_machine, inputs=inputs)


def _cmd_judge(args: argparse.Namespace) -> int:
    from groundkit.artifacts.atomic import atomic_write_text
    from groundkit.cli._common import corpus_by_path
    from groundkit.console.progress import bar
    from groundkit.corpus.judgments import Category, pool_path
    from groundkit.corpus.queries import read_queries
    from groundkit.errors import ParamsError
    from groundkit.labels import judging

    if args.depth < 1:
        raise ParamsError("--depth", f"is {args.depth}", fix="pool at least the top 1 of each run, e.g. --depth 10")
    if args.max_calls is not None and args.max_calls < 0:
        raise ParamsError("--max-calls", f"is {args.max_calls}", fix="give 0 or more calls")
    out = Path(args.out)
    pool_file = pool_path(out)
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
    from groundkit.artifacts.atomic import atomic_write_text
    from groundkit.cli._common import corpus_by_path
    from groundkit.config import load_params
    from groundkit.console.progress import bar
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


def _cmd_sample(args: argparse.Namespace) -> int:
    from groundkit.artifacts.atomic import atomic_write_text
    from groundkit.artifacts.outputs import check_file
    from groundkit.errors import ParamsError
    from groundkit.labels import sheet
    from groundkit.labels.review import read_machine

    machine = read_machine(args.machine)
    population = len(machine.judgments)
    if not 1 <= args.n <= population:
        raise ParamsError("--n", f"is {args.n}; {args.machine} judges {population} queries",
                          fix=f"draw from 1 to {population} queries")
    if args.seed < 0:
        raise ParamsError("--seed", f"is {args.seed}", fix="give a seed of 0 or more, e.g. --seed 1")
    out = Path(args.out)

    def is_sheet(path: Path) -> bool:
        first = path.read_bytes().split(b"\n", 1)[0].decode("utf-8", "replace")
        return first == ",".join(sheet.COLUMNS)

    check_file(out, command="judgments sample", what="a review sheet", force=args.force, recognise=is_sheet,
               inputs={"the machine judgments": machine.path})
    drawn = sheet.draw([j.query_id for j in machine.judgments], args.n, args.seed)
    text = sheet.sheet_text(drawn, machine.rows, seed=args.seed, of=machine.sha256)
    atomic_write_text(out, text)
    rows = sum(1 for row in machine.rows if row["query_id"] in set(drawn))
    print(f"{args.n} of {population} machine-judged queries drawn (seed {args.seed}, uniformly without "
          f"replacement), {rows} pooled passages to grade: {out}")
    print("grade every row 0-3 (quote the shortest verbatim text for 1 or more), then: groundkit judgments review "
          f"--apply {out} --machine {args.machine} --corpus DIR --judgments FILE")
    return 0


def _cmd_review(args: argparse.Namespace) -> int:
    from groundkit.cli._common import corpus_by_path
    from groundkit.corpus.authoring import canonical_text, locked, read_for_add, rewrite
    from groundkit.labels.review import applied, merged_into, read_machine
    from groundkit.labels.sheet import read_sheet

    sheet_path, target = Path(args.apply), Path(args.judgments)
    sheet = read_sheet(sheet_path)
    machine = read_machine(args.machine)
    if target.exists() and target.resolve() == machine.path.resolve():
        from groundkit.errors import ReviewError

        raise ReviewError(target, "is the machine judgments file: a person's labels never go into it",
                          fix="name the human judgments file (corpus.judgments)")
    corpus = corpus_by_path(args.corpus, args)
    made = applied(sheet_path, sheet, machine, corpus)
    with locked(target):
        rewrite(target, canonical_text(merged_into(target, read_for_add(target), made)))
    answerable = sum(1 for j in made if j.gold)
    print(f"{len(made)} human judgments of the sample (seed {sheet.seed}, n {sheet.n}) written into {target}: "
          f"{answerable} with gold, {len(made) - answerable} no_answer; {machine.path} left untouched")
    _print_agreement(machine, made, corpus, args)
    return 0


def _print_agreement(machine: Any, human: list[Any], corpus: dict[str, Any], args: argparse.Namespace) -> None:
    from groundkit.corpus.spans import resolve_judgments
    from groundkit.scoring.agreement import agreement, pairs, table

    ids = {j.query_id for j in human}
    resolved_machine = {j.query_id: j for j in resolve_judgments(
        [j for j in machine.judgments if j.query_id in ids], corpus, judgments_path=machine.path,
        corpus_root=args.corpus)}
    resolved_human = {j.query_id: j for j in resolve_judgments(human, corpus, judgments_path=args.judgments,
                                                               corpus_root=args.corpus)}
    found = pairs(machine.rows, resolved_machine, resolved_human)
    for line in table(agreement(found, replicates=args.bootstrap, seed=args.bootstrap_seed)):
        print(line)


def _cmd_agreement(args: argparse.Namespace) -> int:
    from groundkit.cli._common import corpus_by_path
    from groundkit.corpus.judgments import load_judgments
    from groundkit.labels.review import read_machine

    machine = read_machine(args.machine)
    corpus = corpus_by_path(args.corpus, args)
    machine_ids = {j.query_id for j in machine.judgments}
    human = [j for j in load_judgments(args.judgments) if j.query_id in machine_ids]
    print(f"{len(human)} of the {len(machine_ids)} machine-judged queries have a person's judgment in "
          f"{args.judgments}")
    _print_agreement(machine, human, corpus, args)
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

    sample = actions.add_parser(
        "sample", help="draw a uniformly random sample of machine-judged queries into a sheet for a person to grade",
        description="Draws --n of the queries --machine judges (random.Random(--seed).sample over their sorted ids) "
        "and writes one row per drawn query and pooled passage, with the judge's grade and quote and empty grade, "
        "quote and note columns for the person; the drawing (seed, the SHA-256 of --machine, n) is in every row.")
    sample.add_argument("--machine", required=True, help="the machine judgments file judgments judge wrote")
    sample.add_argument("--n", type=int, required=True, help="how many queries to draw")
    sample.add_argument("--seed", type=int, required=True, help="the seed of the drawing")
    sample.add_argument("--out", required=True, help="the sheet (CSV) to write")
    sample.add_argument("--force", action="store_true", help="replace a sheet written before at --out")
    sample.set_defaults(handler=_cmd_sample)

    review = actions.add_parser(
        "review", help="apply a graded sample sheet: the person's judgments, and their agreement with the judge",
        description="Writes, for each sampled query, a person's judgment (origin human, sample {seed, of, n}) "
        "into --judgments, its gold the quotes graded 1 or more, each resolved exactly; the machine judgments stay "
        "untouched. Prints Cohen's kappa with a bootstrap interval, the confusion matrix, weighted kappa over "
        "grades and the share of quotes the person moved.")
    review.add_argument("--apply", required=True, metavar="SHEET", help="the sheet judgments sample wrote, graded")
    review.add_argument("--machine", required=True, help="the machine judgments it was drawn from")
    review.add_argument("--corpus", required=True, help="directory of documents")
    review.add_argument("--judgments", required=True, help="the human judgments file to write into "
                        "(corpus.judgments; created if missing)")
    _agreement_options(review)
    review.set_defaults(handler=_cmd_review)

    agree = actions.add_parser(
        "agreement", help="agreement of machine judgments with a person's judgments of the same queries",
        description="Over the pooled pairs of --machine whose query --judgments also judges: Cohen's kappa with a "
        "bootstrap interval over queries, the confusion matrix, weighted kappa over grades, quotes moved.")
    agree.add_argument("--machine", required=True, help="the machine judgments file judgments judge wrote")
    agree.add_argument("--judgments", required=True, help="the person's judgments")
    agree.add_argument("--corpus", required=True, help="directory of documents")
    _agreement_options(agree)
    agree.set_defaults(handler=_cmd_agreement)


def _agreement_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap replicates (default 2000)")
    parser.add_argument("--bootstrap-seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    parser.add_argument("--params", default=None, help="params.yaml (corpus.include and corpus.exclude)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter (repeatable)")


def _judge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", default=None, metavar="SPEC",
                        help="openai:MODEL or python:MODULE:FACTORY (default: judge.model of params.yaml)")
    parser.add_argument("--base-url", default=None, help="the OpenAI-compatible endpoint, up to /v1 (default: "
                        "judge.base_url)")
    parser.add_argument("--cache", default=None, help="the judge cache folder (default: judge-cache beside --out)")
    parser.add_argument("--params", default=None, help="params.yaml (its judge section; defaults when omitted)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter, e.g. --set judge.concurrency=8 (repeatable)")
