"""The local snapshots (tasks/snapshots) asked about one chunk before the live registries.

    what the reference gives      snapshots asked                    how, per chunk
    DOI (an arXiv DOI: its id)    crossref, openalex, dblp, arxiv,   one `by_ids` per snapshot
                                  pubmed                             (the same query)
    arXiv id                      arxiv, dblp, crossref, openalex
    PMID                          pubmed, crossref, openalex
    a title, no identifier        those of its kind of work in       one `by_title` per snapshot
                                  routing.ORDER's order, then the    and place in that order
                                  others (local: no rate limit)
    a cited DOI or PMID           retractions (Retraction Watch)     one `by_ids`: its notices

A snapshot's record is decided by the decision table as a live record is (`as_registry_record`
maps it as the live client maps its answers). A `verified` or a `mismatch` (the identifier's
record exists with other metadata) decides; the row names the snapshot with its date
(`dblp@2026-11-01`). Absence decides only from a complete snapshot, by the rules of absence.py
(an arXiv id, a PMID, a DOI of a prefix it holds, a reference at a venue of record), the row
naming the snapshot; from a filtered one it decides nothing. What no snapshot decided goes on to
the live registries; with none to ask it stays `unmatched` (no identifier) or `unverified`, its
reason naming the snapshots asked. A reference whose year is after a snapshot's date is not
asked of it. A title search that verifies only a preprint while the reference names a venue
decides nothing either: the live search looks for the venue. An identifier whose record is the
preprint of a paper cited at a venue (an arXiv id cited as ICML) has its title searched too: a
published version verifies it; else, when the venue's registry of record has a complete snapshot
dated after the year cited, it is a `mismatch` (only a preprint), otherwise the live search
looks for the venue, and with none to ask the reference stays `unverified` (chunk.py).
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_args

from models.audit import (
    Lookup,
    Notice,
    NoticeKind,
    Reference,
    Registry,
    Status,
    ValidationResult,
)
from tasks.identifiers import identifiers_of, is_arxiv_doi, normalize_arxiv
from tasks.lookup.absence import (
    Absent,
    absent_arxiv,
    absent_doi,
    absent_pmid,
    beyond_next_year,
    decided_absent,
    of_record_complete,
    only_a_preprint,
    titled_elsewhere,
    unfound_at_venue,
)
from tasks.lookup.routing import ORDER, kind_of, preprint_for_a_venue
from tasks.match.decide import decide_identified, decide_unidentified
from tasks.match.venues import is_preprint_venue
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.records import as_registry_record
from tasks.snapshots.store import Status as SnapshotStatus

# The snapshots of works, each standing for the live registry of the same name, in the order an
# identifier of each kind is looked for in them.
WORKS: tuple[Registry, ...] = ("crossref", "dblp", "arxiv", "openalex", "pubmed")
_BY_KIND: dict[str, tuple[Registry, ...]] = {
    "doi": ("crossref", "openalex", "dblp", "arxiv", "pubmed"),
    "arxiv": ("arxiv", "dblp", "crossref", "openalex"),
    "pmid": ("pubmed", "crossref", "openalex"),
}
# Per kind of identifier, the snapshot whose completeness decides its absence, and the rule.
_Rule = Callable[[Reference, str, Snapshot], Absent | None]
_ABSENCE: dict[str, tuple[Registry, _Rule]] = {
    "doi": ("crossref", absent_doi),
    "arxiv": ("arxiv", absent_arxiv),
    "pmid": ("pubmed", absent_pmid),
}
# Per kind of work, the works snapshots its title is searched in: those of the kind's live
# registries in routing.ORDER's order, then the others (a local search costs no rate limit, and
# a record found by title, authors and year verifies whichever dump holds it).
WORKS_ORDER: dict[str, tuple[Registry, ...]] = {
    kind: tuple(dict.fromkeys([*(cast(Registry, n) for n in order if n in WORKS), *WORKS]))
    for kind, order in ORDER.items()
}
NOTICES = "retractions"
STALE_DAYS = 30  # an audit warns when a snapshot it used is older
_NOTICE_KINDS = set(get_args(NoticeKind))


@dataclass
class Asked:
    """What the snapshots said about one chunk: the references they decided, the closest
    undecided answer of a title search, and which snapshots each reference was asked of."""

    decided: dict[int, ValidationResult] = field(default_factory=dict)
    closest: dict[int, ValidationResult] = field(default_factory=dict)
    labels: dict[int, list[str]] = field(default_factory=dict)

    def asked(self, index: int, label: str) -> None:
        names = self.labels.setdefault(index, [])
        if label not in names:
            names.append(label)

    def undecided(self, ref: Reference, index: int, why: str) -> ValidationResult | None:
        """The row of a reference no snapshot decided and no live registry can be asked about
        (`why`); None when no snapshot was asked about it either."""
        labels = self.labels.get(index)
        if not labels:
            return None
        named = ", ".join(labels)
        closest = self.closest.get(index)
        if closest is not None:  # no identifier: unmatched, as a live search would leave it
            reason = f"{why}; only the local snapshots {named} were asked: {closest.reason}"
            return closest.model_copy(update={"reason": reason})
        reason = (
            f"{why}; not decided by the local snapshots {named} (absent from them, and no "
            "complete snapshot's absence rule decides it)"
        )
        return ValidationResult(
            citation_id=ref.citation_id, status=Status.UNVERIFIED, reason=reason
        )

    def named(self, index: int, result: ValidationResult) -> ValidationResult:
        """A live registry's undecided row, its reason naming the snapshots asked before."""
        labels = self.labels.get(index)
        undecided = result.status in (Status.UNMATCHED, Status.UNVERIFIED)
        if not labels or not undecided or index in self.decided:
            return result
        reason = f"{result.reason}; not decided by the local snapshots {', '.join(labels)}"
        return result.model_copy(update={"reason": reason})


