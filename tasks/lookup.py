"""Check one chunk of references against the registries: the function the Prefect task wraps.

Routing, per reference (the first that applies):
    DOI                  Crossref `fetch_dois`, all DOIs of the chunk in batched calls (the client
                         falls back to the DOI's agency, e.g. DataCite); the DOI decides even when
                         a PMID is also given
    PMID                 PubMed `fetch_pmids`, batched
    arXiv id             its DataCite DOI 10.48550/arXiv.ID, with the DOIs above
    none of these        Crossref search on the free text (or "title author year venue"), plus
                         PubMed search when the reference looks biomedical or Crossref's candidates
                         fail and nothing marks it as a computer-science conference paper;
                         then `decide_unidentified`
Non-scholarly sources (`Reference.scholarly` false) are never sent to a registry.

A failure never spreads: a registry that cannot be asked makes its references `unverified` (never
`not_found` or `unmatched`), and an error while checking one reference becomes that reference's
`unverified` reason.
"""

import re
from collections.abc import Callable, Sequence
from functools import partial

from models.audit import Identifiers, Lookup, Reference, RegistryRecord, Status, ValidationResult
from models.csl import named
from tasks.identifiers import identifiers_of
from tasks.match.decide import decide_identified, decide_unidentified
from tasks.match.venues import venue_of
from tasks.registries import Registries, RegistryUnavailable
from tasks.registries.deadline import job_deadline

SEARCH_ROWS = 5
_BIOMEDICAL = re.compile(
    r"\b(med\w*|clin\w*|biol\w*|bioch\w*|cell\w*|genet\w*|genom\w*|neuro\w*|pharm\w*|cancer|"
    r"oncol\w*|onco\w*|health|lancet|jama|bmj|nurs\w*|surg\w*|pediatr\w*|psychiatr\w*|immun\w*|"
    r"infect\w*|epidemiol\w*|patients?|disease\w*|protein\w*|mice|mouse|rats?|trial\w*|therap\w*|"
    r"tumou?r\w*|cardi\w*|diabet\w*|virus|viral|bacteri\w*|dna|rna|physiol\w*|pathol\w*)\b",
    re.IGNORECASE,
)


def lookup_references(
    refs: Sequence[Reference],
    registries: Registries | None,
    *,
    offline: bool = False,
    deadline: float | None = None,
) -> list[ValidationResult]:
    """Exactly one result per reference, in input order. Past `deadline` (the job's, in epoch
    seconds) no registry is asked: what is left stays `unverified`."""
    if offline:
        return [_unverified(ref, "offline") for ref in refs]
    if registries is None:
        return [_unverified(ref, "no registry clients configured") for ref in refs]
    with job_deadline(deadline):
        return _look_up(refs, registries)


def _look_up(refs: Sequence[Reference], registries: Registries) -> list[ValidationResult]:
    results: dict[int, ValidationResult] = {}
    by_doi: dict[int, str] = {}
    by_pmid: dict[int, str] = {}
    for index, ref in enumerate(refs):
        if not ref.scholarly:
            results[index] = _unverified(ref, "not a scholarly source: no registry can hold it")
            continue
        ids = _identifiers(ref)
        if ids.doi:
            by_doi[index] = ids.doi
        elif ids.pmid:
            by_pmid[index] = ids.pmid
        elif ids.arxiv:
            by_doi[index] = f"10.48550/arxiv.{ids.arxiv}"
    _check_identified(refs, by_doi, registries.crossref.fetch_dois, results)
    _check_identified(refs, by_pmid, registries.pubmed.fetch_pmids, results)
    for index, ref in enumerate(refs):
        if index not in results:
            results[index] = _guarded(ref, partial(_check_by_search, ref, registries))
    return [results[index] for index in range(len(refs))]


def _check_identified(
    refs: Sequence[Reference],
    wanted: dict[int, str],
    fetch: Callable[[Sequence[str]], dict[str, Lookup]],
    results: dict[int, ValidationResult],
) -> None:
    if not wanted:
        return
    try:
        lookups = fetch(sorted(set(wanted.values())))
    except Exception as exc:  # the client should not raise; if it does, nothing was checked
        for index in wanted:
            results[index] = _unverified(refs[index], f"registry lookup failed: {exc}", error=exc)
        return
    for index, identifier in wanted.items():
        lookup = lookups.get(identifier) or Lookup(
            identifier=identifier, error="the registry client gave no answer for it"
        )
        ref = refs[index]
        results[index] = _guarded(ref, partial(decide_identified, ref, lookup))


def _check_by_search(ref: Reference, registries: Registries) -> ValidationResult:
    query = _search_text(ref)
    if not query:
        return decide_unidentified(ref, [])
    candidates: list[RegistryRecord] = registries.crossref.search(query, rows=SEARCH_ROWS)
    result = decide_unidentified(ref, candidates)
    if result.status == Status.VERIFIED or not _worth_pubmed(ref):
        return result
    candidates += registries.pubmed.search(_pubmed_term(ref), retmax=SEARCH_ROWS)
    return decide_unidentified(ref, candidates)


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


def _search_text(ref: Reference) -> str:
    if ref.raw and ref.raw.strip() and not ref.item.title:
        return ref.raw.strip()
    item = ref.item
    year = item.year()
    parts = [
        item.title,
        " ".join(n.family or n.literal or "" for n in named(item.author)[:3]),
        str(year) if year else None,
        item.container_title,
    ]
    return " ".join(p for p in parts if p).strip()


def _pubmed_term(ref: Reference) -> str:
    if ref.item.title:
        first = ref.item.first_author_family()
        return " ".join(p for p in (ref.item.title, first) if p)
    return _search_text(ref)


def _worth_pubmed(ref: Reference) -> bool:
    """PubMed holds biomedicine: ask it when the reference looks biomedical, or when Crossref's
    candidates failed and the venue is not a known conference (no CS conference paper is there)."""
    text = " ".join(p for p in (ref.item.container_title, ref.item.title, ref.raw) if p)
    if _BIOMEDICAL.search(text):
        return True
    venue = venue_of(ref.item.container_title)
    return venue is None or venue.kind not in ("conference", "preprint")
