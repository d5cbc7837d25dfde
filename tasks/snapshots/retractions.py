"""Retraction Watch's CSV (as Crossref distributes it) -> the `notices` table.

One row of the CSV is one notice (a retraction, correction, expression of concern,
reinstatement) about one original paper; a paper with two notices has two rows.

| CSV column                | notices column | how                                             |
|---------------------------|----------------|-------------------------------------------------|
| Record ID                 | id             | as given; a row without one is a broken row     |
| OriginalPaperDOI          | doi            | percent-decoded, lower case; `unavailable`: none |
| OriginalPaperPubMedID     | pmid           | digits; `0` (the CSV's "none"): none            |
| Title                     | title          | as given                                        |
| RetractionNature          | nature         | `Expression of concern`: `expression_of_concern` |
| RetractionDate            | date           | `3/8/2011 0:00` (month first) or `2011-03-08`   |
| RetractionDOI, ...PubMedID | notice_doi, notice_pmid | as doi and pmid                        |
| Reason                    | reason         | `+Fraud;+Error;`: `Fraud; Error`                |

The header is checked by name before any row is read: a column gone, renamed or new fails the
build in one line naming the file and the columns (the export's trailing comma, an empty last
column name, is no column). Columns are read by name, so their order may change.
A broken row (a field count other than the header's, no Record ID, a field longer than the csv
module's limit of 128 KB) is skipped, counted and named with its line in the build's summary;
a date that does not parse leaves the date empty and is reported too (a log warning). A line
longer than LINE_LIMIT refuses the file (tasks/snapshots/bounded.py).
The file is read as UTF-8 (a BOM dropped); a file that is not UTF-8 is read as Windows-1252, as
some of Crossref's earlier exports were.
"""

import codecs
import csv
import logging
import re
from collections.abc import Generator, Iterator
from datetime import date
from pathlib import Path

import pyarrow as pa

from tasks.identifiers import normalize_doi, normalize_pmid
from tasks.snapshots.bounded import MB, chunks, lines
from tasks.snapshots.schema import NOTICES, NOTICES_TABLE, Skipped, in_batches
from tasks.snapshots.store import Builder, SnapshotFormatError

log = logging.getLogger(__name__)


COLUMNS = (
    "Record ID",
    "Title",
    "Subject",
    "Institution",
    "Journal",
    "Publisher",
    "Country",
    "Author",
    "URLS",
    "ArticleType",
    "RetractionDate",
    "RetractionDOI",
    "RetractionPubMedID",
    "OriginalPaperDate",
    "OriginalPaperDOI",
    "OriginalPaperPubMedID",
    "RetractionNature",
    "Reason",
    "Paywalled",
    "Notes",
)

LINE_LIMIT = 8 * MB  # a line of the CSV (a row is well under 1 KB); a longer one refuses the file

_US_DATE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_NATURE = re.compile(r"[\s-]+")
_ABSENT = frozenset({"", "0", "unavailable", "n/a", "na", "none", "null"})


def read(path: Path) -> Generator[pa.RecordBatch, None, Skipped]:
    """The notices of one Retraction Watch CSV, in batches of the notices schema; returns the
    broken rows it skipped."""
    return (yield from in_batches(read_notices(path), NOTICES))


def read_notices(path: Path) -> Generator[dict[str, object], None, Skipped]:
    """The notices of the CSV at `path`, one dict per good row, in the file's order; returns
    the broken rows it skipped, each named by its line."""
    skipped = Skipped()
    reader = csv.reader(_text_lines(path), strict=False)
    names = [name.strip() for name in next(reader, [])]
    while names and not names[-1]:  # the export ends each line with a comma
        names.pop()
    missing = [c for c in COLUMNS if c not in names]
    new = [n for n in names if n not in COLUMNS]
    if missing or new:
        changed = [f"no {', '.join(missing)}"] if missing else []
        changed += [f"new {', '.join(new)}"] if new else []
        raise SnapshotFormatError(path, "Retraction Watch's columns changed: " + "; ".join(changed))
    at = {name: i for i, name in enumerate(names)}
    end = reader.line_num
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # a field past the csv module's limit (128 KB)
            line, end = end + 1, reader.line_num
            skipped.add(f"{path}:{line}: broken row skipped: {exc}")
            continue
        line, end = end + 1, reader.line_num  # a quoted newline spans lines: its first
        if not any(f.strip() for f in fields):
            continue  # a blank line
        while len(fields) > len(names) and not fields[-1]:
            fields = fields[:-1]
        if len(fields) != len(names):
            what = f"{len(fields)} fields, the header has {len(names)}"
            skipped.add(f"{path}:{line}: broken row skipped: {what}")
            continue
        row = {name: fields[i].strip() for name, i in at.items()}
        if not row["Record ID"]:
            skipped.add(f"{path}:{line}: broken row skipped: no Record ID")
            continue
        yield _notice(row, f"{path}:{line}")
    return skipped


def _notice(row: dict[str, str], where: str) -> dict[str, object]:
    when = parse_date(row["RetractionDate"])
    if when is None and row["RetractionDate"]:
        log.warning("%s: RetractionDate %r is no date; left empty", where, row["RetractionDate"])
    return {
        "id": row["Record ID"],
        "doi": _doi(row["OriginalPaperDOI"]),
        "pmid": _pmid(row["OriginalPaperPubMedID"]),
        "title": row["Title"] or None,
        "nature": _NATURE.sub("_", row["RetractionNature"].strip().lower()) or None,
        "date": when,
        "notice_doi": _doi(row["RetractionDOI"]),
        "notice_pmid": _pmid(row["RetractionPubMedID"]),
        "reason": reasons(row["Reason"]),
    }


def parse_date(text: str) -> date | None:
    """`3/8/2011 0:00` (month first, as the export writes it) or `2011-03-08`; None if neither."""
    text = text.strip()
    try:
        if m := _US_DATE.match(text):
            return date(int(m[3]), int(m[1]), int(m[2]))
        if m := _ISO_DATE.match(text):
            return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:  # 2/30/2011
        return None
    return None


def reasons(text: str) -> str | None:
    """`+Error in Data;+Plagiarism of Article;` -> `Error in Data; Plagiarism of Article`."""
    found = [part.strip().lstrip("+").strip() for part in text.split(";")]
    return "; ".join(part for part in found if part) or None


def _doi(text: str) -> str | None:
    return None if text.strip().lower() in _ABSENT else normalize_doi(text)


def _pmid(text: str) -> str | None:
    return None if text.strip().lower() in _ABSENT else normalize_pmid(text)


def _text_lines(path: Path) -> Iterator[str]:
    """The file's lines as text (each with its line end: the csv module keeps a quoted newline
    in its field): UTF-8 when every byte of it is (checked in chunks), else Windows-1252."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    encoding = "utf-8-sig"
    try:
        for chunk in chunks(path):
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        encoding = "cp1252"
        log.warning("%s is not UTF-8: read as Windows-1252", path)
    for line in lines(path, LINE_LIMIT):
        yield line.decode(encoding, errors="replace")


BUILDER = Builder("retractions", NOTICES_TABLE, read)
