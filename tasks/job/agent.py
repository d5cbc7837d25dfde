"""An agent's job as the library holds it (`JobState`): loaded for each call of the agent
service (flows/agents/service.py), and stored after a change as every job ends (`store_state`),
or, for one add, only what the add changed (`store_added`)."""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import polars as pl

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
from tasks.dedupe.job import DEDUPE_COLUMNS, JobDedupe, dedupe_added
from tasks.errors import UsageError
from tasks.frames import reference_from_row, result_from_row
from tasks.job.audited import AuditedJob
from tasks.job.finish import audited_job, end_job, score, store_job
from tasks.job.library import shared_rows
from tasks.job.render import job_tables
from tasks.render.selection import bibliography_items
from tasks.store.library import Library, open_library
from tasks.store.names import LibraryPath, library_exists

AGENT_SOURCE = "agent"
# What the tracker rejects: the source does not exist, is another work, or matched nothing.
REJECTED = (Status.NOT_FOUND, Status.MISMATCH, Status.UNMATCHED)

# Claim support of some claims and the citations they cite (the service's, with its judge).
Support = Callable[[Sequence[Claim], Sequence[Checked]], list[CitationSupport] | None]


class AgentError(UsageError):
    """A bad argument: its message is one line, shown to the agent as it is."""


@dataclass
class JobState:
    """A job as the library holds it, citations in order (agents' in order of addition)."""

    job_id: str
    refs: list[Reference] = field(default_factory=list)
    results: dict[str, ValidationResult] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    work_ids: dict[str, str] = field(default_factory=dict)

    def checked(self) -> list[Checked]:
        return [Checked(reference=r, result=self.results[r.citation_id]) for r in self.refs]

    def listed(self) -> list[CSLItem]:
        """The bibliography: accepted citations only (the tracker keeps rejected ones out)."""
        accepted = [c for c in self.checked() if c.result.status not in REJECTED]
        return bibliography_items(accepted, self.work_ids)

    def numbers(self, items: Sequence[CSLItem]) -> dict[str, int]:
        """[n] of each listed citation: its work's place in the bibliography."""
        by_work = {self.work_ids.get(i.id, i.id): n for n, i in enumerate(items, start=1)}
        listed = {self.work_ids.get(i.id, i.id) for i in items}
        return {
            ref.citation_id: by_work[work]
            for ref in self.refs
            if (work := self.work_ids.get(ref.citation_id, ref.citation_id)) in listed
            and self.results[ref.citation_id].status not in REJECTED
        }

    def find(self, key: str | int) -> Reference:
        """A citation by its id or its number (`3`, `[3]` or 3)."""
        wanted = str(key).strip().strip("[]")
        numbers = self.numbers(self.listed())
        for ref in self.refs:
            if wanted in (ref.citation_id, str(numbers.get(ref.citation_id))):
                return ref
        raise AgentError(f"job {self.job_id} has no citation {key!r} (give an id or a number)")

    def stored_inputs(self) -> list[str]:
        return self.inputs or [AGENT_SOURCE]


def load_state(job: str, db: LibraryPath) -> JobState:
    """The job as the library `db` holds it (empty if there is none yet)."""
    state = JobState(job)
    if not library_exists(db):
        return state
    with open_library(db, read_only=True) as library:
        row = library.job(job)
        citations = library.table("citations", job)
        claims = library.table("claims", job)
        errors = library.table("input_errors", job)
        records = library.table("dedupe_records", job)
    if row is None or not citations.height:
        return state
    relations = _relations(job, records)
    # Others' citations first, as their files list them; then agents', in order of addition.
    ordered = citations.with_columns((pl.col("source_file") == AGENT_SOURCE).alias("_agents")).sort(
        ["_agents", "source_file", "line", "entry_key"], nulls_last=True
    )
    for row_ in ordered.iter_rows(named=True):
        ref = reference_from_row(row_)
        state.refs.append(ref)
        result = result_from_row(row_)
        # kept with the citation's match keys, not on its row: dedupe links works by them
        result.relations = relations.get(ref.citation_id, {})
        state.results[ref.citation_id] = result
        if row_.get("work_id"):
            state.work_ids[ref.citation_id] = row_["work_id"]
    state.claims = [Claim.model_validate(c) for c in claims.drop("job_id").to_dicts()]
    state.errors = [InputError.model_validate(e) for e in errors.drop("job_id").to_dicts()]
    state.inputs = list(dict.fromkeys([*_json_list(row["inputs"]), AGENT_SOURCE]))
    return state