@dataclass
class LocalSnapshots:
    """The snapshots built under one root, opened once per process (DuckDB allows one
    configuration per file and process) and shared by its threads."""

    works: dict[Registry, Snapshot]
    notices: Snapshot | None

    @classmethod
    def open(cls, root: Path) -> "LocalSnapshots | None":
        """The snapshots built under `root`; None when there are none (lookups as without)."""
        works = {name: s for name in WORKS if (s := open_snapshot(root, name)) is not None}
        notices = open_snapshot(root, NOTICES)
        if not works and notices is None:
            return None
        return cls(works, notices)

    def ask(self, refs: Sequence[Reference]) -> Asked:
        """Ask the works snapshots about the chunk: identifiers first, then titles: of the
        references without identifier, of those whose identifier found only the preprint
        of a paper they cite at a venue (its published version is looked for, as the live
        search looks; found nowhere, the preprint's record stays the decision), and of those
        whose DOI a complete snapshot lacks (absence.py). Last, what a complete snapshot's
        silence decides."""
        asked = Asked()
        scholarly = [(i, ref) for i, ref in enumerate(refs) if ref.scholarly]
        with_ids = {i: ids for i, ref in scholarly if (ids := _snapshot_ids(ref))}
        absent = self._by_ids(refs, with_ids, asked)
        preprints = {
            i: asked.decided.pop(i)
            for i in list(asked.decided)
            if preprint_for_a_venue(refs[i], asked.decided[i])
        }
        titled = [
            (i, ref)
            for i, ref in scholarly
            if (i not in with_ids or i in preprints or _of_doi(absent.get(i))) and ref.item.title
        ]
        self._by_titles(titled, asked)
        for index, preprint in preprints.items():
            if index not in asked.decided:
                record = of_record_complete(refs[index], self.works)
                asked.decided[index] = only_a_preprint(preprint, *record) if record else preprint
                asked.closest.pop(index, None)
        for index, gone in absent.items():
            found = asked.decided.get(index)
            asked.closest.pop(index, None)
            asked.decided[index] = (
                titled_elsewhere(gone, found)
                if found is not None
                else decided_absent(refs[index], gone)
            )
        for index, ref in titled:
            if index in with_ids or index in asked.decided:
                continue
            if (record := of_record_complete(ref, self.works)) is not None:
                venue, snap = record
                closest = asked.closest.pop(index, None)
                asked.decided[index] = unfound_at_venue(ref, venue, snap, closest)
        return asked

    def with_notices(
        self, refs: Sequence[Reference], results: list[ValidationResult], asked: Asked
    ) -> list[ValidationResult]:
        """`results` with the retraction snapshot's notices on each cited DOI and PMID."""
        if self.notices is None:
            return results
        cited = {i: ids for i, ref in enumerate(refs) if (ids := _notice_ids(ref))}
        found = self.notices.by_ids([key for ids in cited.values() for key in ids])
        out = list(results)
        for index, ids in cited.items():
            asked.asked(index, self.notices.label)
            notices = [_notice(row) for key in ids for row in found.get(key, [])]
            if any(notices):
                out[index] = _noticed(results[index], [n for n in notices if n is not None])
        return out

    def close(self) -> None:
        for snapshot in (*self.works.values(), *([self.notices] if self.notices else [])):
            snapshot.close()

    def _by_ids(
        self, refs: Sequence[Reference], with_ids: dict[int, list[tuple[str, str]]], asked: Asked
    ) -> dict[int, list[Absent]]:
        """Decide what the snapshots hold; the references none decided each of whose
        identifiers a complete snapshot decides absent (absence.py), with why."""
        keys = sorted({key for ids in with_ids.values() for key in ids})
        answers = {name: snap.by_ids(keys) for name, snap in self.works.items()}
        absent: dict[int, list[Absent]] = {}
        for index, ids in with_ids.items():
            ref = refs[index]
            for kind, value in ids:
                for name in _BY_KIND[kind]:
                    snap = self.works.get(name)
                    if snap is None or _newer(ref, snap):
                        continue
                    asked.asked(index, snap.label)
                    found = [as_registry_record(r, name) for r in answers[name][(kind, value)]]
                    lookups = [Lookup(identifier=value, record=record) for record in found]
                    decided = _first_decided([decide_identified(ref, x) for x in lookups])
                    if decided is not None:
                        asked.decided[index] = _labelled(decided, snap)
                        break
                if index in asked.decided:
                    break
            else:
                gone = [self._absent(ref, kind, value) for kind, value in ids]
                if all(gone):
                    absent[index] = [g for g in gone if g is not None]
                    for g in absent[index]:
                        asked.asked(index, g.snapshot.label)
        return absent

    def _absent(self, ref: Reference, kind: str, value: str) -> Absent | None:
        """Whether a complete snapshot decides the identifier absent (none holds it)."""
        registry, rule = _ABSENCE[kind]
        snap = self.works.get(registry)
        return rule(ref, value, snap) if snap is not None else None

    def _by_titles(self, titled: list[tuple[int, Reference]], asked: Asked) -> None:
        orders = {
            i: [
                n
                for n in WORKS_ORDER[kind_of(ref)]
                if n in self.works and not _newer(ref, self.works[n])
            ]
            for i, ref in titled
        }
        refs = dict(titled)
        for place in range(max((len(o) for o in orders.values()), default=0)):
            by_snapshot: dict[Registry, list[int]] = {}
            for index, order in orders.items():
                if place < len(order) and index not in asked.decided:
                    by_snapshot.setdefault(order[place], []).append(index)
            for name, indexes in by_snapshot.items():
                snap = self.works[name]
                found = snap.by_title([refs[i].item.title or "" for i in indexes])
                for index, records in zip(indexes, found, strict=True):
                    asked.asked(index, snap.label)
                    candidates = [as_registry_record(r, name) for r in records]
                    result = decide_unidentified(refs[index], candidates)
                    if result.status is Status.VERIFIED and not _preprint_for_venue(
                        refs[index], records, result
                    ):
                        asked.decided[index] = _labelled(result, snap)
                        asked.closest.pop(index, None)
                        continue
                    best = asked.closest.get(index)
                    if best is None or (result.match_score or 0) > (best.match_score or 0):
                        asked.closest[index] = result.model_copy(
                            update={"status": Status.UNMATCHED, "registry": None}
                        )


