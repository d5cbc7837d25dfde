"""The job folder writer: the one place a job's folder (OUT/JOB/) is written.

A whole job (`write_job`, or `write_unstored` when the library could not take its rows), or an
import fed batch by batch from its stored citations (`write_import`: citations.parquet and the
exports written a batch at a time, through the same `write_outputs` for the rest); the crew's
answers beside a job's report (`write_files`), and a scheduled audit's folder (`write_recheck`).
Files are written beside the folder and swapped in whole (tasks/store/jobfolder.py)."""

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TextIO

import polars as pl

from models.audit import ReadResult
from models.csl import CSLItem
from models.job import JobParams
from tasks import report
from tasks.dedupe.canonical import WORKS_SCHEMA
from tasks.digests import DigestMap
from tasks.job.audited import FOLDER_TABLES, Rendered
from tasks.job.batches import (
    checked_of,
    citation_count,
    cited_works,
    save_import,
    stored_rows,
)
from tasks.job.library import BULK_MEMORY, BULK_THREADS, save_to_library
from tasks.job.render import listing, report_files, small_tables
from tasks.render import citeproc, exports
from tasks.render.exports import CitationKeys
from tasks.render.selection import bibliography_items, export_entries, unconfirmed
from tasks.score.metrics import Assessment
from tasks.store.jobfolder import JobFolder
from tasks.store.library import open_library
from tasks.store.names import LibraryPath
from tasks.store.schema import library_tables
from tasks.store.scratch import Scratch


def write_job(rendered: Rendered, inputs: Sequence[str], out_dir: str, db: LibraryPath) -> str:
    """Write the job's folder and replace its rows in the DuckDB library; the folder's path.
    The files are written beside the folder and swapped in once the library holds the rows:
    the folder and the library rows always come from one run."""
    target = JobFolder(out_dir, rendered.job_id)
    if rendered.works is None:
        raise ValueError("a bulk import's rendered outputs are written by write_import")
    with target.replacing() as folder:
        write_outputs(folder, rendered)
        save_to_library(rendered.job_id, inputs, rendered.tables, rendered.works, db)
    return str(target.path)


def write_unstored(rendered: Rendered, out_dir: str) -> str:
    """Write the job's folder only, for a job the library could not take (rendered with its
    `not_stored` reason, which NOT_STORED.txt repeats): the registry work is not thrown away."""
    target = JobFolder(out_dir, rendered.job_id)
    with target.replacing(locked=False) as folder:
        write_outputs(folder, rendered)
        folder.write_text("NOT_STORED.txt", rendered.metrics["not_stored"] + "\n")
    return str(target.path)


def write_outputs(folder: JobFolder, rendered: Rendered) -> None:
    """The job's tables and files into `folder` (but citations.parquet and works.parquet when
    it has no `works`: a bulk import wrote them itself, a batch at a time)."""
    for name in FOLDER_TABLES:
        if rendered.works is not None or name != "citations":
            folder.write_parquet(f"{name}.parquet", rendered.tables[name])
    if rendered.works is not None:
        folder.write_parquet("works.parquet", rendered.works.cited_works)
    for name, text in rendered.files.items():
        folder.write_text(name, text)
    folder.write_json("metrics.json", rendered.metrics)


def write_files(out_dir: str, job_id: str, files: Mapping[str, str]) -> None:
    """Text files added to a written job's folder (the crew's answers beside its report)."""
    folder = JobFolder(out_dir, job_id)
    for name, text in files.items():
        folder.write_text(name, text)


def write_recheck(
    out_dir: str, audit_id: str, changes: pl.DataFrame, updates: pl.DataFrame
) -> tuple[str, str]:
    """A scheduled audit's folder: what changed, the updated rows, the report; the folder's
    path and the report's Markdown."""
    folder = JobFolder(out_dir, audit_id)
    folder.write_parquet("changes.parquet", changes)
    folder.write_parquet("citations.parquet", updates)
    data = report.ReportData(job_id=audit_id, citations=updates, changes=changes)
    markdown = report.render_markdown(data)
    folder.write_text("report.html", report.render_html(data))
    folder.write_text("report.md", markdown)
    return str(folder.path), markdown


# --- a job folder fed batch by batch (a bulk import) ----------------------------------------


def export_keys(job_id: str, spill: Scratch, batch_size: int, db: LibraryPath) -> CitationKeys:
    """The citation keys of the listed items, every item's own key reserved (the second pass):
    a key depends on every other item's, so they are reserved before any batch is written."""
    seen = DigestMap()
    keys = exports.CitationKeys(DigestMap())
    for rows in stored_rows(job_id, spill, batch_size, db):
        checked, work_ids = checked_of(rows), work_ids_of(rows)
        items = bibliography_items(checked, work_ids, seen)
        for request in exports.key_requests(export_entries(items, checked, work_ids)):
            keys.reserve(request)
    return keys


def work_ids_of(rows: pl.DataFrame) -> dict[str, str]:
    """The work ids of stored citation rows (once the library holds the import's dedupe)."""
    return dict(rows.select("citation_id", "work_id").iter_rows())


