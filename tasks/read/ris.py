"""Tagged reference exports, parsed by rispy: RIS (Scopus, Embase, Ovid, ProQuest, EndNote, Zotero,
whatever the file extension), Web of Science tagged (`PT J` ... `ER`, rispy's WokParser) and
MEDLINE/nbib (`PMID- ...`, PubMed's own export; a small rispy parser subclass, as rispy intends
for new dialects).

rispy reads a whole file but silently skips a record without its start tag and knows no line
numbers, so the text is first cut into records here (RIS and WoS end at `ER`, MEDLINE starts at
`PMID-`) and each record is parsed on its own: a record rispy cannot read becomes an InputError
with its record number and line, and the rest of the file is kept. entry_key is the record number
(1-based), with the export's own record id when it has one: `3 (ID 369)`, `1 (PMID 29424689)`.
"""

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import rispy
from rispy.parser import RisParser, WokParser

from models.audit import InputError, ReadResult, Reference
from models.csl import CSLItem, CSLName
from tasks.identifiers import normalize_doi, normalize_pmcid, normalize_pmid
from tasks.read.common import (
    csl_item,
    date_from_text,
    make_reference,
    merged,
    name_from_text,
    name_list,
    page_range,
    stream_each,
)
from tasks.read.text import UnreadableFileError, read_head, text_lines

FORMAT = "ris"

_RIS_TAG = re.compile(r"^[A-Z][A-Z0-9]  -( |$)")
_WOS_TAG = re.compile(r"^[A-Z][A-Z0-9]( |$)")
_MEDLINE_TAG = re.compile(r"^[A-Z][A-Z0-9 ]{1,3}- ")

RIS_TYPES = {
    "JOUR": "article-journal",
    "JFULL": "article-journal",
    "EJOUR": "article-journal",
    "INPR": "article-journal",
    "JOURNAL ARTICLE": "article-journal",  # EndNote writes the long name
    "MGZN": "article-magazine",
    "NEWS": "article-newspaper",
    "BOOK": "book",
    "EBOOK": "book",
    "EDBOOK": "book",
    "CHAP": "chapter",
    "ECHAP": "chapter",
    "CONF": "paper-conference",
    "CPAPER": "paper-conference",
    "THES": "thesis",
    "RPRT": "report",
    "ELEC": "webpage",
    "BLOG": "post-weblog",
    "DATA": "dataset",
    "DBASE": "dataset",
    "COMP": "software",
    "PAT": "patent",
    "UNPB": "manuscript",
    "MANSCPT": "manuscript",
    "GEN": "document",
}
_BOOKISH = frozenset({"book", "chapter", "paper-conference"})
_WOS_TYPES = {
    "J": "article-journal",
    "B": "book",
    "S": "chapter",
    "P": "patent",
    "C": "paper-conference",
}


class MedlineParser(RisParser):
    """MEDLINE/nbib: 4-character tags (`PMID- `, `FAU - `), 6-space continuation lines, records
    separated by blank lines (read as the end tag)."""

    START_TAG = "PMID"
    DEFAULT_MAPPING: ClassVar[dict[str, str]] = {
        "PMID": "pmid",
        "TI": "title",
        "FAU": "full_authors",
        "AU": "authors",
        "JT": "journal",
        "TA": "journal_abbreviation",
        "DP": "date",
        "VI": "volume",
        "IP": "issue",
        "PG": "pages",
        "LID": "location_ids",
        "AID": "article_ids",
        "PMC": "pmcid",
        "IS": "issn",
        "LA": "language",
        "PT": "publication_types",
    }
    DEFAULT_LIST_TAGS: ClassVar[list[str]] = ["FAU", "AU", "LID", "AID", "IS", "LA", "PT"]
    DEFAULT_DELIMITER_MAPPING: ClassVar[dict[str, str]] = {}

    def parse_line(self, line: str) -> tuple[str, str] | tuple[None, str]:
        if not line.strip():
            return (self.END_TAG, "")
        if _MEDLINE_TAG.match(line):
            return (line[:4].rstrip(), line[6:].strip())
        return (None, line.strip())


@dataclass(frozen=True)
class _Dialect:
    name: str
    parser: type[RisParser]
    is_tag_line: Callable[[str], bool]
    starts_record: Callable[[str], bool]  # a new record begins at this line
    ends_record: Callable[[str], bool]  # the record ends with this line
    terminator: str  # appended to a record that lacks its end line
    to_item: Callable[[dict[str, Any], str], CSLItem]
    record_id: Callable[[dict[str, Any]], str | None]


def read(paths: Sequence[Path]) -> ReadResult:
    return merged(stream(paths))


def stream(paths: Sequence[Path]) -> Iterator[ReadResult]:
    return stream_each(paths, stream_tagged_file)


