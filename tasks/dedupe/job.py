"""One job's dedupe against the library: work ids for its citations, the rows the library keeps,
and the canonical works and links the job touches.

Citation ids are unique within a job only, so in the library a record is named
`JOB/CITATION_ID`; `duplicate_of` names a match in another job that way, and a match within the
job by its citation id alone."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import polars as pl

from models.audit import Checked
from tasks.dedupe.assign import DedupeResult, assign_works
from tasks.dedupe.canonical import canonical_works
from tasks.dedupe.compare import DISTINCT
from tasks.dedupe.records import records_frame
from tasks.dedupe.thresholds import DedupeThresholds

DEDUPE_COLUMNS = ("citation_id", "work_id", "duplicate_of", "dup_reason", "dup_score")


@dataclass(frozen=True)
class JobDedupe:
    columns: pl.DataFrame  # per citation of the job: DEDUPE_COLUMNS
    records: pl.DataFrame  # the job's library records (job_id + LIBRARY_SCHEMA)
    # canonical records of the works the job cites, and of those an earlier run of it cited
    # that other jobs still cite (their citation counts and best records change)
    works: pl.DataFrame
    links: pl.DataFrame  # related works (work_id_a, work_id_b, kind)
    retired: list[str]  # works only an earlier run of the job cited: no citation holds them now

    @property
    def cited_works(self) -> pl.DataFrame:
        return self.works.filter(pl.col("work_id").is_in(self.columns["work_id"].implode()))


def repeats_within_jobs(citations: pl.DataFrame) -> pl.DataFrame:
    """The citations of a work their job cites more than once, but one: the job's founding
    citation of the work where it holds it, else its smallest citation id. Works other jobs
    cite too are shared, not repeated. `citations` has work_id, citation_id and maybe job_id
    and duplicate_of; the rows keep their order."""
    if "work_id" not in citations.columns:
        return citations.head(0)
    group = [c for c in ("job_id", "work_id") if c in citations.columns]
    founder_first = [pl.col("duplicate_of").is_not_null()] if "duplicate_of" in citations else []
    ranked = citations.with_row_index("_row").sort([*founder_first, pl.col("citation_id")])
    return (
        ranked.filter(pl.col("work_id").is_not_null() & (pl.int_range(pl.len()).over(group) > 0))
        .sort("_row")
        .drop("_row")
    )


def named_in_job(duplicate_of: pl.Expr, job_id: pl.Expr) -> pl.Expr:
    """`duplicate_of` as a job's rows name it: a citation of the same job by its citation id
    alone, one of another job as `JOB/CITATION_ID`."""
    own = pl.concat_str(job_id, pl.lit("/"))
    return (
        pl.when(duplicate_of.str.starts_with(own))
        .then(duplicate_of.str.slice(own.str.len_chars()))
        .otherwise(duplicate_of)
    )


def job_records(job_id: str, checked: Sequence[Checked]) -> pl.DataFrame:
    """The job's match keys (rows of `records_frame`), named as the library names them."""
    refs, results = [c.reference for c in checked], [c.result for c in checked]
    return records_frame(refs, results).with_columns(
        pl.concat_str(pl.lit(f"{job_id}/"), pl.col(name)).alias(name)
        for name in ("citation_id", "source")
    )


def dedupe_job(
    job_id: str,
    checked: Sequence[Checked],
    library: pl.DataFrame,
    thresholds: DedupeThresholds | None = None,
    previous_works: Collection[str] = (),
) -> JobDedupe:
    """`library`: the records of every other job (LIBRARY_SCHEMA, citation ids already
    `JOB/CITATION_ID`). The job's own earlier rows are left out, so a re-run assigns afresh and,
    work ids being derived from the founding record, gets the same ids. `previous_works`: the
    works an earlier run of the job cited."""
    return dedupe_records(job_id, job_records(job_id, checked), library, thresholds, previous_works)