def store_state(state: JobState, support: Support, db: LibraryPath, out_dir: str | None) -> None:
    """dedupe -> score -> persist, as every job ends (no bibliography files: `format` renders
    on demand); the library rows alone unless `out_dir` keeps the job's folder too."""
    checked = state.checked()
    job = ReadResult(references=state.refs, claims=state.claims, errors=state.errors)
    audited = audited_job(state.job_id, job, checked, support(state.claims, checked), db)
    state.work_ids = dict(audited.works.columns.select("citation_id", "work_id").iter_rows())
    audited.items = state.listed()
    if out_dir is None:
        store_job(audited, state.stored_inputs(), db)
    else:
        end_job(audited, [], state.stored_inputs(), out_dir, db)


def store_added(
    state: JobState,
    ref: Reference,
    new: bool,
    claims: Sequence[Claim],
    support: Support,
    db: LibraryPath,
    out_dir: str | None,
) -> None:
    """Store what one add changed: the citation's rows (deduped alone against the library)
    and its claim's, as re-storing the whole job would leave them; the whole job when its
    dedupe could come out otherwise (`dedupe_added`), or when its folder is kept."""
    works = None
    if out_dir is None:
        checked = Checked(reference=ref, result=state.results[ref.citation_id])
        with open_library(db) as library:
            if new:
                works = dedupe_added(state.job_id, checked, library.dedupe_library())
            else:
                works = _stored_dedupe(library, state.job_id, ref.citation_id)
            if works is not None:
                tables = _added_rows(state, checked, works, claims, support)
                shared = shared_rows(works.works, works.links)
                library.save_added(state.job_id, state.stored_inputs(), tables, shared)
    if works is None:
        store_state(state, support, db, out_dir)


def _added_rows(
    state: JobState,
    checked: Checked,
    works: JobDedupe,
    claims: Sequence[Claim],
    support: Support,
) -> dict[str, pl.DataFrame]:
    """The citation's rows and its claim's (scored with the claim's other citations)."""
    cid = checked.reference.citation_id
    state.work_ids[cid] = works.columns["work_id"][0]
    by_id = {c.citation_id: c for c in state.checked()}
    cited = [by_id[c] for c in dict.fromkeys(c for claim in claims for c in claim.citation_ids)]
    cited = [c for c in cited if c.citation_id != cid] + [checked]
    scores = score(cited, claims, works, support(claims, cited))
    job = ReadResult(references=[checked.reference], claims=list(claims))
    tables = job_tables(AuditedJob(state.job_id, job, [checked], works, scores))
    del tables["input_errors"]  # an add brings none
    return tables


def _relations(job: str, records: pl.DataFrame) -> dict[str, dict[str, list[str]]]:
    """Registry relations (kind -> ids) per citation id, from the job's dedupe records."""
    found: dict[str, dict[str, list[str]]] = {}
    for cid, relations in records.select("citation_id", "relations").iter_rows():
        for relation in relations or []:
            kinds = found.setdefault(cid.removeprefix(f"{job}/"), {})
            kinds.setdefault(relation["kind"], []).append(relation["id"])
    return found


def _stored_dedupe(library: Library, job_id: str, citation_id: str) -> JobDedupe:
    """A stored citation's dedupe as it is (its match keys do not change with its claims or
    page): its work columns, and no new records, works or links."""
    rows = library.table("citations", job_id).filter(pl.col("citation_id") == citation_id)
    none = pl.DataFrame()
    return JobDedupe(rows.select(DEDUPE_COLUMNS), none, none, none, [])


def _json_list(text: str | None) -> list[str]:
    value = json.loads(text or "[]")
    return [str(v) for v in value] if isinstance(value, list) else []
