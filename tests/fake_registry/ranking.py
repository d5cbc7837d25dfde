"""Fuzzy ranking of stored records against free-text queries: a plausible stand-in for Crossref's
query.bibliographic and PubMed's esearch relevance sort, not a copy of either."""

from collections.abc import Mapping
from typing import Any

from rapidfuzz import fuzz, process, utils


def bibliographic_similarity(query: str, document: str, **_: Any) -> float:
    """0-100. Token-set similarity rewards a query whose words all occur in the record (a title,
    authors and year quoted from the work); the token-sort part penalises what the query adds."""
    return 0.7 * fuzz.token_set_ratio(query, document) + 0.3 * fuzz.token_sort_ratio(
        query, document
    )


class Ranker:
    """Ranks keys of `documents` (key -> searchable text) by similarity to a query."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self._documents = {key: utils.default_process(text) for key, text in documents.items()}

    def rank(self, query: str, limit: int, min_score: float = 0.0) -> list[tuple[str, float]]:
        """Best `limit` (key, score) pairs, best first, scores rounded to 3 decimals."""
        if limit <= 0 or not self._documents:
            return []
        matches = process.extract(
            utils.default_process(query),
            self._documents,
            scorer=bibliographic_similarity,
            limit=limit,
            score_cutoff=min_score or None,
        )
        return [(str(key), round(float(score), 3)) for _, score, key in matches]
