"""The pipeline's stages: each a plain function, and a thin Prefect task over it.

    read -> identify -> look up + decide (chunked) -> support -> dedupe -> score -> render
    -> persist -> publish

`TASKS` runs the stages as Prefect tasks (the flows); `PLAIN` calls the same functions directly
(bench/orchestration.py measures the difference). Checking is chunked: a task run costs ~10 ms
plus server time, so one per citation would dominate a 10,000-citation job; retries happen per
request inside the registry clients, not per task."""

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import polars as pl
from prefect import Task, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.utilities.annotations import quote

from flows import artifacts, interrupt, progress
from flows.runners import tasks_run_here
from models.audit import (
    Checked,
    CitationSupport,
    Claim,
    InputError,
    ReadResult,
    Reference,
    Status,
    ValidationResult,
)
from models.csl import CSLItem
from models.job import Flagged, JobSummary
from tasks import frames, report
from tasks.citation_ids import assign_citation_ids, link_claims, plan_chunks, unique_claim_ids
from tasks.dedupe.job import JobDedupe, dedupe_records, job_records, repeats_within_jobs
from tasks.lookup import lookup_references
from tasks.lookup.snapshots import LocalSnapshots
from tasks.read import read_inputs, stream_inputs
from tasks.read.kinds import check_bibliographies
from tasks.registries import Registries, RegistryPool, RegistrySettings
from tasks.render import csl_styles, exports
from tasks.render.selection import bibliography_items, export_entries, unconfirmed
from tasks.report import sarif
from tasks.score.metrics import Assessment, assess
from tasks.snapshots.store import snapshots_root
from tasks.store import JobFolder, Library, db_path_from_env
from tasks.support.claims import support_claims

P = ParamSpec("P")
R = TypeVar("R")

# A stop signal ends the process with os._exit: pandoc runs (render's, and those render_ahead
# started) would run on as orphans, as they inherit the blocked stop signals; so it kills them.
interrupt.on_stop(csl_styles.stop_all_pandoc)

# The registry clients of this process, for the stages Prefect runs as tasks: a task's
# arguments cannot carry live clients into a worker thread or a Dask worker process, so the
# process is their scope (all its worker threads share one limiter per registry). Everything
# below the stages takes its clients as arguments.
PROCESS_POOL = RegistryPool()


def process_registries() -> Registries:
    """This process's client set for the settings in the environment (secrets included: they
    never travel as parameters)."""
    return PROCESS_POOL.registries(RegistrySettings())


@cache
def process_snapshots() -> LocalSnapshots | None:
    """This process's local snapshots (CITEAUDIT_SNAPSHOTS), opened once and shared by its
    threads as its registry clients are; None when none is built."""
    return LocalSnapshots.open(snapshots_root())


# --- read, identify -------------------------------------------------------------------------


def read(paths: Sequence[str], input_format: str | None) -> ReadResult:
    """Raises NotABibliography (the run ends Failed) for a missing input or one that holds no
    bibliography (an image, a Word document, an empty file)."""
    files = [Path(p) for p in paths]
    check_bibliographies(files)
    return read_inputs(files, input_format)


def read_batches(
    paths: Sequence[str], input_format: str | None, batch_size: int
) -> Iterator[ReadResult]:
    """`read` in batches of `batch_size` references, read as they are consumed
    (tasks/read:stream_inputs)."""
    files = [Path(p) for p in paths]
    check_bibliographies(files)
    return stream_inputs(files, input_format, batch_size)


def identify(
    read: ReadResult,
    file_keys: Mapping[str, str] | None = None,
    seen: dict[str, int] | None = None,
) -> ReadResult:
    """Citation ids (stable, unique in the job; keyed by `file_keys`, source file -> content
    digest, instead of file names when given; `seen` carries them across a job's batches),
    unique claim ids, claims linked to them."""
    refs = assign_citation_ids(read.references, file_keys, seen)
    claims, refs = unique_claim_ids(read.claims, refs)
    return ReadResult(references=refs, claims=link_claims(claims, refs), errors=read.errors)


# --- look up + decide -----------------------------------------------------------------------


