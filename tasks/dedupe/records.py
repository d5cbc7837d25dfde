"""One row of match keys per citation: the only view of a citation that dedupe looks at.

Keys come from the registry record when the citation was verified (it is the truth), otherwise
from what the citation claims. An identifier the registry refuted (mismatch, not found) is not a
key: it would glue the citation to a work it does not describe.
"""

import html
import re
from collections.abc import Sequence
from functools import lru_cache

import ftfy
import polars as pl

from models.audit import Identifiers, Reference, Status, ValidationResult
from models.csl import CSLItem, named
from tasks.identifiers import identifiers_of, normalize_doi, normalize_pmid
from tasks.textnorm import fold, normalise_title, surname_key, words

ID_KINDS = ("doi", "pmid", "pmcid", "arxiv", "isbn", "url")
# Two records holding different values of one of these are two works, whatever their titles.
CONFLICT_KINDS = ("doi", "pmid", "pmcid", "arxiv")

RELATION = pl.Struct({"kind": pl.Utf8, "id": pl.Utf8})
RECORD_SCHEMA: dict[str, pl.DataType] = {
    "citation_id": pl.Utf8(),
    "source": pl.Utf8(),  # the list the citation came from (its input file)
    **{kind: pl.Utf8() for kind in ID_KINDS},
    "title": pl.Utf8(),
    "authors": pl.Utf8(),
    "container_title": pl.Utf8(),
    "title_key": pl.Utf8(),
    "notice": pl.Utf8(),
    "form": pl.Utf8(),
    "first_author": pl.Utf8(),
    "first_author_words": pl.Utf8(),
    "surnames": pl.List(pl.Utf8()),
    "initials": pl.Utf8(),
    "year": pl.Int64(),
    "container": pl.Utf8(),
    "venue_kind": pl.Utf8(),
    "volume": pl.Utf8(),
    "pages": pl.Utf8(),
    "type": pl.Utf8(),
    "preprint": pl.Boolean(),
    "verified": pl.Boolean(),
    "completeness": pl.Float64(),
    "relations": pl.List(RELATION),
}
LIBRARY_SCHEMA: dict[str, pl.DataType] = {**RECORD_SCHEMA, "work_id": pl.Utf8()}

PREPRINT_DOI_PREFIXES = ("10.48550/", "10.1101/", "10.2139/ssrn", "10.31219/", "10.20944/")
_PREPRINT_VENUE = re.compile(r"\b(arxiv|corr|biorxiv|medrxiv|ssrn|preprints?|research square)\b")

# "Erratum to: X", "Retraction notice: X", "Correction to 'X'"; "RETRACTED: X" is the retracted
# article itself, so it only loses its mark.
_NOTICE = re.compile(
    r"^(?:(?P<erratum>erratum|errata|corrigendum|correction|addendum)"
    r"|(?P<retraction>retraction(?: note| notice)?|notice of retraction|withdrawal)"
    r"|(?P<concern>(?:editorial )?expression of concern))"
    r"(?:(?:\s+(?:to|for|of|on|regarding))?\s*[:.\u2013\u2014-]\s+|\s+to\s+"
    r"|(?:(?<=erratum)|(?<=errata))-(?=[A-Z]))",
    re.IGNORECASE,
)
_RETRACTED_MARK = re.compile(r"^\s*\[?retracted(?: article)?\]?\s*[:.\-]\s*", re.IGNORECASE)
# Annotations a source adds to a title: "(Extended Abstract)", "(panel session)", "- Book Review",
# "Tutorial: X", "X: a tutorial", "X, Guest Editors' Foreword".
_ANNOTATION = re.compile(
    r"\s*[(\[]\s*(?:(?:extended|short|demo|panel|poster|invited)\s+)?"
    r"(?:abstract|abstract only|panel(?: session| abstract)?|tutorial(?: session)?|demo"
    r"|demonstration(?: description)?|experience paper|short paper|poster|invited talk"
    r"|keynote(?: address| talk)?|book review|short version|extended version|position paper"
    r"|industrial paper|vision paper)\s*[)\]]|\s+[-\u2013:]\s*book review\s*$"
    r"|^\s*tutorial\s*:\s*(?=\S)|\s*:\s*an? tutorial\s*$"
    r"|(?<=\S)\s*[-\u2013:,]\s*guest\s+editor(?:'s|s'|s)?\s+(?:foreword|introduction|preface)\s*$",
    re.IGNORECASE,
)
# Of those, the ones marking a publication of its own: the demo of a system beside its paper,
# a guest editor's introduction beside the special issue or section of its title.
_FORMS = (("demo", "demo"), ("poster", "poster"), ("guest editor", "introduction"))
# What kind of venue a container is, when its name says so; None when it does not.
_JOURNAL = re.compile(
    r"\b(journal|j|trans|transactions|letters|lett|magazine|mag|bulletin|record|review)\b"
)
_PROCEEDINGS = re.compile(r"\b(conference|conf|symposium|symp|workshop|congress|meeting)\b")
_REPORT = re.compile(r"\b(technical report|tech report|tech rep|report|thesis|dissertation)\b")
_QUOTES = "\"'“”‘’«»"
# Scraped text (Google Scholar pages, bulk imports): entities with spaces inside ("& hellip ;",
# "& raquo ;"), and a multi-byte character read byte by byte with the bytes past the first lost
# ("snodgrassâ ? ¦" for "snodgrass…", "â ??" for a curly quote).
_SPACED_ENTITY = re.compile(r"&\s*(#?\w+)\s*;")
_BROKEN_CHARACTER = re.compile(r"â\s*(?:\?\s*)+¦?")
_RUN_TOGETHER_MIN = 6  # letters: "onviews", "andxml" are two words each
_SHORT_WORDS = frozenset({"an", "as", "at", "by", "in", "is", "of", "on", "or", "to"})


