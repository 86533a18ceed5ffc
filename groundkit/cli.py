"""The ``groundkit`` command line.

Errors groundkit can explain are printed as one message and exit 1; usage
errors exit 2. A traceback is shown only with ``--debug``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from groundkit._guard import guarded
from groundkit.scoring.measures import BUDGET_RECALL, CHARS, NDCG, RECALL

if TYPE_CHECKING:
    from pathlib import Path

# --metric defaults, named by the measure registry: the verdict of compare, and the columns of sweep-plot.
COMPARE_GATE = [NDCG.label(10)]
SWEEP_METRICS = [RECALL.label(1), RECALL.label(10), NDCG.label(10), CHARS.label(10), BUDGET_RECALL.label(1000)]


def _cmd_run(args: argparse.Namespace) -> int:
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    overrides = list(args.set)
    if getattr(args, "run_file", None) is not None:
        # score-run is `run` with the retrieve stage reading the given file: one code path for both.
        # retrieve.run is one of params.PATH_KEYS, so the path is taken verbatim, never parsed as YAML.
        overrides += ["retrieve.retriever=external", f"retrieve.run={args.run_file}"]
    params = load_params(args.params, overrides)
    summary = run(args.corpus, args.judgments, params, args.out, force=args.force, command=args.command,
                  inputs={"the params file": args.params})
    answerable: dict[str, Any] = summary["answerable"]  # type: ignore[assignment]
    no_answer: dict[str, Any] = summary["no_answer"]  # type: ignore[assignment]
    shown = ", ".join(f"{k}={v:.4f}" for k, v in answerable.items() if isinstance(v, float))
    print(f"answerable ({answerable['queries']}): {shown}")
    print(f"no_answer ({no_answer['queries']}): abstained {no_answer['abstained']}")
    print(f"artifacts written to {args.out}")
    _print_findings(args.out, params)
    return 0


def _print_findings(out: str, params: Any) -> None:
    """The audit's findings of a finished run, on stderr: they inform, the metrics on stdout are the result."""
    from pathlib import Path

    from groundkit.corpus.audit import AuditReport, findings
    from groundkit.pipeline.stages import AUDIT

    report = AuditReport.model_validate_json((Path(out) / AUDIT.name).read_bytes())
    for line in findings(report, params.audit):
        print(f"audit: {line}", file=sys.stderr)


def _cmd_audit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.artifacts import atomic_write_text, dumps_json
    from groundkit.config import load_params
    from groundkit.corpus.audit import audit, check_audit, render
    from groundkit.corpus.documents import load_corpus
    from groundkit.corpus.judgments import load_judgments
    from groundkit.corpus.spans import resolve_judgments

    params = load_params(args.params, args.set)
    if args.out:
        _check_report(args)
    judgments = load_judgments(args.judgments)
    documents = load_corpus(args.corpus)
    # A label that no longer resolves is the first thing an audit must catch.
    resolve_judgments(judgments, {d.path: d for d in documents}, judgments_path=args.judgments,
                      corpus_root=args.corpus)
    report = audit(documents, judgments, params.tokenize)
    # Written whatever the check decides: a failed gate is when the report is needed most.
    if args.out:
        atomic_write_text(Path(args.out), dumps_json(report.model_dump(mode="json")))
    print(render(report, params.audit))
    check_audit(report, params.audit, str(args.judgments))
    return 0


def _check_report(args: argparse.Namespace) -> None:
    """Refuse an audit --out that is an input or a file the audit did not write, before the audit runs."""
    from pathlib import Path

    from groundkit._outputs import check_file
    from groundkit.corpus.audit import AuditReport

    def is_report(path: Path) -> bool:
        try:
            AuditReport.model_validate_json(path.read_bytes())
        except (OSError, ValueError):
            return False
        return True

    check_file(Path(args.out), command="audit", what="an audit report", force=args.force, recognise=is_report,
               inputs={"the corpus folder": args.corpus, "the judgments file": args.judgments,
                       "the params file": args.params})


def _corpus(root: str) -> dict[str, Any]:
    from groundkit.corpus.documents import load_corpus

    return {d.path: d for d in load_corpus(root)}


