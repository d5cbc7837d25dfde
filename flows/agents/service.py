"""The agent service: what a crew's agents call while they research, on a named job in the library.

    add       a DOI, PMID, arXiv id, URL or free-text reference (+ claim, page) -> looked up now
              (the batch flow's lookup and decision, as plain functions: no Prefect server) ->
              stored in the job (the tables `citeaudit audit` writes) -> accepted with its number
              [n], formatted reference and in-text form, or rejected with the reason
    validate  re-check every citation of the job
    format    in-text citations (with a page) or the bibliography, in a CSL style
    export    BibTeX, RIS or CSL-JSON
    list      the job's citations and their statuses

Every answer is short plain text for an LLM plus the same as JSON (`Answer.data`); bad arguments
raise `AgentError` (one line). The arguments are checked by arguments.py, the answers' text
written by replies.py. The CrewAI tool and the MCP server are thin adapters over this.

A citation agents add is built as the line of a plain-text list (source `agent`, entry key its
order of addition), so a job built by `add` calls audits alike as that list. Several agents may
add at once: lookups run side by side under the service's registry pool (one limiter per
registry, held for the service's life, so its agents share the registries' pace), and one writer
at a time, across threads and processes (the library's write lock), stores what the add changed:
the citation deduped alone against the library, its rows and its claim's, and the job's counts,
leaving the library as re-storing the whole job would (that is done instead when the citation's
dedupe could touch the job's other citations: tasks/dedupe/job.py dedupe_added). So an add costs
its own citation, not the job's size; `format`, `export` and `list` render on demand.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from flows.agents import replies
from flows.agents.arguments import (
    DEFAULT_STYLE,
    job_id_of,
    location_of,
    source_line,
    style_of,
)
from models.audit import Checked, CitationSupport, Claim, Reference, ValidationResult
from models.csl import CSLItem
from tasks.citation_ids import citation_id_for, unused_id
from tasks.job.agent import (
    AGENT_SOURCE,
    REJECTED,
    AgentError,
    JobState,
    load_state,
    store_added,
    store_state,
)
from tasks.lookup.checker import Checker, process_snapshots
from tasks.read.plaintext import reference_from_line
from tasks.registries import RegistrySettings, read_settings
from tasks.registries.clients import Registries, RegistryPool
from tasks.render import citeproc, exports
from tasks.render.selection import export_entries
from tasks.store.library import write_lock
from tasks.store.names import LibraryPath, library_at
from tasks.support.claims import support_claims

SourceKind = Literal["doi", "pmid", "arxiv", "url", "reference"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("doi", "pmid", "arxiv", "url", "reference")
FormatKind = Literal["intext", "bibliography"]
ExportFormat = Literal["bibtex", "ris", "csljson"]
EXPORTERS = {"bibtex": exports.to_bibtex, "ris": exports.to_ris, "csljson": exports.to_csl_json}


@dataclass(frozen=True)
class Answer:
    text: str  # for an LLM to read
    data: dict[str, Any]  # the same, for programs (JSON-ready)


class AgentService:
    """The five operations on jobs of one library (`db`, default $CITEAUDIT_DB, resolved once
    when the service is made). With `out_dir` each change also rewrites the job's folder there
    (Parquet, exports, report). Its registry clients come from `pool` (default: one of its own),
    held for the service's life: give services of one process one pool and they share the
    registries' pace."""

    def __init__(
        self,
        db: str | LibraryPath | None = None,
        out_dir: str | None = None,
        offline: bool = False,
        pool: RegistryPool | None = None,
        settings: RegistrySettings | None = None,
    ) -> None:
        self.db = library_at(db)
        self.out_dir = out_dir
        self.offline = offline
        self.pool = pool or RegistryPool()
        self._settings = settings  # None: read from the environment at first use, then kept

    # -- operations

    def add(
        self,
        job: str,
        *,
        doi: str | None = None,
        pmid: str | int | None = None,
        arxiv: str | None = None,
        url: str | None = None,
        reference: str | None = None,
        claim: str | None = None,
        page: str | int | None = None,
    ) -> Answer:
        job = job_id_of(job)
        values = (doi, pmid, arxiv, url, reference)
        texts = (str(v).strip() if v is not None else "" for v in values)
        given = {k: v for k, v in zip(SOURCE_KINDS, texts, strict=True) if v}
        if len(given) != 1:
            raise AgentError("give exactly one of doi, pmid, arxiv, url or reference")
        ((kind, value),) = given.items()
        line = source_line(kind, value)
        claim = claim.strip() if claim and claim.strip() else None
        location = location_of(page)
        # Look up before taking the writer's lock: other agents' adds go on meanwhile (a source
        # added again is answered from the job; its lookup came from the HTTP cache).
        draft = reference_from_line(line, AGENT_SOURCE, 0)
        result = self._lookup([draft])[0]
        with write_lock(self.db):
            state = self._load(job)
            same = _same_source(state, draft)
            new = same is None
            if same is None:
                number = 1 + max(
                    (r.provenance.line or 0 for r in state.refs if _is_agents(r)), default=0
                )
                ref = reference_from_line(line, AGENT_SOURCE, number)
                ref = ref.model_copy(update={"citation_id": citation_id_for(ref)})
                ref.location = location
                state.refs.append(ref)
                state.results[ref.citation_id] = result.model_copy(
                    update={"citation_id": ref.citation_id}
                )
                same = ref
            moved = bool(location and not same.location)
            if moved:
                same.location = location
            claims = [_cite_for_claim(state, same, claim)] if claim else []
            if new or moved or claims:
                self._store_added(state, same, new, claims)
        items = state.listed()
        answer = self._citation_answers(state, items, [same], locator=location, whole=False)[0]
        answer["already_in_job"] = not new
        return Answer(replies.added_text(job, answer), {"job": job, "citation": answer})

    def validate(self, job: str) -> Answer:
        job = job_id_of(job)
        before = self._load(job)
        if not before.refs:
            raise AgentError(f"job {job} has no citations to validate")
        fresh = {r.citation_id: r for r in self._lookup(before.refs)}
        with write_lock(self.db):
            state = self._load(job)  # adds made meanwhile keep their own results
            was = {cid: r.status for cid, r in state.results.items()}
            for cid, result in fresh.items():
                if cid in state.results:
                    state.results[cid] = result
            self._store(state)
        items = state.listed()
        citations = self._citation_answers(state, items, state.refs)
        changed = [
            {"id": c["id"], "number": c["number"], "was": was[c["id"]], "now": c["status"]}
            for c in citations
            if was.get(c["id"]) not in (None, c["status"])
        ]
        data = {"job": job, "counts": replies.status_counts(citations), "changed": changed}
        data["citations"] = citations
        return Answer(replies.validated_text(job, citations, changed), data)

    def format(
        self,
        job: str,
        *,
        style: str | None = None,
        ids: Sequence[str | int] | None = None,
        kind: str = "intext",
        page: str | int | None = None,
    ) -> Answer:
        job = job_id_of(job)
        style = style_of(style)
        if kind not in ("intext", "bibliography"):
            raise AgentError(f"kind must be 'intext' or 'bibliography', not {kind!r}")
        state = self._existing(job)
        if kind == "intext" and not ids:
            raise AgentError("give the ids (or numbers) of the citations to cite in text")
        chosen = [state.find(i) for i in ids] if ids else state.refs
        location = location_of(page)
        items = state.listed()
        if kind == "intext":
            cites = self._citation_answers(state, items, chosen, style, locator=location)
            data = {"job": job, "style": style, "kind": kind, "citations": cites}
            return Answer(replies.intext_text(cites), data)
        numbers = state.numbers(items)
        wanted = {numbers[r.citation_id] for r in chosen if r.citation_id in numbers}
        rendered = citeproc.render_bibliography(items, style).entries
        chosen_entries = [e for e in rendered if e.position + 1 in wanted]
        entries = [
            {"number": e.position + 1, "id": e.item_id, "text": e.text} for e in chosen_entries
        ]
        data = {"job": job, "style": style, "kind": kind, "entries": entries}
        header = f"Bibliography of job {job} ({style}, {len(entries)} entries):"
        return Answer("\n".join([header, "", *(e.text for e in chosen_entries)]), data)

    def export(self, job: str, *, format: str = "bibtex") -> Answer:
        job = job_id_of(job)
        if format not in EXPORTERS:
            raise AgentError(f"format must be one of {', '.join(EXPORTERS)}, not {format!r}")
        state = self._existing(job)
        items = state.listed()
        numbers = state.numbers(items)
        content = EXPORTERS[format](export_entries(items, state.checked(), state.work_ids))
        citations = [
            {"id": r.citation_id, "number": numbers.get(r.citation_id), "status": s.value}
            for r in state.refs
            if (s := state.results[r.citation_id].status)
        ]
        data = {"job": job, "format": format, "count": len(items), "content": content}
        return Answer(content, data | {"citations": citations})

    def list_citations(self, job: str) -> Answer:
        job = job_id_of(job)
        state = self._load(job)
        citations = self._citation_answers(state, state.listed(), state.refs)
        data = {"job": job, "counts": replies.status_counts(citations), "citations": citations}
        return Answer(replies.list_text(job, citations), data)

    # -- the job in the library

    def _load(self, job: str) -> JobState:
        return load_state(job, self.db)

    def _existing(self, job: str) -> JobState:
        state = self._load(job)
        if not state.refs:
            raise AgentError(f"job {job} has no citations yet: add some first")
        return state

    def _store(self, state: JobState) -> None:
        store_state(state, self._support, self.db, self.out_dir)

    def _store_added(
        self, state: JobState, ref: Reference, new: bool, claims: Sequence[Claim]
    ) -> None:
        store_added(state, ref, new, claims, self._support, self.db, self.out_dir)

    def _support(
        self, claims: Sequence[Claim], checked: Sequence[Checked]
    ) -> list[CitationSupport] | None:
        return support_claims(claims, checked, judge=self.registries().judge)

    def _lookup(self, refs: Sequence[Reference]) -> list[ValidationResult]:
        """The references checked by a Checker over the service's registry pool; past a job's
        deadline from now (an agent must not wait on a registry forever) what is left stays
        `unverified`."""
        settings = self.settings()
        with Checker(
            None if self.offline else settings,
            pool=self.pool,
            snapshots=process_snapshots(),
            deadline=settings.job_ends_at(),
        ) as checker:
            return [c.result for c in checker.check(refs)]

    def settings(self) -> RegistrySettings:
        """The service's registry settings: given, or read from the environment once."""
        if self._settings is None:
            self._settings = read_settings()
        return self._settings

    def registries(self) -> Registries:
        """The clients for the service's settings, from its pool."""
        return self.pool.registries(self.settings())

    # -- answers

    def _citation_answers(
        self,
        state: JobState,
        items: Sequence[CSLItem],
        refs: Sequence[Reference],
        style: str = DEFAULT_STYLE,
        locator: str | None = None,
        whole: bool = True,
    ) -> list[dict[str, Any]]:
        """Each citation as the agent needs it; one pandoc run renders the bibliography (so
        `(Smith, 2023a)` disambiguates) and the chosen citations' in-text forms. Not `whole`:
        only the entries a chosen one could be told apart from (`_alike`)."""
        numbers = state.numbers(items)
        work_first = {state.work_ids.get(i.id, i.id): i.id for i in items}
        first_of = {
            r.citation_id: work_first.get(state.work_ids.get(r.citation_id, r.citation_id))
            for r in refs
        }
        shown = list(items) if whole else _alike(items, set(first_of.values()))
        position = {item.id: n for n, item in enumerate(shown)}
        locators = {
            position[f]: loc
            for r in refs
            if (f := first_of[r.citation_id]) is not None and (loc := locator or r.location)
        }
        rendered = citeproc.render_bibliography(shown, style, locators) if shown else None
        entries = {e.item_id: e for e in rendered.entries} if rendered else {}
        rejected = [state.results[r.citation_id] for r in refs]
        rejected = [r for r in rejected if r.status in REJECTED]
        found_records = _formatted({r.citation_id: r.record for r in rejected})
        meant = _formatted({r.citation_id: r.suggested.item for r in rejected if r.suggested})
        numeric = citeproc.style_format(style) == "numeric"
        answers = []
        for ref in refs:
            result = state.results[ref.citation_id]
            entry = entries.get(first_of[ref.citation_id] or "")
            number = numbers.get(ref.citation_id)
            in_text = None
            if entry is not None and number is not None:
                item = shown[entry.position]
                if numeric:
                    in_text = entry.citation.text
                elif item.author or item.title:
                    in_text = f"{entry.citation.text} [{number}]"
                else:  # an unchecked bare identifier: `(n.d.)` would say nothing
                    in_text = f"[{number}]"
            answers.append(
                {
                    "id": ref.citation_id,
                    "number": number,
                    "status": result.status.value,
                    "accepted": result.status not in REJECTED and not result.retracted,
                    "reason": result.reason,
                    "retracted": result.retracted,
                    "source": ref.raw,
                    "completeness": (result.record or ref.item).completeness(),
                    "reference": entry.text if entry is not None else None,
                    "in_text": in_text,
                    "page": ref.location,
                    "claims": [
                        c.claim_text for c in state.claims if ref.citation_id in c.citation_ids
                    ],
                    "found_record": found_records.get(ref.citation_id),
                    "probably_meant": meant.get(ref.citation_id),
                }
            )
        return answers


