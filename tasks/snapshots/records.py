"""A snapshot's record as the live registry's client would give it: a RegistryRecord in CSL.

The decision table compares a citation with a RegistryRecord whatever answered, so a record
from a dump is mapped as the registry's own client maps its answers (tasks/registries/dblp.py,
arxiv.py, crossref_map.py): dblp's key and short venue; an arXiv preprint keyed by its id with
arXiv's DOI, the published version's DOI as `is-preprint-of`; a title joined with its subtitle;
Crossref's `updated-by` as notices; an arXiv paper its authors withdrew as a retraction notice
(Crossref's `withdrawal` is one too), so the row, the report and `--fail-on retracted` flag it.
A dump's date is the caller's to name (`Snapshot.label`).
"""

import re
from datetime import date
from typing import Any, get_args

from models.audit import Notice, NoticeKind, Registry, RegistryRecord
from models.csl import CSLItem
from tasks.registries.arxiv import withdrawal

_NOTICE_KINDS = set(get_args(NoticeKind))
_NOTICE_SOURCES = {"pubmed": "pubmed"}  # who says so: PubMed's own links, else the publisher's


def notice_date(iso: str | None) -> date | None:
    """A notice's date as the registry maps give it (`2024-01-05`, `2024-01`, `2024`): its first
    day."""
    if not iso:
        return None
    parts = [int(p) for p in iso.split("-")[:3]] + [1, 1]
    try:
        return date(parts[0], parts[1], parts[2])
    except ValueError:
        return None


def as_registry_record(record: dict[str, Any], registry: Registry) -> RegistryRecord:
    """One works row (tasks/snapshots/schema.py) from the snapshot of `registry`'s dump."""
    arxiv = registry == "arxiv"
    authors = [
        {"literal": a["literal"]}
        if a.get("literal")
        else {"family": a["family"], "given": a["given"]}
        for a in record.get("authors") or []
    ]
    csl: dict[str, Any] = {
        "id": record["id"],
        "type": record.get("type") or "article",
        # As crossref_map joins them: the matcher also accepts the title without its subtitle.
        "title": ": ".join(t for t in (record.get("title"), record.get("subtitle")) if t) or None,
        "author": authors or None,
        "container-title": record.get("container"),
        "volume": record.get("volume"),
        "issue": record.get("issue"),
        "page": record.get("pages"),
        "DOI": f"10.48550/arXiv.{record['id']}" if arxiv else record.get("doi"),
        "URL": f"https://arxiv.org/abs/{record['id']}" if arxiv else None,
        "PMID": record.get("pmid"),
    }
    if record.get("year"):
        csl["issued"] = {"date-parts": [[int(record["year"])]]}
    item = CSLItem.from_csl({k: v for k, v in csl.items() if v is not None})
    relations = {"is-preprint-of": [record["doi"]]} if arxiv and record.get("doi") else {}
    found = RegistryRecord(
        registry=registry, identifier=record["id"], item=item, relations=relations
    )
    if arxiv and record.get("withdrawn"):
        when = record.get("updated")
        found.add_notice(withdrawal(record["id"], when.isoformat() if when else None))
    for update in record.get("updates") or []:
        if update.get("type") in _NOTICE_KINDS:
            when = update.get("date")
            found.add_notice(
                Notice(
                    kind=update["type"],
                    identifier=update.get("doi"),
                    date=when.isoformat() if when else None,
                    source=_NOTICE_SOURCES.get(registry, "publisher"),
                )
            )
    return found


def name_parts(text: str) -> dict[str, str | None]:
    """A name written whole, "Given Family", as an author of the works schema: "Laurens van
    der Maaten" -> family "van der Maaten", given "Laurens"; dblp's homonym number ("Wei Wang
    0001") dropped; a single word is a literal name."""
    words = text.split()
    if len(words) > 1 and len(words[-1]) == 4 and words[-1].isdecimal():  # "0001"
        words.pop()
    if len(words) < 2:
        return {"family": None, "given": None, "literal": " ".join(words) or None}
    start = len(words) - 1
    while start > 1 and words[start - 1][:1].islower():  # particles: van, der, de, von
        start -= 1
    return {"family": " ".join(words[start:]), "given": " ".join(words[:start]), "literal": None}


def iso_date(text: str | None) -> date | None:
    """The date an ISO timestamp or date begins with (`2024-01-05T10:00:00`); None for none."""
    try:
        return date.fromisoformat(text[:10]) if text else None
    except ValueError:
        return None


# A DOI as a dump gives it: 10.prefix/suffix, nothing before or after it, no percent-encoding, not
# ending in punctuation normalize_doi strips. Its normal form is itself lower-cased
# (normalize_doi's regular expressions cost more than the rest of a row).
_PLAIN_DOI = re.compile(r"10\.\d{4,9}/[^\s\"'%]*[^\s\"'%.,;:/)\]}>]")
_RESOLVER = "https://doi.org/"


def plain_doi(value: str) -> str | None:
    """The normal form of a plain DOI, or of one behind doi.org's resolver (OpenAlex's form),
    quickly; None for any other (the caller's normaliser decides)."""
    doi = value[len(_RESOLVER) :] if value.startswith(_RESOLVER) else value
    if _PLAIN_DOI.fullmatch(doi) and "doi.org/" not in doi.lower():
        return doi.lower()
    return None
