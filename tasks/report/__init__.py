"""The job report a person reads: `report.html` (self-contained, escaped, phone-friendly) and
`report.md`. selection.py picks what is shown as typed rows; templates/ lay them out;
render.py fills the templates. tasks/store/ writes the files."""

from tasks.report.render import render_html, render_markdown
from tasks.report.selection import (
    MAX_REPORTED_CITATIONS,
    ReportData,
    Totals,
    flag_label,
    flagged_citations,
    flagged_list,
    related_citations,
    reported_citations,
    status_counts,
    unsupported_claims,
)

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
