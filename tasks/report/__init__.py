"""The job report a person reads: `report.html` (self-contained, escaped, phone-friendly) and
`report.md`. selection.py picks what is shown as typed rows (rows.py; the flag rules in
flags.py, claims, works, changes and a big job's totals beside them); templates/ lay them out;
render.py fills the templates. tasks/store/ writes the files."""

from tasks.report.claims import unsupported_claims
from tasks.report.flags import flag_label, flagged_citations, flagged_list, status_counts
from tasks.report.render import render_html, render_markdown
from tasks.report.selection import ReportData
from tasks.report.totals import MAX_REPORTED_CITATIONS, Totals, reported_citations
from tasks.report.works import related_citations

__all__ = [
    "MAX_REPORTED_CITATIONS",
    "ReportData",
    "Totals",
    "flag_label",
    "flagged_citations",
    "flagged_list",
    "related_citations",
    "reported_citations",
    "render_html",
    "render_markdown",
    "status_counts",
    "unsupported_claims",
]
