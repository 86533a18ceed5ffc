"""Reading what people write: their text files, JSON lines, glob patterns, and the messages about them.

``text`` (decoding user text files into stable strings), ``jsonline`` (one strict JSON reader for
line-oriented files), ``globs`` (``corpus.include``/``exclude`` patterns), ``validation`` (a pydantic error as
one sentence) and ``suggest`` ("did you mean"). Infrastructure: every layer may import these.
"""
