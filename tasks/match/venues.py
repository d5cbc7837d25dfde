"""Venue agreement: conference acronyms vs full names ("ICML" vs "Proceedings of the 40th
International Conference on Machine Learning"), ISO-4 style journal abbreviations ("J. Mach. Learn.
Res."), subtitles after a dash, publisher prefixes (IEEE/CVF), years and ordinals.

Known venues come from tasks/data/venues.tsv (key, kind, canonical name, variants). Preprint
servers and proceedings series (arXiv, PMLR, LNCS) name where a paper is hosted, not which venue
accepted it, and publishers (Springer, Wiley) who printed it, where a book is cited by its
publisher and its record names its series: none is compared with a venue, the result is None,
not a disagreement.
"""

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from rapidfuzz import fuzz

from tasks.textnorm import fold, words

VENUES_FILE = Path(__file__).resolve().parents[1] / "data" / "venues.tsv"
NOT_COMPARABLE_KINDS = frozenset({"preprint", "series", "publisher"})

# Words that do not tell venues apart: function words, "Proceedings of the", publisher prefixes.
_NOISE = frozenset(
    [
        "proceedings",
        "proc",
        "of",
        "the",
        "on",
        "in",
        "and",
        "for",
        "a",
        "an",
        "at",
        "to",
        "ieee",
        "acm",
        "cvf",
        "rsj",
        "siam",
        "usenix",
        "annual",
    ]
)
_JOURNAL_WORDS = frozenset(
    ["journal", "j", "transactions", "trans", "letters", "lett", "review", "rev", "record", "rec"]
)
_PARTS = re.compile(r"\s+[-–—]+\s+|[:()\[\]]|&mdash;|&ndash;")
_ORDINAL = re.compile(
    r"^\d+(st|nd|rd|th)?$|^(19|20)\d\d[a-z]?$"
    # Spelled out: "Eleventh International Joint Conference", "Twenty-First ..." (words split).
    r"|^(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
    r"|(thir|four|fif|six|seven|eigh|nine)teenth|(twen|thir|for|fif|six|seven|eigh|nine)tieth"
    r"|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)$"
)
# The most a word-similar but not recognisably identical venue name can score (below agreement).
UNCONFIRMED_SIMILARITY = 0.75
_WORD_TYPO_RATIO = 85
Words = tuple[str, ...]
CoreAt = tuple[int, Words, Words]  # venue position in the table, core, core sans 1-letter words


@dataclass(frozen=True)
class Venue:
    key: str
    kind: str
    name: str
    cores: tuple[tuple[str, ...], ...]  # core word tuples of the name and every variant
    acronyms: frozenset[str]


def venue_of(text: str | None) -> Venue | None:
    """The known venue a container title names, if any."""
    return _venue_of(text) if text else None


def venue_cut_off(text: str | None) -> Venue | None:
    """The one known venue a name cut off at its end is the start of, if only one: scraped
    citations end a long name where the line ended ("Proceedings of the 26th International
    Conference on Very …" is VLDB; "ACM Transactions on Database" is TODS). Two words or more
    must remain, the last of them perhaps cut itself ("Internat"); a name that starts forms of
    two venues ("International Conference") names neither."""
    cut = core_words(text or "")
    if len(cut) < 2:
        return None
    found = {
        venue.key: venue
        for venue in _table()
        for core in venue.cores
        if len(core) >= len(cut)
        and core[: len(cut) - 1] == cut[:-1]
        and core[len(cut) - 1].startswith(cut[-1])
    }
    return next(iter(found.values())) if len(found) == 1 else None


def is_preprint_venue(text: str | None) -> bool:
    venue = venue_of(text)
    return venue is not None and venue.kind == "preprint"


def venue_similarity(claimed: str | None, record: str | None) -> float | None:
    """Agreement of two venue names in [0, 1]; None when not comparable (missing, or one side is a
    preprint server or proceedings series)."""
    if not claimed or not record or not core_words(claimed) or not core_words(record):
        return None
    mine, theirs = venue_of(claimed), venue_of(record)
    if any(v is not None and v.kind in NOT_COMPARABLE_KINDS for v in (mine, theirs)):
        return 1.0 if mine and theirs and mine.key == theirs.key else None
    if mine and theirs:
        return 1.0 if mine.key == theirs.key else 0.0
    known, other = (mine, record) if mine else (theirs, claimed)
    if known:
        # A venue we know, against a name that is none of its forms, abbreviations or its acronym,
        # is another venue ("International Conference on Quantum Machine Learning" is not ICML).
        return 1.0 if any(_string_similarity(other, name) == 1.0 for name in _names(known)) else 0.0
    return _string_similarity(claimed, record)


def core_words(text: str) -> tuple[str, ...]:
    """Venue words without function words, publisher prefixes, years, volume numbers, ordinals."""
    return tuple(w for w in words(text) if w not in _NOISE and not _ORDINAL.match(w))


