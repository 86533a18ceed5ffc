"""Seals: the SHA-256 a stage records beside a line-oriented artifact, and how a reader checks it.

A sealed artifact ``NAME`` has ``NAME.sha256`` beside it, in ``sha256sum`` format, holding the digest of
the bytes the producing stage wrote. Record checks alone cannot see a file cut at a line boundary or a
line deleted by hand (the rest still parses); the seal can, and ``sha256sum -c`` checks it without
groundkit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from groundkit.errors import ArtifactError

Digest = Callable[[Path], str]
"""How a reader gets a file's SHA-256: :func:`file_sha256`, or a run's store (which knows its own files)."""


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks so large arrays never sit in memory twice."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def seal_path(path: str | Path) -> Path:
    """Where the seal of artifact ``path`` lives: ``NAME.sha256`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.name}.sha256")


def seal_text(path: str | Path, digest: str) -> str:
    """The seal of ``path`` whose bytes hash to ``digest``, as ``sha256sum`` writes it."""
    return f"{digest}  {Path(path).name}\n"


def check_seal(path: Path, data: bytes | None, producer: str, digest: Digest = file_sha256) -> str:
    """Compare ``path``'s seal with ``data`` (its bytes) or, when None, ``digest(path)``; return the digest."""
    seal = seal_path(path)
    fix = f"delete it and re-run the {producer} stage (dvc repro -f -s {producer})"
    if not seal.is_file():
        raise ArtifactError(path, f"has no seal {seal.name} beside it, so its completeness cannot be checked", fix=fix)
    recorded = seal.read_text(encoding="utf-8", errors="replace").split(" ", 1)[0]
    found = hashlib.sha256(data).hexdigest() if data is not None else digest(path)
    if found != recorded:
        raise ArtifactError(
            path,
            f"does not match the SHA-256 in {seal.name}: it was truncated or edited after the {producer} stage "
            "wrote it",
            fix=fix,
        )
    return found