@dataclass
class Written:
    """What a job folder written batch by batch keeps for its report and bibliographies."""

    count: int = 0  # items listed
    listed: list[CSLItem] = field(default_factory=list)  # all of them, if few enough to render
    marks: dict[str, str] = field(default_factory=dict)  # csl_selection.unconfirmed's
    reported: pl.DataFrame = field(default_factory=pl.DataFrame)  # the citations it lists
    totals: report.Totals = field(default_factory=report.Totals)  # of every citation

    def add(self, cites: pl.DataFrame, every: bool) -> None:
        """A batch's citation rows: the report lists all (`every`) or the first flagged ones."""
        self.totals.add(cites)
        before = self.reported if self.reported.width else cites.head(0)
        if every:
            self.reported = pl.concat([before, cites])
        else:
            cap = report.MAX_REPORTED_CITATIONS
            self.reported = report.reported_citations(before, cites, cap)


def write_batches(
    folder: JobFolder, params: JobParams, spill: Scratch, batch_size: int, db: LibraryPath
) -> Written:
    """citations.parquet, works.parquet and the exports, a batch at a time from the library's
    rows of the import (its dedupe saved) and its working tables (the last passes over them),
    holding what `render` and `write_job` give a whole job."""
    job_id = params.job_id
    keys = export_keys(job_id, spill, batch_size, db)
    every = citation_count(spill) <= report.MAX_REPORTED_CITATIONS
    schema = library_tables()["citations"].columns
    written = Written(count=keys.reserved)
    seen = DigestMap()
    with ExitStack() as files:
        add_rows = files.enter_context(folder.appending_parquet("citations.parquet", schema))
        add_works = files.enter_context(folder.appending_parquet("works.parquet", WORKS_SCHEMA))
        handles = {
            name: files.enter_context(text_file(folder, name)) for name in exports.EXPORT_FILES
        }
        # citations.parquet is sorted by citation id, as frames.citations_frame sorts it
        with open_library(db, threads=BULK_THREADS, memory_limit=BULK_MEMORY) as library:
            for rows in library.job_citations(job_id, batch_size):
                cites = rows.cast(dict(schema))  # type: ignore[arg-type]
                add_rows(cites)
                written.add(cites, every)
        for works in cited_works(spill, batch_size):
            add_works(works.cast(pl.Schema(WORKS_SCHEMA)))
        exported = exports.ExportWriter(handles)
        for rows in stored_rows(job_id, spill, batch_size, db):
            checked, work_ids = checked_of(rows), work_ids_of(rows)
            listed = bibliography_items(checked, work_ids, seen)
            entries = export_entries(listed, checked, work_ids)
            exported.write(entries, [keys.key(r) for r in exports.key_requests(entries)])
            if written.count <= citeproc.MAX_BIBLIOGRAPHY_ITEMS:
                written.listed.extend(listed)
                written.marks |= unconfirmed(listed, checked)
        exported.close()
    return written


@contextmanager
def text_file(folder: JobFolder, name: str) -> Iterator[TextIO]:
    """A text file of the folder written bit by bit, in place once closed."""
    with folder.placing(name) as tmp, tmp.open("w", encoding="utf-8") as handle:
        yield handle


def write_import(
    params: JobParams,
    job: ReadResult,
    spill: Scratch,
    assessed: Assessment,
    duplicates: int,
    batch_size: int,
    db: LibraryPath,
) -> tuple[Rendered, str]:
    """An import's library rows (from its working tables: tasks/job/batches.py), then its job
    folder from its stored citations a batch at a time, swapped in whole as `write_job` does:
    what was written (the citations its report lists) and the folder's path. `duplicates`:
    how many of its citations repeat a work it cites already (its dedupe's count)."""
    job_id, styles = params.job_id, params.chosen_styles()
    target = JobFolder(params.out_dir, job_id)
    with target.replacing() as folder:
        tables = small_tables(job_id, job, assessed)
        # Saved before the folder is written, not after: what writing the folder leaves
        # allocated would come under the save. The folder is still swapped in only once the
        # library holds the rows.
        save_import(job_id, params.inputs, tables, spill, db)
        written = write_batches(folder, params, spill, batch_size, db)
        listed = listing(written.listed, written.count, written.marks, styles)
        every = citation_count(spill) <= report.MAX_REPORTED_CITATIONS
        written.totals.repeats = duplicates
        whole = None if every else written.totals
        reported = (
            written.reported
            if written.reported.width
            else pl.DataFrame(schema=dict(library_tables()["citations"].columns))
        )
        tables = {"citations": reported, **tables}
        links = spill.frame("SELECT * FROM job_links ORDER BY work_id_a, work_id_b, kind")
        files = listed.files | report_files(job_id, tables, listed, written.marks, links, whole)
        metrics = listed.metrics(assessed.metrics)
        rendered = Rendered(job_id, tables, files, None, metrics, job.errors, whole)
        write_outputs(folder, rendered)
    return rendered, str(target.path)
