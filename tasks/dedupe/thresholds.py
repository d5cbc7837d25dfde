"""The knobs of dedupe: how alike two records must be, and how candidates are found."""

from dataclasses import dataclass, field

from tasks.dedupe.candidates import Blocking
from tasks.dedupe.weights import PairWeights


@dataclass(frozen=True)
class DedupeThresholds:
    title: float = 0.90  # title similarity for a fuzzy match
    short_title: float = 0.97  # ... when a title has fewer than `short_words` words
    short_words: int = 4
    long_words: int = 5  # a title this long, the same in one venue's year, needs no authors
    corroborated_title: float = 0.80  # ... when first author and year are known and agree
    author: float = 0.80  # first-author surname similarity (and any two surnames' for teams)
    team_strangers: int = 2  # names each of two author lists lacks from the other: two teams
    year_window: int = 1
    preprint_years: int = 3  # a preprint may precede its published version by this much
    url_title: float = 0.5  # a shared URL merges only records with titles at least this alike
    floor: float = 0.6  # title pairs less alike than this are not compared further
    linkage: float = 0.85  # a fuzzy merge needs this mean score over the clusters' pairs
    # A short title (up to `recurring_words` words) seen in `recurring_years` different years of
    # one periodical recurs ("Editor's notes"): it is not one work.
    recurring_words: int = 4
    recurring_years: int = 3
    blocking: Blocking = field(default_factory=Blocking)
    # Learned weights for pairs the rules alone do not merge; None: the fitted ones
    # (tasks/data/dedupe_weights.json).
    weights: PairWeights | None = None
