"""Crossref work JSON (a `/works` message or list item) -> RegistryRecord with a CSL item.

Choices:
- title: the main title, joined with its subtitle by ": " ("Deep learning: a review"), as
  citations usually write it; markup (`<i>`, JATS tags) is removed and entities decoded. The
  matcher also accepts the title without its subtitle.
- original-title: `original-title`, else a second `title` (with its own subtitle): Springer and
  others deposit a German or French title beside its English translation.
- title-short: `short-title`.
- issued: `issued`, else `published-print`, `published-online`, `published` (the first with a
  year); never `created`, the deposit's date (an ICDCS 2003 paper deposited in 2004, a pamphlet
  of the 1600s in 2017): a work with none of them has no year.
- flags: `updated-by` entries (newer API; sources `publisher` and `retraction-watch`) of type
  retraction/partial_retraction/withdrawal/removal -> retracted, correction/erratum/corrigendum
  -> corrected, expression_of_concern -> expression_of_concern; their DOIs are the notices.
  Legacy `update-to` entries pointing at the work itself (the notice was deposited on the same
  DOI) flag it the same way; `update-to` entries pointing elsewhere mean this work IS a notice,
  recorded in relations as e.g. `retraction-of`.

`slim_work` is the same mapping for the few fields a Crossref snapshot keeps
(tasks/snapshots/crossref.py): main title and subtitle apart, authors, year, container, volume,
issue, pages, CSL type and the notices, without building a CSL item (a dump has ~180M works).
"""

import html
import re
from typing import Any

from models.audit import Notice, NoticeKind, RegistryRecord
from models.csl import CSLItem
from tasks.identifiers import normalize_doi

CROSSREF_TO_CSL_TYPE = {
    "journal-article": "article-journal",
    "proceedings-article": "paper-conference",
    "book-chapter": "chapter",
    "book-section": "chapter",
    "book-part": "chapter",
    "book": "book",
    "edited-book": "book",
    "monograph": "book",
    "reference-book": "book",
    "book-set": "book",
    "book-series": "book",
    "book-track": "book",
    "posted-content": "article",
    "dataset": "dataset",
    "database": "dataset",
    "component": "dataset",
    "report": "report",
    "report-component": "report",
    "report-series": "report",
    "dissertation": "thesis",
    "reference-entry": "entry",
    "standard": "standard",
    "peer-review": "review",
    "journal": "periodical",
    "journal-issue": "periodical",
    "journal-volume": "periodical",
    "proceedings": "book",
    "proceedings-series": "book",
    "grant": "document",
    "other": "document",
}

RETRACTION_TYPES = frozenset({"retraction", "partial_retraction", "withdrawal", "removal"})
CORRECTION_TYPES = frozenset({"correction", "erratum", "corrigendum"})
CONCERN_TYPES = frozenset({"expression_of_concern"})
_NOTICE_KINDS: dict[str, NoticeKind] = {
    **dict.fromkeys(RETRACTION_TYPES, "retraction"),
    **dict.fromkeys(CORRECTION_TYPES, "correction"),
    **dict.fromkeys(CONCERN_TYPES, "expression_of_concern"),
}

_TAG = re.compile(r"<[^>]+>")
# A line break between a tag and a hyphen is the deposit's XML layout, not a space of the title:
# `<scp>L</scp>\n-histidine` is L-histidine.
_LAYOUT_AT_HYPHEN = re.compile(
    r"(?<=>)\s*\n\s*(?=[-\u2010\u2011])|(?<=[-\u2010\u2011])\s*\n\s*(?=<)"
)
_SPACE = re.compile(r"\s+")
_JATS_TITLE = re.compile(r"<jats:title>.*?</jats:title>", re.S)
_DATE_SOURCES = ("issued", "published-print", "published-online", "published")


