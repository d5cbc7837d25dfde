"""What the job report shows, as data: plain functions from the job's frames to typed rows
(rows.py), which the templates (tasks/report/templates/) only lay out. Flagged citations and
unsupported claims come first, each with its reason (flags.py, claims.py), then duplicates and
related works (works.py) and a scheduled audit's changes (changes.py); a big job's totals and
capped list are totals.py's."""

from dataclasses import dataclass, field

import polars as pl

from models.audit import Subject
from tasks.report.changes import change_groups
from tasks.report.claims import claim_rows
from tasks.report.flags import (
    STATUS_COLOURS,
    flagged_citations,
    has_notice,
    problem_rows,
    several_jobs,
)
from tasks.report.rows import HistogramBin, Report, StatusCount, has_column, text_of
from tasks.report.totals import Totals, totals_of
from tasks.report.works import duplicates, related_citations


@dataclass
class ReportData:
    job_id: str
    citations: pl.DataFrame
    claims: pl.DataFrame = field(default_factory=pl.DataFrame)
    input_errors: pl.DataFrame = field(default_factory=pl.DataFrame)
    style: str = ""
    bibliography_html: list[str] = field(default_factory=list)  # pandoc citeproc's, escaped
    # Listed works no registry confirmed: (status, entry HTML), shown apart and marked.
    bibliography_unconfirmed: list[tuple[str, str]] = field(default_factory=list)
    changes: pl.DataFrame | None = None  # scheduled audits: what changed since the last one
    links: pl.DataFrame = field(default_factory=pl.DataFrame)  # work_id_a, work_id_b, kind
    bibliography_note: str = ""  # why there is no bibliography (too many items), if so
    notice: str = ""  # what the reader must know first (the job was not stored), if anything
    subjects: list[Subject] = field(default_factory=list)  # the papers audited (a PDF's own)
    # A big job's report shows only its first flagged citations (`citations`: at most
    # MAX_REPORTED_CITATIONS of them); `whole` then counts every citation, for the status
    # counts, the histogram and how many flagged citations are left out.
    whole: "Totals | None" = None


def _histogram(counts: list[int] | None) -> list[HistogramBin] | None:
    if not counts or not sum(counts):
        return None
    bins, top = len(counts), max(counts) or 1
    return [
        HistogramBin(i / bins, (i + 1) / bins, c, round(100 * c / top))
        for i, c in enumerate(counts)
    ]


def _table(frame: pl.DataFrame, columns: list[str]) -> list[dict[str, str]]:
    present = [c for c in columns if has_column(frame, c)]
    return [
        {c: text_of(row[c]) for c in present} for row in frame.select(present).iter_rows(named=True)
    ]


def select(data: ReportData) -> Report:
    """Everything the report shows, in the order it shows it."""
    cites = data.citations
    whole = data.whole or totals_of(cites)
    flagged = flagged_citations(cites)
    jobs = several_jobs(flagged)
    rows = list(flagged.iter_rows(named=True))
    return Report(
        job_id=data.job_id,
        citation_count=whole.citations,
        input_error_count=data.input_errors.height,
        counts=[StatusCount(s, n, STATUS_COLOURS[s]) for s, n in whole.statuses.items()],
        notices=problem_rows([r for r in rows if has_notice(r)], jobs),
        flagged=problem_rows([r for r in rows if not has_notice(r)], jobs),
        claims=claim_rows(data.claims, cites),
        histogram=_histogram(whole.confidence),
        changes=None if data.changes is None else change_groups(data.changes, cites),
        change_count=0 if data.changes is None else data.changes.height,
        duplicates=duplicates(cites),
        repeat_count=whole.repeats,
        related=related_citations(cites, data.links),
        input_errors=_table(data.input_errors, ["source_file", "entry_key", "line", "reason"]),
        style=data.style,
        bibliography_html=data.bibliography_html,
        bibliography_unconfirmed=data.bibliography_unconfirmed,
        bibliography_note=data.bibliography_note,
        notice=data.notice,
        subjects=data.subjects,
        flagged_left_out=whole.flagged - flagged.height,
    )
