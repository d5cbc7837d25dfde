"""Claimed metadata vs registry record -> ValidationResult, compared as a careful librarian would.

`compare` scores each field in [0, 1] (tasks/match/ holds the comparators); `decide` turns the
scores into a status. Both paths use it: a reference whose identifier resolved to a record
(`decide_identified`), and a reference matched by search (`decide_unidentified`).

Decision table (thresholds are the module constants below):

    field      agrees when          contradicts when         why
    title      >= 0.90              < 0.90                   casing, markup, hyphens, spelling
                                                             variants and a dropped subtitle score
                                                             >= 0.95; one swapped content word costs
                                                             0.1 and lands below 0.90
    authors    >= 0.75              < 0.75                   order-insensitive share of names in
                                                             common; lets one name in four be
                                                             garbled, not half the list missing
    year       >= 0.50              < 0.50                   exact 1.0, ±1 (online first) 0.75,
                                                             ±2..3 when a side is a preprint 0.5;
                                                             a claimed year in the future is 0;
                                                             against the closer of the record's
                                                             issued and print years
    container  >= 0.80              < 0.50                   same venue by table, abbreviation or
                                                             acronym 1.0; a known venue vs none of
                                                             its forms 0.0; two unknown names by
                                                             word similarity, capped at 0.75, so
                                                             0.5..0.8 decides nothing; preprint
                                                             servers and series: not compared
    pages      never decides                                 formats and article numbers vary too
                                                             much; reported only

    identified record:  no claimed field to compare          -> verified (existence only)
                        any field contradicts                -> mismatch (title < 0.60: "resolves
                                                                to a different paper", unless an
                                                                arXiv record has the authors: a
                                                                version's title)
                        otherwise                            -> verified
    search candidates:  title agrees, nothing contradicts,
                        and authors or year agrees           -> candidate accepted
                        best accepted candidate by score     -> verified
                        none accepted                        -> unmatched (never not_found);
                                                                the reason quotes the closest
                                                                candidate only when it scores at
                                                                least CANDIDATE_QUOTED

Flags (retracted, corrected, expression of concern) and relations describe the attached `record`
and are copied from it whenever a record is attached (verified, and mismatch: the record the
identifier really points to).
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from models.audit import (
    FieldAgreement,
    Lookup,
    Reference,
    RegistryRecord,
    Status,
    ValidationResult,
)
from models.csl import YEARS, CSLItem
from tasks.identifiers import find_identifiers, normalize_arxiv, without_identifiers
from tasks.match.authors import author_agreement, surname_in_text
from tasks.match.pages import pages_agreement, pages_in_text
from tasks.match.titles import best_title_in_text, best_title_similarity
from tasks.match.venues import is_preprint_venue, venue_of, venue_similarity
from tasks.textnorm import words

_ID_LABELS = frozenset({"doi", "pmid", "pmcid", "arxiv", "url", "isbn"})

TITLE_AGREES = 0.90
TITLE_DIFFERENT_PAPER = 0.60
AUTHORS_AGREE = 0.75
YEAR_AGREES = 0.50
CONTAINER_AGREES = 0.80
CONTAINER_CONTRADICTS = 0.50
# Below this a "closest candidate" shares next to nothing with the citation (a Gothic-architecture
# paper at 0.08 for a VAE): quoting it reads as a lead where there is none.
CANDIDATE_QUOTED = 0.25
# How much each field counts when ranking search candidates (pages only break near-ties).
SCORE_WEIGHTS = {"title": 0.5, "authors": 0.25, "year": 0.1, "container": 0.1, "pages": 0.05}

DECIDING_FIELDS = ("title", "authors", "year", "container")
_PREPRINT_DOI = re.compile(r"^10\.(48550/arxiv|1101/|2139/ssrn|21203/rs|20944/preprints)")
_YEAR_IN_TEXT = re.compile(rf"(?<!\d)({YEARS})(?!\d)")
_FIELD_LABEL = {"title": "title", "authors": "authors", "year": "year", "container": "venue"}


@dataclass(frozen=True)
class Decision:
    """What the field scores say: which fields agree and which contradict the record."""

    agreed: tuple[str, ...]
    contradicted: tuple[str, ...]
    score: float

    @property
    def consistent(self) -> bool:
        return not self.contradicted


def compare(claimed: CSLItem, raw: str | None, record: CSLItem) -> FieldAgreement:
    """Per-field agreement of a claimed reference with a registry record.

    When the reference is free text only (`raw` set, no claimed title), the record's fields are
    looked for in the raw string instead: its title, first author's surname, year, venue, pages."""
    if raw and not claimed.title:
        return _compare_with_text(raw, record)
    return FieldAgreement(
        title=best_title_similarity(claimed.title, record.titles())
        if claimed.title and record.title
        else None,
        authors=author_agreement(claimed.author or [], record.author or record.editor or []),
        year=_year_agreement(claimed.year(), record, preprint=_is_preprint(claimed, record)),
        container=_container_agreement(claimed, record),
        pages=pages_agreement(claimed.page, record.page),
    )


