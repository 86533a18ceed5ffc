"""Writing judgments: ``judgments check|fmt|add|repair``, and ``pool`` for reviewing unjudged passages."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from groundkit.cli._common import add_selection, categories, corpus_by_path
from groundkit.cli._labels import add as add_label_commands

if TYPE_CHECKING:
    from pathlib import Path


def _cmd_judgments_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.config import load_params
    from groundkit.corpus.audit import audit, check_no_answer, no_answer_warning
    from groundkit.corpus.authoring import check
    from groundkit.inputs.text import terminal_lines

    # The repository's params.yaml, where there is one: CI's check then agrees with audit and the pipeline on
    # audit.no_answer_shares_words (and selects the documents, and tokenizes, as they do).
    if args.params is None and Path("params.yaml").is_file():
        args.params = "params.yaml"
    corpus = corpus_by_path(args.corpus, args)
    judgments = check(corpus, args.judgments, args.corpus)
    params = load_params(args.params, args.set)
    if any(j.gold == [] for j in judgments):  # only no_answer judgments can leak: no tokenizing without one
        report = audit(list(corpus.values()), [j for j in judgments if not j.gold], params.tokenize)
        check_no_answer(report, params.audit, str(args.judgments))
        warning = no_answer_warning(report)
        if warning:
            print("\n".join(terminal_lines(f"warning: {warning}")), file=sys.stderr)
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

    corpus = corpus_by_path(args.corpus, args)
    path = Path(args.judgments)
    # From reading the file to writing it back: another add (or fmt, or repair) waits rather than being overwritten.
    with locked(path):
        return _add(args, corpus, path)


def _add(args: argparse.Namespace, corpus: dict[str, Any], path: Path) -> int:
    from groundkit.corpus.authoring import (
        amended,
        insert,
        make_judgment,
        next_query_id,
        quotable,
        read_for_add,
        replace_line,
    )
    from groundkit.corpus.judgments import Category, GoldSpan
    from groundkit.errors import JudgmentsError

    _check_add_options(args)
    existing = read_for_add(path)
    if args.to is not None:
        if not existing:
            raise JudgmentsError("--to", f"{path} holds no judgment to add a quote to",
                                 fix="leave --to out to add a new judgment (with --query)")
        quotable(path, existing, args.to)  # before the proposals are printed
        changed = amended(path, existing, args.to, _quote(args, corpus), replace=args.replace)
        if args.dry_run:
            print(f"would change {path}:{changed.line} to: {changed.to_json()}")
            return 0
        replace_line(path, changed)
        print(f"changed {path}:{changed.line}: {changed.to_json()}")
        return 0
    category = args.category or Category.FACTOID.value
    if category == Category.NO_ANSWER.value:
        if args.document or args.search:
            raise JudgmentsError("--category", "a no_answer judgment has no gold quote",
                                 fix="leave out --document and --search")
        gold_list = []
    else:
        gold_list = [GoldSpan(document=args.document, quote=_quote(args, corpus, category=category).quote)]
    query_id = args.id or next_query_id([j.query_id for j in existing])
    judgment = make_judgment(query_id, args.query, category, gold_list)
    if args.dry_run:
        print(f"would add: {judgment.to_json()}")
        return 0
    line = insert(path, existing, judgment)
    print(f"added at {path}:{line}: {judgment.to_json()}")
    return 0


def _check_add_options(args: argparse.Namespace) -> None:
    """Refuse options that do not go together, before anything is read."""
    from groundkit.errors import JudgmentsError

    if args.to is None:
        if args.replace is not None:
            raise JudgmentsError("--replace", "needs --to, the judgment whose quote it replaces",
                                 fix="add --to QUERY_ID, or leave --replace out")
        if not args.query:
            raise JudgmentsError("--query", "is required for a new judgment",
                                 fix="give the question as a user would ask it, or --to QUERY_ID to add a quote to "
                                     "an existing judgment")
        return
    for option in ("query", "id", "category"):
        if getattr(args, option) is not None:
            raise JudgmentsError(f"--{option}", f"is not taken with --to: {args.to}'s {option} stays as it is",
                                 fix=f"leave --{option} out (edit the file to change it)")


def _quote(args: argparse.Namespace, corpus: dict[str, Any], *, category: str = "factoid") -> Any:
    """The proposal of ``--document`` and ``--search`` to quote (``--choose``, or ``--shortest``), the proposals
    printed, numbered."""
    import json

    from groundkit.corpus.authoring import elsewhere, propose, shortest
    from groundkit.errors import JudgmentsError
    from groundkit.inputs.suggest import did_you_mean

    for option in ("document", "search"):
        if not getattr(args, option):
            raise JudgmentsError(f"--{option}", f"is required for a {category} judgment" if args.to is None else
                                 "is required to add a quote",
                                 fix="name the document that answers the query and a few of its words (--search)")
    document = corpus.get(args.document)
    if document is None:
        raise JudgmentsError("--document", f"{args.document!r} is not a document of the corpus {args.corpus}"
                             + did_you_mean(args.document, corpus),
                             fix="give its path relative to the corpus folder, as judgments name it")
    if args.shortest and args.choose is not None:
        raise JudgmentsError("--shortest", "and --choose both pick a proposal", fix="give one of them")
    proposals = propose(document, args.search)
    if not proposals:
        raise JudgmentsError("--search", f"no run of words around {args.search!r} occurs only once in "
                             f"{args.document!r}", fix="search for words of a passage the document holds once")
    for number, proposal in enumerate(proposals, start=1):
        also = elsewhere(proposal.quote, document.path, corpus)
        # Only the proposal the person picks is added: the other documents are a question for them, not an order.
        note = (f"; also occurs in {', '.join(also)}; if {'it answers' if len(also) == 1 else 'one answers'} too, "
                "add it with --to" if also else "")
        print(f"{number}. {json.dumps(proposal.quote, ensure_ascii=False)} (line:col {proposal.place}{note})")
    if args.shortest:
        chosen = shortest(document, args.search)
        if chosen is None:
            raise JudgmentsError("--search", f"no run of words around {args.search!r} occurs only once in "
                                 f"{args.document!r}", fix="search for words of a passage the document holds once")
    else:
        choose = 1 if args.choose is None else args.choose
        if not 1 <= choose <= len(proposals):
            raise JudgmentsError("--choose", f"is {choose}; there are {len(proposals)} proposals",
                                 fix=f"choose a number from 1 to {len(proposals)}")
        chosen = proposals[choose - 1]
    return chosen


def _cmd_judgments_repair(args: argparse.Namespace) -> int:
    import contextlib

    from groundkit.corpus.authoring import locked

    threshold = _share(args.min_similarity, "--min-similarity")
    corpus = corpus_by_path(args.corpus, args)
    # --write reads, changes and writes the file back: under its lock, as add and fmt.
    with locked(args.judgments) if args.write else contextlib.nullcontext():
        return _repair(args, corpus, threshold)


def _repair(args: argparse.Namespace, corpus: dict[str, Any], threshold: float) -> int:
    import json

    from groundkit.corpus.judgments import load_judgments
    from groundkit.corpus.repair import apply_repairs, repairs, word_diff
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
    left = len(found) - len(accepted)
    if args.write:
        done = f"{len(accepted)} applied (similarity at least {threshold:g}), {left} left for a person"
    else:
        done = (f"--write would apply {len(accepted)} (similarity at least {threshold:g}) and leave {left} for a "
                "person")
    print(f"{len(found)} quote(s) do not resolve; {done}", file=sys.stderr)
    if not args.write:
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

    from groundkit.artifacts.outputs import check_folder, output_folder
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
    corpus = corpus_by_path(args.corpus, args) if args.corpus else {}
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
    reviewed = sum(1 for m in result.marks.values() if m.reviewed)
    width = max(len(name) for name in result.judged)
    for name, figures in result.judged.items():
        print(f"{name:<{width}}  judged {figures['judged']:.4f} in the top {args.depth}, over {figures['queries']} "
              "queries")
    left = "all reviewed" if reviewed == pooled else f"{pooled - reviewed} to review"
    print(f"{pooled} passage{'s' if pooled != 1 else ''} pooled, {left}: {out / pooling.REVIEW_MD} and "
          f"{out / pooling.REVIEW_CSV}")
    if result.stale_marks:
        print(f"note: {result.stale_marks} earlier mark(s) dropped: their passage's text changed", file=sys.stderr)
    if result.carried:
        print(f"note: {len(result.carried)} earlier mark(s) on passages no longer pooled kept at the end of "
              f"{out / pooling.REVIEW_CSV}", file=sys.stderr)
    return 0


def _repair_threshold() -> float:
    from groundkit.corpus.similarity import REPAIR_THRESHOLD

    return REPAIR_THRESHOLD

def add(commands: Any) -> None:
    """Add this module's subcommands."""
    judgments = commands.add_parser(
        "judgments", help="check, format, add to and repair a judgments file; label one with your LLM and check it",
        description="Tools for writing judgments by hand; the guide's docs/judgments.md shows them at work.")
    actions = judgments.add_subparsers(dest="action", required=True)
    check = actions.add_parser("check", help="check a judgments file as CI does: ids unique and sorted, every quote "
                               "resolves exactly once, the file in canonical form")
    check.add_argument("--corpus", required=True, help="directory of documents")
    check.add_argument("--judgments", required=True, help="judgments JSONL file")
    add_selection(check, params_help="params.yaml: corpus.include and corpus.exclude say which files are documents, "
                  "audit.no_answer_shares_words what a no_answer query sharing a word with the corpus does "
                  "(default: ./params.yaml when there is one, as in the repository's CI)")
    check.set_defaults(handler=_cmd_judgments_check)
    fmt = actions.add_parser("fmt", help="rewrite the file in place in canonical form (sorted, one object a line)")
    fmt.add_argument("--judgments", required=True, help="judgments JSONL file")
    fmt.set_defaults(handler=_cmd_judgments_fmt)
    add = actions.add_parser(
        "add", help="quote a passage: insert a judgment with the next id, or add a quote to an existing one",
        description="Finds --search in --document (verbatim, else ignoring case and line breaks) and proposes quotes "
        "around it that occur exactly once there: its whole sentence first, then the shortest unique run of words. "
        "Inserts a judgment quoting proposal --choose (default 1, the sentence) at its place in id order; with --to, "
        "appends the quote to that judgment's gold (or, with --replace N, puts it in place of gold quote N). Every "
        "other line is left as it was.")
    add.add_argument("--corpus", required=True, help="directory of documents")
    add.add_argument("--judgments", required=True, help="judgments JSONL file (created if missing)")
    add.add_argument("--query", help="the question, as a user would ask it (a new judgment)")
    add.add_argument("--document", help="the document that answers it (path relative to --corpus)")
    add.add_argument("--search", help="a few words of the answering passage")
    add.add_argument("--category", default=None, choices=[c.value for c in categories()],
                     help="what the judgment tests (default factoid)")
    add.add_argument("--id", help="the query_id (default: the next free number, e.g. q163 after q162)")
    add.add_argument("--to", metavar="QUERY_ID", help="add the quote to this existing judgment instead (a second "
                     "passage of a multi_passage answer, say)")
    add.add_argument("--replace", type=int, metavar="N", help="with --to: replace its gold quote N (from 1) instead "
                     "of appending; the quote's grade is kept")
    add.add_argument("--choose", type=int, default=None, help="which proposal to quote (default 1: the sentence)")
    add.add_argument("--shortest", action="store_true",
                     help="quote the shortest run of words around --search that occurs once, not the sentence")
    add.add_argument("--dry-run", action="store_true", help="print the proposals and the line, write nothing")
    add_selection(add)
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
    add_selection(repair)
    repair.set_defaults(handler=_cmd_judgments_repair)
    add_label_commands(actions)

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
    add_selection(pool)
    pool.add_argument("--force", action="store_true",
                      help="replace an earlier pool in --out, keeping the marks of its review.csv")
    pool.set_defaults(handler=_cmd_pool)
