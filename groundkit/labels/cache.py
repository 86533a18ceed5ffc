"""The judge cache: every answer kept by content, so no pair is ever paid for twice.

An entry's key is the SHA-256 of (what was asked, the judge's id, the prompt template's digest, the query
text, the passage text): nothing of where the passage sits, which run ranked it or when. The same command
run again finds every answer here and makes no call; an interrupted run finds what it had been answered.

Each entry is its own file, ``ROOT/ab/abcdef....json``, written through a temporary file and a rename
(groundkit/artifacts/atomic.py): two runs sharing one cache never write into the same file at once, a run killed
mid-write leaves no half entry, and whichever of two equal answers lands last is as good as the other. An
entry holds the texts it was asked about, which a read checks, and never the API key. Only answers that
passed the judge's checks are kept: an answer that broke the contract is asked again next time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.errors import ArtifactError

FORMAT = "groundkit-judge-cache/1"


def cache_key(kind: str, judge: str, prompt_sha256: str | None, *texts: str) -> str:
    """The content key of one call: ``kind`` is ``judge`` or ``propose``; ``texts`` what was asked about."""
    payload = json.dumps([FORMAT, kind, judge, prompt_sha256 or "", *texts], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Cache:
    """A folder of answers by content key (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, asked: dict[str, Any]) -> dict[str, Any] | None:
        """The answer kept under ``key``, or None. ``asked`` is what the entry must say it was asked about.

        Raises:
            ArtifactError: the entry was edited, or is not one groundkit wrote.
        """
        path = self._path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        fix = f"delete {path}: its pair is asked again on the next run"
        try:
            entry = json.loads(data)
        except ValueError:
            raise ArtifactError(path, "is not a judge cache entry (not JSON)", fix=fix) from None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or not isinstance(entry.get("answer"), dict):
            raise ArtifactError(path, f"is not a judge cache entry ({FORMAT})", fix=fix)
        if entry.get("asked") != asked:
            raise ArtifactError(path, "holds the answer to another question than its key says (edited by hand?)",
                                fix=fix)
        return entry

    def put(self, key: str, asked: dict[str, Any], answer: dict[str, Any], tokens: int) -> None:
        """Keep ``answer`` under ``key`` (atomically: see the module docstring)."""
        entry = {"format": FORMAT, "asked": asked, "answer": answer, "tokens": tokens}
        atomic_write_text(self._path(key), json.dumps(entry, ensure_ascii=False, sort_keys=True, indent=1) + "\n")
