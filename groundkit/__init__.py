"""groundkit: reproducible retrieval evaluation for RAG, anchored on verbatim gold quotes."""

__version__ = "0.1.0"