def crossref_work_to_csl(work: dict[str, Any]) -> RegistryRecord:
    doi = _doi(work)
    csl = {
        "id": doi,
        "type": CROSSREF_TO_CSL_TYPE.get(str(work.get("type", "")), "article"),
        "title": _title(work),
        "original-title": first_text(work.get("original-title")) or _title(work, 1),
        "title-short": first_text(work.get("short-title")),
        "author": names_of(work.get("author")),
        "editor": names_of(work.get("editor")),
        "container-title": first_text(work.get("container-title")),
        "container-title-short": first_text(work.get("short-container-title")),
        "issued": _issued(work),
        "published-print": _date(work, "published-print"),
        "DOI": doi,
        "URL": work.get("URL"),
        "ISBN": _join(work.get("ISBN")),
        "ISSN": _join(work.get("ISSN")),
        "publisher": work.get("publisher"),
        "publisher-place": work.get("publisher-location"),
        "volume": work.get("volume"),
        "issue": work.get("issue"),
        "page": work.get("page"),
        "number": work.get("article-number"),
        "language": work.get("language"),
        "abstract": _abstract(work.get("abstract")),
    }
    item = CSLItem.from_csl({key: value for key, value in csl.items() if value is not None})
    record = RegistryRecord(
        registry="crossref", identifier=doi, item=item, relations=_relations(work)
    )
    notices, notice_of = work_notices(work, doi)
    for notice in notices:
        record.add_notice(notice)
    for relation, targets in notice_of.items():
        known = record.relations.setdefault(relation, [])
        known.extend(target for target in targets if target not in known)
    return record


def slim_work(work: dict[str, Any]) -> dict[str, Any]:
    """The fields a snapshot keeps of a work, by the rules above (`title` without its subtitle)."""
    doi = _doi(work)
    issued = _issued(work)
    return {
        "doi": doi,
        "title": nth_text(work.get("title"), 0),
        "subtitle": nth_text(work.get("subtitle"), 0),
        "authors": names_of(work.get("author")),
        "year": issued["date-parts"][0][0] if issued else None,
        "container": first_text(work.get("container-title")),
        "volume": work.get("volume"),
        "issue": work.get("issue"),
        "pages": work.get("page"),
        "type": CROSSREF_TO_CSL_TYPE.get(str(work.get("type", "")), "article"),
        "notices": work_notices(work, doi)[0] if _has_updates(work) else [],
    }


def _doi(work: dict[str, Any]) -> str:
    return doi_of(work.get("DOI", ""))


def doi_of(value: Any) -> str:
    """A work's `DOI` normalised (as given, lower-cased, if it is none by our rules)."""
    return normalize_doi(value) or str(value).lower()


def _plain(text: str) -> str:
    if "<" in text or "&" in text:  # most titles and names have neither: skip the regex
        text = html.unescape(_TAG.sub("", _LAYOUT_AT_HYPHEN.sub("", text)))
    return " ".join(text.split())


def _abstract(jats: Any) -> str | None:
    """Crossref's JATS abstract as plain text, without its "Abstract" heading; paragraphs keep a
    space between them (claim support reads the abstract sentence by sentence)."""
    if not isinstance(jats, str):
        return None
    text = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", _JATS_TITLE.sub(" ", jats)))).strip()
    return text or None


def first_text(value: Any) -> str | None:
    values = value if isinstance(value, list) else [value]
    for candidate in values:
        if isinstance(candidate, str) and candidate.strip():
            return _plain(candidate)
    return None


def _title(work: dict[str, Any], index: int = 0) -> str | None:
    """The `index`-th title with the subtitle of the same position (parallel-language titles)."""
    title = nth_text(work.get("title"), index)
    subtitle = nth_text(work.get("subtitle"), index)
    if index and not title:
        return None
    if not title:
        return subtitle
    if not subtitle or subtitle.lower() in title.lower():
        return title
    return f"{title.rstrip(':. ')}: {subtitle}"


def nth_text(value: Any, index: int) -> str | None:
    values = value if isinstance(value, list) else [value]
    texts = [v for v in values if isinstance(v, str) and v.strip()]
    return _plain(texts[index]) if index < len(texts) else None


def _join(values: Any) -> str | None:
    if isinstance(values, list):
        return ", ".join(str(v) for v in values if v) or None
    return values if isinstance(values, str) else None


def names_of(people: Any) -> list[dict[str, str]] | None:
    if not isinstance(people, list):
        return None
    names = [
        name
        for person in people
        if isinstance(person, dict)
        and (
            name := name_of(
                person.get("family"), person.get("given"), person.get("name"), person.get("suffix")
            )
        )
    ]
    return names or None


