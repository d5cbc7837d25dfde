"""The real entity-resolution data sets of ../shared/data/dedupe as citeaudit References.

Shared by bench/dedupe.py (quality) and bench/dedupe_scale.py (speed, built from the same
records)."""

import csv
import html
import re
from dataclasses import dataclass
from pathlib import Path

from bench.citation_fields import (
    clean,
    names,
    page_range,
    split_title,
    split_title_head,
    split_year,
    volume,
    year_in,
)
from models.audit import Provenance, Reference
from models.csl import CSLDate, CSLItem, CSLName
from tasks.identifiers import identifiers_of

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEDUPE_DATA = SHARED_DATA / "dedupe"


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


def _issued(year: int | None) -> CSLDate | None:
    return CSLDate.from_year(year) if year else None


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
                    issued=_issued(year_in(row["year"])),
                )
                records.append(Labelled(reference(key, source, item), source, key))
    with (folder / "DBLP-ACM_perfectMapping.csv").open(encoding="iso-8859-1", newline="") as h:
        truth = {(f"DBLP2:{r['idDBLP']}", f"ACM:{r['idACM']}") for r in csv.DictReader(h)}
    return records, truth


_REPORT_TYPE = re.compile(r"\b(?:tech|report|TR)\b", re.IGNORECASE)
_THESIS_TYPE = re.compile(r"\b(?:thesis|dissertation)\b", re.IGNORECASE)


def cora_item(row: dict[str, str], prefix: str = "cora") -> CSLItem:
    """One Cora record as a CSL item: its segmented fields parsed as a reader of the reference
    list would (bench/citation_fields.py); a `type` field ("Technical Report 92-8", "PhD thesis")
    makes a report or thesis, published by the institution."""
    authors, title = split_title_head(row["author"], row["title"])
    authors, author_year = split_year(authors)
    title, authors, title_year = split_title(title, authors)
    kind = clean(row["type"])
    csl_type = (
        "thesis" if _THESIS_TYPE.search(kind) else "report" if _REPORT_TYPE.search(kind) else None
    )
    year = (
        year_in(row["year"], row["date"])
        or title_year
        or author_year
        or year_in(*(re.findall(r"\((\d{4})[a-z]?\)", row["volume"] + row["booktitle"])))
    )
    return CSLItem(
        id=f"{prefix}:{row['id']}",
        type=csl_type or "article",
        genre=kind.strip(" .,()") or None,
        title=title or None,
        author=names(authors),
        container_title=clean(row["journal"] or row["booktitle"]).strip(" .,") or None,
        publisher=clean(row["institution"] or row["publisher"]).strip(" .,") or None,
        issued=_issued(year),
        volume=volume(row["volume"]),
        page=page_range(row["pages"]),
    )


def cited(item: CSLItem, truth: str) -> Labelled:
    """A Cora citation, its own list: Cora's citations were cut out of many papers' reference
    lists, one citation of a work per paper, and do not say which paper they came from. Rules
    that read one list (two venues of one title in a list are two publications) must not take
    all of Cora for one list."""
    return Labelled(reference(item.id, item.id, item), item.id, truth)


def cora() -> list[Labelled]:
    """The 1,879 Cora citations; `label` is the true cluster key."""
    path = DEDUPE_DATA / "cora" / "jedai_coraLarge" / "cora.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        return [cited(cora_item(row), row["label"]) for row in csv.DictReader(handle)]


# A lone letter in an author list, dotted or not ("r. e. schapire", "m kearns", "d.p."): an
# initial, whatever its case. Two letters may be either ("li" a surname, "dw" initials): kept.
_LONE_LETTER = re.compile(r"(?<![\w'])[a-z](?![\w'])")