def split_notice(title: str) -> tuple[str | None, str]:
    """(notice kind or None, title of the work it is about or the title itself)."""
    text = _RETRACTED_MARK.sub("", title.strip())
    match = _NOTICE.match(text)
    if not match or not text[match.end() :].strip():
        return None, text
    kind = next(name for name, value in match.groupdict().items() if value)
    return kind, text[match.end() :].strip().strip(_QUOTES).strip()


def title_form(title: str) -> str | None:
    """demo | poster | introduction when a title's annotation says the piece is one ("DEVise
    (Demo Abstract)", "(demonstration description)", "X: Guest Editor's Introduction"); None for
    anything else."""
    for annotation in _ANNOTATION.finditer(title):
        text = annotation.group(0).lower()
        for mark, form in _FORMS:
            if mark in text:
                return form
    return None


def venue_kind(container_key: str) -> str | None:
    """journal | proceedings | report, from a normalised container name; None if unclear."""
    kinds = [
        kind
        for kind, pattern in (
            ("report", _REPORT), ("proceedings", _PROCEEDINGS), ("journal", _JOURNAL),
        )
        if pattern.search(container_key)
    ]  # fmt: skip
    return kinds[0] if len(kinds) == 1 else None


def preprint_stage(doi: str | None, arxiv: str | None, venue: str, csl_type: str) -> bool | None:
    """True for a preprint (preprint-server DOI, or no DOI but an arXiv id or preprint venue),
    False for an evidently published version (another DOI, or a journal or proceedings), None
    when the citation does not say: it may be either."""
    if doi:
        return doi.startswith(PREPRINT_DOI_PREFIXES)
    if arxiv or csl_type == "preprint" or _PREPRINT_VENUE.search(venue):
        return True
    return False if venue.strip() else None


def descraped(text: str | None) -> str | None:
    """Text as written before scraping garbled it: spaced entities read ("& hellip ;" -> "…"),
    mojibake repaired (ftfy: "SchÃ¶lkopf" -> "Schölkopf"), the debris of a character whose
    bytes were lost dropped."""
    if not text:
        return text
    if "&" in text:
        text = _SPACED_ENTITY.sub(lambda m: html.unescape(f"&{m.group(1)};"), text)
    if not text.isascii():
        text = _BROKEN_CHARACTER.sub(" ", ftfy.fix_text(text)).strip()
    return text


def title_words(title: str) -> str | None:
    """A title's comparable form (`normalise_title`) with words a scraper ran together split
    apart: "onviews andxml" -> "on views and xml"."""
    return " ".join(map(_word_parts, normalise_title(title).split())) or None


@lru_cache(maxsize=1 << 14)  # as textnorm.fold's: a big import's distinct words are its size
def _word_parts(word: str) -> str:
    """The words `word` runs together, by English words' frequencies (wordninja, Wikipedia's
    words), where pieces of three letters or more make up most of it; else `word` itself: a
    name or a misspelling ("hellersteirr") is not cut into debris."""
    if len(word) < _RUN_TOGETHER_MIN or not word.isalpha():
        return word
    import wordninja  # loads its word list (0.2-0.4 s): only once a title needs it

    parts = wordninja.split(word)
    kept = sum(len(part) for part in parts if len(part) >= 3 or part in _SHORT_WORDS)
    return " ".join(parts) if len(parts) > 1 and kept >= 0.8 * len(word) else word


def _needs_reading(text: str | None) -> bool:
    return text is not None and ("&" in text or not text.isascii())


