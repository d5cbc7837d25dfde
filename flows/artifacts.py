"""What a flow run shows in the Prefect UI: artifacts keyed by kind and job.

One rule for the key: Prefect accepts lowercase letters, digits and dashes only."""

from collections.abc import Sequence

import polars as pl
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from models.job import UnsupportedClaim
from tasks import report


def artifact_key(kind: str, job_id: str) -> str:
    """`audit-my-job-2024` for kind `audit` and job `My_Job.2024`."""
    return f"{kind}-{''.join(c if c.isalnum() else '-' for c in job_id.lower())}"


def publish_job(job_id: str, citations: pl.DataFrame, whole: report.Totals | None = None) -> None:
    """A job's status counts and its flagged citations (`whole`: every citation counted, when
    `citations` holds only those its report lists)."""
    counts = report.status_counts(citations) if whole is None else whole.statuses
    create_markdown_artifact(
        key=artifact_key("audit", job_id),
        markdown="\n".join(
            [f"# Citation audit: {job_id}", "", "| status | count |", "|---|---:|"]
            + [f"| {s} | {n} |" for s, n in counts.items()]
        ),
        description=f"citeaudit summary of job {job_id}",
    )
    create_table_artifact(
        key=artifact_key("flagged", job_id),
        table=[
            {
                "entry": row["entry_key"],
                "file": row["source_file"],
                "status": report.flag_label(row),
                "reason": row["reason"] or row["error"] or "",
            }
            for row in report.flagged_citations(citations).iter_rows(named=True)
        ],
        description=f"flagged citations of job {job_id}",
    )


def unsupported_markdown(job_id: str, claims: Sequence[UnsupportedClaim]) -> str:
    lines = [f"# Unsupported claims: {job_id} ({len(claims)})", ""]
    for claim in claims:
        lines.append(f"- {claim.claim_text} (strength {claim.strength:.2f})")
        lines.extend(f"  - `{c.entry_key}` {c.status}: {c.reason}" for c in claim.citations)
    return "\n".join(lines)


def publish_unsupported(job_id: str, claims: Sequence[UnsupportedClaim]) -> None:
    create_markdown_artifact(
        key=artifact_key("unsupported", job_id),
        markdown=unsupported_markdown(job_id, claims),
        description=f"unsupported claims of crew job {job_id}",
    )


def publish_changes(audit_id: str, markdown: str) -> None:
    create_markdown_artifact(
        key=artifact_key("changes", audit_id),
        markdown=markdown,
        description=f"scheduled audit {audit_id}: changes since the last audit",
    )
