"""Does the cited work support the claim? Relevance of each claim–citation pair, from the cited
work's abstract, scored with a local sentence-embedding model (the `support` extra)."""
