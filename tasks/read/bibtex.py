"""BibTeX reader: all .bib files of a job form one library, as LaTeX's \\bibliography{a,b,c} does.

bibtexparser v2 splits each file into blocks (it keeps going past a broken entry). What it does not
do, and BibTeX does, is done here over the whole library:

- `@string` macros and `#` concatenation, across files and in any file order (IRIDIA keeps its
  macros in abbrev.bib, authors.bib and journals.bib and uses them in articles.bib and biblio.bib);
  the standard month macros (`jan` ... `dec`) are predefined.
- `crossref=` inheritance: a child gets the container fields it lacks (booktitle, editor,
  publisher, year, ...) from its parent, and the parent's `title` as its `booktitle` if the parent
  has no booktitle (biber's rule). Identifiers and locators (doi, url, pages, ...) are never
  inherited: the proceedings' DOI is not the paper's.
- Containers: an entry named in some other entry's `crossref=` is a container, not a citation
  (BibTeX prints it only because it is cross-referenced), so it yields no Reference. An entry
  nothing cross-references is a citation, whatever its type. An alias entry (`crossref` its only
  field: references.bib writes one per key merged into a work, tasks/render/exports.py) is
  another key of its parent's work: no Reference, and its parent stays a citation.

`%` is read as biber reads it: a line whose first character is `%` (outside a field's value) is
a comment, also inside an entry (btparse's lexer: `COMMENT \\%~[\\n]*\\n` at top level and within
entries). A commented-out entry (`% @article{wolf_2019,` ... `% }`) is no entry, so no empty row
and no clash with the live entry of its key. BibTeX itself has no comment character: it would read
`@article{wolf_2019,` after the `%` and stop at the next `%` line with an error (README, "Fix
your own .bib", says what to do for BibTeX). `uncommented` blanks those lines to spaces of the
same length, so lines and offsets stay the file's (citeaudit fix edits by offset).

A field given twice (`year` twice) keeps its first value with a one-line warning, as BibTeX
and biber do; `author = {K. A. Olive et al.}` is `K. A. Olive and others`; `howpublished =
{\\url{...}}` is the entry's URL when it has no `url`; an arXiv id written where Google Scholar
and DBLP write it (`journal = {arXiv preprint arXiv:2207.05221}`, `journal = {CoRR}` with
`volume = {abs/1706.03762}`, `arXiv:2207.05221 [cs.LG]` in note, eprint or howpublished) is the
entry's arXiv id (tasks/identifiers.arxiv_mentioned).

Then bibtexparser's middlewares split the names and decode LaTeX to Unicode (pylatexenc), and each
entry becomes a CSL item. pylatexenc costs ~0.2 ms a string, so decoding skips strings without
LaTeX markup and remembers strings it has decoded (journal names, names and booktitles repeat).
"""

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import bibtexparser
from bibtexparser.library import Library
from bibtexparser.middlewares import (
    LatexDecodingMiddleware,
    SeparateCoAuthors,
    SplitNameParts,
)
from bibtexparser.middlewares.middleware import Middleware
from bibtexparser.middlewares.names import NameParts, parse_single_name_into_parts
from bibtexparser.model import (
    DuplicateBlockKeyBlock,
    DuplicateFieldKeyBlock,
    Entry,
    Field,
    String,
)

from models.audit import InputError, InputErrorKind, ReadResult, Reference
from models.csl import ET_AL, CSLItem, is_et_al_text
from tasks.digests import DigestMap
from tasks.identifiers import arxiv_mentioned, normalize_arxiv, normalize_pmcid, normalize_pmid
from tasks.read.common import (
    FIELD_TOO_LONG,
    MAX_FIELD_CHARS,
    csl_item,
    issued_date,
    make_reference,
    merged,
    normalize_pages,
    raw_date,
    young_collections_only,
)
from tasks.read.kinds import looks_like_bibtex
from tasks.read.text import UnreadableFileError, text_lines

FORMAT = "bibtex"

# bibtexparser's splitter logs each block it gives up on, several lines to stderr; the reader
# reports those blocks itself as input errors (_block_errors), once each, with file and entry.
logging.getLogger("bibtexparser.splitter").setLevel(logging.ERROR)