def detect(path: Path, head: str) -> bool:
    return _dialect_of(head) is not None


def stream_tagged_file(path: Path) -> Iterator[ReadResult]:
    """A result per record (the file is read as it is consumed)."""
    try:
        lines = text_lines(path)
        dialect = _dialect_of(read_head(path)) or _RIS
    except UnreadableFileError as exc:
        yield ReadResult(errors=[exc.as_input_error(path)])
        return
    # Exports concatenated with `cat` carry each file's byte-order mark into the middle.
    unmarked = (line.replace("\ufeff", "") for line in lines)
    for number, (line, record) in enumerate(_records(unmarked, dialect), start=1):
        reference, error = _read_record(path, dialect, number, line, record)
        yield ReadResult(
            references=[reference] if reference else [], errors=[error] if error else []
        )


def _dialect_of(head: str) -> "_Dialect | None":
    lines = [line for line in head.lstrip("\ufeff").splitlines() if line.strip()][:50]
    if any(line.startswith("TY  -") for line in lines):
        return _RIS
    if any(line.startswith("PMID-") for line in lines):
        return _MEDLINE
    if any(line.startswith(("PT ", "FN ")) for line in lines):
        return _WOS
    return None


def _records(lines: Iterable[str], dialect: _Dialect) -> Iterator[tuple[int, list[str]]]:
    """(1-based first line, lines) of each record."""
    current: list[str] = []
    first = 1
    for number, line in enumerate(lines, start=1):
        if dialect.starts_record(line) and _is_record(current, dialect):
            yield first, current
            current = []
        if not current:
            if not line.strip():
                continue
            first = number
        current.append(line)
        if dialect.ends_record(line):
            if _is_record(current, dialect):
                yield first, current
            current = []
    if _is_record(current, dialect):
        yield first, current


def _is_record(lines: list[str], dialect: _Dialect) -> bool:
    """A record has its start tag or ends with the end tag (then it is a record that lost its
    start tag: an error). Other stretches are stray lines between records, such as Ovid's
    `NL  - ` line and link after `ER`, or a WoS file's FN/VR/EF header lines."""
    if not lines:
        return False
    start = dialect.parser.START_TAG
    has_start = any(line.startswith(start) and dialect.is_tag_line(line) for line in lines)
    ends = dialect.ends_record(lines[-1]) and any(
        dialect.is_tag_line(line) and not dialect.ends_record(line) for line in lines
    )
    return has_start or ends


def _read_record(
    path: Path, dialect: _Dialect, number: int, line: int, lines: list[str]
) -> tuple[Reference | None, InputError | None]:
    text = "\n".join(lines)
    if not dialect.ends_record(lines[-1]):
        text += "\n" + dialect.terminator
    records = rispy.loads(text, implementation=dialect.parser, skip_unknown_tags=True)
    if len(records) != 1:
        reason = f"{dialect.name} record {number} has no {dialect.parser.START_TAG} line"
        return None, InputError(
            source_file=str(path), entry_key=str(number), line=line, reason=reason
        )
    (record,) = records
    record_id = dialect.record_id(record)
    key = f"{number} ({record_id})" if record_id else str(number)
    item = dialect.to_item(record, key)
    reference = make_reference(item, path, key, line)
    if dialect is _MEDLINE:
        reference.ids.pmid = reference.ids.pmid or normalize_pmid(record.get("pmid"))
    return reference, None


def _first(record: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = record.get(key)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v.strip()), None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _names(values: object) -> list[CSLName] | None:
    if not isinstance(values, list):
        return None
    return name_list([name for value in values if (name := name_from_text(str(value)))])


def _ris_item(record: dict[str, Any], key: str) -> CSLItem:
    kind = str(record.get("type_of_reference") or "").strip().upper()
    csl_type = RIS_TYPES.get(kind, "article-journal" if kind.startswith("JOUR") else "document")
    bookish = csl_type in _BOOKISH
    serial = _first(record, "secondary_title", "journal_name", "alternate_title3")
    standard_number = _first(record, "issn")
    return csl_item(
        {
            "id": key,
            "type": csl_type,
            "author": _names((record.get("authors") or []) + (record.get("first_authors") or [])),
            "editor": _names(record.get("secondary_authors")) if bookish else None,
            "title": _first(record, "title", "primary_title", "short_title"),
            "container-title": None if csl_type == "book" else serial,
            "container-title-short": _first(record, "alternate_title2", "alternate_title1"),
            "collection-title": serial if csl_type == "book" else _first(record, "tertiary_title"),
            "issued": date_from_text(_first(record, "year", "publication_year", "date")),
            "DOI": _first(record, "doi"),
            "PMID": _ris_pmid(record),
            "URL": _first(record, "urls"),
            "ISBN": standard_number if bookish else None,
            "ISSN": None if bookish else standard_number,
            "publisher": _first(record, "publisher"),
            "publisher-place": _first(record, "place_published"),
            "volume": _first(record, "volume"),
            "issue": _first(record, "number"),
            # EndNote's C7, an article's article number (a custom field elsewhere)
            "number": _first(record, "custom7") if csl_type.startswith("article") else None,
            "page": page_range(_first(record, "start_page"), _first(record, "end_page")),
            "edition": _first(record, "edition"),
            "language": _first(record, "language"),
        }
    )


