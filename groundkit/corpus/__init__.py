"""Documents, judgments and what is relevant in them: passages, gold spans, chunks, terms, the audit."""
