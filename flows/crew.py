"""crew_report: after a crew run, audit what the crew cited and say which claims do not hold.

audit_job (as a subflow) -> read back its claims and citations -> unsupported claims, each with
its citations' statuses and reasons (summary, Prefect artifact; the job's report lists them too)
"""

from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact

from flows.audit import DEFAULT_CHUNK, audit_job
from tasks import report


@task(name="unsupported-claims")
def unsupported_claims_step(job_folder: str) -> list[dict[str, Any]]:
    folder = Path(job_folder)
    return report.unsupported_claims(
        pl.read_parquet(folder / "claims.parquet"), pl.read_parquet(folder / "citations.parquet")
    )


def unsupported_markdown(job_id: str, claims: list[dict[str, Any]]) -> str:
    lines = [f"# Unsupported claims: {job_id} ({len(claims)})", ""]
    for claim in claims:
        lines.append(f"- {claim['claim_text']} (strength {claim['strength']:.2f})")
        lines.extend(
            f"  - `{c['entry_key']}` {c['status']}: {c['reason']}" for c in claim["citations"]
        )
    return "\n".join(lines)


@flow(name="crew_report", log_prints=False)
def crew_report(
    inputs: list[str],
    job_id: str,
    out_dir: str = "out",
    db: str | None = None,
    offline: bool = False,
    input_format: str | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    styles: list[str] | None = None,
) -> dict[str, Any]:
    """Audit a crew run's output and report its unsupported claims.

    Parameters:
        inputs: the crew's output files: claims JSON in any agent format citeaudit reads
            (ModelChorus, IVCAP, ICE, RAG contexts, clinical) or a Markdown report with its
            reference list.
        job_id: names the job in the library and its output folder (letters, digits, . _ -).
        out_dir: where job folders are written; the report is `out_dir/job_id/report.html`.
        db: the DuckDB library file (default `$CITEAUDIT_DB` or ./citeaudit.duckdb).
        offline: skip the registries (every citation `unverified`: claims stay undecided,
            never unsupported for want of an answer).
        input_format: force one input format instead of detecting it from content.
        chunk_size: citations validated per Prefect task.
        styles: bibliography styles to write (default: all seven).

    Returns audit_job's summary plus `unsupported_claims`: each claim's id, text, strength and
    its citations' statuses and reasons, weakest claim first.
    """
    summary = audit_job(
        inputs=inputs,
        job_id=job_id,
        out_dir=out_dir,
        db=db,
        offline=offline,
        input_format=input_format,
        chunk_size=chunk_size,
        styles=styles,
    )
    unsupported = unsupported_claims_step(summary["out"])
    create_markdown_artifact(
        key=f"unsupported-{''.join(c if c.isalnum() else '-' for c in job_id.lower())}",
        markdown=unsupported_markdown(job_id, unsupported),
        description=f"unsupported claims of crew job {job_id}",
    )
    return summary | {"unsupported_claims": unsupported}