def year_agreement(
    claimed: int | None, record: int | None, *, preprint: bool = False
) -> float | None:
    """1.0 same year, 0.75 one apart (online-first vs issue), 0.5 up to three apart when one side
    is a preprint, else 0.0. A claimed year after next year is impossible: 0.0 whatever the
    record says."""
    if claimed is not None and claimed > datetime.now(UTC).year + 1:
        return 0.0
    if claimed is None or record is None:
        return None
    gap = abs(claimed - record)
    if gap == 0:
        return 1.0
    if gap == 1:
        return 0.75
    return 0.5 if preprint and gap <= 3 else 0.0


def _year_agreement(claimed: int | None, record: CSLItem, *, preprint: bool) -> float | None:
    """Scored against the record's closest year: online-first or, years later, in print."""
    years: list[int | None] = [*record.years()] or [None]  # a future claim is 0 even so
    scores = [year_agreement(claimed, year, preprint=preprint) for year in years]
    return max((s for s in scores if s is not None), default=None)


def decide(agreement: FieldAgreement) -> Decision:
    """The one place where field scores become agreement or contradiction (see the table above)."""
    scores = agreement.model_dump()
    agreed, contradicted = [], []
    for field in DECIDING_FIELDS:
        value = scores[field]
        if value is None:
            continue
        if value >= _agree_line(field):
            agreed.append(field)
        elif value < _contradict_line(field):
            contradicted.append(field)
    return Decision(tuple(agreed), tuple(contradicted), match_score(agreement))


def match_score(agreement: FieldAgreement) -> float:
    """Weighted mean of the comparable fields, in [0, 1]; 0.0 when nothing is comparable."""
    scores = agreement.model_dump()
    present = {f: w for f, w in SCORE_WEIGHTS.items() if scores[f] is not None}
    if not present:
        return 0.0
    return sum(scores[f] * w for f, w in present.items()) / sum(present.values())


def decide_identified(ref: Reference, lookup: Lookup) -> ValidationResult:
    """Validate a reference whose identifier was looked up (a DOI at Crossref, a PMID at PubMed)."""
    kind = _identifier_kind(lookup.identifier)
    if lookup.error:
        return _result(
            ref,
            Status.UNVERIFIED,
            f"could not check {kind} {lookup.identifier}: {lookup.error}",
            attempts=lookup.attempts,
            error=lookup.error,
        )
    found = lookup.record
    if found is None:
        reason = _not_found_reason(kind, lookup.identifier)
        return _result(ref, Status.NOT_FOUND, reason, attempts=lookup.attempts)
    if not _has_claims(ref):
        reason = (
            f"{kind} {found.identifier} exists at {found.registry}; only existence was checked: "
            "the reference gives no title, authors, year or venue"
        )
        return _result(ref, Status.VERIFIED, reason, found=found, attempts=lookup.attempts)
    if found.metadata_missing or not _has_claims_item(found.item):
        reason = (
            f"{kind} {found.identifier} is registered with {found.registry}, which gives no "
            "metadata to compare: only existence was checked"
        )
        return _result(ref, Status.VERIFIED, reason, found=found, attempts=lookup.attempts)
    agreement = compare(ref.item, ref.raw, found.item)
    decision = decide(agreement)
    if decision.consistent:
        status = Status.VERIFIED
        reason = f"{found.registry} record {found.identifier} agrees on {_join(decision.agreed)}"
    else:
        status = Status.MISMATCH
        reason = _mismatch_reason(kind, ref, found, agreement, decision)
    return _result(
        ref,
        status,
        reason,
        found=found,
        agreement=agreement,
        decision=decision,
        attempts=lookup.attempts,
    )


