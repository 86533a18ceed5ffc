"""Artifacts on disk: how groundkit writes files (atomically, sealed, deterministically) and reads them back.

``atomic`` (writes renamed into place), ``seals`` (the SHA-256 beside a line-oriented artifact), ``lines``
(deterministic text and its strict readers), ``outputs`` (a command's ``--out`` folder) and ``models`` (the
bases of every record and params section). Infrastructure: every layer may import these, they import none.
"""
