"""Reports over finished runs: compare two of them, plot a sweep."""