def dedupe_records(
    job_id: str,
    new: pl.DataFrame,
    library: pl.DataFrame,
    thresholds: DedupeThresholds | None = None,
    previous_works: Collection[str] = (),
) -> JobDedupe:
    """`dedupe_job` of the job's records (`job_records`), which a bulk import builds a batch at
    a time instead of holding every citation."""
    result = assign_works(new, library if library.height else None, thresholds=thresholds)
    columns, records = job_rows(job_id, new, result)
    touched = set(columns["work_id"].to_list()) | set(previous_works)
    related = library.filter(pl.col("work_id").is_in(touched)) if library.height else library
    works = works_of(related, records)
    retired = sorted(set(previous_works) - set(works["work_id"].to_list()))
    return JobDedupe(columns, records, works, result.links, retired)


def job_rows(
    job_id: str, new: pl.DataFrame, result: DedupeResult
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The job's DEDUPE_COLUMNS (named as its rows name citations) and its library records,
    from the dedupe of its records `new` (`job_records`)."""
    columns = result.assignments.with_columns(
        pl.col("citation_id").str.slice(len(job_id) + 1),
        named_in_job(pl.col("duplicate_of"), pl.lit(job_id)),
    ).select(DEDUPE_COLUMNS)
    return columns, result.library_rows(new).with_columns(pl.lit(job_id).alias("job_id"))


def works_of(related: pl.DataFrame, records: pl.DataFrame) -> pl.DataFrame:
    """The canonical works of the job's library `records` and of other jobs' records of the
    works they touch (`related`)."""
    return canonical_works(pl.concat([related, records.drop("job_id")], how="diagonal_relaxed"))


def dedupe_added(
    job_id: str,
    checked: Checked,
    library: pl.DataFrame,
    thresholds: DedupeThresholds | None = None,
) -> JobDedupe | None:
    """One citation added to a stored job, deduped against `library` (every job's records, this
    job's included, as `Library.dedupe_library()` gives them), or None when re-deduping the
    whole job (`dedupe_job`) could come out otherwise and must be done instead.

    Alone, the citation cannot change how the job's other citations cluster, nor they it, when:
    it shares no title with them, nor the records it is compared with a short one (counting
    titles sets the recurring-title features); it joins no work they hold (the whole job's
    founder might be another); a work it founds takes an id base no work of theirs has (those
    are numbered in citation order); and it was compared with none of them, or founds a work
    of its own and was told apart from every record it was compared with (no merge: no vote
    between clusters counts it). Then the rows it adds are those `dedupe_job` would give, and
    every other row stays as it is."""
    thresholds = thresholds or DedupeThresholds()
    own = library.filter(pl.col("citation_id").str.starts_with(f"{job_id}/"))
    new = job_records(job_id, [checked])
    result = assign_works(new, library if library.height else None, thresholds=thresholds)
    row = result.assignments.row(0, named=True)
    founds = row["duplicate_of"] is None
    titles = set(own["title_key"].drop_nulls().to_list())
    # only short titles are counted as recurring (tasks/dedupe/recurring.py)
    short = {t for t in titles if t.count(" ") < thresholds.recurring_words}
    compared = result.compared
    partners = library.filter(pl.col("citation_id").is_in(compared["citation_id"].implode()))
    partner_titles = set(partners["title_key"].drop_nulls().to_list())
    in_job = compared.filter(pl.col("citation_id").is_in(own["citation_id"].implode()))
    works = set(own["work_id"].drop_nulls().to_list())
    if (
        new["title_key"][0] in titles
        or short & partner_titles
        or row["work_id"] in works
        or (founds and _id_base(row["work_id"]) in set(map(_id_base, works)))
        or (in_job.height and not (founds and (compared["decision"] == DISTINCT).all()))
    ):
        return None
    columns = result.assignments.with_columns(
        pl.col("citation_id").str.slice(len(job_id) + 1)
    ).select(DEDUPE_COLUMNS)
    records = result.library_rows(new).with_columns(pl.lit(job_id).alias("job_id"))
    related = library.filter(pl.col("work_id") == row["work_id"])
    cited = canonical_works(pl.concat([related, records.drop("job_id")], how="diagonal_relaxed"))
    return JobDedupe(columns, records, cited, result.links, [])


def _id_base(work_id: str) -> str:
    """`w-HASH` of `w-HASH-2`: works founded on one key (tasks/dedupe/cluster.py _work_ids)."""
    return "-".join(work_id.split("-")[:2])
