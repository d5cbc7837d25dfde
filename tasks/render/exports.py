"""Reference exports: BibTeX (bibtexparser v2), RIS (rispy) and CSL-JSON.

Each returns a string; the store module writes `references.{bib,ris,json}`. The type tables are
deliberately small: anything unmapped falls back to the format's generic type.

An entry keeps the citation key its input gave it (a `\\cite{}` in the user's paper must still
resolve); only an entry without one gets a made-up key. Each entry carries the audit's outcome:
BibTeX `keywords = {citeaudit:STATUS}` and an `@comment` with the reason before the entry, RIS
`KW`/`N1`, CSL-JSON `note`. Every value is escaped for its format: RIS values on one line (a
newline would start a forged record), BibTeX braces balanced and URLs percent-encoded.

Duplicates merged into one work keep every input key in references.bib (a paper that `\\cite`s
the other key must still build): the entry carries them as BibLaTeX's `ids = {b, c}` (biber
resolves a citation of an alias to the entry), and each gets a one-line alias entry for plain
BibTeX, `@article{b, crossref = {a}}`, written before the entry (BibTeX wants a cross-referenced
entry after those that name it). BibTeX copies every field the alias lacks from `a`, so `\\cite{b}`
resolves to the same work; the standard styles print a cross-referencing article as "In [a]".
The readers read such an entry (crossref its only field) as another key of `a`, not a citation.
biber, meeting both, warns "Citekey alias 'b' is also a real entry key, skipping" and uses the
alias entry (biblatex inherits every field through crossref), so `\\cite{b}` resolves with either
tool; a biber user who wants one bibliography entry for the work deletes the alias entries.
RIS and CSL-JSON have no aliases: there each such key is a record of its own, the work's record
noting the key it is the same work as, so no input entry vanishes from an export.
"""

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, TextIO

import bibtexparser
import rispy
from bibtexparser import model
from bibtexparser.middlewares import default_unparse_stack
from pylatexenc.latexencode import UnicodeToLatexEncoder

from models.csl import CSLDate, CSLItem, CSLName, named
from tasks.digests import StringSet
from tasks.textnorm import STOPWORDS

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
# Fields that hold URLs or identifiers, written verbatim (LaTeX-escaping `%` would break them).
_VERBATIM = {"doi", "url", "pmid", "pmcid", "isbn", "issn"}

_UNPARSE = default_unparse_stack(allow_inplace_modification=True)
_LATEX = UnicodeToLatexEncoder(unknown_char_policy="keep", unknown_char_warning=False)
# The ASCII characters the encoder rewrites; text of other ASCII characters passes unchanged, so
# most fields skip the encoder (a third of a large job's export time went to it).
_LATEX_ASCII = frozenset(c for c in map(chr, range(128)) if _LATEX.unicode_to_latex(c) != c)
_REWRITTEN = re.compile(f"[^\\x00-\\x7f]|[{re.escape(''.join(sorted(_LATEX_ASCII)))}]")
# Line breaks of every kind: in RIS each one would start a new tag line.
_LINE_BREAK = re.compile(r"[\r\n\v\f\x85\u2028\u2029]+")
_KEY = re.compile(r"[^\s{}(),=#%\"'\\~\[\]]{1,200}")


@dataclass(frozen=True)
class ExportEntry:
    """One work as the exports write it: its metadata, the citation key its input gave it (None:
    the input had none, one is made) and the audit's outcome for it."""

    item: CSLItem
    key: str | None = None
    status: str | None = None
    reason: str | None = None
    aliases: tuple[str, ...] = ()  # the input keys of the duplicates merged into this work

    def outcome(self) -> str | None:
        if not self.status:
            return None
        return f"citeaudit: {self.status}" + (f". {self.reason}" if self.reason else "")


Exportable = CSLItem | ExportEntry


def _entries(items: Sequence[Exportable]) -> list[ExportEntry]:
    """Bare CSL items keep their own ids as keys, where BibTeX can take them."""
    return [i if isinstance(i, ExportEntry) else ExportEntry(i, usable_key(i.id)) for i in items]


def usable_key(text: str | None, *, numeric: bool = False) -> str | None:
    """The text if BibTeX, RIS and pandoc can all use it as a citation key, else None: a key with
    spaces or braces (`3 (ID 369)`, `[4]`) is no key, nor a bare number (a line or record
    number) unless the caller knows the user gave it (`numeric`)."""
    if text and _KEY.fullmatch(text) and (numeric or not text.isdigit()):
        return text
    return None