_FAILED_KEY = re.compile(r"@\s*\w+\s*[{(]\s*([^,\s={}()]+)")
_LATEX_MARKUP = re.compile(r"[\\$%~`{}]|--|''")
_BRACES = re.compile(r"[{}]")
_URL_MACRO = re.compile(r"^\\url\s*\{(.*)\}$", re.S)
_URL_GIVEN = re.compile(r"\\url\s*\{([^{}]+)\}|(https?://[^\s{}]+)")
# `K. A. Olive et al.`: BibTeX would read `et al.` as a name; it is `and others`.
_ET_AL_WRITTEN = re.compile(r"(?<=\S)[\s~]+et[\s~]*al\.?\s*$", re.I)
_ESCAPED = re.compile(r"\\([_%&#$~])")
_LIGATURES = (("---", "\u2014"), ("--", "\u2013"), ("``", "\u201c"), ("''", "\u201d"), ("~", " "))
# Fields read into the CSL item, by how they are decoded; every other field (abstract, keywords,
# annote, ...) is dropped before decoding, which is the costly step.
_TEXT = frozenset(
    {
        "title", "journal", "journaltitle", "booktitle", "series", "eventtitle", "publisher",
        "school", "institution", "organization", "address", "location", "edition", "type",
        "language", "langid", "note",
    }
)  # fmt: skip
_VERBATIM = frozenset(
    {
        "url", "doi", "eprint", "archiveprefix", "eprinttype", "urldate", "pmid", "pmcid", "isbn",
        "issn", "year", "month", "date", "volume", "number", "issue", "eid", "pages",
        "howpublished",
    }
)  # fmt: skip
_NAMES = frozenset({"author", "editor"})
_READ = _TEXT | _VERBATIM | _NAMES
# Bounds on what an entry may expand to (fields: tasks/read/common.py).
MAX_MACRO_DEPTH = 100
_DECODED_KEPT = 100_000  # distinct decoded strings remembered (~20 MB at most)

_MONTH_MACROS = {
    "jan": "January",
    "feb": "February",
    "mar": "March",
    "apr": "April",
    "may": "May",
    "jun": "June",
    "jul": "July",
    "aug": "August",
    "sep": "September",
    "oct": "October",
    "nov": "November",
    "dec": "December",
}

CSL_TYPES = {
    "article": "article-journal",
    "inproceedings": "paper-conference",
    "conference": "paper-conference",
    "incollection": "chapter",
    "inbook": "chapter",
    "book": "book",
    "mvbook": "book",
    "proceedings": "book",
    "collection": "book",
    "manual": "book",
    "booklet": "pamphlet",
    "phdthesis": "thesis",
    "mastersthesis": "thesis",
    "thesis": "thesis",
    "techreport": "report",
    "report": "report",
    "unpublished": "manuscript",
    "online": "webpage",
    "www": "webpage",
    "electronic": "webpage",
    "software": "software",
    "dataset": "dataset",
    "patent": "patent",
    "misc": "document",
}
_IN_CONTAINER = frozenset({"inproceedings", "conference", "incollection", "inbook"})
_THESIS_GENRE = {"phdthesis": "PhD thesis", "mastersthesis": "Master's thesis"}

# What a cross-referencing child takes from its parent when it lacks it (the container's
# description, never the parent's own identifiers or locators).
_INHERITED = (
    "booktitle",
    "editor",
    "publisher",
    "address",
    "location",
    "organization",
    "institution",
    "school",
    "year",
    "month",
    "date",
    "series",
    "volume",
    "number",
    "edition",
    "isbn",
    "issn",
    "journal",
    "journaltitle",
    "eventtitle",
    "venue",
)


@dataclass
class _RawEntry:
    source: Path
    entry_type: str
    key: str
    line: int
    fields: dict[str, str]  # lower-case field name -> macro-expanded LaTeX text
    repeated: list[str]  # fields given more than once (the first value is kept)


def read(paths: Sequence[Path]) -> ReadResult:
    """All .bib files as one library; one Reference per citation entry (containers excluded)."""
    return read_bibtex(paths)