def job_deadline() -> float:
    """When the job's lookups must end (epoch seconds): CITEAUDIT_JOB_DEADLINE_S from now."""
    return RegistrySettings().job_ends_at()


def check_chunk(
    refs: Sequence[Reference], registries: Registries | None, deadline: float | None = None
) -> list[Checked]:
    """Ask the registries about one chunk (None: offline) and decide each citation's status.
    The two go together: where a search is routed next depends on what the last candidates
    decided. Past `deadline` nothing is asked: what is left stays `unverified`."""
    offline = registries is None
    results = lookup_references(
        refs, registries, offline=offline, deadline=deadline, snapshots=process_snapshots()
    )
    return [Checked(reference=r, result=v) for r, v in zip(refs, results, strict=True)]


def check_chunk_here(
    refs: Sequence[Reference], offline: bool, deadline: float | None = None
) -> list[Checked]:
    """`check_chunk` with this process's clients (the stage's task body)."""
    return check_chunk(refs, None if offline else process_registries(), deadline)


def unchecked(refs: Sequence[Reference], error: str) -> list[Checked]:
    """A chunk whose task failed outright: its citations are unverified, never dropped."""
    return [
        Checked(
            reference=ref,
            result=ValidationResult(
                citation_id=ref.citation_id,
                status=Status.UNVERIFIED,
                reason="validation did not complete",
                error=error,
            ),
        )
        for ref in refs
    ]


Shown = progress.ArtifactProgress | None


def check_all(
    refs: Sequence[Reference], offline: bool, chunk_size: int, shown: Shown = None
) -> list[Checked]:
    """Every chunk in turn, in this process (the plain pipeline)."""
    checked: list[Checked] = []
    deadline = job_deadline()
    progress.report("validate", 0, len(refs))
    for chunk in plan_chunks(refs, chunk_size):
        checked.extend(check_chunk_here(chunk, offline, deadline))
        progress.report("validate", len(checked), len(refs))
    return checked


# --- dedupe, score --------------------------------------------------------------------------


def dedupe(job_id: str, checked: Sequence[Checked], db: str | None) -> JobDedupe:
    """Work ids for the job's citations against every other job in the library."""
    return dedupe_against_library(job_id, job_records(job_id, checked), db)


def dedupe_against_library(job_id: str, records: pl.DataFrame, db: str | None) -> JobDedupe:
    """`dedupe` of the job's records (`job_records`, which a bulk import builds batch by batch)."""
    with Library(db_path_from_env(db)) as library:
        others = library.dedupe_library(exclude_job=job_id)
        earlier = library.table("dedupe_records", job_id)
    previous = set(earlier["work_id"].drop_nulls()) if earlier.height else set()
    return dedupe_records(job_id, records, others, previous_works=previous)


def support(claims: Sequence[Claim], checked: Sequence[Checked]) -> list[CitationSupport] | None:
    """How well each verified cited work fits the claim citing it (and, with CITEAUDIT_LLM_URL
    set, the judge's verdict on it); None when support is off."""
    return support_claims(claims, checked, judge=process_registries().judge)


def score(
    checked: Sequence[Checked],
    claims: Sequence[Claim],
    works: JobDedupe,
    supports: Sequence[CitationSupport] | None = None,
) -> Assessment:
    duplicates = repeats_within_jobs(works.columns).height
    return assess(checked, claims, duplicates=duplicates, supports=supports)


# --- render ---------------------------------------------------------------------------------


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
    works: JobDedupe
    metrics: dict[str, Any]
    errors: list[InputError]
    # every citation's report.SUMMARY_COLUMNS when `tables["citations"]` holds only those the
    # report lists (a bulk import past report.MAX_REPORTED_CITATIONS)
    whole: pl.DataFrame | None = None


# A job's outputs list entries only, so no in-text citation is rendered.
IN_TEXT = False


def bibliographies(
    items: Sequence[CSLItem], styles: Sequence[str]
) -> dict[str, csl_styles.Bibliography]:
    """Every style that renders: one failing must not cost the job the others or its audit."""

    def render(names: Sequence[str]) -> dict[str, csl_styles.Bibliography]:
        return csl_styles.render_bibliographies(items, names, in_text=IN_TEXT)

    if not styles:
        return {}
    try:
        return render(styles)
    except csl_styles.RenderError:
        rendered = {}
        for style in styles:
            try:
                rendered.update(render([style]))
            except csl_styles.RenderError as exc:
                get_run_logger().warning("no %s bibliography: %s", style, exc)
        return rendered


