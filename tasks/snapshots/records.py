"""A snapshot's record as the live registry's client would give it: a RegistryRecord in CSL.

The decision table compares a citation with a RegistryRecord whatever answered, so a record
from a dump is mapped as the registry's own client maps its answers (tasks/registries/dblp.py,
arxiv.py, crossref_map.py): dblp's key and short venue; an arXiv preprint keyed by its id with
arXiv's DOI, the published version's DOI as `is-preprint-of`; a title joined with its subtitle;
Crossref's `updated-by` as notices; an arXiv paper its authors withdrew as a retraction notice
(Crossref's `withdrawal` is one too), so the row, the report and `--fail-on retracted` flag it.
A dump's date is the caller's to name (`Snapshot.label`).
"""

from typing import Any, get_args

from models.audit import Notice, NoticeKind, Registry, RegistryRecord
from models.csl import CSLItem
from tasks.registries.arxiv import withdrawal

_NOTICE_KINDS = set(get_args(NoticeKind))


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
                    source="publisher",
                )
            )
    return found
