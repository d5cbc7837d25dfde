"""Reference exports: BibTeX (bibtexparser v2), RIS (rispy) and CSL-JSON.

Each returns a string; the store module writes `references.{bib,ris,json}`. The type tables are
deliberately small: anything unmapped falls back to the format's generic type.
"""

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import bibtexparser
import rispy
from bibtexparser import model
from pylatexenc.latexencode import UnicodeToLatexEncoder

from models.csl import CSLDate, CSLItem, CSLName, named

CSL_TO_BIBTEX: dict[str, str] = {
    "article-journal": "article",
    "article-magazine": "article",
    "article-newspaper": "article",
    "article": "article",
    "book": "book",
    "chapter": "incollection",
    "entry-encyclopedia": "incollection",
    "entry-dictionary": "incollection",
    "paper-conference": "inproceedings",
    "report": "techreport",
    "thesis": "phdthesis",
    "manuscript": "unpublished",
}
BIBTEX_FALLBACK = "misc"

CSL_TO_RIS: dict[str, str] = {
    "article-journal": "JOUR",
    "article-magazine": "MGZN",
    "article-newspaper": "NEWS",
    "book": "BOOK",
    "chapter": "CHAP",
    "entry-encyclopedia": "ENCYC",
    "entry-dictionary": "DICT",
    "paper-conference": "CPAPER",
    "report": "RPRT",
    "thesis": "THES",
    "webpage": "ELEC",
    "dataset": "DATA",
    "map": "MAP",
    "broadcast": "MPCT",
    "manuscript": "UNPB",
}
RIS_FALLBACK = "GEN"

# Where CSL's container-title goes in BibTeX: journals for articles, book titles otherwise.
_BOOKTITLE_TYPES = {"incollection", "inproceedings"}
# Who published a report or thesis is, in BibTeX, its institution or school.
_PUBLISHER_FIELD = {"techreport": "institution", "phdthesis": "school", "mastersthesis": "school"}
_KEY_STOPWORDS = {"a", "an", "the", "on", "of", "in", "for", "and", "to", "with", "from", "at"}
# Fields that hold URLs or identifiers, written verbatim (LaTeX-escaping `%` would break them).
_VERBATIM = {"doi", "url", "pmid", "pmcid", "isbn", "issn"}

_LATEX = UnicodeToLatexEncoder(unknown_char_policy="keep", unknown_char_warning=False)


def to_bibtex(items: Sequence[CSLItem]) -> str:
    """A .bib file: one entry per item, unique stable keys like `smith2023deep`."""
    library = bibtexparser.Library()
    for item, key in zip(items, citation_keys(items), strict=True):
        library.add(_bibtex_entry(item, key))
    return bibtexparser.write_string(library)


def citation_keys(items: Sequence[CSLItem]) -> list[str]:
    """`author year firstword`, ASCII lower-case; repeats get `a`, `b`, ... in input order."""
    keys: list[str] = []
    taken: set[str] = set()
    for item in items:
        base = _key_base(item)
        key, suffix = base, 0
        while key in taken:
            key = base + _letters(suffix)
            suffix += 1
        taken.add(key)
        keys.append(key)
    return keys


def _key_base(item: CSLItem) -> str:
    author = _ascii_word(item.first_author_family() or "") or "anon"
    year = str(item.year()) if item.year() else "nd"
    words = [_ascii_word(w) for w in (item.title or "").split()]
    first = next((w for w in words if w and w not in _KEY_STOPWORDS), "")
    return f"{author}{year}{first}"