def _jedai_cora_row(row: dict[str, str]) -> dict[str, str]:
    """A JedAI Cora record in the fields of coraLarge's, for `cora_item`.

    JedAI lower-cased every field, and the reader's helpers read capitals: an initial is a
    capital ("D.", "DW"), so "blum, a., furst, m." would read as four authors, two named "a."
    and "m.".
    Only the initials get their capital back, since a lone letter is one whatever its case.
    Capitals that would take judgement stay lost, and the helpers that need them do not fire
    here: a container cut off the title (". in proceedings ..."), a title head left in the
    authors ("boostexter:"). A surname spilled into a lower-cased title ("mansour (1996).
    applying ...") is put back all the same (bench/citation_fields.py `split_title`).

    The report number or thesis kind sits in `venue` ("technical report ucsc-crl-94-33,", "phd
    thesis,"), where coraLarge has a `type`. Without a year field, a reader takes the year
    wherever the segmenter left it: the address ("san mateo, ca, 1991.") or the note ("stoc
    1988"); the note is no container, most notes are "to appear." or "submitted"."""
    venue = row["venue"]
    kind = venue if _REPORT_TYPE.search(venue) or _THESIS_TYPE.search(venue) else ""
    return {
        "id": row["Entity Id"],
        "author": _LONE_LETTER.sub(lambda m: m.group(0).upper(), row["author"]),
        "title": row["title"],
        "type": kind,
        "year": row["year"],
        "date": f"{row['month']} {row['address']} {row['note']}",
        "journal": "",
        "booktitle": "" if kind else venue,
        "volume": row["volume"],
        "pages": row["pages"],
        "institution": row["institution"],
        "publisher": row["publisher"],
    }


def cora_jedai() -> list[Labelled]:
    """The 1,295 records of JedAI's standard Cora; the true entity of a record is its connected
    component in the duplicate pairs of cora_gt.csv (a record in no pair is an entity alone)."""
    folder = DEDUPE_DATA / "cora" / "jedai_cora"
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]  # path halving: later look-ups are shorter
            node = parent[node]
        return node

    with (folder / "cora_gt.csv").open(encoding="utf-8") as handle:
        for line in filter(str.strip, handle):
            first, second = line.strip().split("|")
            parent[root(first)] = root(second)
    # Fields hold quote marks ("'gambling in a rigged casino ...,'") that are not CSV quoting.
    with (folder / "cora.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="|", quoting=csv.QUOTE_NONE))
    return [
        cited(cora_item(_jedai_cora_row(row), "cora-jedai"), root(row["Entity Id"])) for row in rows
    ]


DBLP_SCHOLAR = DEDUPE_DATA / "dblp_scholar_ditto"
DBLP_SCHOLAR_SPLITS = {"train": "train.txt.balance", "validation": "valid.txt"}
_DITTO_FIELD = re.compile(r"COL (\w+) VAL ?(.*?) ?(?=COL \w+ VAL|$)")


@dataclass(frozen=True)
class LabelledPair:
    a: str  # citation ids: the DBLP side, the Scholar side
    b: str
    same: bool  # the benchmark's label: one work


def ditto_item(key: str, record: str) -> CSLItem:
    """One side of a Ditto pair ("COL title VAL ... COL authors VAL p triantafillou , t
    papadakis COL venue VAL vldb COL year VAL 1997.0") as a CSL item, read as a reader of such a
    list would: authors split at commas, each the initials then the surname; the year wherever
    it is. The noise stays in: lower case, entities written "& hellip ;", mojibake, titles with
    a name or venue glued on are what dedupe must survive."""
    fields = {name: value.strip() for name, value in _DITTO_FIELD.findall(record)}
    authors = [a.split() for a in fields.get("authors", "").split(" , ")]
    return CSLItem(
        id=key,
        type="paper-conference",
        title=fields.get("title") or None,
        author=[CSLName(family=a[-1], given=" ".join(a[:-1]) or None) for a in authors if a],
        container_title=fields.get("venue", "").strip(" ,") or None,
        issued=_issued(year_in(fields.get("year", ""))),
    )


def dblp_scholar(path: Path) -> tuple[list[Labelled], list[LabelledPair]]:
    """The distinct records of one split (file) of Ditto's DBLP-Scholar pairs (DBLP one list; every
    Scholar record a list of its own: scraped from many papers' reference lists) and its
    labelled pairs. Records are told apart by their text: one text met in many pairs is one
    record."""
    keys: dict[tuple[str, str], str] = {}
    records: list[Labelled] = []

    def record(source: str, text: str) -> str:
        if (source, text) not in keys:
            key = keys[source, text] = f"{source}:{len(keys)}"
            own_list = source if source == "DBLP" else key
            item = ditto_item(key, text)
            records.append(Labelled(reference(key, own_list, item), source, key))
        return keys[source, text]

    pairs = []
    with path.open(encoding="utf-8") as handle:
        for line in filter(str.strip, handle):
            dblp, scholar, label = line.rstrip("\n").split("\t")
            pairs.append(
                LabelledPair(record("DBLP", dblp), record("Scholar", scholar), label == "1")
            )
    return records, pairs
