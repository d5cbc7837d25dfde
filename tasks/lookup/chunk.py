"""One chunk of references asked of the registries, by the routing of the package docstring
(tasks/lookup/__init__.py): the function the Checker (checker.py) calls."""

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from models.audit import Identifiers, Lookup, Reference, RegistryRecord, Status, ValidationResult
from models.csl import CSLItem, named
from tasks.identifiers import identifiers_of, is_arxiv_doi, normalize_arxiv
from tasks.lookup.absence import impossible_year
from tasks.lookup.routing import of_record, preprint_for_a_venue, registry_name, search_order
from tasks.lookup.snapshots import Asked, LocalSnapshots
from tasks.match.decide import decide_identified, decide_unidentified, names_another_paper
from tasks.match.venues import is_preprint_venue
from tasks.registries import REGISTRY_NAMES
from tasks.registries.clients import Registries
from tasks.registries.deadline import job_deadline
from tasks.registries.http import RegistryUnavailable

log = logging.getLogger(__name__)
SEARCH_ROWS = 5
# Registries that can search without a title (free text): the others need one.
_FREE_TEXT = frozenset({"crossref", "pubmed"})
# Where an identifier whose own registry could not be asked is tried next, in order: the
# registry, and the form its batch reads, per registry the identifier was first sent to.
_FALLBACKS: tuple[tuple[str, dict[str, str]], ...] = (
    ("openalex", {"crossref": "{}"}),
    ("semantic_scholar", {"crossref": "DOI:{}", "arxiv": "ARXIV:{}", "pubmed": "PMID:{}"}),
)
Fetch = Callable[[Sequence[str]], dict[str, Lookup]]


@dataclass
class _Trail:
    """Whom we asked about one reference, and how many requests it cost each."""

    asked: list[str] = field(default_factory=list)
    requests: dict[str, float] = field(default_factory=dict)

    def add(self, registry: str, requests: float) -> None:
        if registry not in self.asked:
            self.asked.append(registry)
        self.requests[registry] = round(self.requests.get(registry, 0.0) + requests, 4)


def lookup_references(
    refs: Sequence[Reference],
    registries: Registries | None,
    *,
    offline: bool = False,
    deadline: float | None = None,
    snapshots: LocalSnapshots | None = None,
) -> list[ValidationResult]:
    """Exactly one result per reference, in input order. The local `snapshots` are asked first
    (tasks/lookup/snapshots.py); past `deadline` (the job's, in epoch seconds) no live registry
    is asked: what is left stays `unverified`."""
    local = _ask_snapshots(refs, snapshots)
    for index, ref in enumerate(refs):  # decided before any registry, with or without them
        if ref.scholarly and index not in local.decided and (row := impossible_year(ref)):
            local.decided[index] = row
    if offline or registries is None or (snapshots is not None and not _asks_any(registries)):
        why = "offline" if offline else "no registry clients configured"
        if registries is not None and not offline:
            why = "no live registry selected"
        looked = [_without_live(ref, i, local, why) for i, ref in enumerate(refs)]
    else:
        with job_deadline(deadline):
            looked = [local.named(i, r) for i, r in enumerate(_look_up(refs, registries, local))]
    if snapshots is not None:
        looked = snapshots.with_notices(refs, looked, local)
    return [
        result.model_copy(update={"asked": [*local.labels.get(i, []), *result.asked]})
        for i, result in enumerate(looked)
    ]


def _ask_snapshots(refs: Sequence[Reference], snapshots: LocalSnapshots | None) -> Asked:
    if snapshots is None:
        return Asked()
    try:
        return snapshots.ask(refs)
    except Exception:  # a damaged snapshot must not sink the chunk: the live registries decide
        log.exception("the local snapshots could not be asked")
        return Asked()