def _descraped_item(item: CSLItem) -> CSLItem:
    """The item with its scraped texts read (`descraped`); itself when none needs it (most)."""
    names = [n for field in (item.author, item.editor) for n in field or ()]
    texts = [item.title, item.container_title, *(t for n in names for t in (n.family, n.given))]
    if not any(map(_needs_reading, texts)):
        return item
    fixed_names = {
        field: [
            name.model_copy(
                update={"family": descraped(name.family), "given": descraped(name.given)}
            )
            for name in getattr(item, field)
        ]
        for field in ("author", "editor")
        if getattr(item, field)
    }
    fixed = {field: descraped(getattr(item, field)) for field in ("title", "container_title")}
    return item.model_copy(update={**fixed, **fixed_names})


# Scraped indexes credit themselves where the authors go ("acms anthology , p edition" for the
# ACM SIGMOD Anthology edition; "portal.acm.org"): such a name is no author.
_CREDIT = re.compile(r"\banthology\b|\bedition$|\w\.(?:org|com|edu|net)\b", re.IGNORECASE)


def _without_credits(item: CSLItem) -> CSLItem:
    """The item without the names that credit an index, not a person; itself when none does."""
    authors = item.author or []
    people = [n for n in authors if not _CREDIT.search(n.display())]
    return item if len(people) == len(authors) else item.model_copy(update={"author": people})


def _initials(item: CSLItem) -> str | None:
    for name in named(item.author or item.editor):
        given = name.given or (" ".join(name.literal.split()[:-1]) if name.literal else "")
        letters = "".join(part[0] for part in re.split(r"[\s.\-]+", fold(given)) if part)
        return letters or None
    return None


def _first_author_words(item: CSLItem) -> str | None:
    """The first author's whole name as folded words, hyphens splitting ("Daniel Barbará-Millá"
    -> "daniel barbara milla"): where a compound surname hides the part another source keeps."""
    for name in named(item.author or item.editor):
        return " ".join(words(name.display())) or None
    return None


def _surnames(item: CSLItem) -> list[str]:
    """All authors' surname keys, in order."""
    names = named(item.author or item.editor)
    families = [n.family or " ".join((n.literal or "").split()[-1:]) for n in names]
    return [key for key in map(surname_key, families) if key]


def _trusted_ids(ref: Reference, result: ValidationResult | None) -> Identifiers:
    ids = ref.ids.model_copy() if ref.ids.any() else identifiers_of(ref.item, ref.raw)
    if result is None:
        return ids
    if result.status in (Status.MISMATCH, Status.NOT_FOUND):
        refuted = {normalize_doi(result.matched_id), normalize_pmid(result.matched_id)} - {None}
        for kind in ("doi", "pmid"):
            if getattr(ids, kind) in refuted or not refuted:
                setattr(ids, kind, None)
    if result.status == Status.VERIFIED and result.record is not None:
        found = identifiers_of(result.record)
        for kind in ID_KINDS:
            setattr(ids, kind, getattr(found, kind) or getattr(ids, kind))
    return ids


def record_row(ref: Reference, result: ValidationResult | None = None) -> dict[str, object]:
    """The match keys of one citation."""
    verified = result is not None and result.status == Status.VERIFIED and result.record is not None
    item = _without_credits(
        _descraped_item(result.record if verified and result and result.record else ref.item)
    )
    ids = _trusted_ids(ref, result)
    notice, about = split_notice(_ANNOTATION.sub("", item.title or ""))
    container = item.container_title or item.publisher or ""
    container_key = normalise_title(container) or None
    relations = [
        {"kind": kind, "id": normalize_doi(target) or normalize_pmid(target) or target}
        for kind, targets in sorted((result.relations if result else {}).items())
        for target in sorted(targets)
    ]
    return {
        "citation_id": ref.citation_id,
        "source": ref.provenance.source_file,
        **ids.model_dump(),
        "title": item.title,
        "authors": "; ".join(name.display() for name in named(item.author or item.editor)) or None,
        "container_title": item.container_title,
        "title_key": title_words(about),
        "notice": notice,
        "form": title_form(item.title or ""),
        "first_author": surname_key(item.first_author_family() or "") or None,
        "first_author_words": _first_author_words(item),
        "surnames": _surnames(item),
        "initials": _initials(item),
        "year": item.year(),
        "container": container_key,
        "venue_kind": venue_kind(container_key or ""),
        "volume": (item.volume or "").strip().lower() or None,
        "pages": item.page,
        "type": item.type,
        "preprint": preprint_stage(ids.doi, ids.arxiv, fold(container), item.type),
        "verified": verified,
        "completeness": item.completeness(),
        "relations": relations,
    }


def records_frame(
    refs: Sequence[Reference], results: Sequence[ValidationResult] | None = None
) -> pl.DataFrame:
    """One row of match keys per citation, in input order; results are matched by citation_id."""
    by_id = {r.citation_id: r for r in results or ()}
    rows = [record_row(ref, by_id.get(ref.citation_id)) for ref in refs]
    return pl.DataFrame(rows, schema=RECORD_SCHEMA)
