"""Author-list agreement: the same people despite initials vs full names, particles (van der),
accents, compound surnames, order, given/family swapped, a romanised name against its native
script (`Ivanov`/`Иванов`, `Zhang Wei`/`张伟`); and "et al." honoured."""

from functools import lru_cache

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from models.csl import CSLName, named
from tasks.textnorm import fold, is_latin, surname_key, transliterate, words

# A surname pair this similar is one name spelt two ways (Schoelkopf/Scholkopf, Tomasev/Tomašev).
_SURNAME_RATIO = 88
_ORGANISATION_RATIO = 85
# The fewest leading names that read as a deliberately shortened list rather than a partial one.
TRUNCATED_LIST_MIN = 3
# Words that make a name a group author, not a person ("Gemma Team", "World Health Organization").
GROUP_WORDS = frozenset({
    "team", "consortium", "collaboration", "collaborative", "group", "initiative", "committee",
    "organization", "organisation", "institute", "center", "centre", "association", "society",
    "council", "foundation", "network", "project", "lab", "laboratory", "laboratories", "inc",
    "ltd", "corporation", "agency", "office", "department", "ministry", "bureau", "commission",
})  # fmt: skip
# Names compared are few and repeat: each candidate of a search is compared with the same cited
# list, every name with every name (~80 comparisons a candidate). Their folded forms are cached
# per name string, not worked out again for each pair.
_NAMES_CACHED = 1 << 14


def author_agreement(claimed: list[CSLName], record: list[CSLName]) -> float | None:
    """Share of the authors that the two lists have in common, in [0, 1]; None if a side is empty.

    Order-insensitive (databases reorder, e.g. DBLP vs ACM). With "et al." in the claimed list, only
    the listed names must be found; without it, missing or extra authors count against agreement
    (a partial list presented as complete is a wrong list). A record that keeps only the first of
    the claimed names is scored on the names it keeps; a group on one side that the other, of
    people only, does not name is not compared."""
    cited = [n for n in named(claimed) if _has_name(n)]
    listed = [n for n in named(record) if _has_name(n)]
    mine, theirs = _people_of(cited, listed), _people_of(listed, cited)
    if not mine or not theirs:
        return None
    truncated = any(n.is_et_al() for n in claimed) or _is_leading_run(mine, theirs)
    # Some registries keep only the first author(s): an old Crossref deposit gives the Protein
    # Data Bank's eight authors as 'Berman, H. M.'. The names they drop cannot be checked, so
    # they do not count against the claimed ones that follow.
    record_truncated = _is_leading_run(theirs, mine, minimum=1)
    unused = list(range(len(theirs)))
    found = 0.0
    for name in mine:
        best_index, best = -1, 0.0
        for index in unused:
            score = name_agreement(name, theirs[index])
            if score > best:
                best_index, best = index, score
                if best == 1.0:  # none scores higher: the first such is the one kept anyway
                    break
        if best_index >= 0:
            unused.remove(best_index)
            found += best
    if truncated:
        denominator = len(mine)
    elif record_truncated:
        denominator = len(theirs)
    else:
        denominator = max(len(mine), len(theirs))
    return min(1.0, found / denominator)


def _people_of(names: list[CSLName], other: list[CSLName]) -> list[CSLName]:
    """The names of one list to compare with the other's: a group the other list does not name
    is set aside when the other lists people only. A byline naming the group ("OpenAI", "Meta
    Team") is no claim about the 279 people a record lists; a record's sponsors listed as
    authors (OSTI's 'USDOE Office of Electricity') are none of the people cited."""
    if any(_is_group(n) for n in other):
        return names
    return [n for n in names if not _is_group(n) or any(name_agreement(n, o) for o in other)]


def _is_group(name: CSLName) -> bool:
    """A group author: one word in CSL's literal form (`OpenAI`, `Anthropic`), or a name with a
    word only groups carry (`Gemma Team`, read by BibTeX as given `Gemma`, family `Team`)."""
    literal = (name.literal or "").split()
    single = len(literal) == 1 and not (name.family or name.given)
    return single or _has_group_word(name.literal or f"{name.given or ''} {name.family or ''}")


@lru_cache(maxsize=_NAMES_CACHED)
def _has_group_word(text: str) -> bool:
    return any(w in GROUP_WORDS for w in words(text))


def _is_leading_run(
    mine: list[CSLName], theirs: list[CSLName], minimum: int = TRUNCATED_LIST_MIN
) -> bool:
    """A long list cut after its first names, in order (APA, Vancouver and most styles print the
    first 3 to 20 authors, then "et al."; some formats lose the "et al." marker)."""
    if len(mine) < minimum or len(mine) >= len(theirs):
        return False
    return all(name_agreement(a, b) == 1.0 for a, b in zip(mine, theirs, strict=False))