def decide_unidentified(ref: Reference, candidates: list[RegistryRecord]) -> ValidationResult:
    """Validate a reference without identifier against registry search candidates.

    A candidate is accepted only when its title agrees, no field contradicts, and the authors or the
    year agree too (a title alone may be generic: "Introduction", "Deep learning"). The best
    accepted candidate by match score wins; none -> unmatched (we had no identifier to not find)."""
    if not _has_claims(ref):
        # Identifiers no registry here is asked about (a PMCID, URL or ISBN) are named, so the
        # reason does not claim the reference gave none.
        given = {"PMCID": ref.ids.pmcid, "URL": ref.ids.url, "ISBN": ref.ids.isbn}
        unchecked = ", ".join(f"{kind} {value}" for kind, value in given.items() if value)
        reason = (
            f"the reference gives only {unchecked}, which no registry asked looks up, and no "
            "title, authors or year to match"
            if unchecked
            else "the reference gives no identifier, title, authors or year to match"
        )
        return _result(ref, Status.UNMATCHED, reason)
    judged = []
    for candidate in candidates:
        agreement = compare(ref.item, ref.raw, candidate.item)
        judged.append((decide(agreement), agreement, candidate))
    judged.sort(key=lambda entry: entry[0].score, reverse=True)
    for decision, agreement, candidate in judged:
        if _accepted(decision):
            reason = (
                f"matched {candidate.registry} record {candidate.identifier} by search; "
                f"agrees on {_join(decision.agreed)}"
            )
            return _result(
                ref,
                Status.VERIFIED,
                reason,
                found=candidate,
                agreement=agreement,
                decision=decision,
            )
    if not judged:
        return _result(ref, Status.UNMATCHED, "no registry candidate found by search")
    decision, agreement, candidate = judged[0]
    return _result(
        ref,
        Status.UNMATCHED,
        _unmatched_reason(decision, candidate),
        agreement=agreement,
        decision=decision,
    )


def _result(
    ref: Reference,
    status: Status,
    reason: str,
    *,
    found: RegistryRecord | None = None,
    agreement: FieldAgreement | None = None,
    decision: Decision | None = None,
    attempts: int = 0,
    error: str | None = None,
) -> ValidationResult:
    """One place that fills a ValidationResult. The record (and its flags) is attached only when
    the status names it: verified, or mismatch (the record the identifier really points to)."""
    attach = found if status in (Status.VERIFIED, Status.MISMATCH) else None
    return ValidationResult(
        citation_id=ref.citation_id,
        status=status,
        registry=attach.registry if attach else None,
        matched_id=attach.identifier if attach else None,
        record=attach.item if attach else None,
        agreement=agreement
        or FieldAgreement(title=None, authors=None, year=None, container=None, pages=None),
        match_score=decision.score if decision else None,
        reason=reason,
        retracted=bool(attach and attach.retracted),
        corrected=bool(attach and attach.corrected),
        expression_of_concern=bool(attach and attach.expression_of_concern),
        notices=attach.notices if attach else [],
        relations=attach.relations if attach else {},
        attempts=attempts,
        error=error,
    )


