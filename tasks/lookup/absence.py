"""What a complete snapshot's silence decides, and the year no record can have.

A snapshot built whole from a registry's own dump (`Snapshot.complete`: no `--since`, `--types`
or venue filter) is that registry's answer as of its date; a filtered one never proves absence.
Each rule names the snapshot and its date in the row's reason:

    absent                 complete snapshot   when                               status
    an arXiv id            arxiv               dated after the id's month         not_found
    a PMID                 pubmed              its highest PMID is above it       not_found
    a DOI                  crossref            it holds other DOIs of the         not_found
                                               prefix, the year cited is two or
                                               more before its date (late
                                               registrations happen), and no
                                               snapshot finds the title either
                                               (found under another record:       mismatch
                                               that record)
    no identifier, a       the registry of     dated after the year claimed, no   unmatched,
    title and a year       record of the       snapshot finds the title           no live
                           venue claimed                                          search
                           (routing.of_record:
                           dblp for the venue
                           table's CS venues)
    an identifier's work   the same            the same: no snapshot places it    mismatch
    at the venue claimed                       there, its identifier names its    (only a
                                               preprint                           preprint)

A reference with several identifiers is decided only when every one is absent by these rules
(the live path verifies a work by its next identifier when the first is not found). Any other
identifier (a DOI of a prefix the snapshot lacks: DataCite's, a late registration) goes on to the
live registries, as before.

A claimed year later than next year is flagged whatever the registries say (none is asked): a
`mismatch` for a reference with an identifier (its metadata cannot be right), `unmatched` for one
without (no record can match it).
"""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import cast

from models.audit import Reference, Registry, Status, ValidationResult
from tasks.identifiers import identifiers_of
from tasks.lookup.routing import of_record
from tasks.snapshots.index import Snapshot

# A DOI cited with a year less than this before the snapshot's may be a late registration.
LATE_REGISTRATION_YEARS = 2
_NEW_ARXIV = re.compile(r"^(\d{2})(\d{2})\.\d{4,5}$")
_OLD_ARXIV = re.compile(r"/(\d{2})(\d{2})\d{3}$")


@dataclass(frozen=True)
class Absent:
    """One identifier a complete snapshot decides absent: which snapshot and why."""

    snapshot: Snapshot
    why: str


def beyond_next_year(year: int, today: date | None = None) -> bool:
    """A year no work can be from yet: after next year."""
    return year > (today or datetime.now(UTC).date()).year + 1


def impossible_year(ref: Reference, today: date | None = None) -> ValidationResult | None:
    """The row of a reference claiming a year after next year; None for any other."""
    year = ref.item.year()
    if year is None or not beyond_next_year(year, today):
        return None
    this_year = (today or datetime.now(UTC).date()).year
    identified = ref.ids.any() or identifiers_of(ref.item, ref.raw).any()
    return ValidationResult(
        citation_id=ref.citation_id,
        status=Status.MISMATCH if identified else Status.UNMATCHED,
        reason=(
            f"claims the year {year}, after next year ({this_year + 1}): no work can be from "
            "then, whatever a registry holds (none was asked)"
        ),
    )


def arxiv_month(arxiv_id: str) -> tuple[int, int] | None:
    """The (year, month) an arXiv id was assigned in: `2310.01362` 2023-10, `hep-th/9901001`
    1999-01; None when the id names no real month."""
    found = _NEW_ARXIV.match(arxiv_id) or _OLD_ARXIV.search(arxiv_id)
    if found is None:
        return None
    yy, month = int(found.group(1)), int(found.group(2))
    year = 1900 + yy if yy >= 91 else 2000 + yy  # arXiv began in 1991
    return (year, month) if 1 <= month <= 12 else None


def absent_arxiv(_: Reference, arxiv_id: str, snap: Snapshot) -> Absent | None:
    """An arXiv id the complete arXiv snapshot lacks though it is dated after the id's month."""
    month = arxiv_month(arxiv_id)
    if not snap.complete or snap.date is None or month is None:
        return None
    if (snap.date.year, snap.date.month) <= month:
        return None
    return Absent(
        snap,
        f"arXiv id {arxiv_id} (assigned {month[0]}-{month[1]:02d}) is not in the complete "
        f"snapshot {snap.label}, dated after that month",
    )