def stale_snapshots(found: Iterable[SnapshotStatus]) -> list[str]:
    """The snapshots of `found` (store.status's) older than STALE_DAYS, each `name@date (N days
    old)`; not the damaged ones (not asked)."""
    return [
        f"{s.name}@{s.date} ({s.age_days} days old)"
        for s in found
        if s.age_days is not None and s.age_days > STALE_DAYS and s.damage is None
    ]


def _snapshot_ids(ref: Reference) -> list[tuple[str, str]]:
    """The reference's identifiers a works snapshot can look up, in precedence order."""
    ids = ref.ids if ref.ids.any() else identifiers_of(ref.item, ref.raw)
    found: list[tuple[str, str]] = []
    if ids.doi:
        arxiv_doi = normalize_arxiv(ids.doi) if is_arxiv_doi(ids.doi) else None
        found.append(("arxiv", arxiv_doi) if arxiv_doi else ("doi", ids.doi))
    if ids.pmid:
        found.append(("pmid", ids.pmid))
    if ids.arxiv:
        found.append(("arxiv", ids.arxiv))
    return list(dict.fromkeys(found))


def _notice_ids(ref: Reference) -> list[tuple[str, str]]:
    ids = ref.ids if ref.ids.any() else identifiers_of(ref.item, ref.raw)
    return [(kind, value) for kind, value in (("doi", ids.doi), ("pmid", ids.pmid)) if value]