def _without_live(ref: Reference, index: int, local: Asked, why: str) -> ValidationResult:
    """The row of a reference no live registry can be asked about (`why`): what the snapshots
    decided, except a preprint's record for a reference citing a venue: a live search would look
    for the published version, and no snapshot placing it there proves nothing."""
    decided = local.decided.get(index)
    if decided is not None and preprint_for_a_venue(ref, decided):
        venue = ref.item.container_title or ref.item.event_title
        reason = (
            f"{why}; the local snapshot {decided.registry} holds it as a preprint (record "
            f"{decided.matched_id}), no local snapshot at the venue claimed, '{venue}' (and no "
            "complete snapshot of its registry of record, dated after the year cited, decides)"
        )
        return decided.model_copy(update={"status": Status.UNVERIFIED, "reason": reason})
    return decided or local.undecided(ref, index, why) or _unverified(ref, why)


def _asks_any(registries: Registries) -> bool:
    return any(registries.asks(name) for name in REGISTRY_NAMES)


def _look_up(
    refs: Sequence[Reference], registries: Registries, local: Asked
) -> list[ValidationResult]:
    active = {name for name in REGISTRY_NAMES if registries.asks(name)}
    trails = [_Trail() for _ in refs]
    results: dict[int, ValidationResult] = dict(local.decided)
    by_registry: dict[str, dict[int, str]] = {}
    routes: dict[int, list[tuple[str, str]]] = {}
    for index, ref in enumerate(refs):
        if not ref.scholarly:
            results[index] = _unverified(ref, "not a scholarly source: no registry can hold it")
            continue
        if index in results:
            continue  # a snapshot decided it
        if found := _id_routes(_identifiers(ref), active):
            routes[index] = found
            by_registry.setdefault(found[0][0], {})[index] = found[0][1]
    for name, wanted in by_registry.items():
        fetch, batch_size = _fetcher(registries, name)
        _check_identified(refs, name, wanted, fetch, batch_size, results, trails)
    _ask_by_other_ids(refs, routes, registries, results, trails)
    for name, forms in _FALLBACKS:
        if name in active:
            _ask_elsewhere(refs, by_registry, name, forms, registries, results, trails)
    for index, ref in enumerate(refs):
        result = results.get(index)
        if result is None:
            check = partial(_check_by_search, ref, registries, active, trails[index])
            results[index] = _guarded(ref, check)
        elif preprint_for_a_venue(ref, result):
            # The identifier names a preprint, the reference a venue: is it published there?
            check = partial(
                _check_by_search, ref, registries, active, trails[index], preprint=result
            )
            results[index] = _guarded(ref, check)
        elif _names_another_paper(ref, result):
            results[index] = _with_work_meant(ref, result, registries, active, trails[index])
    return [
        results[i].model_copy(update={"asked": trails[i].asked, "requests": trails[i].requests})
        for i in range(len(refs))
    ]


def _id_routes(ids: Identifiers, active: set[str]) -> list[tuple[str, str]]:
    """Each identifier's registry and the identifier as it is asked there, in precedence order:
    the first decides, the others are asked only when the first is not found."""
    routes: list[tuple[str, str]] = []
    arxiv_doi = normalize_arxiv(ids.doi) if is_arxiv_doi(ids.doi) else None
    if arxiv_doi and "arxiv" in active:
        routes.append(("arxiv", arxiv_doi))
    elif ids.doi and "crossref" in active:
        routes.append(("crossref", ids.doi))
    if ids.pmid and "pubmed" in active:
        routes.append(("pubmed", ids.pmid))
    if ids.pmcid and "europepmc" in active:
        routes.append(("europepmc", ids.pmcid))
    if ids.arxiv and "arxiv" in active:
        routes.append(("arxiv", ids.arxiv))
    elif ids.arxiv and "crossref" in active:
        routes.append(("crossref", f"10.48550/arxiv.{ids.arxiv}"))
    return list(dict.fromkeys(routes))


