"""`citeaudit report`, `jobs` and `dedupe`: the library's jobs read back, listed, and its works
deduped again."""

import json
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.app import DbOption, OutOption, out, usage_error
from flows.cli.checks import existing_library
from flows.cli.summary import print_summary


def report(
    job: Annotated[str, typer.Argument(help="Job id.")],
    out_dir: OutOption = Path("out"),
    db: DbOption = None,
    markdown: Annotated[
        bool, typer.Option(help="Print it as short Markdown (a CI job's summary page).")
    ] = False,
) -> None:
    """Reprint a job's summary from the library, and where its report is."""
    unstored = out_dir / job / "NOT_STORED.txt"
    with existing_library(db) as library:
        row = library.job(job)
        if row is None:
            if unstored.is_file():
                usage_error(
                    f"no job {job!r} in the library; {out_dir / job} holds a run of it: "
                    + unstored.read_text().strip()
                )
            usage_error(f"no job {job!r} in the library")
        errors = library.table("input_errors", job)
        citations = library.table("citations", job)
    from models.audit import InputError, Status
    from models.job import Flagged, JobSummary
    from tasks.report import flagged_list

    html_report = out_dir / job / "report.html"
    summary = JobSummary(
        job_id=job,
        citations=row["n_citations"],
        status_counts={s.value: row["status_counts"].get(s.value, 0) for s in Status},
        input_errors=[InputError.model_validate(e) for e in errors.to_dicts()],
        flagged=[Flagged.model_validate(f) for f in flagged_list(citations)],
        out=str(html_report) if html_report.is_file() else f"{out_dir / job} (not found)",
    )
    if markdown:
        from tasks.report.summary import summary_markdown

        typer.echo(summary_markdown(summary), nl=False)
    else:
        print_summary(summary)
    if unstored.is_file():
        typer.echo(
            f"citeaudit: {out_dir / job} is from a later run, not stored: run it again", err=True
        )


def jobs(
    db: DbOption = None,
) -> None:
    """List the jobs in the library with their counts."""
    with existing_library(db) as library:
        rows = library.jobs().to_dicts()
    from rich.table import Table

    from models.status import Status

    # The statuses share one column, a line each with its count: a column per status is wider
    # than an 80-column terminal, which squeezed the counts out of sight.
    table = Table(title=f"{len(rows)} jobs")
    table.add_column("job", overflow="fold")
    table.add_column("updated", no_wrap=True)
    table.add_column("citations", justify="right")
    table.add_column("statuses")
    table.add_column("input errors", justify="right")
    for row in rows:
        counts = json.loads(row["status_counts"] or "{}")
        table.add_row(
            row["job_id"],
            f"{row['updated_at']:%Y-%m-%d}",
            str(row["n_citations"]),
            "\n".join(f"{counts[s.value]} {s.value}" for s in Status if counts.get(s.value)),
            str(row["n_input_errors"]),
        )
    out.print(table)


def dedupe(
    db: DbOption = None,
) -> None:
    """Dedupe the whole library again (e.g. after a threshold change or an upgrade)."""
    with existing_library(db, read_only=False) as library:
        from tasks.dedupe.job import repeats_within_jobs
        from tasks.dedupe.rebuild import rededupe, refreshed_records

        records = refreshed_records(library.table("dedupe_records"), library.table("citations"))
        if not records.height:
            usage_error("the library holds no citations to dedupe")
        before = library.table("works").height
        rebuilt = rededupe(records)
        library.replace_dedupe(rebuilt.records, rebuilt.assignments, rebuilt.works, rebuilt.links)
    duplicates = repeats_within_jobs(rebuilt.assignments).height
    out.print(
        f"{records.height} citations, {rebuilt.works.height} works (was {before}), "
        f"{duplicates} repeated within their jobs, {rebuilt.links.height} links between "
        "related works",
        highlight=False,
    )