def render_ahead(checked: Sequence[Checked], styles: Sequence[str]) -> AbstractContextManager[None]:
    """Start pandoc on the job's bibliographies while dedupe and scoring run, for the items the
    job lists if dedupe merges none of its citations (the usual case): within the block, render
    takes every run whose items came out the same and renders only the others itself."""
    items = bibliography_items(checked)
    if not styles or csl_styles.bibliography_skipped(len(items)):
        return nullcontext()
    return csl_styles.rendering_ahead(items, styles, in_text=IN_TEXT)


def render_ahead_of_tasks(
    checked: Sequence[Checked], styles: Sequence[str]
) -> AbstractContextManager[None]:
    """`render_ahead` when the render task runs in this process; a task runner whose workers
    are other processes would render it all again."""
    return render_ahead(checked, styles) if tasks_run_here() else nullcontext()


def citation_table(
    citations: pl.DataFrame, scores: pl.DataFrame, works: pl.DataFrame
) -> pl.DataFrame:
    """The job's citation rows (`frames.citations_frame`) with their scores and work columns, as
    the library and citations.parquet hold them."""
    # in the citations' order (input order): a hash join alone need not keep it
    return citations.join(scores, on="citation_id", how="left", maintain_order="left").join(
        works, on="citation_id", how="left", maintain_order="left"
    )


def job_tables(audited: AuditedJob) -> dict[str, pl.DataFrame]:
    job_id, scores, works = audited.job_id, audited.scores, audited.works
    citations = citation_table(
        frames.citations_frame(job_id, audited.checked), scores.citation_scores, works.columns
    )
    return {"citations": citations, **other_tables(job_id, audited.job, works, scores)}


def other_tables(
    job_id: str, job: ReadResult, works: JobDedupe, scores: Assessment
) -> dict[str, pl.DataFrame]:
    """The job's tables but its citations: input errors, claims, dedupe records."""
    claims = frames.claims_frame(job_id, job.claims).join(
        scores.claim_scores, on="claim_id", how="left"
    )
    return {
        "input_errors": frames.input_errors_frame(job_id, job.errors),
        "claims": claims,
        "dedupe_records": works.records,
    }


@dataclass
class Listing:
    """A job's bibliographies, as files, or why there are none."""

    files: dict[str, str]
    first: csl_styles.Bibliography | None  # the report's
    skipped: str | None  # why none was rendered (too many items)

    def metrics(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {**metrics, "bibliographies_skipped": self.skipped} if self.skipped else metrics


def listing(
    items: Sequence[CSLItem], count: int, marks: Mapping[str, str], styles: Sequence[str]
) -> Listing:
    """The bibliographies of the job's `count` listed items (`items`: all of them, unless
    there are too many to render, when they need not be given)."""
    skipped = csl_styles.bibliography_skipped(count) if styles else None
    rendered_styles = {} if skipped else bibliographies(items, styles)
    files: dict[str, str] = {}
    for style, bib in rendered_styles.items():
        files[f"bibliography.{style}.md"] = csl_styles.to_markdown(bib, marks)
        files[f"bibliography.{style}.html"] = csl_styles.to_html(bib, marks)
        files[f"bibliography.{style}.txt"] = csl_styles.to_text(bib, marks)
    return Listing(files, next(iter(rendered_styles.values()), None), skipped)


def report_files(
    job_id: str,
    tables: Mapping[str, pl.DataFrame],
    listed: Listing,
    marks: Mapping[str, str],
    links: pl.DataFrame,
    whole: pl.DataFrame | None = None,
    notice: str = "",
) -> dict[str, str]:
    """report.html, report.md (`whole`, `notice`: see report.ReportData) and citeaudit.sarif."""
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
    )
    return {
        "report.html": report.render_html(data),
        "report.md": report.render_markdown(data),
        "citeaudit.sarif": sarif.to_sarif_text(tables["citations"], tables["input_errors"]),
    }


