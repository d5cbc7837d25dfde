"""Names and titles as the scholarly registries write them, to CSL; titles as search words.

DBLP, arXiv, Semantic Scholar and OpenAlex write "Given Family" ("Wei Wang 0001": DBLP numbers
homonyms with a four-digit suffix that is no part of the name); Europe PMC writes "Family GI"
in its authorString ("Schoenfeld JD, Haas-Kogan DA.")."""

import re

from bibtexparser.middlewares.names import parse_single_name_into_parts

from models.csl import CSLName
from tasks.textnorm import words

_MATH = re.compile(r"\$[^$]*\$")
_TOKEN = re.compile(r"\w+")
_HOMONYM = re.compile(r"\s+\d{4}$")
_SURNAME_INITIALS = re.compile(r"^(\S.*?)\s+([A-Z]{1,4})$")


def person(text: str) -> CSLName | None:
    """ "Given Family" (homonym number dropped) -> a CSL name; one word -> a literal name."""
    name = _HOMONYM.sub("", " ".join(text.split()))
    if not name:
        return None
    parts = parse_single_name_into_parts(name, strict=False)
    if not parts.last or not parts.first:
        return CSLName.model_validate({"literal": name})
    return CSLName.model_validate(
        {
            "family": " ".join(parts.last),
            "given": " ".join(parts.first),
            "non-dropping-particle": " ".join(parts.von) or None,
            "suffix": " ".join(parts.jr) or None,
        }
    )


def people(texts: list[str]) -> list[CSLName] | None:
    names = [name for name in map(person, texts) if name is not None]
    return names or None


def surname_initials(text: str) -> CSLName | None:
    """ "Haas-Kogan DA" -> family Haas-Kogan, given DA; anything else -> a literal name."""
    name = " ".join(text.strip().rstrip(".").split())
    if not name:
        return None
    if m := _SURNAME_INITIALS.match(name):
        return CSLName.model_validate({"family": m.group(1), "given": m.group(2)})
    return CSLName.model_validate({"literal": name})


def without_final_period(title: str | None) -> str | None:
    """DBLP and Europe PMC end titles with a period the paper's title does not have."""
    if not title:
        return None
    text = " ".join(title.split())
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def title_query(title: str) -> str:
    """A title as plain search words: no markup, accents or punctuation, which search syntaxes
    read as operators (DBLP's `-word`, OpenAlex's filter commas, arXiv's quotes)."""
    return " ".join(words(title))


def plain_words_query(title: str) -> str:
    """A title's search words for an engine that ANDs them (DBLP): only the words written in
    plain ASCII letters, outside TeX math. Such an engine may not fold `Nyström` to `nystrom` or
    match `$\\varepsilon$` to the record's `ε`, and one word it misses hides the paper; the rest
    of the title still finds it. A title of nothing else is asked as `title_query` gives it."""
    plain = [token for token in _TOKEN.findall(_MATH.sub(" ", title)) if token.isascii()]
    return " ".join(words(" ".join(plain))) or title_query(title)
