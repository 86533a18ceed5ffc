"""Retrievers, from the BM25 baseline to a run file made elsewhere: each turns queries into ranked passages."""