def render(audited: AuditedJob, styles: Sequence[str]) -> Rendered:
    """The job's tables, bibliographies, exports and report, as data and text."""
    items = audited.listed()
    marks = unconfirmed(items, audited.checked)
    # tables and exports first: bibliographies started by render_ahead finish meanwhile
    tables = job_tables(audited)
    entries = export_entries(items, audited.checked, audited.work_ids())
    keys = exports.citation_keys(entries)  # once for the three files
    exported = {
        "references.bib": exports.to_bibtex(entries, keys),
        "references.ris": exports.to_ris(entries, keys),
        "references.json": exports.to_csl_json(entries, keys),
    }
    listed = listing(items, len(items), marks, styles)
    files = listed.files | exported
    files |= report_files(
        audited.job_id, tables, listed, marks, audited.works.links, notice=audited.not_stored
    )
    metrics = listed.metrics(audited.scores.metrics)
    if audited.not_stored:
        metrics = {**metrics, "not_stored": audited.not_stored}
    return Rendered(audited.job_id, tables, files, audited.works, metrics, audited.job.errors)


# --- persist, publish -----------------------------------------------------------------------


def persist(rendered: Rendered, inputs: Sequence[str], out_dir: str, db: str | None) -> str:
    """Write the job's folder and replace its rows in the DuckDB library; the folder's path.
    The files are written beside the folder and swapped in once the library holds the rows:
    the folder and the library rows always come from one run."""
    target = JobFolder(out_dir, rendered.job_id)
    with target.replacing() as folder:
        write_outputs(folder, rendered)
        save_to_library(rendered.job_id, inputs, rendered.tables, rendered.works, db)
    return str(target.path)


def persist_unstored(rendered: Rendered, out_dir: str) -> str:
    """Write the job's folder only, for a job the library could not take (rendered with its
    `not_stored` reason, which NOT_STORED.txt repeats): the registry work is not thrown away."""
    target = JobFolder(out_dir, rendered.job_id)
    with target.replacing(locked=False) as folder:
        write_outputs(folder, rendered)
        folder.write_text("NOT_STORED.txt", rendered.metrics["not_stored"] + "\n")
    return str(target.path)


def write_outputs(folder: JobFolder, rendered: Rendered, citations_written: bool = False) -> None:
    """The job's tables and files into `folder` (`citations_written`: a bulk import wrote
    citations.parquet itself, a batch at a time)."""
    for name in FOLDER_TABLES:
        if not (citations_written and name == "citations"):
            folder.write_parquet(f"{name}.parquet", rendered.tables[name])
    folder.write_parquet("works.parquet", rendered.works.cited_works)
    for name, text in rendered.files.items():
        folder.write_text(name, text)
    folder.write_json("metrics.json", rendered.metrics)


def save_to_library(
    job_id: str,
    inputs: Sequence[str],
    tables: dict[str, pl.DataFrame],
    works: JobDedupe,
    db: str | None,
    updates: dict[str, pl.DataFrame] | None = None,
    threads: int | None = None,
) -> None:
    """Replace the job's rows in the library, and the works and links it touches (`updates`:
    columns to set on rows stored already; `threads`: DuckDB's for the write)."""
    with Library(db_path_from_env(db), threads=threads) as library:
        library.save_job(
            job_id, list(inputs), tables, shared_rows(works), works.retired, updates=updates
        )


def shared_rows(works: JobDedupe) -> dict[str, tuple[pl.DataFrame, Sequence[str]]]:
    """The library-wide rows a dedupe brings, with their keys: works and the links between them."""
    return {
        "works": (works.works, ["work_id"]),
        "work_links": (works.links, ["work_id_a", "work_id_b", "kind"]),
    }


def publish(rendered: Rendered) -> None:
    """The job's summary and flagged citations, on its flow run in the Prefect UI."""
    artifacts.publish_job(rendered.job_id, rendered.tables["citations"], rendered.whole)


def summarize(rendered: Rendered, out: str) -> JobSummary:
    citations = rendered.tables["citations"]
    flagged = [Flagged.model_validate(f) for f in report.flagged_list(citations)]
    whole = rendered.whole  # every citation, when `citations` holds only the listed ones
    left_out = 0 if whole is None else report.flagged_citations(whole).height - len(flagged)
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


