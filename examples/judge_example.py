"""A deterministic judge for the `python:` contract, with known error rates: the flow of docs/llm-labels.md offline.

It is no model: it knows the answers. Given a judgments file (``options["judgments"]``), it finds the query's
gold quotes and answers, for a passage:

* a gold quote the passage holds whole: grade 2 and that quote;
* the part of a gold quote the passage holds, when the passage cuts it (at least 12 characters): grade 1 and
  that part, verbatim;
* otherwise grade 0.

Then it errs on purpose, at rates you set and can check: a pair whose hash (SHA-256 of query and passage)
falls below ``false_negative_rate`` loses its quote (grade 0), and one below ``false_positive_rate`` among
the rest gains the passage's first line as a quote (grade 1). The hash makes the errors the same on every
run and every machine, so the agreement ``judgments review`` measures is a fixed number to test against.

    judge:
      model: python:examples.judge_example:make_judge   # run from the repository root
      options: {judgments: evals/judgments.jsonl, false_positive_rate: 0.1, false_negative_rate: 0.1}

It also proposes questions (``propose``): the first sentence of the passage, asked back as "What does the
documentation say about: ...?", quoting that sentence.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

SHORTEST_PART = 12


def _share(*texts: str) -> float:
    """A number in [0, 1) fixed by the texts: the first 8 bytes of their SHA-256."""
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _part(quote: str, passage: str) -> str | None:
    """The longest piece of ``quote`` that ``passage`` holds where it cuts the quote (its start or end)."""
    for size in range(len(quote) - 1, SHORTEST_PART - 1, -1):
        if passage.startswith(quote[-size:]):
            return quote[-size:].strip() or None
        if passage.endswith(quote[:size]):
            return quote[:size].strip() or None
    return None


class ExampleJudge:
    """Answers from the gold quotes of a judgments file, with errors at fixed, hashed places."""

    def __init__(self, quotes: dict[str, list[str]], false_positive_rate: float, false_negative_rate: float) -> None:
        self.quotes, self.fp, self.fn = quotes, false_positive_rate, false_negative_rate

    def truth(self, query: str, passage: str) -> dict[str, Any]:
        """The answer without the errors."""
        for quote in self.quotes.get(query, []):
            if quote in passage:
                return {"grade": 2, "quote": quote}
        for quote in self.quotes.get(query, []):
            part = _part(quote, passage)
            if part is not None:
                return {"grade": 1, "quote": part}
        return {"grade": 0, "quote": None}

    def judge(self, query: str, passage: str) -> dict[str, Any]:
        answer = self.truth(query, passage)
        luck = _share(query, passage)
        if answer["grade"] and luck < self.fn:
            return {"grade": 0, "quote": None}
        if not answer["grade"] and luck < self.fp:
            line = passage.strip().split("\n", 1)[0].strip()
            return {"grade": 1, "quote": line} if line else answer
        return answer

    def propose(self, passage: str) -> dict[str, str] | None:
        sentence = passage.strip().split("\n", 1)[0].split(". ", 1)[0].strip().rstrip(".")
        if len(sentence) < SHORTEST_PART:
            return None
        return {"query": f"What does the documentation say about: {sentence}?", "quote": sentence}


def make_judge(options: dict[str, Any]) -> ExampleJudge:
    """The ``python:`` factory: ``options`` names the judgments file and the two error rates."""
    quotes: dict[str, list[str]] = {}
    path = Path(options.get("judgments", "evals/judgments.jsonl"))
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            quotes.setdefault(record["query"], []).extend(g["quote"] for g in record["gold"] if "quote" in g)
    return ExampleJudge(quotes, float(options.get("false_positive_rate", 0.1)),
                        float(options.get("false_negative_rate", 0.1)))