def name_of(family: Any, given: Any, literal: Any, suffix: Any = None) -> dict[str, str] | None:
    """A person's CSL name: family and given names, else the name given whole (organisations,
    consortia); None without either."""
    if family:
        name = {"family": _plain(family)}
        if given:
            name["given"] = _plain(given)
        if suffix:
            name["suffix"] = _plain(suffix)
        return name
    return {"literal": _plain(literal)} if literal else None


def _issued(work: dict[str, Any]) -> dict[str, list[list[int]]] | None:
    for source in _DATE_SOURCES:
        if found := _date(work, source):
            return found
    return None


def _date(work: dict[str, Any], source: str) -> dict[str, list[list[int]]] | None:
    first = given_parts((work.get(source) or {}).get("date-parts"))
    return {"date-parts": [first]} if first else None


def given_parts(parts: Any) -> list[Any]:
    """The parts given of a date's `date-parts` (`[[2024, null]]` -> `[2024]`)."""
    parts = parts or []
    return [p for p in (parts[0] if parts else []) if p is not None]


def _relations(work: dict[str, Any]) -> dict[str, list[str]]:
    relations: dict[str, list[str]] = {}
    for kind, targets in (work.get("relation") or {}).items():
        ids = [_relation_id(t) for t in targets if isinstance(t, dict) and t.get("id")]
        if ids:
            relations[kind] = ids
    return relations


def _relation_id(target: dict[str, Any]) -> str:
    raw = str(target["id"])
    if target.get("id-type") == "doi":
        return normalize_doi(raw) or raw.lower()
    return raw


def _update_kind(entry: dict[str, Any]) -> str:
    return re.sub(r"[\s-]+", "_", str(entry.get("type", "")).strip().lower())


def _has_updates(work: dict[str, Any]) -> bool:
    return bool(work.get("updated-by") or work.get("update-to"))


def work_notices(work: dict[str, Any], own: str) -> tuple[list[Notice], dict[str, list[str]]]:
    """The notices on the work `own` from `updated-by`/`update-to`, and the works it is itself a
    notice of (relations such as `retraction-of`)."""
    flagging: list[tuple[dict[str, Any], str | None]] = []
    notice_of: dict[str, list[str]] = {}
    for entry in work.get("updated-by") or []:
        flagging.append((entry, normalize_doi(entry.get("DOI"))))
    for entry in work.get("update-to") or []:
        update, target = _update_kind(entry), normalize_doi(entry.get("DOI"))
        if target == own:
            flagging.append((entry, None))
        elif target and update in _NOTICE_KINDS:
            targets = notice_of.setdefault(f"{update}-of", [])
            if target not in targets:
                targets.append(target)
    notices = []
    for entry, doi in flagging:
        kind = _NOTICE_KINDS.get(_update_kind(entry))
        if kind is None:
            continue  # new_version, addendum, ...: not a judgement on the work
        notice_doi = doi if doi != own else None  # a notice deposited on the work's own DOI
        notices.append(
            Notice(
                kind=kind,
                identifier=notice_doi,
                url=f"https://doi.org/{notice_doi}" if notice_doi else None,
                date=iso_date((entry.get("updated") or {}).get("date-parts")),
                source=str(entry["source"]) if entry.get("source") else None,
                reason=_reason(entry),
            )
        )
    return notices, notice_of


def iso_date(parts: Any) -> str | None:
    """`[[2024, 1, 5]]` -> `2024-01-05` (`2024-01`, `2024` when shorter)."""
    first = parts[0] if isinstance(parts, list) and parts and isinstance(parts[0], list) else []
    numbers = [int(p) for p in first[:3] if isinstance(p, int) or str(p).isdigit()]
    if not numbers:
        return None
    return "-".join([f"{numbers[0]:04d}", *(f"{n:02d}" for n in numbers[1:])])


def _reason(entry: dict[str, Any]) -> str | None:
    """The reason an update entry gives, when it gives one (Retraction Watch's `reasons`)."""
    reasons = entry.get("reasons") or entry.get("reason")
    if isinstance(reasons, list):
        reasons = "; ".join(str(r).strip("+ ") for r in reasons if str(r).strip("+ "))
    return _plain(reasons) if isinstance(reasons, str) and reasons.strip() else None