# --- the stages as Prefect tasks, and as plain calls ----------------------------------------


def stage_task(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """Our Prefect task decorator: no cache policy. Results are never persisted, so a cache key
    is never used, yet Prefect would compute one for every run by serializing all its inputs
    (JSON, else cloudpickle): a bulk import's finishing tasks copied every citation's frames
    (~150 MB at 40,000), and each checked chunk was encoded once more."""
    return task(name=name, cache_policy=NO_CACHE)


read_task = stage_task("read-inputs")(read)
identify_task = stage_task("identify")(identify)
check_task = stage_task("look-up-and-decide")(check_chunk_here)
dedupe_task = stage_task("dedupe")(dedupe)
support_task = stage_task("support")(support)
score_task = stage_task("score")(score)
render_task = stage_task("render")(render)
persist_task = stage_task("persist")(persist)
publish_task = stage_task("publish-artifacts")(publish)


def quoted(stage: Task[P, R]) -> Callable[P, R]:
    """A task called with its arguments in `quote(...)`: Prefect would otherwise walk every
    nested model looking for futures (11 s of a 1,363-citation job), though none holds one."""

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return stage(*(quote(a) for a in args), **{k: quote(v) for k, v in kwargs.items()})  # type: ignore[arg-type]

    return call


def check_all_tasks(
    refs: Sequence[Reference], offline: bool, chunk_size: int, shown: Shown = None
) -> list[Checked]:
    """Fan the chunks out as tasks (not quoted: they are small, and a Dask worker would receive
    the quote unopened); a chunk that fails outright leaves its citations `unverified`, so
    every citation still gets exactly one row. Progress goes to the CLI's listener and, given
    `shown`, to the Prefect UI."""
    deadline = job_deadline()
    chunks = plan_chunks(refs, chunk_size)
    futures = {check_task.submit(chunk, offline, deadline): chunk for chunk in chunks}
    checked: list[Checked] = []
    progress.report("validate", 0, len(refs))
    for future in as_completed(list(futures)):
        chunk = futures[future]
        try:
            checked.extend(future.result())
        except Exception as exc:  # the task itself crashed: keep the rows, say why
            checked.extend(unchecked(chunk, f"{type(exc).__name__}: {exc}"))
        progress.report("validate", len(checked), len(refs))
        if shown is not None:
            shown.update(len(checked), len(refs))
    order = {ref.citation_id: index for index, ref in enumerate(refs)}
    return sorted(checked, key=lambda c: order[c.citation_id])  # chunks finish in any order


@dataclass(frozen=True)
class Stages:
    """One implementation of each stage; the pipeline (flows/audit.py) calls them in order."""

    read: Callable[[Sequence[str], str | None], ReadResult]
    identify: Callable[[ReadResult], ReadResult]
    check: Callable[[Sequence[Reference], bool, int, Shown], list[Checked]]
    dedupe: Callable[[str, Sequence[Checked], str | None], JobDedupe]
    support: Callable[[Sequence[Claim], Sequence[Checked]], list[CitationSupport] | None]
    score: Callable[
        [Sequence[Checked], Sequence[Claim], JobDedupe, Sequence[CitationSupport] | None],
        Assessment,
    ]
    render: Callable[[AuditedJob, Sequence[str]], Rendered]
    ahead: Callable[[Sequence[Checked], Sequence[str]], AbstractContextManager[None]]
    persist: Callable[[Rendered, Sequence[str], str, str | None], str]
    publish: Callable[[Rendered], None]


def unpublished(rendered: Rendered) -> None:
    """Outside a Prefect flow run there is no UI to publish to."""


PLAIN = Stages(
    read, identify, check_all, dedupe, support, score, render, render_ahead, persist, unpublished
)
TASKS = Stages(
    quoted(read_task),
    quoted(identify_task),
    check_all_tasks,
    quoted(dedupe_task),
    quoted(support_task),
    quoted(score_task),
    quoted(render_task),
    render_ahead_of_tasks,
    quoted(persist_task),
    quoted(publish_task),
)