def _newer(ref: Reference, snap: Snapshot) -> bool:
    """The reference claims a year after the snapshot's date: only a live registry can hold it
    (a year after next year no registry can: asked, a record found shows the mismatch)."""
    year = ref.item.year()
    if year is None or snap.date is None or beyond_next_year(year):
        return False
    return year > snap.date.year


def _of_doi(absent: list[Absent] | None) -> bool:
    """Some identifier decided absent is a DOI: its title is looked for under another record."""
    return any(a.snapshot.name == "crossref" for a in absent or [])


def _first_decided(results: list[ValidationResult]) -> ValidationResult | None:
    """The first verified of the decisions, else the first mismatch, else None."""
    for wanted in (Status.VERIFIED, Status.MISMATCH):
        for result in results:
            if result.status is wanted:
                return result
    return None


def _preprint_for_venue(
    ref: Reference, records: list[dict[str, Any]], result: ValidationResult
) -> bool:
    """Verified by an informal (preprint) record while the reference names a venue other than
    a preprint server (`CoRR`, as dblp names arXiv, is one)."""
    chosen = next((r for r in records if r["id"] == result.matched_id), None)
    named = ref.item.container_title or ref.item.event_title
    return bool(chosen and chosen.get("informal") and named and not is_preprint_venue(named))


def _labelled(result: ValidationResult, snap: Snapshot) -> ValidationResult:
    """The result as the snapshot decided it: named with its date."""
    return result.model_copy(
        update={"registry": snap.label, "reason": f"local snapshot {snap.label}: {result.reason}"}
    )


def _notice(row: dict[str, Any]) -> Notice | None:
    kind = row.get("nature")
    if kind not in _NOTICE_KINDS:
        return None  # a reinstatement or another nature: no notice column for it
    when = row.get("date")
    return Notice(
        kind=kind,
        identifier=row.get("notice_doi") or row.get("notice_pmid"),
        url=f"https://doi.org/{row['notice_doi']}" if row.get("notice_doi") else None,
        date=when.isoformat() if when else None,
        source="retraction-watch",
        reason=row.get("reason"),
    )


def _noticed(result: ValidationResult, notices: list[Notice]) -> ValidationResult:
    known = {n.identifier for n in result.notices if n.identifier}
    added = [n for n in notices if n.identifier is None or n.identifier not in known]
    kinds = {n.kind for n in (*result.notices, *added)}
    return result.model_copy(
        update={
            "notices": [*result.notices, *added],
            "retracted": result.retracted or "retraction" in kinds,
            "corrected": result.corrected or "correction" in kinds,
            "expression_of_concern": result.expression_of_concern
            or "expression_of_concern" in kinds,
        }
    )
