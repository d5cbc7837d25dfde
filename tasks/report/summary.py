"""A job's summary as short Markdown: the counts and the entries to look at, for a place that
shows a few lines (a CI job's summary page, a pull request comment). The whole report is
report.md."""

from models.job import JobSummary
from tasks.plural import counted

LISTED = 50  # entries listed of each kind; the rest are counted


def summary_markdown(summary: JobSummary) -> str:
    lines = [f"## citeaudit: {summary.job_id}", "", counted(summary.citations, "citation"), ""]
    lines += ["| status | count |", "| --- | ---: |"]
    lines += [f"| {status} | {count} |" for status, count in summary.status_counts.items()]
    if summary.flagged:
        lines += ["", f"### {len(summary.flagged) + summary.flagged_left_out} to look at", ""]
        lines += [
            f"- **{f.label}** `{f.source_file}:{f.entry_key}`: {_cell(f.reason or f.error or '')}"
            for f in summary.flagged[:LISTED]
        ]
        more = len(summary.flagged) - LISTED + summary.flagged_left_out
        if more > 0:
            lines.append(f"- … and {more} more (see the report)")
    if summary.input_errors:
        lines += ["", f"### {counted(len(summary.input_errors), 'input error')}", ""]
        lines += [f"- `{e.where}`: {_cell(e.reason)}" for e in summary.input_errors[:LISTED]]
        if len(summary.input_errors) > LISTED:
            lines.append(f"- … and {len(summary.input_errors) - LISTED} more")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    # one line each: a reason quoting a title with a line break would end the list item
    return " ".join(text.split())
