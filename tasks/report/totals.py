"""What a big job's report counts of every citation while it lists only its first flagged ones
(a bulk import): the totals, added a batch at a time, and the capped list."""

from dataclasses import dataclass, field

import polars as pl

from tasks.dedupe.job import repeats_within_jobs
from tasks.report.flags import STATUS_ORDER, flagged_citations, status_counts
from tasks.report.rows import has_column

# Past this many citations a report lists only the first this many flagged ones (worst first)
# and counts the rest: one row per citation would make the report, and the memory it takes to
# write it, grow with the list (a bulk import). Every citation stays in citations.parquet.
MAX_REPORTED_CITATIONS = 5_000


HISTOGRAM_BINS = 10


@dataclass
class Totals:
    """What a big job's report counts of every citation while it lists only the first flagged
    ones (a bulk import past MAX_REPORTED_CITATIONS), added a batch of citation rows at a time:
    no row is held."""

    citations: int = 0
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUS_ORDER, 0))
    confidence: list[int] = field(default_factory=lambda: [0] * HISTOGRAM_BINS)  # histogram
    flagged: int = 0
    repeats: int = 0  # citations of a work the job cites already (repeats_within_jobs)

    def add(self, citations: pl.DataFrame) -> None:
        self.citations += citations.height
        for status, count in status_counts(citations).items():
            self.statuses[status] += count
        values: list[float] = (
            citations["confidence"].drop_nulls().cast(pl.Float64).to_list()
            if has_column(citations, "confidence")
            else []
        )
        for bin_, count in enumerate(histogram(values, HISTOGRAM_BINS)):
            self.confidence[bin_] += count
        self.flagged += flagged_citations(citations).height


def histogram(values: list[float], bins: int = 10) -> list[int]:
    counts = [0] * bins
    for v in values:
        counts[min(int(v * bins), bins - 1)] += 1
    return counts


def totals_of(citations: pl.DataFrame) -> Totals:
    """`Totals` of citations all at hand."""
    totals = Totals(repeats=repeats_within_jobs(citations).height)
    totals.add(citations)
    return totals


def reported_citations(shown: pl.DataFrame, more: pl.DataFrame, cap: int) -> pl.DataFrame:
    """What a big job's report lists, a batch of citations (`more`) at a time: the first `cap`
    (MAX_REPORTED_CITATIONS) flagged citations of `shown` and `more`, worst first.

    Copied out through Arrow: a row polars picks keeps its strings as views into the whole
    batch they came from, and the rows kept come from every batch, so without the copy the
    list held every batch's strings, growing with the import."""
    return pl.DataFrame(flagged_citations(pl.concat([shown, more])).head(cap).to_arrow())
