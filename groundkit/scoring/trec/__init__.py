"""Document-level runs and qrels, as trec_eval reads them: the files (``files``), the measures (``measures``) and
the result folder ``groundkit score-trec`` writes (``result``)."""