def _fetcher(registries: Registries, name: str) -> tuple[Fetch, int]:
    """The batched lookup of registry `name`, and how many ids one of its requests carries."""
    if name == "crossref":
        return registries.crossref.fetch_dois, registries.crossref.batch_size
    if name == "pubmed":
        return registries.pubmed.fetch_pmids, registries.pubmed.batch_size
    if name == "europepmc" and registries.europepmc is not None:
        return registries.europepmc.fetch_pmcids, registries.europepmc.batch_size
    if name == "arxiv" and registries.arxiv is not None:
        return registries.arxiv.fetch_ids, registries.arxiv.batch_size
    if name == "openalex" and registries.openalex is not None:
        return partial(
            _placed_lookups, registries.openalex.fetch_dois
        ), registries.openalex.batch_size
    if name == "semantic_scholar" and registries.semantic_scholar is not None:
        return registries.semantic_scholar.fetch_ids, registries.semantic_scholar.batch_size
    raise RuntimeError(f"{name} is asked but has no client")


def _check_identified(
    refs: Sequence[Reference],
    name: str,
    wanted: dict[int, str],
    fetch: Fetch,
    batch_size: int,
    results: dict[int, ValidationResult],
    trails: list[_Trail],
) -> None:
    distinct = sorted(set(wanted.values()))
    try:
        lookups = fetch(distinct)
    except Exception as exc:  # the client should not raise; if it does, nothing was checked
        for index in wanted:
            results[index] = _unverified(refs[index], f"registry lookup failed: {exc}", error=exc)
        return
    share = _batch_share(len(distinct), batch_size)
    for index, identifier in wanted.items():
        trails[index].add(name, share)
        lookup = lookups.get(identifier) or Lookup(
            identifier=identifier, error="the registry client gave no answer for it"
        )
        ref = refs[index]
        results[index] = _guarded(ref, partial(decide_identified, ref, lookup))


def _batch_share(distinct: int, batch_size: int) -> float:
    """Each citation's share of the requests that asked for `distinct` ids in batches."""
    return math.ceil(distinct / batch_size) / distinct if distinct else 0.0


def _ask_by_other_ids(
    refs: Sequence[Reference],
    routes: dict[int, list[tuple[str, str]]],
    registries: Registries,
    results: dict[int, ValidationResult],
    trails: list[_Trail],
) -> None:
    """A reference whose first identifier is not found, asked by its next ones in turn: a PMID
    whose PubMed record verifies it proves the work real whatever the DOI beside it (a typo, or
    a DOI the registry lacks). Verified, its reason naming the identifier not found; when no
    other identifier verifies it, the not_found stands."""
    pending = {index: found[1:] for index, found in routes.items()}
    while pending := {
        index: rest
        for index, rest in pending.items()
        if rest and results[index].status is Status.NOT_FOUND
    }:
        by_registry: dict[str, dict[int, str]] = {}
        for index, rest in pending.items():
            by_registry.setdefault(rest[0][0], {})[index] = rest[0][1]
        for name, wanted in by_registry.items():
            fetch, batch_size = _fetcher(registries, name)
            checked: dict[int, ValidationResult] = {}
            _check_identified(refs, name, wanted, fetch, batch_size, checked, trails)
            for index, result in checked.items():
                if result.status is Status.VERIFIED:
                    reason = f"{result.reason}; but {results[index].reason}"
                    results[index] = result.model_copy(update={"reason": reason})
        pending = {index: rest[1:] for index, rest in pending.items()}


def _ask_elsewhere(
    refs: Sequence[Reference],
    by_registry: dict[str, dict[int, str]],
    name: str,
    forms: dict[str, str],
    registries: Registries,
    results: dict[int, ValidationResult],
    trails: list[_Trail],
) -> None:
    """Identifiers whose registry could not be asked, tried at registry `name`. Only a record
    it holds decides: another registry lacking an id proves nothing about the id."""
    wanted: dict[int, tuple[str, str]] = {}
    for origin, indexes in by_registry.items():
        form = forms.get(origin)
        for index, identifier in indexes.items():
            if form and results[index].status is Status.UNVERIFIED:
                wanted[index] = (identifier, form.format(identifier))
    if not wanted:
        return
    fetch, batch_size = _fetcher(registries, name)
    asked = sorted({as_asked for _, as_asked in wanted.values()})
    lookups = fetch(asked)
    share = _batch_share(len(asked), batch_size)
    for index, (identifier, as_asked) in wanted.items():
        trails[index].add(name, share)
        found = lookups.get(as_asked)
        if found is not None and found.record is not None:
            lookup = Lookup(identifier=identifier, record=found.record, attempts=found.attempts)
            ref = refs[index]
            results[index] = _guarded(ref, partial(decide_identified, ref, lookup))