def to_bibtex(items: Sequence[Exportable], keys: Sequence[str] | None = None) -> str:
    """A .bib file: one entry per item under its input's key, else a key like `smith2023deep`
    (`keys`: the items' keys, made by `assign_keys` when a job is written in batches)."""
    entries = _entries(items)
    keys = keys or citation_keys(entries)
    library = bibtexparser.Library()
    for entry, key, aliases in _with_aliases(entries, keys):
        if outcome := entry.outcome():
            library.add(model.ExplicitComment(_balanced(f"{key}: {_one_line(outcome)}")))
        written = _bibtex_entry(entry, key, aliases)
        for alias in aliases:
            library.add(model.Entry(written.entry_type, alias, [model.Field("crossref", key)]))
        library.add(written)
    # The library is ours and thrown away: no deep copy of every block before writing.
    return bibtexparser.write_string(library, unparse_stack=_UNPARSE)


def _with_aliases(
    entries: Sequence[ExportEntry], keys: Sequence[str]
) -> list[tuple[ExportEntry, str, list[str]]]:
    """Each entry with its key and its aliases that are no other entry's key (nor an earlier
    entry's alias)."""
    taken = set(keys)
    out = []
    for entry, key in zip(entries, keys, strict=True):
        aliases = [alias for alias in dict.fromkeys(entry.aliases) if alias not in taken]
        taken.update(aliases)
        out.append((entry, key, aliases))
    return out


def _records(entries: Sequence[ExportEntry], keys: Sequence[str]) -> list[tuple[ExportEntry, str]]:
    """Each entry under its key, then under each alias as a record of its own (RIS and CSL-JSON
    have no aliases), noting the key it is the same work as."""
    records = []
    for entry, key, aliases in _with_aliases(entries, keys):
        records.append((entry, key))
        same = f"the same work as {key}"
        reason = f"{entry.reason}; {same}" if entry.reason else same
        records += [(replace(entry, key=a, reason=reason, aliases=()), a) for a in aliases]
    return records


# What the writers put between two records: a job written in batches joins its batches so.
_BIBTEX_BETWEEN, _RIS_BETWEEN, _CSL_JSON_BETWEEN = "\n\n", "\n", ",\n"

KeyRequest = tuple[str | None, str]  # (the input's own key or None, the base of a made-up one)


def key_requests(items: Sequence[Exportable]) -> list[KeyRequest]:
    """What `assign_keys` needs of each item: a few words, not the item."""
    return [(e.key, e.key or _key_base(e.item)) for e in _entries(items)]


def citation_keys(items: Sequence[Exportable]) -> list[str]:
    """Each item's key (`assign_keys`)."""
    return assign_keys(key_requests(items))


def assign_keys(requests: Sequence[KeyRequest]) -> list[str]:
    """The input's own keys first (a repeated one gets a suffix); the others `author year
    firstword`, ASCII lower-case, repeats getting `a`, `b`, ... in input order. Linear in the
    number of items however many share a base (20k DOI-only items are all `anonnd...`)."""
    keys = CitationKeys(set())
    for request in requests:
        keys.reserve(request)
    return [keys.key(request) for request in requests]


class CitationKeys:
    """`assign_keys` an item at a time, for a job written in batches: every item's own key is
    reserved first (`reserve`, in input order), then each item gets its key (`key`, in the same
    order). It holds the keys taken (`taken`: a DigestMap for a bulk import's million), the
    positions of own keys an earlier item has and where each repeated base got to."""

    def __init__(self, taken: StringSet) -> None:
        self.taken = taken
        self.repeated: set[int] = set()
        self.next_suffix: dict[str, int] = {}
        self.reserved = self.given = 0

    def reserve(self, request: KeyRequest) -> None:
        own = request[0]
        if own and own in self.taken:
            self.repeated.add(self.reserved)
        elif own:
            self.taken.add(own)
        self.reserved += 1

    def key(self, request: KeyRequest) -> str:
        own, base = request
        position, self.given = self.given, self.given + 1
        if own and position not in self.repeated:
            return own
        return _unused_key(base, self.taken, self.next_suffix)


