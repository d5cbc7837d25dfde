"""The real entity-resolution data sets of ../shared/data/dedupe as citeaudit References.

Shared by bench/dedupe.py (quality) and bench/dedupe_scale.py (speed, built from the same
records)."""

import csv
import html
import re
from dataclasses import dataclass
from pathlib import Path

from models.audit import Provenance, Reference
from models.csl import CSLDate, CSLItem, CSLName
from tasks.identifiers import identifiers_of

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEDUPE_DATA = SHARED_DATA / "dedupe"
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_INITIALS = re.compile(r"^(?:[A-Za-z]{1,2}\.?\s*-?)+$")


@dataclass(frozen=True)
class Labelled:
    reference: Reference
    source: str  # which list the record came from
    truth: str  # the true entity: all records with one truth are one work


def reference(key: str, source: str, item: CSLItem) -> Reference:
    return Reference(
        citation_id=key,
        item=item,
        provenance=Provenance(source_file=source, entry_key=key),
        ids=identifiers_of(item),
    )


def names(authors: str) -> list[CSLName]:
    """`A. Smith, B. Jones and C. Li`, `Smith, A. & Jones, B.` -> CSL names, first author first.

    Free-text author lists are ambiguous; this is good enough to find the first author's
    surname, which is all dedupe reads besides the initials."""
    text = re.sub(r"\s+", " ", html.unescape(authors)).strip(" .,;")
    chunks = [c.strip(" .,") for c in re.split(r"\s*(?:;|&|\band\b|,\s*and\b)\s*", text)]
    result: list[CSLName] = []
    for chunk in filter(None, chunks):
        parts = [p.strip() for p in chunk.split(",") if p.strip()]
        while parts:
            if len(parts) > 1 and _INITIALS.match(parts[1]) and " " not in parts[0].strip():
                result.append(CSLName(family=parts[0], given=parts[1]))
                parts = parts[2:]
            else:
                words = parts[0].split()
                result.append(CSLName(family=words[-1], given=" ".join(words[:-1]) or None))
                parts = parts[1:]
    return result


def _year(text: str) -> CSLDate | None:
    match = _YEAR.search(text or "")
    return CSLDate.from_year(int(match.group(1))) if match else None


def dblp_acm() -> tuple[list[Labelled], set[tuple[str, str]]]:
    """DBLP2 + ACM records (ISO-8859-1), and the true cross-source pairs (DBLP id, ACM id)."""
    folder = DEDUPE_DATA / "dblp_acm_leipzig"
    records: list[Labelled] = []
    for source in ("DBLP2", "ACM"):
        with (folder / f"{source}.csv").open(encoding="iso-8859-1", newline="") as handle:
            for row in csv.DictReader(handle):
                key = f"{source}:{row['id']}"
                item = CSLItem(
                    id=key,
                    type="paper-conference",
                    title=html.unescape(row["title"]),
                    author=names(row["authors"]),
                    container_title=html.unescape(row["venue"]),
                    issued=_year(row["year"]),
                )
                records.append(Labelled(reference(key, source, item), source, key))
    with (folder / "DBLP-ACM_perfectMapping.csv").open(encoding="iso-8859-1", newline="") as h:
        truth = {(f"DBLP2:{r['idDBLP']}", f"ACM:{r['idACM']}") for r in csv.DictReader(h)}
    return records, truth


def cora() -> list[Labelled]:
    """The 1,879 Cora citations; `label` is the true cluster key."""
    path = DEDUPE_DATA / "cora" / "jedai_coraLarge" / "cora.csv"
    records = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            key = f"cora:{row['id']}"
            venue = row["journal"] or row["booktitle"] or row["institution"] or row["publisher"]
            item = CSLItem(
                id=key,
                title=row["title"].strip(" .,") or None,
                author=names(row["author"]),
                container_title=venue.strip(" .,") or None,
                issued=_year(row["year"] or row["date"]),
                volume=row["volume"].strip(" .,") or None,
                page=row["pages"].strip(" .,") or None,
            )
            records.append(Labelled(reference(key, "cora", item), "cora", row["label"]))
    return records