def _ascii_word(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", folded.lower())


def _letters(n: int) -> str:
    """0 -> a, 25 -> z, 26 -> aa: enough suffixes for any library."""
    out = ""
    n += 1
    while n:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


def _bibtex_entry(item: CSLItem, key: str) -> model.Entry:
    entry_type = CSL_TO_BIBTEX.get(item.type, BIBTEX_FALLBACK)
    if entry_type == "phdthesis" and "master" in (item.genre or "").lower():
        entry_type = "mastersthesis"
    container = "booktitle" if entry_type in _BOOKTITLE_TYPES else "journal"
    fields: dict[str, str | None] = {
        "author": _bibtex_names(item.author),
        "editor": _bibtex_names(item.editor),
        "title": _latex_text(item.title),
        container: _latex_text(item.container_title),
        "series": _latex_text(item.collection_title),
        "year": str(item.year()) if item.year() else None,
        "month": _month(item.issued),
        "volume": _latex_text(item.volume),
        "number": _latex_text(item.issue or item.number),
        "pages": _latex_text(re.sub(r"\s*[-–—]+\s*", "--", item.page)) if item.page else None,
        "edition": _latex_text(item.edition),
        _PUBLISHER_FIELD.get(entry_type, "publisher"): _latex_text(item.publisher),
        "address": _latex_text(item.publisher_place),
        "doi": item.DOI,
        "url": item.URL,
        "isbn": item.ISBN,
        "issn": item.ISSN,
        "pmid": item.PMID,
        "pmcid": item.PMCID,
        "language": _latex_text(item.language),
        "note": _latex_text(item.note),
        "abstract": _latex_text(item.abstract),
    }
    return model.Entry(
        entry_type, key, [model.Field(name, value) for name, value in fields.items() if value]
    )


def _latex_text(value: str | None) -> str | None:
    return _LATEX.unicode_to_latex(value) if value else None


def _bibtex_names(names: list[CSLName] | None) -> str | None:
    """`Family, Given and ...`; organisations braced so BibTeX does not split them; the et-al
    marker as BibTeX's own `and others`."""
    if not named(names):
        return None
    parts = []
    for name in names or []:
        if name.is_et_al():
            parts.append("others")
        elif name.family:
            family = " ".join(p for p in (name.non_dropping_particle, name.family) if p)
            given = " ".join(p for p in (name.given, name.dropping_particle) if p)
            text = _LATEX.unicode_to_latex(family)
            if name.suffix:
                text += ", " + _LATEX.unicode_to_latex(name.suffix)
            parts.append(text + (", " + _LATEX.unicode_to_latex(given) if given else ""))
        elif name.literal or name.given:
            parts.append("{" + _LATEX.unicode_to_latex(name.literal or name.given or "") + "}")
    return " and ".join(parts) or None


def _month(date: CSLDate | None) -> str | None:
    if not date or not date.date_parts or len(date.date_parts[0]) < 2:
        return None
    month = str(date.date_parts[0][1]).strip()
    return month if month.isdigit() and 1 <= int(month) <= 12 else None


class _StandardRisWriter(rispy.RisWriter):
    """rispy writes a `1.` counter line before each record; plain RIS has none."""

    def set_header(self, count: int) -> str:
        return ""


def to_ris(items: Sequence[CSLItem]) -> str:
    records = [_ris_record(item) for item in items]
    return str(rispy.dumps(records, implementation=_StandardRisWriter))


def _ris_record(item: CSLItem) -> dict[str, Any]:
    start, _, end = (item.page or "").partition("-")
    record: dict[str, Any] = {
        "type_of_reference": CSL_TO_RIS.get(item.type, RIS_FALLBACK),
        "id": item.id,
        # RIS has no et-al marker: an "et al." AU line would import as a person.
        "authors": [_ris_name(n) for n in named(item.author)],
        "secondary_authors": [_ris_name(n) for n in named(item.editor)],
        "title": item.title,
        "secondary_title": item.container_title,
        "journal_name": item.container_title_short,
        "tertiary_title": item.collection_title,
        "year": str(item.year()) if item.year() else None,
        "date": _ris_date(item.issued),
        "volume": item.volume,
        "number": item.issue or item.number,
        "start_page": start.strip() or None,
        "end_page": end.strip("-– ") or None,
        "edition": item.edition,
        "publisher": item.publisher,
        "place_published": item.publisher_place,
        "doi": item.DOI,
        "urls": [item.URL] if item.URL else [],
        "issn": item.ISSN or item.ISBN,
        "language": item.language,
        "abstract": item.abstract,
        "notes": [item.note] if item.note else [],
    }
    return {tag: value for tag, value in record.items() if value}


def _ris_name(name: CSLName) -> str:
    if name.family:
        return ", ".join(p for p in (name.family, name.given, name.suffix) if p)
    return name.literal or name.given or ""


def _ris_date(date: CSLDate | None) -> str | None:
    """RIS DA is `YYYY/MM/DD` with empty parts allowed."""
    if not date or not date.date_parts or not date.date_parts[0]:
        return None
    parts = [str(p).strip() for p in date.date_parts[0][:3]]
    if not parts[0].isdigit():
        return None
    parts += [""] * (3 - len(parts))
    return "/".join(p.zfill(2) if i and p else p for i, p in enumerate(parts))


def to_csl_json(items: Sequence[CSLItem]) -> str:
    return json.dumps([item.to_csl() for item in items], ensure_ascii=False, indent=2) + "\n"