def read_bibtex(paths: Sequence[Path]) -> ReadResult:
    with young_collections_only():
        return merged(stream(paths))


detect = looks_like_bibtex


def stream(paths: Sequence[Path]) -> Iterator[ReadResult]:
    """The library read a chunk of entries at a time (`_CHUNK_ENTRIES`), so memory holds one
    chunk, never the whole list. One cheap pass over the lines first gathers what BibTeX needs
    of the whole library: every @string, and the entries some `crossref=` names (containers,
    parsed then); the entries are then parsed, expanded and decoded chunk by chunk, in order.
    Kept across chunks: the macros, the containers and each key's first place (duplicates)."""
    readable: list[Path] = []
    for path in paths:
        try:
            text_lines(path)  # decoding problems show before the first line, here
        except UnreadableFileError as exc:
            yield ReadResult(errors=[exc.as_input_error(path)])
            continue
        readable.append(path)
    macros, targets = _scan(readable)
    containers = _containers(readable, targets, macros)
    first_seen = _FirstPlaces(readable)
    for path in readable:
        for offset, text in _chunks(_lines(path)):
            yield _read_chunk(path, offset, text, macros, containers, first_seen)


# Entries parsed at a time: bibtexparser parses a string whole, so this bounds what it holds.
_CHUNK_ENTRIES = 500
_BLOCK_START = re.compile(r"^\s*@\s*([a-z]+)\s*[{(]\s*([^,\s{}()]*)", re.I)
_FIELD_START = re.compile(r"(?:^|,)\s*[a-z][\w:.+-]*\s*=", re.I)
_CROSSREF = re.compile(r"\bcrossref\s*=\s*[{\"]?\s*([^,}\"\s]+)", re.I)
_ESCAPED_BRACE = re.compile(r"\\[{}]")


