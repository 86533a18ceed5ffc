"""Writing judgments: ``judgments check|fmt|add|repair``, and ``pool`` for reviewing unjudged passages."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from groundkit.cli._common import categories, corpus_by_path

if TYPE_CHECKING:
    from pathlib import Path


def _cmd_judgments_check(args: argparse.Namespace) -> int:
    from groundkit.corpus.authoring import check

    judgments = check(corpus_by_path(args.corpus), args.judgments, args.corpus)
    quotes = sum(1 for j in judgments for g in j.gold if g.quote is not None)
    print(f"{args.judgments}: {len(judgments)} judgments; ids unique and ascending, all {quotes} quotes resolve "
          "exactly once, canonical form")
    return 0

def _cmd_judgments_fmt(args: argparse.Namespace) -> int:
    from groundkit.corpus.authoring import fmt

    count, changed = fmt(args.judgments)
    print(f"{args.judgments}: {count} judgments " + ("rewritten in canonical form" if changed else
                                                     "already in canonical form; left untouched"))
    return 0

def _cmd_judgments_add(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.corpus.authoring import locked

    corpus = corpus_by_path(args.corpus)
    path = Path(args.judgments)
    # From reading the file to writing it back: another add (or fmt, or repair) waits rather than being overwritten.
    with locked(path):
        return _add(args, corpus, path)


def _add(args: argparse.Namespace, corpus: dict[str, Any], path: Path) -> int:
    import json

    from groundkit.corpus.authoring import elsewhere, insert, make_judgment, next_query_id, propose, read_for_add
    from groundkit.corpus.judgments import Category, GoldSpan
    from groundkit.errors import JudgmentsError

    existing = read_for_add(path)
    gold: list[GoldSpan] = []
    if args.category == Category.NO_ANSWER.value:
        if args.document or args.search:
            raise JudgmentsError("--category", "a no_answer judgment has no gold quote",
                                 fix="leave out --document and --search")
    else:
        for option in ("document", "search"):
            if not getattr(args, option):
                raise JudgmentsError(f"--{option}", f"is required for a {args.category} judgment",
                                     fix="name the document that answers the query and a few of its words (--search)")
        document = corpus.get(args.document)
        if document is None:
            raise JudgmentsError("--document", f"{args.document!r} is not a document of the corpus {args.corpus}",
                                 fix="give its path relative to the corpus folder, as judgments name it")
        proposals = propose(document, args.search)
        if not proposals:
            raise JudgmentsError("--search", f"no run of words around {args.search!r} occurs only once in "
                                 f"{args.document!r}", fix="search for words of a passage the document holds once")
        for number, proposal in enumerate(proposals, start=1):
            also = elsewhere(proposal.quote, document.path, corpus)
            note = f"; also in {', '.join(also)}: add those as gold quotes too" if also else ""
            print(f"{number}. {json.dumps(proposal.quote, ensure_ascii=False)} (line:col {proposal.place}{note})")
        if not 1 <= args.choose <= len(proposals):
            raise JudgmentsError("--choose", f"is {args.choose}; there are {len(proposals)} proposals",
                                 fix=f"choose a number from 1 to {len(proposals)}")
        gold = [GoldSpan(document=document.path, quote=proposals[args.choose - 1].quote)]
    query_id = args.id or next_query_id([j.query_id for j in existing])
    judgment = make_judgment(query_id, args.query, args.category, gold)
    if args.dry_run:
        print(f"would add: {judgment.to_json()}")
        return 0
    line = insert(path, existing, judgment)
    print(f"added at {path}:{line}: {judgment.to_json()}")
    return 0

def _cmd_judgments_repair(args: argparse.Namespace) -> int:
    import contextlib

    from groundkit.corpus.authoring import locked

    threshold = _share(args.min_similarity, "--min-similarity")
    corpus = corpus_by_path(args.corpus)
    # --write reads, changes and writes the file back: under its lock, as add and fmt.
    with locked(args.judgments) if args.write else contextlib.nullcontext():
        return _repair(args, corpus, threshold)


def _repair(args: argparse.Namespace, corpus: dict[str, Any], threshold: float) -> int:
    import json

    from groundkit.corpus.authoring import apply_repairs, repairs, word_diff
    from groundkit.corpus.judgments import load_judgments
    from groundkit.errors import JudgmentsError

    judgments = load_judgments(args.judgments)
    broken = sorted({g.document for j in judgments for g in j.gold
                     if g.quote is not None and g.document in corpus and corpus[g.document].text.count(g.quote) != 1})
    found = repairs(judgments, corpus, previous=_committed(args.corpus, broken))
    if not found:
        print(f"{args.judgments}: every quote resolves exactly once; nothing to repair")
        return 0
    accepted = [r for r in found if r.applies(threshold)]
    for r in found:
        print(f"{r.query_id} ({args.judgments}:{r.line}), gold {r.index + 1} in {r.document}: {r.problem}")
        print(f"  - {json.dumps(r.quote, ensure_ascii=False)}")
        if r.proposal is None:
            print("  left for a person: no proposal")
            continue
        print(f"  + {json.dumps(r.proposal, ensure_ascii=False)}")
        print(f"  ~ {word_diff(r.quote, r.proposal)}")
        verdict = (("applied" if args.write else "--write applies it") if r.applies(threshold) else
                   f"left for a person: {r.held}" if r.held else f"below {threshold:g}: left for a person")
        print(f"  similarity {r.similarity:.3f} at line:col {r.place}: {verdict}")
    if args.write:
        apply_repairs(args.judgments, judgments, accepted)
    left = len(found) - (len(accepted) if args.write else 0)
    done = f"{len(accepted)} applied" if args.write else f"--write would apply {len(accepted)}"
    print(f"{len(found)} quote(s) do not resolve; {done} (similarity at least {threshold:g}); {left} left",
          file=sys.stderr)
    if left and not args.write:
        return 1
    if left:
        raise JudgmentsError(args.judgments, f"{left} quote(s) still do not resolve",
                             fix="edit them by hand: copy a passage verbatim from the document's current text")
    return 0

def _committed(corpus_root: str, documents: list[str]) -> dict[str, str]:
    """The text git last committed of each document under ``corpus_root`` that differs from it now.

    That is the text ``repair`` compares a proposal with: a passage the committed document held beside a
    quote that resolved there is another sentence, not the quote's edited text. Nothing when the corpus
    is not in a git repository, or a document is not committed.
    """
    import subprocess
    from pathlib import Path

    texts = {}
    for document in documents:
        try:
            shown = subprocess.run(["git", "show", f"HEAD:./{document}"], cwd=Path(corpus_root), capture_output=True,
                                   check=False)
        except OSError:  # no git here: nothing to compare with
            return {}
        if shown.returncode != 0:
            continue
        try:
            texts[document] = shown.stdout.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return texts


def _share(text: str, option: str) -> float:
    import math

    from groundkit.errors import ParamsError

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise ParamsError(option, f"{text!r} is not a number from 0 to 1", fix=f"e.g. {option} 0.8")
    return value

def _cmd_pool(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit._outputs import check_folder, output_folder
    from groundkit.corpus.judgments import load_judgments
    from groundkit.corpus.spans import resolve_judgments
    from groundkit.errors import JudgmentsError, ParamsError, RunFileError
    from groundkit.reports import pool as pooling

    if args.depth < 1:
        raise ParamsError("--depth", f"is {args.depth}", fix="pool at least the top 1 of each run, e.g. --depth 10")
    if bool(args.corpus) != bool(args.judgments):
        raise JudgmentsError("--judgments" if args.corpus else "--corpus", "is missing",
                             fix="give --corpus and --judgments together, or neither")
    paths = [Path(r) for r in args.runs]
    names = [pooling.run_name(p) for p in paths]
    for path, name in zip(paths, names, strict=True):
        if names.count(name) > 1:
            raise RunFileError(path, f"two runs are named {name!r} (their folder or file names)",
                               fix="give each run its own folder or file name")
    inputs = {f"run {name}": path for name, path in zip(names, paths, strict=True)}
    inputs.update({"the corpus folder": args.corpus, "the judgments file": args.judgments})
    out = Path(args.out)
    marks = {}
    if check_folder(out, command="pool", inputs=inputs, force=args.force) and (out / pooling.REVIEW_CSV).is_file():
        marks = pooling.read_marks(out / pooling.REVIEW_CSV)
    corpus = corpus_by_path(args.corpus) if args.corpus else {}
    judgments = None
    if args.judgments:
        judgments = resolve_judgments(load_judgments(args.judgments), corpus, judgments_path=args.judgments,
                                      corpus_root=args.corpus)
    runs = []
    documents = frozenset(d.document_id for d in corpus.values()) if args.corpus else None
    for path in paths:
        if not path.exists():
            raise RunFileError(path, "does not exist", fix="name a folder groundkit wrote or an external run file")
        if path.is_dir() and not pooling.is_run_folder(path):
            raise RunFileError(path, "is a folder without run.trec, not one that `groundkit run` (or dvc repro, in "
                               "build/) wrote", fix="name the run's --out folder, or a DVC workspace's build/")
        if pooling.is_run_folder(path):
            folder = pooling.read_folder(path)
            run, documents = folder.run, documents or folder.document_ids
            if folder.document_ids != documents:
                raise RunFileError(path / "documents.jsonl", "is another version of the corpus than "
                                   + ("--corpus" if args.corpus else "that of the runs before it")
                                   + ": its passages' offsets would be read against other text",
                                   fix="run it again on the current corpus (groundkit run, or dvc repro)")
            if judgments is None:
                judgments = folder.spans
            elif not args.judgments and folder.spans != judgments:
                raise RunFileError(path / "gold_spans.jsonl", "holds other gold spans than the runs before it: "
                                   "the runs were scored on different judgments",
                                   fix="pass --corpus and --judgments to pool every run against the same labels")
        elif judgments is None or not args.judgments:
            raise RunFileError(path, "is read as an external run (JSONL), which needs the corpus and the judgments",
                               fix="pass --corpus and --judgments, or name a `groundkit run` folder")
        else:
            run = pooling.read_external(path, corpus, [j.query_id for j in judgments])
        runs.append(run)
    assert judgments is not None
    result = pooling.pool(runs, judgments, args.depth, marks)
    with output_folder(out, command="pool", artifacts=pooling.ARTIFACTS, inputs=inputs, force=args.force) as work:
        (work / pooling.REVIEW_MD).write_text(pooling.review_markdown(result), encoding="utf-8", newline="\n")
        (work / pooling.REVIEW_CSV).write_text(pooling.review_csv(result), encoding="utf-8", newline="\n")
        (work / pooling.JUDGED).write_text(pooling.judged_json(result), encoding="utf-8", newline="\n")
    pooled = sum(len(found) for found in result.candidates.values())
    width = max(len(name) for name in result.judged)
    for name, figures in result.judged.items():
        print(f"{name:<{width}}  judged {figures['judged']:.4f} in the top {args.depth}, over {figures['queries']} "
              "queries")
    print(f"{pooled} passages to review written to {out / pooling.REVIEW_MD} and {out / pooling.REVIEW_CSV}")
    if result.stale_marks:
        print(f"note: {result.stale_marks} earlier mark(s) dropped: their passage's text changed", file=sys.stderr)
    if result.carried:
        print(f"note: {len(result.carried)} earlier mark(s) on passages no longer pooled kept at the end of "
              f"{out / pooling.REVIEW_CSV}", file=sys.stderr)
    return 0


def _repair_threshold() -> float:
    from groundkit.corpus.authoring import REPAIR_THRESHOLD

    return REPAIR_THRESHOLD

def add(commands: Any) -> None:
    """Add this module's subcommands."""
    judgments = commands.add_parser(
        "judgments", help="check, format, add to and repair a judgments file",
        description="Tools for writing judgments by hand; evals/README.md shows them at work.")
    actions = judgments.add_subparsers(dest="action", required=True)
    check = actions.add_parser("check", help="what CI runs: ids unique and sorted, every quote resolves, formatted")
    check.add_argument("--corpus", required=True, help="directory of documents")
    check.add_argument("--judgments", required=True, help="judgments JSONL file")
    check.set_defaults(handler=_cmd_judgments_check)
    fmt = actions.add_parser("fmt", help="rewrite the file in place in canonical form (sorted, one object a line)")
    fmt.add_argument("--judgments", required=True, help="judgments JSONL file")
    fmt.set_defaults(handler=_cmd_judgments_fmt)
    add = actions.add_parser(
        "add", help="propose verbatim quotes around a search string and insert a judgment with the next id",
        description="Finds --search in --document (verbatim, else ignoring case and line breaks), proposes quotes "
        "around it that occur exactly once there, and inserts a judgment quoting proposal --choose at its place "
        "in id order; every other line is left as it was.")
    add.add_argument("--corpus", required=True, help="directory of documents")
    add.add_argument("--judgments", required=True, help="judgments JSONL file (created if missing)")
    add.add_argument("--query", required=True, help="the question, as a user would ask it")
    add.add_argument("--document", help="the document that answers it (path relative to --corpus)")
    add.add_argument("--search", help="a few words of the answering passage")
    add.add_argument("--category", default="factoid", choices=[c.value for c in categories()],
                     help="what the judgment tests (default factoid)")
    add.add_argument("--id", help="the query_id (default: the next free number, e.g. q163 after q162)")
    add.add_argument("--choose", type=int, default=1, help="which proposal to quote (default 1)")
    add.add_argument("--dry-run", action="store_true", help="print the proposals and the line, write nothing")
    add.set_defaults(handler=_cmd_judgments_add)
    repair = actions.add_parser(
        "repair", help="propose the nearest passage for every quote that no longer resolves",
        description="For each gold quote that no longer occurs exactly once, proposes the most similar passage "
        "of the document's current text, with a word diff and its similarity (difflib's ratio). Exits 1 while "
        "a quote does not resolve.")
    repair.add_argument("--corpus", required=True, help="directory of documents")
    repair.add_argument("--judgments", required=True, help="judgments JSONL file")
    repair.add_argument("--write", action="store_true",
                        help="apply the proposals whose similarity reaches --min-similarity (atomically)")
    repair.add_argument("--min-similarity", default=str(_repair_threshold()),
                        help=f"the least similarity --write applies (default {_repair_threshold()})")
    repair.set_defaults(handler=_cmd_judgments_repair)

    pool = commands.add_parser(
        "pool", help="the top passages of several runs that overlap no gold quote, as a review sheet; judged@k",
        description="Each RUN is a folder groundkit wrote (`groundkit run --out`, or a DVC workspace's build/) or "
        "an external run (JSONL, as score-run reads). Writes review.md, review.csv and judged.json into --out; "
        "mark a passage reviewed with `yes` in review.csv's reviewed column, and pool again with --force to "
        "count the marks in judged@k.")
    pool.add_argument("runs", nargs="+", metavar="RUN", help="run folders or external run files")
    pool.add_argument("--depth", type=int, required=True, help="how many top passages of each run to pool (k)")
    pool.add_argument("--out", required=True, help="output folder for the review sheet")
    pool.add_argument("--corpus", help="directory of documents (for external runs, or to pool against "
                      "the current judgments)")
    pool.add_argument("--judgments", help="judgments JSONL file (with --corpus)")
    pool.add_argument("--force", action="store_true",
                      help="replace an earlier pool in --out, keeping the marks of its review.csv")
    pool.set_defaults(handler=_cmd_pool)
