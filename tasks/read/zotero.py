"""Zotero items as its web API and Zotero 7's local API return them (`format=json`: a list of
`{key, version, library, data}`), whether `citeaudit zotero audit` fetched them or a user saved
them. Each regular item is one reference keyed by its item key; attachments, notes and
annotations are no references and are passed over.

    Zotero                                   CSL / identifiers
    itemType                                 type (ITEM_TYPES; anything else: article)
    creators: author, editor (firstName,     author, editor; a single `name` is a literal
      lastName or name)                      (an organisation)
    date                                     issued (year, month, day as far as given)
    publicationTitle, proceedingsTitle,      container-title, the first one present
      bookTitle, websiteTitle, repository
    volume, issue, pages, publisher, ISBN    the same
    DOI (or `DOI: ...` in extra)             DOI
    `PMID: ...`, `PMCID: ...`, `arXiv: ...`  PMID, PMCID, arXiv id (Zotero keeps them in extra,
      lines of extra; archiveID arXiv:...    one `Key: value` a line)
    url                                      URL
"""

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.audit import InputError, ReadResult, Reference
from models.csl import CSLName
from tasks.read.agent_json import csl_date, load_shape, sniff_json
from tasks.read.common import csl_item, make_reference, read_each

FORMAT = "zotero"

ITEM_TYPES = {
    "journalArticle": "article-journal",
    "conferencePaper": "paper-conference",
    "book": "book",
    "bookSection": "chapter",
    "thesis": "thesis",
    "report": "report",
    "preprint": "article",
    "manuscript": "manuscript",
    "webpage": "webpage",
    "magazineArticle": "article-magazine",
    "newspaperArticle": "article-newspaper",
    "dataset": "dataset",
    "patent": "patent",
    "encyclopediaArticle": "entry-encyclopedia",
    "dictionaryEntry": "entry-dictionary",
    "presentation": "speech",
    "computerProgram": "software",
}
NOT_REFERENCES = frozenset({"attachment", "note", "annotation"})
CONTAINERS = ("publicationTitle", "proceedingsTitle", "bookTitle", "websiteTitle", "repository")
EXTRA_LINE = re.compile(r"^\s*(DOI|PMID|PMCID|arXiv|arXiv ID)\s*:\s*(\S+)\s*$", re.I | re.M)
_EXTRA_FIELDS = {
    "doi": "DOI",
    "pmid": "PMID",
    "pmcid": "PMCID",
    "arxiv": "arXiv",
    "arxiv id": "arXiv",
}


def detect(path: Path, head: str) -> bool:
    value = sniff_json(path, head)
    return isinstance(value, list) and any(is_zotero_item(entry) for entry in value[:5])


def is_zotero_item(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("key"), str)
        and isinstance(entry.get("data"), dict)
        and "itemType" in entry["data"]
    )


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_file)


def read_file(path: Path) -> ReadResult:
    result, items = load_shape(path, _item_list, "a list of Zotero items")
    if items is not None:
        result.extend(zotero_references(items, path))
    return result


def _item_list(data: Any) -> list[Any] | None:
    return data if isinstance(data, list) else None


def zotero_references(items: Sequence[Any], source: Path) -> ReadResult:
    result = ReadResult()
    for number, entry in enumerate(items, 1):
        if not is_zotero_item(entry):
            reason = "not a Zotero item (no key, or no data with an itemType)"
            result.errors.append(InputError(source_file=str(source), line=number, reason=reason))
        elif entry["data"]["itemType"] not in NOT_REFERENCES:
            result.references.append(reference(entry, source))
    return result


def reference(entry: dict[str, Any], source: Path) -> Reference:
    data = entry["data"]
    extra = {
        _EXTRA_FIELDS[name.lower()]: value
        for name, value in EXTRA_LINE.findall(str(data.get("extra") or ""))
    }
    archive = str(data.get("archiveID") or "")
    if archive.lower().startswith("arxiv:"):
        extra.setdefault("arXiv", archive.split(":", 1)[1])
    fields: dict[str, Any] = {
        "id": entry["key"],
        "type": ITEM_TYPES.get(data["itemType"], "article"),
        "title": data.get("title"),
        "author": _names(data.get("creators"), "author"),
        "editor": _names(data.get("creators"), "editor"),
        "issued": csl_date(data.get("date")),
        "container-title": next((data[k] for k in CONTAINERS if data.get(k)), None),
        "volume": data.get("volume"),
        "issue": data.get("issue"),
        "page": data.get("pages"),
        "publisher": data.get("publisher"),
        "ISBN": data.get("ISBN"),
        "DOI": data.get("DOI") or extra.get("DOI"),
        "PMID": extra.get("PMID"),
        "PMCID": extra.get("PMCID"),
        "URL": data.get("url"),
    }
    raw = f"arXiv:{extra['arXiv']}" if "arXiv" in extra else None
    return make_reference(csl_item(fields), source, entry["key"], raw=raw)


def _names(creators: Any, role: str) -> list[CSLName] | None:
    names = [
        CSLName.model_validate(
            {"literal": c["name"]}
            if c.get("name")
            else {"family": c.get("lastName"), "given": c.get("firstName")}
        )
        for c in creators or []
        if isinstance(c, dict) and c.get("creatorType", "author") == role
    ]
    return names or None