def _ris_pmid(record: dict[str, Any]) -> str | None:
    """PubMed-derived exports (EndNote, Zotero) keep the PMID in AN; Scopus keeps it in C2."""
    provider = " ".join(
        str(record.get(k) or "") for k in ("database_provider", "name_of_database")
    ).lower()
    if any(name in provider for name in ("nlm", "pubmed", "medline")):
        return normalize_pmid(_first(record, "accession_number"))
    if "scopus" in provider:
        return normalize_pmid(_first(record, "custom2"))
    return None


def _wos_item(record: dict[str, Any], key: str) -> CSLItem:
    kind = str(record.get("publication_type") or "").strip().upper()
    csl_type = _WOS_TYPES.get(kind, "document")
    if csl_type == "paper-conference" or _first(record, "conference_title"):
        csl_type = "paper-conference"
    pages = _first(record, "article_number")
    return csl_item(
        {
            "id": key,
            "type": csl_type,
            "author": _names(record.get("author_full_name") or record.get("authors")),
            "editor": _names(record.get("editors")),
            "title": _first(record, "document_title"),
            "container-title": _first(record, "publication_name"),
            "container-title-short": _first(record, "iso_source_abbreviation"),
            "collection-title": _first(record, "book_series_title"),
            "event-title": _first(record, "conference_title"),
            "issued": date_from_text(_first(record, "publication_year")),
            "DOI": _first(record, "doi"),
            "PMID": _first(record, "pubmed_id"),
            "ISBN": _first(record, "isbn"),
            "ISSN": _first(record, "issn", "eissn"),
            "publisher": _first(record, "publisher"),
            "publisher-place": _first(record, "publisher_city"),
            "volume": _first(record, "volume"),
            "issue": _first(record, "issue"),
            "page": page_range(_first(record, "beginning_page"), _first(record, "ending_page"))
            or pages,
            "language": _first(record, "language"),
        }
    )


def _medline_item(record: dict[str, Any], key: str) -> CSLItem:
    ids = [str(v) for v in (record.get("location_ids") or []) + (record.get("article_ids") or [])]
    doi = next((normalize_doi(v) for v in ids if v.endswith("[doi]")), None)
    return csl_item(
        {
            "id": key,
            "type": "article-journal",
            "author": _names(record.get("full_authors") or record.get("authors")),
            "title": _first(record, "title"),
            "container-title": _first(record, "journal"),
            "container-title-short": _first(record, "journal_abbreviation"),
            "issued": date_from_text(_first(record, "date")),
            "DOI": doi,
            "PMID": _first(record, "pmid"),
            "PMCID": normalize_pmcid(_first(record, "pmcid")),
            "ISSN": _first(record, "issn"),
            "volume": _first(record, "volume"),
            "issue": _first(record, "issue"),
            "page": _first(record, "pages"),
            "language": _first(record, "language"),
        }
    )


_RIS = _Dialect(
    name="RIS",
    parser=RisParser,
    is_tag_line=lambda line: _RIS_TAG.match(line) is not None,
    starts_record=lambda line: line.startswith("TY  -"),  # also ends one that lost its ER
    ends_record=lambda line: line.startswith("ER  -"),
    terminator="ER  - ",
    to_item=_ris_item,
    record_id=lambda record: f"ID {v}" if (v := _first(record, "id")) else None,
)
_WOS = _Dialect(
    name="Web of Science",
    parser=WokParser,
    is_tag_line=lambda line: _WOS_TAG.match(line) is not None,
    starts_record=lambda line: line.startswith("PT "),
    ends_record=lambda line: line.rstrip() == "ER",
    terminator="ER",
    to_item=_wos_item,
    record_id=lambda record: v if (v := _first(record, "accession_number")) else None,
)
_MEDLINE = _Dialect(
    name="MEDLINE",
    parser=MedlineParser,
    is_tag_line=lambda line: _MEDLINE_TAG.match(line) is not None,
    starts_record=lambda line: line.startswith("PMID-"),
    ends_record=lambda line: False,
    terminator="",
    to_item=_medline_item,
    record_id=lambda record: f"PMID {v}" if (v := _first(record, "pmid")) else None,
)
