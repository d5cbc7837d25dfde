"""The audited job (every stage but rendering run), its rendered outputs, and its summary."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from models.audit import Checked, InputError, ReadResult
from models.csl import CSLItem
from models.job import Flagged, JobSummary
from tasks import report
from tasks.dedupe.job import JobDedupe
from tasks.render.selection import bibliography_items
from tasks.score.metrics import Assessment


@dataclass
class AuditedJob:
    """A job once every stage but rendering has run."""

    job_id: str
    job: ReadResult  # identified references, linked claims, input errors
    checked: Sequence[Checked]
    works: JobDedupe
    scores: Assessment
    # what the bibliographies and exports list (default: `bibliography_items`)
    items: list[CSLItem] | None = None
    not_stored: str = ""  # why the job's rows could not be stored in the library, if so

    def listed(self) -> list[CSLItem]:
        if self.items is not None:
            return self.items
        return bibliography_items(self.checked, self.work_ids())

    def work_ids(self) -> dict[str, str]:
        """Each citation's work (the duplicates of one work share it)."""
        return dict(self.works.columns.select("citation_id", "work_id").iter_rows())


FOLDER_TABLES = ("citations", "input_errors", "claims")  # the rest stay in the library


@dataclass
class Rendered:
    """A job's outputs, ready to write: nothing here has touched a disk yet."""

    job_id: str
    tables: dict[str, pl.DataFrame]  # the job's own library rows (FOLDER_TABLES as Parquet too)
    files: dict[str, str]  # text files of the job folder by name
    works: JobDedupe | None  # None: a bulk import's, in its working database (job/batches.py)
    metrics: dict[str, Any]
    errors: list[InputError]
    # every citation counted when `tables["citations"]` holds only those the report lists (a
    # bulk import past report.MAX_REPORTED_CITATIONS)
    whole: report.Totals | None = None


def summarize(rendered: Rendered, out: str) -> JobSummary:
    citations = rendered.tables["citations"]
    flagged = [Flagged.model_validate(f) for f in report.flagged_list(citations)]
    whole = rendered.whole  # every citation, when `citations` holds only the listed ones
    left_out = 0 if whole is None else whole.flagged - len(flagged)
    return JobSummary(
        job_id=rendered.job_id,
        out=out,
        citations=rendered.metrics["citations"],
        status_counts=rendered.metrics["status_counts"],
        input_errors=rendered.errors,
        flagged=flagged,
        flagged_left_out=left_out,
        metrics=rendered.metrics,
    )