def _accepted(decision: Decision) -> bool:
    return (
        decision.consistent
        and "title" in decision.agreed
        and ("authors" in decision.agreed or "year" in decision.agreed)
    )


def _agree_line(field: str) -> float:
    return {
        "title": TITLE_AGREES,
        "authors": AUTHORS_AGREE,
        "year": YEAR_AGREES,
        "container": CONTAINER_AGREES,
    }[field]


def _contradict_line(field: str) -> float:
    return CONTAINER_CONTRADICTS if field == "container" else _agree_line(field)


def _compare_with_text(raw: str, record: CSLItem) -> FieldAgreement:
    # The record's fields are looked for in the citer's words, not in its identifiers: a DOI
    # like 10.1016/j.matpur.2014.02.004 would otherwise supply the record's year.
    raw = without_identifiers(raw)
    first_author = next(iter(record.author or record.editor or []), None)
    preprint = _is_preprint(record)
    years = _years_in_text(raw) if record.years() else []
    scores = [_year_agreement(y, record, preprint=preprint) for y in years]
    year = max((s for s in scores if s is not None), default=None)
    venues = [v for v in _venues(record) if not is_preprint_venue(v)]
    container = 1.0 if any(_venue_in_text(v, raw) for v in venues) else None
    return FieldAgreement(
        title=best_title_in_text(record.titles(), raw) if record.title else None,
        authors=None if first_author is None else float(surname_in_text(first_author, raw)),
        year=year,
        container=container,
        pages=1.0 if record.page and pages_in_text(record.page, raw) else None,
    )


def _years_in_text(words: str) -> list[int]:
    """Year-like numbers of a free-text reference's words (`without_identifiers`)."""
    return list(dict.fromkeys(int(y) for y in _YEAR_IN_TEXT.findall(words)))


def _venue_in_text(venue: str, raw: str) -> bool:
    known = venue_of(venue)
    names = [venue] + ([known.name] if known else [])
    acronyms = sorted(known.acronyms) if known else []
    haystack = f" {' '.join(words(raw))} "
    return any(f" {' '.join(words(n))} " in haystack for n in names + acronyms if words(n))


def _container_agreement(claimed: CSLItem, record: CSLItem) -> float | None:
    mine = claimed.container_title or claimed.container_title_short or claimed.event_title
    scores = [venue_similarity(mine, theirs) for theirs in _venues(record)]
    present = [s for s in scores if s is not None]
    return max(present) if present else None


def _venues(item: CSLItem) -> list[str]:
    fields = (item.container_title, item.container_title_short, item.event_title)
    return [v for v in fields if v]


def _is_preprint(*items: CSLItem) -> bool:
    return any(
        is_preprint_venue(item.container_title)
        or is_preprint_venue(item.publisher)
        or bool(item.DOI and _PREPRINT_DOI.match(item.DOI.lower()))
        for item in items
    )


def _has_claims(ref: Reference) -> bool:
    return _raw_claims_more_than_ids(ref.raw) or _has_claims_item(ref.item)


def _raw_claims_more_than_ids(raw: str | None) -> bool:
    """Free text claims metadata only if words remain once its identifiers are taken out: a line
    that is just `doi:10.1000/x` (a plain DOI list) claims existence, not a title."""
    if not raw or not raw.strip():
        return False
    ids = find_identifiers(raw)
    marks = [v.lower() for v in (ids.doi, ids.pmid, ids.pmcid, ids.arxiv, ids.url) if v]
    for token in raw.lower().split():
        bare = token.strip(".,;:()[]<>\"'")
        if bare.rstrip(":") in _ID_LABELS or bare.startswith(("http://", "https://", "www.")):
            continue
        if any(mark in bare for mark in marks) or not any(c.isalpha() for c in bare):
            continue
        return True
    return False


def _has_claims_item(item: CSLItem) -> bool:
    return bool(
        item.title or item.author or item.editor or item.year() is not None or item.container_title
    )