def name_agreement(a: CSLName, b: CSLName) -> float:
    """1.0 same person, 0.5 same surname with conflicting initials, 0.0 different."""
    if a.literal and b.literal and not (a.family or b.family):
        return (
            1.0
            if fuzz.token_sort_ratio(fold(a.literal), fold(b.literal)) >= _ORGANISATION_RATIO
            else 0.0
        )
    family_a, family_b = _family(a), _family(b)
    if _same_surname(family_a, family_b):
        return 1.0 if _initials_compatible(_given(a), _given(b)) else 0.5
    # Given and family swapped (common with East Asian names in Western-order databases).
    if _same_surname(family_a, _given(b)) and _same_surname(_given(a), family_b):
        return 1.0
    if _whole_name_romanised(a, b) or _whole_name_romanised(b, a):
        return 1.0
    return 0.0


def _whole_name_romanised(whole: CSLName, parts: CSLName) -> bool:
    """A native-script name kept whole, family name first, with no given name (`张伟`, as some
    registries store Chinese names) against its romanisation cited as family and given
    (`Zhang, Wei` or `Zhang, W.`)."""
    text = whole.family or whole.literal or ""
    if whole.given or not text or is_latin(text) or not (parts.family and parts.given):
        return False
    key, family = surname_key(transliterate(text)), surname_key(parts.family)
    given = words(parts.given)
    if not family or not given or not key.startswith(family):
        return False
    rest = key[len(family) :]
    # A full given name must be the rest; an initial (`W.`) its first letter.
    return rest == "".join(given) if len(given[0]) > 1 else rest[:1] == given[0]


def surname_in_text(name: CSLName, text: str) -> bool:
    """Whether a person's surname appears as words in a free-text reference."""
    family = _family(name)
    target = words(family)
    haystack = words(text)
    if not target:
        return False
    size = len(target)
    return any(haystack[i : i + size] == target for i in range(len(haystack) - size + 1)) or (
        surname_key(family) in haystack
    )


def _has_name(name: CSLName) -> bool:
    return bool(name.family or name.literal)


def _family(name: CSLName) -> str:
    if name.family and not name.family.strip().isdigit():
        particle = name.non_dropping_particle or ""
        return f"{particle} {name.family}".strip()
    # DBLP's homonym numbers ("Stefan Fischer 0003") parse as a family name: use the word before.
    text = name.literal or f"{name.given or ''} {name.family or ''}"
    kept = [w for w in text.split() if not w.isdigit()]
    return kept[-1] if kept else ""


def _given(name: CSLName) -> str:
    if name.given:
        return name.given
    literal = (name.literal or "").strip().split()
    return " ".join(literal[:-1]) if len(literal) > 1 and not name.family else ""


def _same_script(a: str, b: str) -> tuple[str, str]:
    """Both names in one script: romanised when only one of them is in Latin letters."""
    if _latin(a) == _latin(b):
        return a, b
    return transliterate(a), transliterate(b)


_latin = lru_cache(maxsize=_NAMES_CACHED)(is_latin)


@lru_cache(maxsize=_NAMES_CACHED)
def _surname(name: str) -> tuple[str, frozenset[str]]:
    """A surname's key (surname_key) and its words of four letters or more."""
    return surname_key(name), frozenset(w for w in words(name) if len(w) >= 4)


def _same_surname(a: str, b: str) -> bool:
    a, b = _same_script(a, b)
    (key_a, parts_a), (key_b, parts_b) = _surname(a), _surname(b)
    if not key_a or not key_b:
        return False
    if key_a == key_b:
        return True
    # Compound surnames cited by one part: Marques-Silva / Silva, Garcia Marquez / Garcia.
    if parts_a & parts_b:
        return True
    shortest = min(len(key_a), len(key_b))
    # One slip in a longer name is a typo or OCR (McIlroy/Mcllroy), not another person.
    if shortest >= 5 and Levenshtein.distance(key_a, key_b) <= 1:
        return True
    return shortest >= 4 and fuzz.ratio(key_a, key_b) >= _SURNAME_RATIO


def _initials_compatible(a: str, b: str) -> bool:
    """`J. K.` vs `John Kenneth` agree; `J.` vs `A.` do not; a missing given name is no conflict."""
    a, b = _same_script(a, b)
    first_a, first_b = _initial(a), _initial(b)
    return not first_a or not first_b or first_a == first_b


@lru_cache(maxsize=_NAMES_CACHED)
def _initial(given: str) -> str:
    """The first letter of a given name's first word ('' for none)."""
    first = words(given)[:1]
    return first[0][0] if first else ""
