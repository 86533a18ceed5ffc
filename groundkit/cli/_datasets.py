"""Datasets in and out: ``import-beir``, ``import-squad`` and ``export-beir``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from groundkit.cli._common import FORCE_HELP, categories


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
    skipped = manifest["queries_without_relevant"]
    if skipped:
        # A query whose relevant documents the dataset lacks is named: the split meant it to be judged.
        left = manifest["queries_left_without_relevant"]
        named = ", ".join(left[:SHOWN]) + (f" and {len(left) - SHOWN} more" if len(left) > SHOWN else "")
        unjudged = skipped - len(left)
        parts = [f"{unjudged} {_has(unjudged)} no qrel above 0 in qrels/{args.split}.tsv (another split's queries, "
                 "or judged not relevant)"]
        if left:
            parts.append(f"{len(left)} {_has(len(left))} qrels above 0 only for documents the dataset lacks: {named} "
                         f"(queries_left_without_relevant in {MANIFEST_NAME})")
        print(f"warning: {skipped} of {skipped + manifest['judgments']} queries of queries.jsonl get no judgment: "
              f"{'; '.join(parts)}", file=sys.stderr)
    return 0


SHOWN = 10
"""How many skipped queries a warning names before it counts the rest."""


def _has(count: int) -> str:
    return "has" if count == 1 else "have"

def _cmd_import_squad(args: argparse.Namespace) -> int:
    from groundkit.corpus.squad import MANIFEST as MANIFEST_NAME
    from groundkit.corpus.squad import import_squad, summary

    manifest = import_squad(args.file, args.out, input_format=None if args.format == "auto" else args.format,
                            category=args.category, strict=args.strict, force=args.force)
    lines, notes = summary(manifest)
    for line in lines:
        print(line)
    print(f"written to {args.out} (details in {MANIFEST_NAME})")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0

def _cmd_export_beir(args: argparse.Namespace) -> int:
    from groundkit.reports.beir_export import export_beir

    counts = export_beir(args.run, args.import_dir, args.out, force=args.force)
    print(f"{counts['queries']} queries, {counts['documents_ranked']} ranked documents and {counts['qrels']} qrels "
          f"with BEIR ids written to {args.out} (run.trec, qrels.trec)")
    if counts["tied_queries"]:
        print(f"warning: {counts['tied_queries']} of {counts['queries']} queries rank documents with equal scores "
              f"({counts['tied_documents']} documents in ties; {counts['tied_in_top_10']} queries with one in "
              f"their top 10, the first at rank {counts['first_tied_rank']}): trec_eval and ir_measures order them by "
              "document id, not as groundkit ranked them, so their figures can differ where a tie straddles a "
              "cut-off", file=sys.stderr)
    return 0

def add(commands: Any) -> None:
    """Add this module's subcommands."""
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

    squad = commands.add_parser(
        "import-squad", help="turn SQuAD 1.1/2.0 JSON or MRQA JSONL into a corpus folder and quote judgments",
        description="One document per SQuAD article (its paragraphs joined by a blank line) or MRQA context, one "
        "judgment per question whose gold quotes are its answers, each widened word by word until it occurs "
        "exactly once in its document. The guide's docs/importing.md tells every rule.")
    squad.add_argument("file", help="SQuAD JSON file, or MRQA JSONL file (.jsonl or .jsonl.gz)")
    squad.add_argument("--out", required=True, help="output folder: corpus/, judgments.jsonl, squad-import.json")
    squad.add_argument("--force", action="store_true", help=FORCE_HELP)
    squad.add_argument("--format", default="auto", choices=["auto", "squad", "mrqa"],
                       help="the file's form (default auto: recognised from its first line)")
    squad.add_argument("--category", default="factoid",
                       choices=[c.value for c in categories() if c.value != "no_answer"],
                       help="category of the answerable questions (default factoid; unanswerable ones are no_answer)")
    squad.add_argument("--strict", action="store_true",
                       help="refuse the file at the first question whose answer cannot be located (default: skip "
                       "such questions and list them)")
    squad.set_defaults(handler=_cmd_import_squad)

    export = commands.add_parser(
        "export-beir", help="write a run over an imported BEIR dataset as document-level TREC files with BEIR ids")
    export.add_argument("run", help="the --out folder of `groundkit run` (or score-run) on the import")
    export.add_argument("--import", dest="import_dir", required=True, help="the folder import-beir wrote")
    export.add_argument("--out", required=True, help="output folder: run.trec, qrels.trec")
    export.add_argument("--force", action="store_true", help=FORCE_HELP)
    export.set_defaults(handler=_cmd_export_beir)