def _cmd_judgments_check(args: argparse.Namespace) -> int:
    from groundkit.corpus.authoring import check

    judgments = check(_corpus(args.corpus), args.judgments, args.corpus)
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

    corpus = _corpus(args.corpus)
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
    corpus = _corpus(args.corpus)
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
    corpus = _corpus(args.corpus) if args.corpus else {}
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


REGRESSION_EXIT = 4


def _names(values: list[str]) -> list[str]:
    """Names given as repeated options and/or comma-separated lists: ``--metric a,b --metric c``."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _cmd_compare(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from groundkit.errors import CompareError
    from groundkit.reports.compare import check_correction, compare, parse_options, read_side, render_markdown, to_json
    from groundkit.reports.compare_many import compare_many, experiment_sides, render_markdown_many, to_json_many

    alpha, max_drop, top = parse_options(args.alpha, args.max_drop, args.top)
    correction = check_correction(args.correction)
    if args.experiments and args.candidates:
        raise CompareError("--experiments", f"is given with candidates ({', '.join(args.candidates)})",
                           fix="name the candidates, or pass --experiments alone to compare every experiment of "
                           "the current commit")
    if not args.experiments and not args.candidates:
        raise CompareError("candidate", "is missing: compare needs a baseline and at least one candidate",
                           fix="add a revision, experiment name or results folder after the baseline, or pass "
                           "--experiments")
    repeated = sorted({c for c in args.candidates if args.candidates.count(c) > 1})
    if repeated:
        raise CompareError(repeated[0], "is given twice as a candidate; it would count twice in the correction",
                           fix="name each candidate once")
    cwd = Path.cwd()
    baseline = read_side(args.baseline, cwd=cwd, metrics_dir=args.metrics_dir)
    left_out: list[tuple[str, str]] = []
    if args.experiments:
        candidates, left_out = experiment_sides(cwd, baseline, args.baseline, metrics_dir=args.metrics_dir)
        if not candidates:
            shown = "; ".join(f"{name}: {why}" for name, why in left_out) or "none listed"
            raise CompareError("--experiments", f"finds no experiment of the current commit to compare ({shown})",
                               fix="run some first, e.g. dvc exp run --queue -S 'chunk.size=400,1200' && "
                               "dvc queue start")
    else:
        candidates = [read_side(spec, cwd=cwd, metrics_dir=args.metrics_dir) for spec in args.candidates]
    gate = _names(args.metric) or COMPARE_GATE
    options = {"gate": gate, "alpha": alpha, "max_drop": max_drop, "allow_corpus_change": args.allow_corpus_change,
               "correction": correction}
    if len(candidates) == 1:
        result = compare(baseline, candidates[0], **options)
        report = json.dumps(to_json(result), indent=2, sort_keys=True) + "\n" if args.json \
            else render_markdown(result, top=top)
        for name, why in left_out:
            print(f"left out of --experiments: {name}: {why}", file=sys.stderr)
        untested, regressions = result.untested, {result.candidate.label: result.regressions}
    else:
        many = compare_many(baseline, candidates, left_out=left_out, **options)
        report = json.dumps(to_json_many(many), indent=2, sort_keys=True) + "\n" if args.json \
            else render_markdown_many(many)
        untested = {f"{m} ({r.side.label})": why for r in many.candidates for m, why in r.untested.items()}
        regressions = {r.side.label: r.regressions for r in many.candidates}
    print(report, end="")
    if args.fail_on_regression and untested:
        for metric, why in untested.items():
            print(f"note: --fail-on-regression cannot gate on {metric}: no paired test ({why})", file=sys.stderr)
    failed = {label: metrics for label, metrics in regressions.items() if metrics}
    if args.fail_on_regression and failed:
        which = "; ".join(", ".join(metrics) + (f" ({label})" if len(regressions) > 1 else "")
                          for label, metrics in failed.items())
        print(f"regression: {which} dropped significantly (corrected p < {alpha}) by more than {max_drop}",
              file=sys.stderr)
        return REGRESSION_EXIT
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit._outputs import check_file
    from groundkit.artifacts import atomic_write_text
    from groundkit.errors import CompareError
    from groundkit.reports.compare import check_alpha, parse_options
    from groundkit.reports.html import is_report, report

    alpha = parse_options(args.alpha, "0", "0")[0]
    if not (args.top_k.isascii() and args.top_k.isdigit() and int(args.top_k) > 0):
        raise CompareError("--top-k", f"{args.top_k!r} is not a whole number from 1",
                           fix="give how many passages to show per query, e.g. 10")
    check_file(Path(args.out), command="report", what="a groundkit report", force=args.force, recognise=is_report,
               inputs={})
    page = report(args.run, args.baseline, cwd=Path.cwd(), metrics_dir=args.metrics_dir,
                  gate=_names(args.metric) or COMPARE_GATE, alpha=check_alpha(alpha),
                  allow_corpus_change=args.allow_corpus_change, top_k=int(args.top_k))
    atomic_write_text(Path(args.out), page)
    print(f"report written to {args.out} ({len(page.encode('utf-8')) / 1024:.0f} KiB)")
    return 0


def _cmd_sweep_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit._outputs import check_file
    from groundkit.reports.sweep import plot_column, sweep_table

    def is_sweep_table(path: Path) -> bool:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return False
        return bool(lines) and lines[0].startswith("experiment,") and len({line.count(",") for line in lines}) == 1

    check_file(Path(args.out), command="sweep-plot", what="a sweep table", inputs={}, force=args.force,
               recognise=is_sweep_table)
    params = _names(args.param) or ["chunk.size", "chunk.overlap"]
    metrics = _names(args.metric) or SWEEP_METRICS
    table, left_out = sweep_table(Path.cwd(), params, Path(args.out), metrics)
    print(table, end="")
    if left_out:
        print(f"left out {len(left_out)} (not comparable with this commit's run, or no result of their own):",
              file=sys.stderr)
        for name, reason in left_out:
            print(f"  {name}: {reason}", file=sys.stderr)
    print(f"\nwritten to {args.out}; draw it with:\n  dvc plots show {args.out} -x {plot_column(params[0])} "
          f"-y {metrics[-1]} --template scatter", file=sys.stderr)
    return 0


def _cmd_import_beir(args: argparse.Namespace) -> int:
    from groundkit.corpus.beir import MANIFEST as MANIFEST_NAME
    from groundkit.corpus.beir import import_beir

    manifest = import_beir(args.dataset, args.out, split=args.split, drop_empty=args.drop_empty, force=args.force,
                           strict=args.strict, keep_identical_ids=args.keep_identical_ids)
    print(
        f"{manifest['documents']} documents, {manifest['judgments']} judgments "
        f"({manifest['relevant_pairs']} relevant documents) written to {args.out}"
    )
    notes = []
    if manifest["max_score"] > 1:
        notes.append(f"qrels are graded (up to {manifest['max_score']}); the grades are kept as nDCG's gains")
    skipped = {reason: n for reason, n in manifest["qrels_skipped"].items() if n}
    if skipped:
        counts = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in skipped.items())
        left = len(manifest["queries_left_without_relevant"])
        notes.append(f"{sum(skipped.values())} qrels skipped ({counts}), {left} queries left without a relevant "
                     f"document; listed in {MANIFEST_NAME} (--strict refuses them)")
    if manifest["identical_ids"]:
        how = "excluded from their own runs, as BEIR does" if manifest["identical_ids_excluded"] else "kept"
        notes.append(f"{len(manifest['identical_ids'])} queries share their id with a document: {how}")
    if manifest["documents_renamed"]:
        notes.append(f"{len(manifest['documents_renamed'])} document ids are not plain file names: their files are "
                     f"percent-encoded (listed in {MANIFEST_NAME})")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _cmd_export_beir(args: argparse.Namespace) -> int:
    from groundkit.reports.beir_export import export_beir

    counts = export_beir(args.run, args.import_dir, args.out, force=args.force)
    print(f"{counts['queries']} queries, {counts['documents_ranked']} ranked documents and {counts['qrels']} qrels "
          f"with BEIR ids written to {args.out} (run.trec, qrels.trec)")
    return 0


def _add_inputs(parser: argparse.ArgumentParser, *, params_help: str, set_example: str) -> None:
    """The options every command that reads a corpus shares: --corpus, --judgments, --params, --set."""
    parser.add_argument("--corpus", required=True, help="directory of documents")
    parser.add_argument("--judgments", required=True, help="judgments JSONL file")
    parser.add_argument("--params", default=None, help=params_help)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a parameter, e.g. --set {set_example} (repeatable)")


def _categories() -> list[Any]:
    from groundkit.corpus.judgments import Category

    return list(Category)


def _repair_threshold() -> float:
    from groundkit.corpus.authoring import REPAIR_THRESHOLD

    return REPAIR_THRESHOLD


FORCE_HELP = ("replace the artifacts of an earlier run of this command in --out; other files there are kept "
              "(without it an --out groundkit wrote before is refused)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundkit", description="Reproducible retrieval evaluation anchored on verbatim gold quotes."
    )
    parser.add_argument("--debug", action="store_true", help="show a traceback on error")
    parser.add_argument("--version", action="version", version=f"groundkit {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the whole evaluation in-process into --out")
    _add_inputs(run, params_help="params.yaml (defaults when omitted)", set_example="chunk.size=400")
    run.add_argument("--out", required=True, help="output directory for the artifacts")
    run.add_argument("--force", action="store_true", help=FORCE_HELP)
    run.set_defaults(handler=_cmd_run)

    score_run = commands.add_parser(
        "score-run", help="score a run produced by another system (JSONL of ranked passages) into --out",
        description="Score an external run: one JSON object per line with query_id, rank, document and either "
                    "start/end character offsets or the passage text (see examples/README.md).",
    )
    score_run.add_argument("run_file", metavar="RUN.jsonl", help="the external run")
    _add_inputs(score_run, params_help="params.yaml (for score.ks and retrieve.depth)", set_example="score.ks=[1,5]")
    score_run.add_argument("--out", required=True, help="output directory for the artifacts")
    score_run.add_argument("--force", action="store_true", help=FORCE_HELP)
    score_run.set_defaults(handler=_cmd_run)

    audit = commands.add_parser("audit", help="measure whether the corpus can tell retrievers apart")
    _add_inputs(audit, params_help="params.yaml (for tokenize and the gate audit.max_trivial_share)",
                set_example="audit.max_trivial_share=0.2")
    audit.add_argument("--out", default=None,
                       help="write the full JSON report here (also when the check fails; not when an input is broken)")
    audit.add_argument("--force", action="store_true", help="replace the report of an earlier audit at --out")
    audit.set_defaults(handler=_cmd_audit)

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
    add.add_argument("--category", default="factoid", choices=[c.value for c in _categories()],
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

    cmp = commands.add_parser(
        "compare", help="pair runs query by query: deltas, 95%% CIs, corrected p-values, effect sizes, a verdict",
        description="Compare a baseline with one candidate (the full report) or several (one table of the gated "
        "metrics, their p-values corrected together). Each side is a git revision or DVC experiment name (its "
        "committed metrics/), or a folder with per_query.csv and run.json (`groundkit run --out`, or a "
        "workspace's metrics/).",
    )
    cmp.add_argument("baseline", help="revision, experiment name or results folder")
    cmp.add_argument("candidates", nargs="*", metavar="candidate",
                     help="one or more revisions, experiment names or results folders")
    cmp.add_argument("--experiments", action="store_true",
                     help="compare every experiment of the current commit (`dvc exp show`) with the baseline")
    cmp.add_argument("--correction", default="holm",
                     help="correction of the gated p-values for testing several: holm (default), bh "
                     "(Benjamini-Hochberg) or none")
    cmp.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                     help="metrics the verdict and --fail-on-regression look at, each counted once; not chars@k, "
                     f"which is neither better nor worse by itself (default {', '.join(COMPARE_GATE)})")
    # Numbers are checked by compare itself, so a bad one gets the same one-line error as any input.
    cmp.add_argument("--alpha", default="0.05", help="significance level, between 0 and 1 (default 0.05)")
    cmp.add_argument("--max-drop", default="0",
                     help="a significant drop no larger than this is tolerated (default 0)")
    cmp.add_argument("--fail-on-regression", action="store_true",
                     help=f"exit {REGRESSION_EXIT} if a --metric of any candidate dropped significantly (corrected p "
                     "below --alpha) by more than --max-drop")
    cmp.add_argument("--json", action="store_true", help="print the report as JSON")
    cmp.add_argument("--top", default="15", help="queries listed per direction in Markdown (default 15)")
    cmp.add_argument("--allow-corpus-change", action="store_true",
                     help="compare runs scored over different corpora (different corpus_hash); the report says so")
    cmp.add_argument("--metrics-dir", default="metrics", help="where a revision keeps per_query.csv and run.json")
    cmp.set_defaults(handler=_cmd_compare)

    rep = commands.add_parser(
        "report", help="write one self-contained HTML page: charts, per-query table, gold quotes and passages",
        description="RUN and BASE are what compare accepts: a git revision or DVC experiment name, or a folder "
        "with per_query.csv and run.json. The passages come from the run's artifacts: a `groundkit run` folder, "
        "a workspace's build/, or for a revision the local DVC cache.",
    )
    rep.add_argument("run", help="revision, experiment name or results folder")
    rep.add_argument("--baseline", default=None, help="compare against this side (revision, experiment or folder)")
    rep.add_argument("--out", required=True, help="the HTML file to write")
    rep.add_argument("--force", action="store_true", help="replace a report written earlier at --out")
    rep.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                     help=f"metrics of the verdict, as in compare (default {', '.join(COMPARE_GATE)})")
    rep.add_argument("--alpha", default="0.05", help="significance level, between 0 and 1 (default 0.05)")
    rep.add_argument("--top-k", default="10", help="passages shown per query and run (default 10)")
    rep.add_argument("--allow-corpus-change", action="store_true",
                     help="compare runs scored over different corpora (different corpus_hash)")
    rep.add_argument("--metrics-dir", default="metrics", help="where a revision keeps per_query.csv and run.json")
    rep.set_defaults(handler=_cmd_report)

    sweep = commands.add_parser(
        "sweep-plot", help="one row per DVC experiment (params against metrics) as CSV for `dvc plots show`")
    sweep.add_argument("--param", action="append", default=[], metavar="KEY[,KEY]",
                       help="params.yaml keys to tabulate, the first is the x axis (default chunk.size,chunk.overlap)")
    sweep.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                       help=f"answerable metrics to tabulate (default {', '.join(SWEEP_METRICS)})")
    sweep.add_argument("--out", default="build/sweep.csv", help="CSV to write (default build/sweep.csv)")
    sweep.add_argument("--force", action="store_true", help="replace the table of an earlier sweep-plot at --out")
    sweep.set_defaults(handler=_cmd_sweep_plot)

    beir = commands.add_parser("import-beir", help="turn a BEIR dataset into a corpus folder and judgments")
    beir.add_argument("dataset", help="BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/)")
    beir.add_argument("--out", required=True, help="output folder: corpus/, judgments.jsonl, beir-import.json")
    beir.add_argument("--force", action="store_true", help=FORCE_HELP)
    beir.add_argument("--split", default="test", help="qrels split to import (qrels/SPLIT.tsv; default test)")
    beir.add_argument("--drop-empty", action="store_true",
                      help="leave out documents with neither title nor text (and the qrels naming them) instead of "
                      "failing")
    beir.add_argument("--strict", action="store_true",
                      help="refuse qrels naming a query or document the dataset lacks (default: skip and list them)")
    beir.add_argument("--keep-identical-ids", action="store_true",
                      help="let a query's run return the document with the query's own id (BEIR drops it)")
    beir.set_defaults(handler=_cmd_import_beir)

    export = commands.add_parser(
        "export-beir", help="write a run over an imported BEIR dataset as document-level TREC files with BEIR ids")
    export.add_argument("run", help="the --out folder of `groundkit run` (or score-run) on the import")
    export.add_argument("--import", dest="import_dir", required=True, help="the folder import-beir wrote")
    export.add_argument("--out", required=True, help="output folder: run.trec, qrels.trec")
    export.add_argument("--force", action="store_true", help=FORCE_HELP)
    export.set_defaults(handler=_cmd_export_beir)
    return parser


def _version() -> str:
    from groundkit import __version__

    return __version__


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``groundkit`` console script."""
    return guarded(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