def _check_by_search(
    ref: Reference,
    registries: Registries,
    active: set[str],
    trail: _Trail,
    *,
    preprint: ValidationResult | None = None,
) -> ValidationResult:
    """Ask the registries of the reference's kind in turn until one verifies it."""
    if not _free_text(ref):
        return decide_unidentified(ref, [])  # nothing to search with
    closest: ValidationResult | None = None
    failures: list[tuple[str, RegistryUnavailable]] = []
    answered: set[str] = set()
    for name in search_order(ref, active):
        if name in trail.asked or (not ref.item.title and name not in _FREE_TEXT):
            continue
        try:
            candidates = _search(registries, name, ref, trail)
        except RegistryUnavailable as exc:
            failures.append((name, exc))
            continue
        answered.add(name)
        result = decide_unidentified(ref, candidates)
        if result.status is Status.VERIFIED:
            if preprint_for_a_venue(ref, result):
                preprint = preprint or result
                continue
            return result
        if closest is None or (result.match_score or 0.0) > (closest.match_score or 0.0):
            closest = result
    failed = ", ".join(name for name, _ in failures)
    record = of_record(ref) if failures else None  # asked only when a failure needs it
    if failures and record not in answered:
        reason = f"registry search failed at {failed}, which may hold it: {failures[0][1]}"
        return _unverified(ref, reason, error=failures[0][1])
    if preprint is not None:
        result = _only_a_preprint(ref, preprint, trail)
    elif closest is None:
        return decide_unidentified(ref, [])
    else:
        reason = f"asked {', '.join(trail.asked)}: {closest.reason}"
        result = closest.model_copy(update={"reason": reason})
    if failures:
        said = f"; {failed} could not be asked ({failures[0][1]}), but {record} answered"
        result = result.model_copy(update={"reason": f"{result.reason}{said}"})
    return result


def _search(
    registries: Registries, name: str, ref: Reference, trail: _Trail
) -> list[RegistryRecord]:
    """One registry's candidates for the reference (RegistryUnavailable when it cannot answer)."""
    title = ref.item.title
    if name == "crossref":
        trail.add(name, 1)
        if title:
            return registries.crossref.search_title(
                title, ref.item.first_author_family(), rows=SEARCH_ROWS
            )
        return registries.crossref.search(_free_text(ref), rows=SEARCH_ROWS)
    if name == "pubmed":
        articles = registries.pubmed.search(_pubmed_term(ref), retmax=SEARCH_ROWS)
        trail.add(name, 2 if articles else 1)  # esearch, then efetch of what it found
        return articles
    client = getattr(registries, name)
    if client is None or not title:
        return []
    trail.add(name, 1)
    rows = 1 if name == "semantic_scholar" else SEARCH_ROWS
    found: list[RegistryRecord] = client.search(title, rows=rows)
    return [_placed(record) for record in found]


def _placed(record: RegistryRecord) -> RegistryRecord:
    """The record with its `archive` (a repository holding a copy, as OpenAlex names one) read as
    a venue or dropped. An institution's repository ('CaltechAUTHORS', 'ePrints Soton') names no
    venue: as one, it contradicted the ICML a paper was cited at. A preprint server (arXiv,
    bioRxiv) names the preprint the record is: its venue."""
    csl = record.item.to_csl()
    archive = csl.pop("archive", None)
    if archive is None:
        return record
    if is_preprint_venue(archive):
        csl["container-title"] = archive
    return record.model_copy(update={"item": CSLItem.from_csl(csl)})