def _unused_key(base: str, taken: StringSet, next_suffix: dict[str, int]) -> str:
    """`base`, else `base` + the next suffix not taken; each base remembers where it got to."""
    key, suffix = base, next_suffix.get(base, 0)
    while key in taken:
        key = base + _letters(suffix)
        suffix += 1
    if suffix:  # a base never taken before needs no entry (a million distinct ones)
        next_suffix[base] = suffix
    taken.add(key)
    return key


def _key_base(item: CSLItem) -> str:
    author = _ascii_word(item.first_author_family() or "") or "anon"
    year = str(item.year()) if item.year() else "nd"
    words = [_ascii_word(w) for w in (item.title or "").split()]
    first = next((w for w in words if w and w not in STOPWORDS), "")
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


def _bibtex_entry(export: ExportEntry, key: str, aliases: Sequence[str] = ()) -> model.Entry:
    item = export.item
    entry_type = CSL_TO_BIBTEX.get(item.type, BIBTEX_FALLBACK)
    if entry_type == "phdthesis" and "master" in (item.genre or "").lower():
        entry_type = "mastersthesis"
    container = "booktitle" if entry_type in _BOOKTITLE_TYPES else "journal"
    # An article's CSL number is its article number (Crossref's article-number: Sci. Rep. 16696,
    # eLife e01567), not its issue: biblatex's `eid`, so it is neither lost beside an issue nor
    # read back as one. Elsewhere `number` is the report's or the series' number.
    article = entry_type == "article"
    fields: dict[str, str | None] = {
        "author": bibtex_names(item.author),
        "editor": bibtex_names(item.editor),
        "title": latex_text(item.title),
        container: latex_text(item.container_title),
        "series": latex_text(item.collection_title),
        "year": str(item.year()) if item.year() else None,
        "month": _month(item.issued),
        "volume": latex_text(item.volume),
        "number": latex_text(item.issue if article else item.issue or item.number),
        "eid": latex_text(item.number) if article else None,
        "pages": bibtex_pages(item.page) if item.page else None,
        "edition": latex_text(item.edition),
        _PUBLISHER_FIELD.get(entry_type, "publisher"): latex_text(item.publisher),
        "address": latex_text(item.publisher_place),
        "doi": _verbatim(item.DOI),
        "url": _verbatim(item.URL),
        "isbn": _verbatim(item.ISBN),
        "issn": _verbatim(item.ISSN),
        "pmid": _verbatim(item.PMID),
        "pmcid": _verbatim(item.PMCID),
        "language": latex_text(item.language),
        "note": latex_text(item.note),
        "keywords": f"citeaudit:{export.status}" if export.status else None,
        "abstract": latex_text(item.abstract),
        "ids": ", ".join(aliases) or None,
    }
    return model.Entry(
        entry_type, key, [model.Field(name, value) for name, value in fields.items() if value]
    )


def latex_text(value: str | None) -> str | None:
    if not value:
        return None
    if value.isascii() and _LATEX_ASCII.isdisjoint(value):
        return value  # nothing to encode, and no brace to balance
    # The encoder walks its text a character at a time in Python (~1 ms for an abstract), and its
    # rules each replace one character whatever surrounds it: so only the characters it rewrites
    # go through it, each once, after the NFC normalisation it would apply to the whole text.
    text = unicodedata.normalize("NFC", _balanced(value))
    return _REWRITTEN.sub(lambda char: _latex_char(char.group()), text)


@cache
def _latex_char(char: str) -> str:
    return str(_LATEX.unicode_to_latex(char))


def bibtex_pages(pages: str) -> str:
    """`12-19` and `12–19` as BibTeX's `12--19`."""
    return latex_text(re.sub(r"\s*[-–—]+\s*", "--", pages)) or ""


def _verbatim(value: str | None) -> str | None:
    """An identifier or URL as BibTeX reads it verbatim: braces (which would end the field) and
    line breaks percent-encoded, as a URL may write them anyway."""
    if not value:
        return None
    return _LINE_BREAK.sub("", value).replace("{", "%7B").replace("}", "%7D")


def _balanced(text: str) -> str:
    """The text without the braces that do not pair up: BibTeX counts every brace, escaped or
    not, so one stray `}` would end the field and let the rest be read as new fields."""
    if "{" not in text and "}" not in text:
        return text
    depth, kept = 0, []
    for char in text:
        if char == "}" and depth == 0:
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        kept.append(char)
    if depth:  # drop the last unclosed `{`s
        for index in range(len(kept) - 1, -1, -1):
            if depth and kept[index] == "{":
                del kept[index]
                depth -= 1
    return "".join(kept)


