"""Free-text citation fields, as a citation parser segments them, made into CSL values.

The benchmark records (Cora above all) are fields cut out of reference lists by a segmenter:
years ride along in titles and author lists (`(1991) Instance-based learning`, `Pazzani, M.
1992.`), a title keeps the start of its container (`... architecture. In Touretzky,`), an author
list ends early and its last surname opens the title (`J. R.` / `Quinlan (1993) "Combining ..."`),
and Vancouver-style names put the initials last (`Aha DW`). A reader of the reference list
undoes each of these; these functions do the same, so that the matcher sees what the citer wrote.
"""

import html
import re

from models.csl import CSLName

_YEAR = r"(?:1[89]\d\d|20\d\d)"
# A year, also with a disambiguating letter ("1989a"), never a piece of a longer number.
_ANY_YEAR = re.compile(rf"(?<!\d)({_YEAR})(?:[a-z](?![a-z]))?(?!\d)")
_PAREN_YEAR = re.compile(rf"\(\s*({_YEAR})[a-z]?\s*\)")
_TRAILING_YEAR = re.compile(rf"[\s,.]*\(?({_YEAR})[a-z]?\)?[\s.,:;]*$")
_TAG = re.compile(r"</?[a-z]+>")
# An initial: "D.", "D", "DW", "D.W.", "J.-P." (two capitals at most without stops).
_INITIALS = re.compile(r"^(?:(?:[A-Z]\.-?\s*){0,2}[A-Z]\.?|[A-Z]{1,2})$")
_SUFFIX = re.compile(r"^(?:jr|sr|ii|iii|iv)\.?,?$", re.IGNORECASE)
_ET_AL = re.compile(r",?\s*\bet\.?\s+al\b\.?", re.IGNORECASE)
# The head of a title: an author-date tail left over from the author list, "(1991)", "(in press)".
_SPILLED_AUTHOR = re.compile(
    rf"^((?:and\s+|&\s*)?[A-Z][\w'-]+(?:\s+(?:and|&)\s+[A-Z][\w'-]+)?)\s*"
    rf"(?:\(({_YEAR})[a-z]?\)[\s.,:]*|(?=[\"“]))"
)
# A lower-cased source (JedAI's Cora) has no capital to open the surname: there any word does.
_SPILLED_AUTHOR_LOWER = re.compile(_SPILLED_AUTHOR.pattern, re.IGNORECASE)
_WHOLLY_QUOTED = re.compile(r"^[\"“][^\"“”]+[\"”][\s.,;:]*$")
_TITLE_HEAD_IN_AUTHORS = re.compile(r"(?<=[a-z]{2})\.\s+([A-Z][\w-]*(?:\s+[\w-]+){0,3}):\s*$")
_TITLE_HEAD = re.compile(rf"^[\s,.;:]*(?:\(\s*(?:in press|{_YEAR}[a-z]?)\s*\)[\s.,:]*)?")
# Where a container starts inside a segmented title: ". In Touretzky, D. (Ed.)".
_CONTAINER_START = re.compile(r"[.,]\s+In\s+[A-Z].*$")
_QUOTED = re.compile(r"[\"“”]\s*([^\"“”]{8,}?)\s*[,.]?\s*[\"“”]")
_ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4", "v": "5", "vi": "6", "vii": "7", "ix": "9"}
_VOLUME = re.compile(r"^[(\[\s]*(?:vol(?:ume)?\.?|v\.)?\s*(\d+|[ivx]+\b)", re.IGNORECASE)
_PAGES = re.compile(r"(\d+)(?:\s*(?:-+|–|\s)\s*(\d+))?")
_PAGE_MARK = re.compile(r"\b(?:pp|pages?|p)\b\.?", re.IGNORECASE)


def clean(text: str) -> str:
    """Entities and markup (`<volume>`) gone, whitespace collapsed."""
    return re.sub(r"\s+", " ", _TAG.sub(" ", html.unescape(text or ""))).strip()


def year_in(*texts: str) -> int | None:
    """The first year in a date field ("(1989a).", "May 7-11, 1995,"), None without one."""
    for text in texts:
        if match := _ANY_YEAR.search(text or ""):
            return int(match.group(1))
    return None