def absent_pmid(_: Reference, pmid: str, snap: Snapshot) -> Absent | None:
    """A PMID the complete PubMed snapshot lacks though it holds higher ones."""
    highest = snap.manifest.highest_pmid
    if not snap.complete or highest is None or not pmid.isdigit() or int(pmid) >= highest:
        return None
    return Absent(
        snap,
        f"PMID {pmid} is not in the complete snapshot {snap.label}, whose PMIDs run to {highest}",
    )


def absent_doi(ref: Reference, doi: str, snap: Snapshot) -> Absent | None:
    """A DOI the complete Crossref snapshot lacks though it holds other DOIs of its prefix,
    cited with a year at least LATE_REGISTRATION_YEARS before the snapshot's (the title is the
    caller's to look for)."""
    year = ref.item.year()
    prefix = doi.partition("/")[0]
    if not snap.complete or snap.date is None or year is None:
        return None
    if year > snap.date.year - LATE_REGISTRATION_YEARS or prefix not in snap.doi_prefixes:
        return None
    return Absent(
        snap,
        f"DOI {doi} is not in the complete snapshot {snap.label}, which holds other DOIs of "
        f"{prefix} and is dated {snap.date.year - year} years after the year cited",
    )


def decided_absent(ref: Reference, absent: list[Absent]) -> ValidationResult:
    """The not_found row of a reference each of whose identifiers is `absent`."""
    return ValidationResult(
        citation_id=ref.citation_id,
        status=Status.NOT_FOUND,
        registry=absent[0].snapshot.label,
        reason="; ".join(a.why for a in absent),
    )


def titled_elsewhere(absent: list[Absent], found: ValidationResult) -> ValidationResult:
    """A DOI that is absent while the title cited verifies against another record: a mismatch
    with that record."""
    why = "; ".join(a.why for a in absent)
    return found.model_copy(
        update={
            "status": Status.MISMATCH,
            "reason": f"{why}; the title cited is {found.registry} record {found.matched_id}",
        }
    )


def of_record_complete(
    ref: Reference, works: dict[Registry, Snapshot]
) -> tuple[str, Snapshot] | None:
    """The venue claimed and its registry of record's complete snapshot, dated after the year
    claimed; None when there is none (no venue of record, no year, a filtered or older one)."""
    registry = of_record(ref)
    snap = works.get(cast(Registry, registry)) if registry else None
    year = ref.item.year()
    if snap is None or not snap.complete or snap.date is None or year is None:
        return None
    if snap.date.year <= year:
        return None
    return ref.item.container_title or ref.item.event_title or "", snap


def only_a_preprint(preprint: ValidationResult, venue: str, snap: Snapshot) -> ValidationResult:
    """The mismatch of a reference whose identifier names a preprint, cited at a venue whose
    registry of record's complete snapshot does not place it there (as the live search finds
    when no registry does)."""
    reason = (
        f"exists only as a preprint ({preprint.registry} record {preprint.matched_id}); not at "
        f"'{venue}' in the complete snapshot {snap.label}, its registry of record (dated after "
        "the year cited), nor in the other snapshots"
    )
    return preprint.model_copy(update={"status": Status.MISMATCH, "reason": reason})


def unfound_at_venue(
    ref: Reference, venue: str, snap: Snapshot, closest: ValidationResult | None
) -> ValidationResult:
    """The unmatched row of a reference without identifier its venue's registry of record's
    complete snapshot does not hold: no live search could find more."""
    why = (
        f"not in the complete snapshot {snap.label}, the registry of record for '{venue}' "
        f"(dated after the year cited), nor in the other snapshots: no live search"
    )
    if closest is not None:
        return closest.model_copy(update={"reason": f"{why}; {closest.reason}"})
    return ValidationResult(citation_id=ref.citation_id, status=Status.UNMATCHED, reason=why)
