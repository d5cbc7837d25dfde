"""How every job ends once its citations are checked: `finish(params, job, source, db)`.

    checked citations -> support -> dedupe (against the library) -> score -> render -> job
    folder + library rows

The source is the job's checked citations, held in memory (`Checks`: an audit, one batch) or
stored in the library a batch at a time (`StoredChecks`: a bulk import, whose memory holds about
a batch). The library stays locked from the dedupe's
read to the write, so work ids are minted against what is stored. An agent's job ends through
the same stages (`audited_job`, `end_job`, `store_job`), its claims' support its own."""

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from models.audit import Checked, CitationSupport, Claim, ReadResult
from models.csl import CSLItem
from models.job import JobParams
from tasks.citation_ids import link_claims
from tasks.dedupe.job import JobDedupe, dedupe_job, dedupe_records, job_records, repeats_within_jobs
from tasks.dedupe.stored import add_new
from tasks.job.audited import AuditedJob, Rendered
from tasks.job.batches import checked_of, dedupe_import, metric_scores, stored_rows
from tasks.job.folder import write_import, write_job, write_unstored
from tasks.job.library import save_to_library
from tasks.job.render import job_tables, render
from tasks.lookup.checker import process_registries
from tasks.render.citeproc import Ahead
from tasks.score.metrics import Assessment, Tally, assess, assessment
from tasks.store.library import open_library, write_lock
from tasks.store.lock import JobNotStored, LibraryLocked
from tasks.store.names import LibraryPath
from tasks.store.scratch import Scratch
from tasks.support.claims import support_claims


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


def audited_job(
    job_id: str,
    job: ReadResult,
    checked: Sequence[Checked],
    supports: Sequence[CitationSupport] | None,
    db: LibraryPath,
    items: list[CSLItem] | None = None,
) -> AuditedJob:
    """The checked job deduped against the library and scored (`items`: what it lists, if not
    its `bibliography_items`)."""
    works = dedupe(job_id, checked, db)
    scores = score(checked, job.claims, works, supports)
    return AuditedJob(job_id, job, checked, works, scores, items)


def end_job(
    audited: AuditedJob,
    styles: Sequence[str],
    inputs: Sequence[str],
    out_dir: str,
    db: LibraryPath,
    ahead: Ahead | None = None,
) -> tuple[Rendered, str]:
    """The audited job rendered (no bibliographies when `styles` is empty; `ahead`: pandoc runs
    started for it, see render_ahead), its folder written and its rows stored: what was
    rendered and the folder's path."""
    rendered = render(audited, styles, ahead)
    return rendered, write_job(rendered, inputs, out_dir, db)


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
    ahead: Ahead | None = None,
) -> str:
    """The job's folder without the library: the checked citations are not lost, and the folder
    says (report, metrics.json, NOT_STORED.txt) that they are not stored and how to store them.
    Duplicates and work ids are found within the job alone: the library could not be read."""
    works = dedupe_job(job_id, checked, pl.DataFrame())
    scores = score(checked, job.claims, works, supports)
    note = (
        f"Not stored in the library: {why}. Work ids and duplicates here are within this job only."
    )
    audited = AuditedJob(job_id, job, checked, works, scores, not_stored=note)
    return write_unstored(render(audited, styles, ahead), out_dir)


# --- the one way a job ends, from its citations in memory or stored in batches --------------


@dataclass(frozen=True)
class Checks:
    """A job's checked citations held in memory: one batch (an audit)."""

    checked: Sequence[Checked]


@dataclass(frozen=True)
class StoredChecks:
    """A job's checked citations stored in the library, read back `batch_size` at a time in
    input order (a bulk import: its working tables in `spill`, tasks/job/batches.py)."""

    spill: Scratch
    batch_size: int


def support(claims: Sequence[Claim], checked: Sequence[Checked]) -> list[CitationSupport] | None:
    """How well each verified cited work fits the claim citing it (and, with CITEAUDIT_LLM_URL
    set, the judge's verdict on it); None when support is off."""
    return support_claims(claims, checked, judge=process_registries().judge)


def finish(
    params: JobParams,
    job: ReadResult,
    source: Checks | StoredChecks,
    db: LibraryPath,
    ahead: Ahead | None = None,
) -> tuple[Rendered, str]:
    """How every job ends once its citations are checked: support -> dedupe -> score -> render
    -> job folder + library rows; what was rendered and the folder's path (no bibliographies
    when the job chose no styles; `ahead`: pandoc runs started for them, see render_ahead)."""
    if isinstance(source, StoredChecks):
        return finish_stored(params, job, source, db)
    return finish_whole(params, job, source.checked, db, ahead)


def finish_whole(
    params: JobParams,
    job: ReadResult,
    checked: Sequence[Checked],
    db: LibraryPath,
    ahead: Ahead | None,
) -> tuple[Rendered, str]:
    """`finish` of a job held whole. Claim support, which only reads what lookup found, runs
    before taking the library's lock; without the lock the folder is written alone, marked
    not stored, and JobNotStored says where."""
    job_id, styles = params.job_id, params.chosen_styles()
    supports = support(job.claims, checked)
    try:
        with write_lock(db):
            audited = audited_job(job_id, job, checked, supports, db)
            return end_job(audited, styles, params.inputs, params.out_dir, db, ahead)
    except LibraryLocked as locked:
        why = str(locked)
        out = end_unstored(job_id, job, checked, supports, styles, params.out_dir, why, ahead)
        raise JobNotStored(
            f"{locked}; this run's outputs are in {out}, marked not stored (NOT_STORED.txt)"
        ) from None


@dataclass
class Scored:
    """What the scoring pass keeps: a tally of every citation, never the citations."""

    tally: Tally
    cited: list[Checked]  # the citations claims name (claim support and claim scores need them)


def score_batches(
    job_id: str, source: StoredChecks, claims: Sequence[Claim], db: LibraryPath
) -> Scored:
    """The first pass over the stored batches: dedupe's match keys (`job_records`, into the
    import's working tables), and what metrics and claims take."""
    named = {cid for claim in claims for cid in claim.citation_ids}
    tally, cited = Tally(), list[Checked]()
    for rows in stored_rows(job_id, source.spill, source.batch_size, db):
        checked = checked_of(rows)
        add_new(source.spill, job_records(job_id, checked))
        tally.add(c.result for c in checked)
        cited.extend(c for c in checked if c.reference.claim_ids or c.citation_id in named)
    return Scored(tally, cited)


def finish_stored(
    params: JobParams, job: ReadResult, source: StoredChecks, db: LibraryPath
) -> tuple[Rendered, str]:
    """`finish` of a job stored in batches, each stage over the stored citations a batch at a
    time or over its working tables, so that memory holds about a batch."""
    job_id, spill = params.job_id, source.spill
    scored = score_batches(job_id, source, job.claims, db)
    claims = link_claims(job.claims, [c.reference for c in scored.cited])
    job = ReadResult(references=[], claims=claims, errors=job.errors)
    supports = support(claims, scored.cited)
    with write_lock(db):
        duplicates = dedupe_import(job_id, spill, db)
        scores = metric_scores(job_id, db)
        assessed = assessment(scores, scored.tally, claims, scored.cited, duplicates, supports)
        return write_import(params, job, spill, assessed, duplicates, source.batch_size, db)
