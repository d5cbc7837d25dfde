"""How every job ends once its citations are checked: dedupe -> score -> render -> persist.

`audited_job` dedupes the checked citations against the library and scores them; `end_job`
renders and writes the job folder with the library rows (`store_job`: the rows alone, for an
agent's job kept without a folder); `end_unstored` writes the folder alone when the library
could not be had. Each stage comes from an `Ending` (`PLAIN`: the functions here; the flows pass
their Prefect tasks over the same functions). Taking the library's write lock around them is
the caller's: an audit holds it from the dedupe's read to the persist's write."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import polars as pl

from models.audit import Checked, CitationSupport, Claim, ReadResult
from models.csl import CSLItem
from tasks.dedupe.job import JobDedupe, dedupe_job, dedupe_records, job_records, repeats_within_jobs
from tasks.job.audited import AuditedJob, Rendered
from tasks.job.folder import write_job, write_unstored
from tasks.job.library import save_to_library
from tasks.job.render import job_tables, render
from tasks.render.citeproc import Ahead
from tasks.score.metrics import Assessment, assess
from tasks.store.library import open_library
from tasks.store.names import LibraryPath


def dedupe(job_id: str, checked: Sequence[Checked], db: LibraryPath) -> JobDedupe:
    """Work ids for the job's citations against every other job in the library."""
    return dedupe_against_library(job_id, job_records(job_id, checked), db)


def dedupe_against_library(job_id: str, records: pl.DataFrame, db: LibraryPath) -> JobDedupe:
    """`dedupe` of the job's records (`job_records`, which a bulk import builds batch by batch)."""
    with open_library(db) as library:
        others = library.dedupe_library(exclude_job=job_id)
        earlier = library.table("dedupe_records", job_id)
    previous = set(earlier["work_id"].drop_nulls()) if earlier.height else set()
    return dedupe_records(job_id, records, others, previous_works=previous)


def score(
    checked: Sequence[Checked],
    claims: Sequence[Claim],
    works: JobDedupe,
    supports: Sequence[CitationSupport] | None = None,
) -> Assessment:
    duplicates = repeats_within_jobs(works.columns).height
    return assess(checked, claims, duplicates=duplicates, supports=supports)


class Ending(Protocol):
    """The stages a job ends with (flows/steps.py's `Stages` holds them as Prefect tasks)."""

    @property
    def dedupe(self) -> Callable[[str, Sequence[Checked], LibraryPath], JobDedupe]: ...

    @property
    def score(
        self,
    ) -> Callable[
        [Sequence[Checked], Sequence[Claim], JobDedupe, Sequence[CitationSupport] | None],
        Assessment,
    ]: ...

    @property
    def render(self) -> Callable[[AuditedJob, Sequence[str], Ahead | None], Rendered]: ...

    @property
    def persist(self) -> Callable[[Rendered, Sequence[str], str, LibraryPath], str]: ...


@dataclass(frozen=True)
class PlainEnding:
    """The stages as plain calls."""

    dedupe: Callable[[str, Sequence[Checked], LibraryPath], JobDedupe] = dedupe
    score: Callable[
        [Sequence[Checked], Sequence[Claim], JobDedupe, Sequence[CitationSupport] | None],
        Assessment,
    ] = score
    render: Callable[[AuditedJob, Sequence[str], Ahead | None], Rendered] = render
    persist: Callable[[Rendered, Sequence[str], str, LibraryPath], str] = write_job


PLAIN = PlainEnding()


def audited_job(
    job_id: str,
    job: ReadResult,
    checked: Sequence[Checked],
    supports: Sequence[CitationSupport] | None,
    db: LibraryPath,
    ending: Ending = PLAIN,
    items: list[CSLItem] | None = None,
) -> AuditedJob:
    """The checked job deduped against the library and scored (`items`: what it lists, if not
    its `bibliography_items`)."""
    works = ending.dedupe(job_id, checked, db)
    scores = ending.score(checked, job.claims, works, supports)
    return AuditedJob(job_id, job, checked, works, scores, items)


def end_job(
    audited: AuditedJob,
    styles: Sequence[str],
    inputs: Sequence[str],
    out_dir: str,
    db: LibraryPath,
    ending: Ending = PLAIN,
    ahead: Ahead | None = None,
) -> tuple[Rendered, str]:
    """The audited job rendered (no bibliographies when `styles` is empty; `ahead`: pandoc runs
    started for it, see render_ahead), its folder written and its rows stored: what was
    rendered and the folder's path."""
    rendered = ending.render(audited, styles, ahead)
    return rendered, ending.persist(rendered, inputs, out_dir, db)


def store_job(audited: AuditedJob, inputs: Sequence[str], db: LibraryPath) -> None:
    """The audited job's rows into the library, with no folder (an agent's job: `format`
    renders on demand)."""
    save_to_library(audited.job_id, inputs, job_tables(audited), audited.works, db)


def end_unstored(
    job_id: str,
    job: ReadResult,
    checked: Sequence[Checked],
    supports: Sequence[CitationSupport] | None,
    styles: Sequence[str],
    out_dir: str,
    why: str,
    ending: Ending = PLAIN,
    ahead: Ahead | None = None,
) -> str:
    """The job's folder without the library: the checked citations are not lost, and the folder
    says (report, metrics.json, NOT_STORED.txt) that they are not stored and how to store them.
    Duplicates and work ids are found within the job alone: the library could not be read."""
    works = dedupe_job(job_id, checked, pl.DataFrame())
    scores = ending.score(checked, job.claims, works, supports)
    note = (
        f"Not stored in the library: {why}. Work ids and duplicates here are within this job only."
    )
    audited = AuditedJob(job_id, job, checked, works, scores, not_stored=note)
    return write_unstored(ending.render(audited, styles, ahead), out_dir)