def split_title(title: str, authors: str) -> tuple[str, str, int | None]:
    """(title, authors, year) from a segmented title and author list: the year or "(in press)"
    at the head of the title taken off, an author-date tail moved back to an author list that
    ends with an initial, the start of a container cut off, the quoted title kept when the
    segment holds more than the quotes."""
    text, year = clean(title), None
    spilled = (_SPILLED_AUTHOR_LOWER if text == text.lower() else _SPILLED_AUTHOR).match(text)
    if (
        spilled
        and _INITIALS.match((authors.split() or [""])[-1].strip(",;:"))
        and (spilled.group(2) or _WHOLLY_QUOTED.match(text[spilled.end() :]))
    ):
        authors = f"{authors.rstrip(' ,;:')} {spilled.group(1)}"
        year = int(spilled.group(2)) if spilled.group(2) else None
        text = text[spilled.end() :]
    head = _TITLE_HEAD.match(text)
    if head and head.group(0):
        year = year or year_in(head.group(0))
        text = text[head.end() :]
    if (quoted := _QUOTED.search(text)) and len(quoted.group(1)) < len(text) - 4:
        text = quoted.group(1)
    text = _CONTAINER_START.sub("", text)
    return text.strip(" .,;:\"'“”"), authors, year


def split_title_head(authors: str, title: str) -> tuple[str, str]:
    """(authors, title) with a title head the segmenter left after the names moved back to the
    title: "P. Utgoff. ID5:" / "An incremental ID3" (a colon ends a title head, never a name)."""
    head = _TITLE_HEAD_IN_AUTHORS.search(clean(authors))
    if not head:
        return authors, title
    return clean(authors)[: head.start() + 1], f"{head.group(1)}: {clean(title)}"


def split_year(authors: str) -> tuple[str, int | None]:
    """An author list without the year an author-date style appended ("Kibler, D. 1992.")."""
    text = clean(authors)
    match = _PAREN_YEAR.search(text) or _TRAILING_YEAR.search(text)
    if not match:
        return text, None
    return (text[: match.start()] + text[match.end() :]).strip(" ,;:"), int(match.group(1))


def names(authors: str) -> list[CSLName]:
    """`A. Smith, B. Jones and C. Li`, `Smith, A. & Jones, B.`, `Smith AB, Jones C` -> CSL names,
    first author first.

    Free-text author lists are ambiguous; this is good enough to find the surnames and the first
    author's initials, which is all dedupe reads."""
    text = _ET_AL.sub("", clean(authors)).strip(" .,;:")
    chunks = [c.strip(" .,") for c in re.split(r"\s*(?:;|&|\band\b|,\s*and\b)\s*", text)]
    result: list[CSLName] = []
    for chunk in filter(None, chunks):
        parts = [p.strip() for p in chunk.split(",") if p.strip()]
        while parts:
            if len(parts) > 1 and _INITIALS.match(parts[1]) and " " not in parts[0].strip():
                result.append(CSLName(family=parts[0], given=parts[1]))
                parts = parts[2:]
            else:
                words = [w for w in parts[0].split() if not _SUFFIX.match(w)]
                result.extend(_names_of_words(words))
                parts = parts[1:]
    return result


def _names_of_words(words: list[str]) -> list[CSLName]:
    """ "Scott E. Fahlman" (given names first), or "Fahlman S. E." / "Aha DW" (initials last,
    several such names may follow each other without a separator)."""
    if not words:
        return []
    if _INITIALS.match(words[0]) or not _INITIALS.match(words[-1]):
        return [CSLName(family=words[-1], given=" ".join(words[:-1]) or None)]
    result = []
    while words:
        split = next((i for i, w in enumerate(words) if _INITIALS.match(w)), len(words))
        end = next((i for i in range(split, len(words)) if not _INITIALS.match(words[i])), None)
        name, words = words[: end or len(words)], words[end or len(words) :]
        result.append(CSLName(family=name[0], given=" ".join(name[1:]) or None))
    return result


def volume(text: str) -> str | None:
    """ "6" from "6(1)", "Vol. 6, no. 1", "vol. <volume> 6", "volume6"; "2" from "Vol. II"; None
    for a bare issue ("(3)")."""
    value = clean(text)
    found = _VOLUME.match(value)
    if not found or re.match(r"^\(\s*\d+\s*\)", value):
        return None
    number = found.group(1).lower()
    return _ROMAN.get(number, number)


def page_range(text: str) -> str | None:
    """ "524-532" from "pages 524-532,", "(pp. 524-532).", "2, pp. 524-532" (the volume
    before the page mark is not a page)."""
    value = clean(text)
    mark = _PAGE_MARK.search(value)
    found = _PAGES.search(value, mark.end() if mark else 0)
    if not found:
        return None
    first, last = found.groups()
    return f"{first}-{last}" if last else first