def _chunks(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(0-based first line, text) of consecutive chunks of about `_CHUNK_ENTRIES` blocks, cut
    only before a line that starts a block (`@type{`) with the braces so far balanced; past
    twice that many blocks a chunk is cut at the next block start whatever its braces (an
    entry missing its closing brace must not pull the rest of the file into one chunk)."""
    chunk: list[str] = []
    offset = blocks = depth = 0
    for number, line in enumerate(lines):
        if _BLOCK_START.match(line):
            if blocks >= 2 * _CHUNK_ENTRIES or (blocks >= _CHUNK_ENTRIES and depth == 0):
                yield offset, "\n".join(chunk)
                chunk, offset, blocks, depth = [], number, 0, 0
            blocks += 1
        chunk.append(line)
        if "{" in line or "}" in line:
            unescaped = _ESCAPED_BRACE.sub("", line)
            depth += unescaped.count("{") - unescaped.count("}")
    if chunk:
        yield offset, "\n".join(chunk)


def uncommented(lines: Iterable[str]) -> Iterator[str]:
    """The lines with each `%` comment line (its first non-blank character `%`, outside any
    field value: brace depth 0 or 1) blanked to spaces of the same length."""
    depth = 0
    for line in lines:
        if line.lstrip().startswith("%") and depth <= 1:
            yield " " * len(line)
            continue
        if _BLOCK_START.match(line):  # bibtexparser, too, starts afresh at a block start
            depth = 0
        if "{" in line or "}" in line:
            unescaped = _ESCAPED_BRACE.sub("", line)
            depth = max(0, depth + unescaped.count("{") - unescaped.count("}"))
        yield line


def _lines(path: Path) -> Iterator[str]:
    return uncommented(text_lines(path))


def _blocks_of(
    lines: Iterable[str], wanted: Callable[[str, str], bool]
) -> Iterator[tuple[int, str]]:
    """(0-based first line, text) of each block whose (lower-case type, key) is `wanted`, from
    its start line to the next block's."""
    kept: list[str] | None = None
    first = 0
    for number, line in enumerate(lines):
        if start := _BLOCK_START.match(line):
            if kept:
                yield first, "\n".join(kept)
            kept = [] if wanted(start.group(1).lower(), start.group(2).lower()) else None
            first = number
        if kept is not None:
            kept.append(line)
    if kept:
        yield first, "\n".join(kept)


def _scan(paths: Sequence[Path]) -> tuple["_Macros", set[str]]:
    """Every @string of the library (later definitions win) and the keys `crossref=` names."""
    strings: list[String] = []
    targets: set[str] = set()

    def wanted(entry_type: str, key: str) -> bool:
        return entry_type == "string"

    for path in paths:
        for _, text in _blocks_of(_crossrefs_noted(_lines(path), targets), wanted):
            strings.extend(bibtexparser.parse_string(text, parse_stack=[]).strings)
    return _Macros(strings), targets


def _crossrefs_noted(lines: Iterable[str], targets: set[str]) -> Iterator[str]:
    """The lines, noting the keys `crossref=` names in `targets`; an alias entry's (crossref its
    only field) is no container: it is the same work under another key."""
    named: list[str] = []
    fields = 0
    for line in lines:
        if _BLOCK_START.match(line):
            if fields > 1:
                targets.update(named)
            named, fields = [], 0
        if "=" in line:
            fields += len(_FIELD_START.findall(line))
            if "crossref" in line.lower():
                named.extend(found.lower() for found in _CROSSREF.findall(line))
        yield line
    if fields > 1:
        targets.update(named)


def _containers(
    paths: Sequence[Path], targets: set[str], macros: "_Macros"
) -> dict[str, _RawEntry]:
    """The entries some `crossref=` names (lower-case key -> entry; the first of a key), read
    whole before the citations: BibTeX puts a parent after its children."""
    containers: dict[str, _RawEntry] = {}
    if not targets:
        return containers
    for path in paths:
        for offset, text in _blocks_of(_lines(path), lambda _type, key: key in targets):
            for block in entry_blocks(bibtexparser.parse_string(text, parse_stack=[])):
                raw = _raw_entry(path, offset, block, macros)
                if isinstance(raw, _RawEntry):  # a broken one is reported where it is read
                    containers.setdefault(raw.key.lower(), raw)
    return containers


class _FirstPlaces:
    """Where each (lower-case) key was first defined: a file of `paths` and a line, kept as
    digests (a bulk import's million keys)."""

    _LINE_BITS = 40

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        self.places = DigestMap()

    def get(self, key: str) -> tuple[Path, int] | None:
        place = self.places.get(key)
        if place is None:
            return None
        return self.paths[place >> self._LINE_BITS], place & ((1 << self._LINE_BITS) - 1)

    def add(self, key: str, path: Path, line: int) -> None:
        self.places[key] = self.paths.index(path) << self._LINE_BITS | line


def _read_chunk(
    path: Path,
    offset: int,
    text: str,
    macros: "_Macros",
    containers: dict[str, _RawEntry],
    first_seen: "_FirstPlaces",
) -> ReadResult:
    library = bibtexparser.parse_string(text, parse_stack=[])
    result = ReadResult(errors=_block_errors(path, library, offset))
    citations: list[_RawEntry] = []
    for block in entry_blocks(library):
        raw = _raw_entry(path, offset, block, macros)
        if isinstance(raw, InputError):
            result.errors.append(raw)
            continue
        result.errors.extend(_repeated_warning(raw, name) for name in raw.repeated)
        if raw.fields.keys() == {"crossref"}:  # an alias: another key of its parent's work
            continue
        key = raw.key.lower()
        if (first := first_seen.get(key)) is not None:
            result.errors.append(_duplicate_error(raw, *first))
            continue
        first_seen.add(key, path, raw.line)
        if key not in containers:
            citations.append(raw)
    for entry in citations:
        _inherit(entry, containers, result.errors)
    result.references.extend(_to_references(citations))
    return result


def entry_blocks(library: Library) -> Iterator[Entry]:
    """The entries in file order, with each one that gives a field twice (bibtexparser fails
    it whole; BibTeX and biber warn and read it)."""
    for block in library.blocks:
        read = block.ignore_error_block if isinstance(block, DuplicateFieldKeyBlock) else block
        if isinstance(read, Entry):
            yield read


def _raw_entry(path: Path, offset: int, block: Entry, macros: "_Macros") -> _RawEntry | InputError:
    """The entry with its fields macro-expanded (a field given twice: its first value), or the
    error of a field past the bounds."""
    line = offset + (block.start_line or 0) + 1
    fields: dict[str, str] = {}
    repeated: list[str] = []
    try:
        for given in block.fields:
            name = given.key.lower()
            if name in fields:
                repeated.append(name)
            else:
                fields[name] = macros.evaluate(given.value)
    except ValueError as exc:  # a field past the bounds: this entry only
        return InputError(source_file=str(path), entry_key=block.key, line=line, reason=str(exc))
    for name in ("author", "editor"):
        if name in fields:
            fields[name] = _ET_AL_WRITTEN.sub(" and others", fields[name])
    if "url" not in fields and (found := _URL_GIVEN.search(fields.get("howpublished", ""))):
        fields["url"] = found.group(1) or found.group(2)
    return _RawEntry(path, block.entry_type.lower(), block.key, line, fields, repeated)


def _repeated_warning(entry: _RawEntry, name: str) -> InputError:
    first = " ".join(entry.fields[name].split())[:60]
    reason = f"warning: field {name!r} given twice: the first ({first}) is kept"
    return _entry_error(entry, reason, kind="warning")


def _entry_error(entry: _RawEntry, reason: str, kind: InputErrorKind = "malformed") -> InputError:
    return InputError(
        source_file=str(entry.source),
        entry_key=entry.key,
        line=entry.line,
        reason=reason,
        kind=kind,
    )


class _Macros:
    """@string values, expanded lazily so definitions may come in any order or file."""

    def __init__(self, strings: Iterable[String]) -> None:
        self._raw = {s.key.lower(): s.value for s in strings}  # later definitions win
        self._done: dict[str, str] = dict(_MONTH_MACROS)

    def evaluate(self, expression: str, _seen: frozenset[str] = frozenset()) -> str:
        """`foo # " bar" # {baz}` -> the concatenated text; unknown macros stay as written.
        ValueError when the text would pass MAX_FIELD_CHARS or macros nest past
        MAX_MACRO_DEPTH (a few hundred bytes of doubling macros would otherwise expand to GBs)."""
        if len(_seen) > MAX_MACRO_DEPTH:
            raise ValueError(f"@string macros nested deeper than {MAX_MACRO_DEPTH} levels")
        pieces = _split_concatenation(expression) if "#" in expression else [expression]
        values = [self._piece(piece.strip(), _seen) for piece in pieces]
        if sum(map(len, values)) > MAX_FIELD_CHARS:
            raise ValueError(f"{FIELD_TOO_LONG} (after @string expansion)")
        return "".join(values)

    def _piece(self, piece: str, seen: frozenset[str]) -> str:
        if not piece:
            return ""
        if (piece[0] == "{" and piece[-1] == "}") or (piece[0] == '"' and piece[-1] == '"'):
            return piece[1:-1]
        name = piece.lower()
        if name in self._done:
            return self._done[name]
        if name not in self._raw or name in seen:  # an undefined or self-referencing macro
            return piece
        value = self.evaluate(self._raw[name], seen | {name})
        self._done[name] = value
        return value


def _split_concatenation(expression: str) -> list[str]:
    """Split on `#` outside braces and quotes."""
    pieces, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(expression):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == '"' and depth == 0:
            quoted = not quoted
        elif ch == "#" and depth == 0 and not quoted:
            pieces.append(expression[start:i])
            start = i + 1
    pieces.append(expression[start:])
    return pieces


def _block_errors(path: Path, library: Library, offset: int) -> list[InputError]:
    errors = []
    for block in library.failed_blocks:
        key: str | None
        if isinstance(block, DuplicateFieldKeyBlock):  # read with its first values
            continue
        if isinstance(block, DuplicateBlockKeyBlock):
            key = block.key
            reason = f"duplicate key {block.key!r}: the first entry is kept"
        else:
            found = _FAILED_KEY.search(block.raw or "")
            key = found.group(1) if found else None
            # An aborted block's reason is in `abort_reason` (its str() is empty); some errors
            # carry no message at all: still say what is wrong and where to look.
            detail = (
                " ".join(str(getattr(block.error, "abort_reason", None) or block.error).split())
                or "it does not parse (check its braces and quotes)"
            )
            reason = f"malformed entry: {detail}"
        line = offset + block.start_line + 1 if block.start_line is not None else None
        errors.append(InputError(source_file=str(path), entry_key=key, line=line, reason=reason))
    return errors


def _duplicate_error(duplicate: _RawEntry, first_source: Path, first_line: int) -> InputError:
    return _entry_error(
        duplicate,
        f"duplicate key {duplicate.key!r}: first defined in {first_source} "
        f"line {first_line}, which is kept",
    )


def _inherit(entry: _RawEntry, entries: dict[str, _RawEntry], errors: list[InputError]) -> None:
    seen = {entry.key.lower()}
    parent_key = entry.fields.get("crossref")
    while parent_key:
        parent = entries.get(parent_key.lower())
        if parent is None:
            errors.append(
                InputError(
                    source_file=str(entry.source),
                    entry_key=entry.key,
                    line=entry.line,
                    reason=f"crossref target {parent_key!r} is not in the library; "
                    "the entry is read without it",
                )
            )
            return
        if parent.key.lower() in seen:  # a crossref cycle: stop, BibTeX would too
            return
        seen.add(parent.key.lower())
        for name in _INHERITED:
            if name not in entry.fields and name in parent.fields:
                entry.fields[name] = parent.fields[name]
        if "booktitle" not in entry.fields and "title" in parent.fields:
            entry.fields["booktitle"] = parent.fields["title"]
        parent_key = parent.fields.get("crossref")


class _LenientSplitNameParts(SplitNameParts):
    """Name splitting that never rejects an entry over an oddly written name."""

    def _transform_field_value(self, name: list[str]) -> list[NameParts]:
        return [parse_single_name_into_parts(n, strict=False) for n in name]


class _DecodeLatex(LatexDecodingMiddleware):
    """LaTeX to Unicode for every field: names part by part (split first, so that braces still
    protect `{Barcelona Supercomputing Center}`), URLs and DOIs only unescaped (pylatexenc would
    read `%` as a comment and `~` as a space), plain text untouched, each distinct string decoded
    once."""

    def __init__(self) -> None:
        super().__init__()
        self._decoded: dict[str, str] = {}

    def transform_entry(self, entry: Entry, library: Library) -> Entry:
        for field in entry.fields:
            value = field.value
            if isinstance(value, str):
                verbatim = field.key in _VERBATIM
                field.value = _unescape_verbatim(value) if verbatim else self.decode(value)
            elif isinstance(value, list):
                field.value = [self._decode_name(name) for name in value]
        return entry

    def decode(self, text: str) -> str:
        if _LATEX_MARKUP.search(text) is None:
            return " ".join(text.split())
        plain = _BRACES.sub("", text)  # braces protect case, nothing to keep in plain text
        for ligature, character in _LIGATURES:
            plain = plain.replace(ligature, character)
        if _LATEX_MARKUP.search(plain) is None:
            return " ".join(plain.split())
        if (known := self._decoded.get(text)) is None:
            if len(self._decoded) >= _DECODED_KEPT:
                self._decoded.clear()
            decoded, _error = self._transform_python_value_string(text)  # on error: text as is
            known = self._decoded[text] = " ".join(decoded.replace("\xa0", " ").split())
        return known

    def _decode_name(self, name: NameParts) -> NameParts:
        return NameParts(
            first=[self.decode(w) for w in name.first],
            von=[self.decode(w) for w in name.von],
            last=[self.decode(w) for w in name.last],
            jr=[self.decode(w) for w in name.jr],
        )


def _unescape_verbatim(text: str) -> str:
    """`\\url{https://x.org/a\\_b}` -> `https://x.org/a_b`."""
    text = _URL_MACRO.sub(r"\1", text.strip())
    return _ESCAPED.sub(r"\1", _BRACES.sub("", text))


_DECODING_STACK: tuple[Middleware, ...] = (
    SeparateCoAuthors(),
    _LenientSplitNameParts(),
    _DecodeLatex(),
)


def _to_references(citations: list[_RawEntry]) -> list[Reference]:
    by_key = {raw.key.lower(): raw for raw in citations}
    library = Library(
        [
            Entry(
                raw.entry_type, raw.key, [Field(k, v) for k, v in raw.fields.items() if k in _READ]
            )
            for raw in citations
        ],
        fail_on_duplicate_key=False,
    )
    for middleware in _DECODING_STACK:
        library = middleware.transform(library)
    return [_reference(entry, by_key[entry.key.lower()]) for entry in library.entries]


def _reference(entry: Entry, raw: _RawEntry) -> Reference:
    fields = {f.key: f.value for f in entry.fields}
    item = _csl_item(entry.entry_type, entry.key, fields)
    reference = make_reference(item, raw.source, raw.key, raw.line)
    eprint = str(fields.get("eprint") or "")
    kind = str(fields.get("archiveprefix") or fields.get("eprinttype") or "").lower()
    if eprint and kind == "arxiv":
        reference.ids.arxiv = normalize_arxiv(eprint) or reference.ids.arxiv
    elif eprint and kind in ("pubmed", "pmid"):
        reference.ids.pmid = reference.ids.pmid or normalize_pmid(eprint)
    elif eprint and kind in ("pmc", "pmcid"):
        reference.ids.pmcid = reference.ids.pmcid or normalize_pmcid(eprint)
    if not reference.ids.arxiv:  # `arXiv:2207.05221 [cs.LG]` where no eprinttype says so
        howpublished = str(fields.get("howpublished") or "")
        reference.ids.arxiv = arxiv_mentioned(howpublished, "" if kind else eprint)
    return reference


def _csl_item(entry_type: str, key: str, fields: dict[str, object]) -> CSLItem:
    def text(*names: str) -> str | None:
        for name in names:
            value = fields.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    is_article = entry_type == "article"
    container = None
    if is_article:
        container = text("journal", "journaltitle")
    elif entry_type in _IN_CONTAINER:
        container = text("booktitle")
    issued = issued_date(text("year"), text("month"))
    if issued is None and (date := text("date")):
        issued = raw_date(date)
    urldate = text("urldate")
    return csl_item(
        {
            "id": key,
            "type": CSL_TYPES.get(entry_type, "document"),
            "author": _names(fields.get("author")),
            "editor": _names(fields.get("editor")),
            "title": text("title"),
            "container-title": container,
            "collection-title": text("series"),
            "event-title": text("eventtitle"),
            "issued": issued,
            "accessed": raw_date(urldate) if urldate else None,
            "DOI": text("doi"),
            "PMID": text("pmid"),
            "PMCID": text("pmcid"),
            "URL": text("url"),
            "ISBN": text("isbn"),
            "ISSN": text("issn"),
            "publisher": text("publisher", "school", "institution", "organization"),
            "publisher-place": text("address", "location"),
            "volume": text("volume"),
            "issue": text("number", "issue") if is_article else text("issue"),
            "number": text("eid") if is_article else text("number"),  # an article number
            "page": normalize_pages(text("pages")),
            "edition": text("edition"),
            "genre": text("type") or _THESIS_GENRE.get(entry_type),
            "language": text("language", "langid"),
            "note": text("note"),
        }
    )


def _names(value: object) -> list[dict[str, str]] | None:
    """CSL-JSON names, as dicts: the item validates them in one go (faster than one by one).
    `and others` (BibTeX's et al.) stays as the list's last name, the marker that the list names
    only the first authors."""
    if not isinstance(value, list):
        return None
    names, truncated = [], False
    for parts in value:
        if not isinstance(parts, NameParts):
            continue
        family = " ".join(parts.last)
        whole = " ".join(parts.first + parts.von + parts.last)
        if is_et_al_text(whole):  # `others`, also `et al.` split as given + family
            truncated = True
            continue
        if not family:
            continue
        name = {"family": family}
        for key, words in (
            ("given", parts.first),
            ("non-dropping-particle", parts.von),
            ("suffix", parts.jr),
        ):
            if words:
                name[key] = " ".join(words)
        names.append(name)
    if names and truncated:
        names.append({"literal": ET_AL})
    return names or None