def _identifier_kind(identifier: str) -> str:
    if identifier.startswith("10."):
        return "DOI"
    if identifier.isdigit():
        return "PMID"
    if identifier.upper().startswith("PMC") and identifier[3:].isdigit():
        return "PMCID"
    return "arXiv id" if normalize_arxiv(identifier) == identifier else "identifier"


def _not_found_reason(kind: str, identifier: str) -> str:
    """Says who was asked, not that no registry anywhere holds it: a DOI reaches not_found only
    when Crossref lacks it and its agency lookup names no registration agency (a DOI at
    DataCite, mEDRA, ... is looked up there instead); a PMID only PubMed was asked about."""
    if kind == "DOI":
        return (
            f"Crossref does not hold DOI {identifier} and its registration-agency lookup "
            "names no agency for it"
        )
    if kind == "PMID":
        return f"PubMed does not hold PMID {identifier}"
    if kind == "PMCID":
        return f"Europe PMC does not hold {identifier}"
    if kind == "arXiv id":
        return f"arXiv does not hold arXiv:{identifier}"
    return f"the registry asked does not hold {identifier}"


def _mismatch_reason(
    kind: str,
    ref: Reference,
    found: RegistryRecord,
    agreement: FieldAgreement,
    decision: Decision,
) -> str:
    if names_another_paper(agreement, found.registry):
        return (
            f"{kind} resolves to a different paper: '{found.item.title}' "
            f"(title similarity {agreement.title:.2f})"
        )
    details = [_field_detail(f, ref, found.item, agreement) for f in decision.contradicted]
    return f"{kind} {found.identifier} exists, but the reference disagrees on " + "; ".join(details)


def names_another_paper(agreement: FieldAgreement, registry: str | None = None) -> bool:
    """The identifier's record is another paper, not the cited one with a wrong field. An arXiv
    record whose authors are the ones cited is the same paper under another version's title
    (1711.05101 is "Fixing Weight Decay Regularization in Adam" in v1, "Decoupled Weight Decay
    Regularization" since): a title to correct. A DOI's record keeps one title."""
    retitled = (
        registry == "arxiv" and agreement.authors is not None and agreement.authors >= AUTHORS_AGREE
    )
    return agreement.title is not None and agreement.title < TITLE_DIFFERENT_PAPER and not retitled


def _unmatched_reason(decision: Decision, candidate: RegistryRecord) -> str:
    if decision.score < CANDIDATE_QUOTED:
        return f"no confident match; no candidate came close (the best scored {decision.score:.2f})"
    problems = [_FIELD_LABEL[f] for f in decision.contradicted]
    if "title" not in decision.agreed and "title" not in decision.contradicted:
        problems.append("title (not comparable)")
    if not problems:
        problems.append("too few fields to confirm (title and authors or year needed)")
    return (
        f"no confident match; closest candidate {candidate.identifier} '{candidate.item.title}' "
        f"(score {decision.score:.2f}) disagrees on {', '.join(problems)}"
    )


def _field_detail(field: str, ref: Reference, record: CSLItem, agreement: FieldAgreement) -> str:
    claimed = ref.item
    if field == "title":
        return f"title (record: '{record.title}', similarity {agreement.title:.2f})"
    if field == "authors":
        names = ", ".join(n.family or n.literal or "" for n in (record.author or [])[:4])
        more = " et al." if len(record.author or []) > 4 else ""
        return f"authors (record: {names}{more}; agreement {agreement.authors:.2f})"
    if field == "year":
        # Free text has no year field: name the years it gives, as compared.
        year = claimed.year()
        given = (
            str(year)
            if year is not None
            else " or ".join(map(str, _years_in_text(without_identifiers(ref.raw or ""))))
        )
        return f"year (claimed {given}, record {' or '.join(map(str, record.years()))})"
    shown = record.container_title or record.container_title_short or record.event_title
    return f"venue (claimed '{claimed.container_title}', record '{shown}')"


def _join(fields: tuple[str, ...]) -> str:
    labels = [_FIELD_LABEL[f] for f in fields]
    if not labels:
        return "nothing it could compare"
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
