"""Which items a job's bibliography lists, and with what metadata.

One entry per work, in order of first citation. A verified citation is written with the
registry's metadata (the corrected reference); a citation we could not check, or that has no
identifier and no match, keeps what the citer wrote. Citations that point at no such work
(`not_found`), at another work (`mismatch`), or at a retracted work are left out: a
bibliography people paste into a paper must not carry them (the report lists them instead)."""

import re
from collections.abc import Mapping, Sequence

from models.audit import Checked, Status
from models.csl import CSLItem
from tasks.digests import StringSet
from tasks.identifiers import normalize_doi
from tasks.render.exports import ExportEntry, usable_key

EXCLUDED = (Status.NOT_FOUND, Status.MISMATCH)
# Listed, but apart and marked: no registry confirmed them (possibly fabricated, or not asked).
UNCONFIRMED = (Status.UNMATCHED, Status.UNVERIFIED)


def bibliography_items(
    checked: Sequence[Checked],
    work_ids: Mapping[str, str] | None = None,
    seen: StringSet | None = None,
) -> list[CSLItem]:
    """`seen`: the works listed already, when a job is listed a batch at a time (updated)."""
    items: list[CSLItem] = []
    seen = set() if seen is None else seen
    for check in checked:
        ref, result = check.reference, check.result
        if not _listable(check):
            continue
        work = (work_ids or {}).get(ref.citation_id, ref.citation_id)
        if work in seen:
            continue
        seen.add(work)
        record = result.record
        # An identifier-only record (agency without metadata) has nothing better than the claim.
        use_record = result.status is Status.VERIFIED and record is not None and record.title
        chosen = listed_record(record, ref.item) if use_record and record is not None else ref.item
        if not (chosen.title or chosen.DOI or chosen.URL):
            continue  # nothing a reader could find the work by
        # A citer's DOI may be a URL (`https://doi.org/10...`): styles print the link themselves.
        doi = (normalize_doi(chosen.DOI) or chosen.DOI) if chosen.DOI else None
        items.append(chosen.model_copy(update={"id": ref.citation_id, "DOI": doi}))
    return items


def listed_record(record: CSLItem, claimed: CSLItem) -> CSLItem:
    """The registry's record of a verified citation as a bibliography lists it:
    - no other-language title: a matching aid, not a translation's original (styles would print
      "Originally published as ...");
    - no editors on a journal article: Crossref's are the editors who handled its review
      (PLoS ONE's academic editor, Frontiers' handling editor), which no style's manual cites
      (CSL's styles dropped them from journal articles for this reason, styles PR #638);
    - the citer's page and article number where the record gives neither: Crossref has none
      for many online-only articles (Frontiers), whose article number citers give as pages."""
    update: dict[str, object] = {"original_title": None}
    if record.type == "article-journal":
        update["editor"] = None
    if not (record.page or record.number):
        update |= {"page": claimed.page, "number": claimed.number}
    return record.model_copy(update=update)


# The RIS reader's entry key: the record number, then the export's own record id (`3 (ID 369)`).
_RIS_RECORD_ID = re.compile(r"\d+ \(ID (\S+)\)")


def _own_key(entry_key: str) -> str | None:
    """The key the user gave an entry (a BibTeX key, a CSL-JSON id, a RIS record's ID), if any."""
    ris = _RIS_RECORD_ID.fullmatch(entry_key)
    return usable_key(ris.group(1), numeric=True) if ris else usable_key(entry_key)


def export_entries(
    items: Sequence[CSLItem],
    checked: Sequence[Checked],
    work_ids: Mapping[str, str] | None = None,
) -> list[ExportEntry]:
    """The listed items as the exports write them: under the citation key their input gave
    (a made-up one only when it gave none), with their audit outcome, and with the keys of the
    duplicates `bibliography_items` merged into them (`work_ids`) as aliases."""
    keys = {c.citation_id: _own_key(c.reference.provenance.entry_key) for c in checked}
    results = {c.citation_id: c.result for c in checked}
    aliases: dict[str, list[str]] = {}
    for c in checked:
        key = keys[c.citation_id]
        if key and _listable(c):
            aliases.setdefault((work_ids or {}).get(c.citation_id, c.citation_id), []).append(key)
    return [
        ExportEntry(
            item,
            key=keys.get(item.id),
            status=results[item.id].status.value,
            reason=results[item.id].reason,
            aliases=tuple(
                alias
                for alias in aliases.get((work_ids or {}).get(item.id, item.id), [])
                if alias != keys.get(item.id)
            ),
        )
        for item in items
    ]


def _listable(checked: Checked) -> bool:
    """A citation whose work a bibliography may list (`bibliography_items`' own test)."""
    result = checked.result
    return result.status not in EXCLUDED and not result.retracted and checked.reference.scholarly


def printed_order(items: Sequence[CSLItem], marks: Mapping[str, str]) -> list[CSLItem]:
    """The items in the order the bibliographies print them: the confirmed ones, then those
    `marks` sets apart (`unconfirmed`), each in order of first citation. Rendered in this order,
    a numbered style's numbers run on as printed, with no gap where an entry moved."""
    return [i for i in items if i.id not in marks] + [i for i in items if i.id in marks]


def unconfirmed(items: Sequence[CSLItem], checked: Sequence[Checked]) -> dict[str, str]:
    """Listed items no registry confirmed: item id -> status, for the bibliographies' marks."""
    results = {c.citation_id: c.result for c in checked}
    return {
        item.id: results[item.id].status.value
        for item in items
        if results[item.id].status in UNCONFIRMED
    }