def _alike(items: Sequence[CSLItem], chosen: set[str | None]) -> list[CSLItem]:
    """The chosen items and those a style could need to tell them apart from (a year suffix,
    an added initial or name): the items of the same first author (or, unauthored, title). An
    item with neither is cited by its number alone and rendered alone (in the whole
    bibliography its `n.d.` might take a suffix)."""
    keys = {_name_key(i) for i in items if i.id in chosen}
    return [i for i in items if _name_key(i) in keys]


def _name_key(item: CSLItem) -> str:
    named = item.first_author_family() or item.title
    return f"name:{named.casefold()}" if named else f"id:{item.id}"


def _formatted(records: Mapping[str, CSLItem | None]) -> dict[str, str]:
    """Registry records of rejected citations, formatted in the default style: the work a
    mismatched identifier really names, or the work the cited title probably meant."""
    items = [r.model_copy(update={"id": cid}) for cid, r in records.items() if r and r.title]
    if not items:
        return {}
    rendered = citeproc.render_bibliography(items, DEFAULT_STYLE)
    return {e.item_id: e.text for e in rendered.entries}


# -- the job's state


def _is_agents(ref: Reference) -> bool:
    return ref.provenance.source_file == AGENT_SOURCE


def _same_source(state: JobState, draft: Reference) -> Reference | None:
    """A citation agents already added for the same identifier or the same text."""
    key = _source_key(draft)
    return next((r for r in state.refs if _is_agents(r) and _source_key(r) == key), None)


def _source_key(ref: Reference) -> str:
    """A bare identifier (`10.1/x`, `PMID: 1`, a doi.org link) is the same source however it is
    written; a reference with more text (one whose DOI may belong to another work) only as the
    same text."""
    ids, words = ref.ids, (ref.raw or "").casefold().split()
    if len(words) <= 2:
        for kind, value in (("doi", ids.doi), ("pmid", ids.pmid), ("arxiv", ids.arxiv)):
            if value:
                return f"{kind}:{value.lower()}"
    return " ".join(words)


def _cite_for_claim(state: JobState, ref: Reference, text: str) -> Claim:
    """The claim (one per distinct text) rests on this citation too."""
    claim = next((c for c in state.claims if c.claim_text == text), None)
    if claim is None:
        taken = {c.claim_id for c in state.claims}
        claim_id = unused_id(f"claim-{len(state.claims) + 1}", taken)
        claim = Claim(claim_id=claim_id, claim_text=text, source_file=AGENT_SOURCE)
        state.claims.append(claim)
    if ref.citation_id not in claim.citation_ids:
        claim.citation_ids.append(ref.citation_id)
    if claim.claim_id not in ref.claim_ids:
        ref.claim_ids.append(claim.claim_id)
    return claim
