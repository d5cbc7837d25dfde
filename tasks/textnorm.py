"""Text normalisation for comparing bibliographic strings (titles, names, venues).

Registries and citers write the same words differently: LaTeX (`{BERT}`, `Sch\\"{o}lkopf`), HTML
(`<i>E. coli</i>`, `&#246;`), accents, Greek letters (`α` vs `alpha`), dashes and case. Everything
here maps those to one plain form; comparison itself lives in tasks/match/.
"""

import html
import re
import unicodedata
from functools import lru_cache

from pylatexenc.latex2text import LatexNodes2Text

_LATEX = LatexNodes2Text(math_mode="text")
_LATEX_MARK = re.compile(r"[\\{}$]")
# A bare % starts a LaTeX comment and a bare & is a table separator: both are plain text here.
_UNESCAPED_SPECIAL = re.compile(r"(?<!\\)([%&])")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_NON_WORD = re.compile(r"[^0-9a-z]+")

# Letters NFKD does not decompose into ASCII, and Greek letters as citers spell them out.
_SPECIAL = str.maketrans(
    {
        "ß": "ss",
        "ø": "o",
        "Ø": "O",
        "æ": "ae",
        "Æ": "AE",
        "œ": "oe",
        "Œ": "OE",
        "ł": "l",
        "Ł": "L",
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "þ": "th",
        "ı": "i",
        "&": " and ",
    }
)
_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta",
    "η": "eta", "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu",
    "ξ": "xi", "ο": "omicron", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "sigma", "τ": "tau",
    "υ": "upsilon", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
}  # fmt: skip
_GREEK_TABLE = str.maketrans({k: f" {v} " for k, v in _GREEK.items()})

# Name particles that sort with the given name in one style and the family name in another.
_PARTICLES = frozenset(
    [
        "van",
        "von",
        "der",
        "den",
        "de",
        "del",
        "della",
        "di",
        "da",
        "dos",
        "das",
        "du",
        "la",
        "le",
        "lo",
        "d",
        "l",
        "ter",
        "ten",
        "vander",
        "al",
        "el",
        "bin",
        "ibn",
    ]
)


def strip_markup(text: str) -> str:
    """Plain text from a string that may hold HTML tags/entities or LaTeX markup."""
    text = html.unescape(_HTML_TAG.sub(" ", text))
    if _LATEX_MARK.search(text):
        try:
            text = _LATEX.latex_to_text(_UNESCAPED_SPECIAL.sub(r"\\\1", text))
        except Exception:  # malformed LaTeX: keep the text, drop the markup characters
            text = _LATEX_MARK.sub("", text)
    return text


@lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """Case- and accent-folded text: `Schölkopf` -> `scholkopf`, `β-Catenin` -> ` beta -catenin`.

    Keeps punctuation and spacing; callers tokenise as they need."""
    text = strip_markup(text).translate(_SPECIAL).lower().translate(_GREEK_TABLE)
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(text: str) -> list[str]:
    """Folded alphanumeric words; hyphens and punctuation separate words."""
    return _NON_WORD.sub(" ", fold(text)).split()


def normalise_title(text: str) -> str:
    """The comparable form of a title: folded words joined by single spaces.

    `{BERT}: Pre-training of Deep <i>Bidirectional</i> Transformers.` ->
    `bert pre training of deep bidirectional transformers`."""
    return " ".join(words(text))


def surname_key(name: str) -> str:
    """A family name reduced for comparison: folded letters only, leading particles dropped.

    `van der Maaten` and `Maaten` -> `maaten`; `O'Neil` -> `oneil`; `Marques-Silva` ->
    `marquessilva`."""
    parts = words(name)
    while len(parts) > 1 and parts[0] in _PARTICLES:
        parts = parts[1:]
    return "".join(parts)