def bibtex_names(names: list[CSLName] | None) -> str | None:
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
            text = latex_text(family) or ""
            if name.suffix:
                text += ", " + (latex_text(name.suffix) or "")
            parts.append(text + (", " + (latex_text(given) or "") if given else ""))
        elif name.literal or name.given:
            parts.append("{" + (latex_text(name.literal or name.given) or "") + "}")
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


def to_ris(items: Sequence[Exportable], keys: Sequence[str] | None = None) -> str:
    entries = _entries(items)
    keys = keys or citation_keys(entries)
    records = [_ris_record(entry, key) for entry, key in _records(entries, keys)]
    return str(rispy.dumps(records, implementation=_StandardRisWriter))


def _ris_record(export: ExportEntry, key: str) -> dict[str, Any]:
    item = export.item
    start, _, end = (item.page or "").partition("-")
    # An article's number is its article number, EndNote's C7 ("Article Number"), not IS.
    article = item.type.startswith("article")
    record: dict[str, Any] = {
        "type_of_reference": CSL_TO_RIS.get(item.type, RIS_FALLBACK),
        "id": key,
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
        "number": item.issue if article else item.issue or item.number,
        "custom7": item.number if article else None,
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
        "keywords": [f"citeaudit:{export.status}"] if export.status else [],
        "notes": [note for note in (item.note, export.outcome()) if note],
    }
    return {tag: _ris_value(value) for tag, value in record.items() if value}


def _ris_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_ris_value(v) for v in value]
    return _one_line(value) if isinstance(value, str) else value


def _one_line(text: str) -> str:
    return _LINE_BREAK.sub(" ", text)


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


def to_csl_json(items: Sequence[Exportable], keys: Sequence[str] | None = None) -> str:
    body = _csl_json_records(items, keys)
    return f"[\n{body}\n]\n" if body else "[]\n"


def _csl_json_records(items: Sequence[Exportable], keys: Sequence[str] | None = None) -> str:
    """The items' records as they stand inside the CSL-JSON array, joined by `,\n`: a job
    written in batches joins its batches' records the same way (`ExportWriter`)."""
    entries = _entries(items)
    records = [
        _csl_record(entry, key) for entry, key in _records(entries, keys or citation_keys(entries))
    ]
    return json.dumps(records, ensure_ascii=False, indent=2)[2:-2] if records else ""


def _csl_record(export: ExportEntry, key: str) -> dict[str, Any]:
    record = {**export.item.to_csl(), "id": key}
    if outcome := export.outcome():
        record["note"] = "\n".join(n for n in (export.item.note, outcome) if n)
    return record


# The job folder's export files, by name.
EXPORT_FILES = ("references.bib", "references.ris", "references.json")


def export_files(items: Sequence[Exportable]) -> dict[str, str]:
    """A job's three export files, whole (the keys made once for the three)."""
    keys = citation_keys(items)
    return {
        "references.bib": to_bibtex(items, keys),
        "references.ris": to_ris(items, keys),
        "references.json": to_csl_json(items, keys),
    }


class ExportWriter:
    """The three export files written batch by batch (`files`: EXPORT_FILES' open handles),
    joined as `export_files` writes them whole; `close` ends the CSL-JSON array. `keys`: the
    batch's items' keys (`CitationKeys`, every item's own key reserved before the first batch:
    a key depends on every other item's)."""

    def __init__(self, files: Mapping[str, TextIO]) -> None:
        self.bib, self.ris, self.csl = (files[name] for name in EXPORT_FILES)
        self.written = 0

    def write(self, items: Sequence[Exportable], keys: Sequence[str]) -> None:
        if not items:
            return
        first = not self.written
        self.bib.write(("" if first else _BIBTEX_BETWEEN) + to_bibtex(items, keys))
        self.ris.write(("" if first else _RIS_BETWEEN) + to_ris(items, keys))
        body = _csl_json_records(items, keys)
        self.csl.write(("[\n" if first else _CSL_JSON_BETWEEN) + body)
        self.written += len(items)

    def close(self) -> None:
        self.csl.write("\n]\n" if self.written else "[]\n")