def abbreviation_matches(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """ISO-4 style: the same words in order, each equal to, an abbreviation of, or a typo of the
    other's: `j mach learn res` ~ `journal machine learning research`, `natl` ~ `national`.
    One-letter leftovers (`Int'l` -> `int l`) are ignored; one-word names must be equal (`Cell` is
    not `Cells`)."""
    return _pair_up(a, _long(a), b, _long(b))


def _pair_up(a: Words, long_a: Words, b: Words, long_b: Words) -> bool:
    """abbreviation_matches, given each side without its one-letter words (`_long`)."""
    return _words_pair_up(a, b) or _words_pair_up(long_a, long_b)


def _words_pair_up(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if len(a) != len(b) or len(a) < 2:
        return False
    return all(_same_word(x, y) for x, y in zip(a, b, strict=True))


def _same_word(x: str, y: str) -> bool:
    if _abbreviates(x, y) or _abbreviates(y, x):
        return True
    return min(len(x), len(y)) >= 5 and fuzz.ratio(x, y) >= _WORD_TYPO_RATIO


def acronym_matches(acronym: str, full: tuple[str, ...]) -> bool:
    """Whether one word is an acronym of a name: `uai` ~ `uncertainty artificial intelligence`,
    `neurips` ~ `neural information processing systems` (each word gives a prefix, in order)."""
    if len(full) < 2 or not acronym.isalpha():
        return False

    @cache
    def fits(i: int, j: int) -> bool:
        if i == len(acronym) and j == len(full):
            return True
        if i == len(acronym) or j == len(full):
            return False
        word = full[j]
        return any(
            word.startswith(acronym[i:k]) and fits(k, j + 1)
            for k in range(i + 1, min(len(acronym), i + len(word)) + 1)
        )

    return fits(0, 0)


def _abbreviates(short: str, full: str) -> bool:
    if full.startswith(short):
        return True
    # ISO-4 contractions keep first and last letter: natl/national, intl/international.
    if len(short) < 3 or short[0] != full[0] or short[-1] != full[-1]:
        return False
    letters = iter(full)
    return all(c in letters for c in short)


def _string_similarity(a: str, b: str) -> float:
    """1.0 for the same name written another way; else word similarity, kept below the agreement
    line: two unknown names that differ in a content word may be two venues."""
    best = 0.0
    for part_a in _parts(a):
        for part_b in _parts(b):
            if _same_name(part_a, part_b):
                return 1.0
            best = max(best, fuzz.token_sort_ratio(" ".join(part_a), " ".join(part_b)) / 100)
    return min(best, UNCONFIRMED_SIMILARITY)


def _same_name(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if not a or not b:
        return False
    if a == b or abbreviation_matches(a, b):
        return True
    if len(a) == 1 and acronym_matches(a[0], b):
        return True
    return len(b) == 1 and acronym_matches(b[0], a)


def _parts(text: str) -> list[tuple[str, ...]]:
    """The whole name and its pieces split at dashes, colons and parentheses."""
    unescaped = fold(text)
    pieces = [core_words(text)] + [core_words(p) for p in _PARTS.split(unescaped) if p.strip()]
    return [p for p in dict.fromkeys(pieces) if p]


@lru_cache(maxsize=16384)
def _venue_of(text: str) -> Venue | None:
    parts = _parts(text)
    table = _table()
    for part in parts:
        long_part = _long(part)
        for position, core, long_core in _same_length_cores(part, long_part):
            if part == core or _pair_up(part, long_part, core, long_core):
                return table[position]  # the table's first venue, as before it was indexed
    # An acronym written inside a longer name ("Computer Vision - ECCV 2020", "2021 IEEE/CVF
    # Conference ... (CVPR)"); not for journal names, where "VLDB J." is not the VLDB conference.
    tokens = set(core_words(text))
    if tokens & _JOURNAL_WORDS:
        return None
    for venue in table:
        if venue.kind in ("conference", "preprint") and tokens & venue.acronyms:
            return venue
    return None


def _same_length_cores(part: Words, long_part: Words) -> list[CoreAt]:
    """The table's cores, in table order, as many words long as the part, with or without
    one-letter words: no other core can equal or abbreviate it word by word (testing every core
    for each new name cost ~1 ms of CPU a citation)."""
    index = _cores_by_length()
    return sorted({*index.get((len(part), True), ()), *index.get((len(long_part), False), ())})


@cache
def _cores_by_length() -> dict[tuple[int, bool], list[CoreAt]]:
    index: dict[tuple[int, bool], list[CoreAt]] = {}
    for position, venue in enumerate(_table()):
        for core in venue.cores:
            entry = (position, core, _long(core))
            index.setdefault((len(core), True), []).append(entry)
            index.setdefault((len(entry[2]), False), []).append(entry)
    return index


def _long(words: Words) -> Words:
    return tuple(w for w in words if len(w) > 1)


def _names(venue: Venue) -> list[str]:
    return [" ".join(core) for core in venue.cores]


@cache
def _table() -> tuple[Venue, ...]:
    venues = []
    for line in VENUES_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, kind, name, *rest = line.split("\t")
        variants = [v for v in (rest[0].split("|") if rest else []) if v.strip()]
        names = [name, *variants]
        acronyms = frozenset(
            w for v in names if len(core_words(v)) == 1 for w in core_words(v) if len(w) >= 3
        )
        cores = tuple(dict.fromkeys(core_words(n) for n in names if core_words(n)))
        venues.append(Venue(key=key, kind=kind, name=name, cores=cores, acronyms=acronyms))
    return tuple(venues)
