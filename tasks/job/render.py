"""A job's outputs as data and text: its tables, bibliographies, exports and report. Nothing
here touches a disk (folder.py writes them)."""

import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import polars as pl

from models.audit import Checked, ReadResult, Subject
from models.csl import CSLItem
from tasks import frames, report
from tasks.dedupe.job import JobDedupe
from tasks.job.audited import AuditedJob, Rendered
from tasks.render import citeproc, exports
from tasks.render.selection import (
    bibliography_items,
    export_entries,
    printed_order,
    unconfirmed,
)
from tasks.report import sarif
from tasks.score.metrics import Assessment

log = logging.getLogger(__name__)

# A job's outputs list entries only, so no in-text citation is rendered.
IN_TEXT = False


def bibliographies(
    items: Sequence[CSLItem], styles: Sequence[str], ahead: citeproc.Ahead | None = None
) -> dict[str, citeproc.Bibliography]:
    """Every style that renders: one failing must not cost the job the others or its audit.
    (`ahead`: runs `render_ahead` started, taken where their input is the same.)"""

    def render(names: Sequence[str]) -> dict[str, citeproc.Bibliography]:
        return citeproc.render_bibliographies(items, names, in_text=IN_TEXT, ahead=ahead)

    if not styles:
        return {}
    try:
        return render(styles)
    except citeproc.RenderError:
        rendered = {}
        for style in styles:
            try:
                rendered.update(render([style]))
            except citeproc.RenderError as exc:
                # a plain logger: Prefect's run logger raises outside a run (the plain pipeline)
                log.warning("no %s bibliography: %s", style, exc)
        return rendered


# What render_ahead returns: a block yielding the runs it started (None: none).
RunsAhead = AbstractContextManager[citeproc.Ahead | None]


def render_ahead(checked: Sequence[Checked], styles: Sequence[str]) -> RunsAhead:
    """Start pandoc on the job's bibliographies while dedupe and scoring run, for the items the
    job lists if dedupe merges none of its citations (the usual case). render handed the runs
    the block yields takes every run whose items came out the same and renders only the others
    itself."""
    items = bibliography_items(checked)
    if not styles or citeproc.bibliography_skipped(len(items)):
        return nullcontext()
    listed = printed_order(items, unconfirmed(items, checked))  # as `listing` renders them
    return citeproc.rendering_ahead(listed, styles, in_text=IN_TEXT)


def citation_rows(
    job_id: str,
    checked: Sequence[Checked],
    scores: pl.DataFrame,
    works: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The one builder of citation rows: a row per checked citation (`frames.citations_frame`)
    with its scores and, once deduped, its work columns, as the library and citations.parquet
    hold them (a whole job, a bulk import's batch, a re-check)."""
    # in the citations' order (input order): a hash join alone need not keep it
    rows = frames.citations_frame(job_id, checked).join(
        scores, on="citation_id", how="left", maintain_order="left"
    )
    if works is None:
        return rows
    return rows.join(works, on="citation_id", how="left", maintain_order="left")


def job_tables(audited: AuditedJob) -> dict[str, pl.DataFrame]:
    job_id, scores, works = audited.job_id, audited.scores, audited.works
    citations = citation_rows(job_id, audited.checked, scores.citation_scores, works.columns)
    return {"citations": citations, **other_tables(job_id, audited.job, works, scores)}


def other_tables(
    job_id: str, job: ReadResult, works: JobDedupe, scores: Assessment
) -> dict[str, pl.DataFrame]:
    """The job's tables but its citations: input errors, claims, dedupe records."""
    return {**small_tables(job_id, job, scores), "dedupe_records": works.records}


def small_tables(job_id: str, job: ReadResult, scores: Assessment) -> dict[str, pl.DataFrame]:
    """The job's input errors and claims (a row per error and claim, not per citation)."""
    claims = frames.claims_frame(job_id, job.claims).join(
        scores.claim_scores, on="claim_id", how="left"
    )
    return {"input_errors": frames.input_errors_frame(job_id, job.errors), "claims": claims}


@dataclass
class Listing:
    """A job's bibliographies, as files, or why there are none."""

    files: dict[str, str]
    first: citeproc.Bibliography | None  # the report's
    skipped: str | None  # why none was rendered (too many items)

    def metrics(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {**metrics, "bibliographies_skipped": self.skipped} if self.skipped else metrics


def listing(
    items: Sequence[CSLItem],
    count: int,
    marks: Mapping[str, str],
    styles: Sequence[str],
    ahead: citeproc.Ahead | None = None,
) -> Listing:
    """The bibliographies of the job's `count` listed items (`items`: all of them, unless
    there are too many to render, when they need not be given), in the order they are printed
    (`printed_order`: `marks`' unconfirmed entries last, under their own heading)."""
    skipped = citeproc.bibliography_skipped(count) if styles else None
    ordered = printed_order(items, marks)
    rendered_styles = {} if skipped else bibliographies(ordered, styles, ahead)
    files: dict[str, str] = {}
    for style, bib in rendered_styles.items():
        files[f"bibliography.{style}.md"] = citeproc.to_markdown(bib, marks)
        files[f"bibliography.{style}.html"] = citeproc.to_html(bib, marks)
        files[f"bibliography.{style}.txt"] = citeproc.to_text(bib, marks)
    return Listing(files, next(iter(rendered_styles.values()), None), skipped)


def report_files(
    job_id: str,
    tables: Mapping[str, pl.DataFrame],
    listed: Listing,
    marks: Mapping[str, str],
    links: pl.DataFrame,
    whole: report.Totals | None = None,
    notice: str = "",
    subjects: Sequence[Subject] = (),
) -> dict[str, str]:
    """report.html, report.md (`whole`, `notice`, `subjects`: see report.ReportData) and
    citeaudit.sarif."""
    first = listed.first
    data = report.ReportData(
        job_id=job_id,
        citations=tables["citations"],
        claims=tables["claims"],
        input_errors=tables["input_errors"],
        style=first.style if first else "",
        bibliography_html=[e.html for e in first.entries if e.item_id not in marks]
        if first
        else [],
        bibliography_unconfirmed=[
            (marks[e.item_id], e.html) for e in first.entries if e.item_id in marks
        ]
        if first
        else [],
        links=links,
        bibliography_note=listed.skipped or "",
        whole=whole,
        notice=notice,
        subjects=list(subjects),
    )
    return {
        "report.html": report.render_html(data),
        "report.md": report.render_markdown(data),
        "citeaudit.sarif": sarif.to_sarif_text(tables["citations"], tables["input_errors"]),
    }


def render(
    audited: AuditedJob, styles: Sequence[str], ahead: citeproc.Ahead | None = None
) -> Rendered:
    """The job's tables, bibliographies, exports and report, as data and text (`ahead`: the
    runs `render_ahead` started, if any)."""
    items = audited.listed()
    marks = unconfirmed(items, audited.checked)
    # tables and exports first: bibliographies started by render_ahead finish meanwhile
    tables = job_tables(audited)
    exported = exports.export_files(export_entries(items, audited.checked, audited.work_ids()))
    listed = listing(items, len(items), marks, styles, ahead)
    files = listed.files | exported
    files |= report_files(
        audited.job_id,
        tables,
        listed,
        marks,
        audited.works.links,
        notice=audited.not_stored,
        subjects=audited.job.subjects,
    )
    metrics = listed.metrics(audited.scores.metrics)
    if audited.not_stored:
        metrics = {**metrics, "not_stored": audited.not_stored}
    return Rendered(audited.job_id, tables, files, audited.works, metrics, audited.job.errors)