def _placed_lookups(fetch: Fetch, ids: Sequence[str]) -> dict[str, Lookup]:
    """`fetch`, each record found `_placed`."""
    return {
        key: lookup
        if lookup.record is None
        else lookup.model_copy(update={"record": _placed(lookup.record)})
        for key, lookup in fetch(ids).items()
    }


def _only_a_preprint(ref: Reference, preprint: ValidationResult, trail: _Trail) -> ValidationResult:
    venue = ref.item.container_title or ref.item.event_title
    reason = (
        f"exists only as a preprint ({preprint.registry} record {preprint.matched_id}); no "
        f"registry asked ({', '.join(trail.asked)}) places it at the venue claimed, '{venue}'"
    )
    return preprint.model_copy(update={"status": Status.MISMATCH, "reason": reason})


def _names_another_paper(ref: Reference, result: ValidationResult) -> bool:
    return (
        result.status is Status.MISMATCH
        and bool(ref.item.title)
        and names_another_paper(result.agreement, registry_name(result.registry))
    )


def _with_work_meant(
    ref: Reference,
    result: ValidationResult,
    registries: Registries,
    active: set[str],
    trail: _Trail,
) -> ValidationResult:
    """The mismatch, with the record its claimed title and authors verify against when a search
    finds one. Only the registry first in line for the reference's kind is searched (a
    suggestion is worth one search, not a walk through every registry's rate limit); it is
    asked afresh even if it was asked for the identifier, and its requests count against the
    citation."""
    first = search_order(ref, active)[:1]
    if not first:
        return result
    search = _Trail()
    meant = _guarded(ref, partial(_check_by_search, ref, registries, set(first), search))
    for name, requests in search.requests.items():
        trail.add(name, requests)
    found = meant.record
    if meant.status is not Status.VERIFIED or found is None or meant.registry is None:
        return result
    if meant.matched_id == result.matched_id:
        return result  # the search found the identifier's own record: nothing to suggest
    suggested = RegistryRecord(
        registry=meant.registry, identifier=meant.matched_id or "", item=found
    )
    reason = f"{result.reason}; the title cited is {meant.registry} record {suggested.identifier}"
    return result.model_copy(update={"suggested": suggested, "reason": reason})


def _guarded(ref: Reference, check: Callable[[], ValidationResult]) -> ValidationResult:
    try:
        return check()
    except RegistryUnavailable as exc:
        return _unverified(ref, f"registry search failed: {exc}", error=exc)
    except Exception as exc:  # one bad reference must not sink its chunk
        return _unverified(ref, f"could not check this reference: {exc!r}", error=exc)


def _unverified(
    ref: Reference, reason: str, *, error: BaseException | None = None
) -> ValidationResult:
    return ValidationResult(
        citation_id=ref.citation_id,
        status=Status.UNVERIFIED,
        registry=None,
        matched_id=None,
        record=None,
        match_score=None,
        reason=reason,
        attempts=getattr(error, "attempts", 0) or 0,
        error=str(error) if error else None,
    )


def _identifiers(ref: Reference) -> Identifiers:
    return ref.ids if ref.ids.any() else identifiers_of(ref.item, ref.raw)


def _free_text(ref: Reference) -> str:
    if ref.raw and ref.raw.strip() and not ref.item.title:
        return ref.raw.strip()
    item = ref.item
    year = item.year()
    authors = " ".join(n.family or n.literal or "" for n in named(item.author)[:3])
    parts = [item.title, authors, str(year) if year else None, item.container_title]
    return " ".join(p for p in parts if p).strip()


def _pubmed_term(ref: Reference) -> str:
    if ref.item.title:
        first = ref.item.first_author_family()
        return " ".join(p for p in (ref.item.title, first) if p)
    return _free_text(ref)
