"""Text normalisation for comparing bibliographic strings (titles, names, venues).

Registries and citers write the same words differently: LaTeX (`{BERT}`, `Sch\\"{o}lkopf`), HTML
(`<i>E. coli</i>`, `&#246;`), accents, Greek letters (`α` vs `alpha`), dashes and case. Everything
here maps those to one plain form; comparison itself lives in tasks/match/.

Every script keeps its letters: accents are dropped only from Latin (and Greek) letters, where
citers drop them too (`Schölkopf`/`Scholkopf`); Cyrillic `й`, Japanese `が` and Hangul stay as
written. Han and kana are one word per character (they write no spaces between words).
Transliteration (`transliterate`) is a separate, explicit step: only for comparing a romanised
citation with a native-script record.
"""

import html
import re
import unicodedata
from functools import lru_cache

import regex
from anyascii import anyascii
from pylatexenc.latex2text import LatexNodes2Text

# Words whose presence or absence does not change which work a title names.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "for",
        "and",
        "to",
        "with",
        "by",
        "from",
        "at",
        "as",
        "via",
        "its",
        "their",
    ]
)

_LATEX = LatexNodes2Text(math_mode="text")
_LATEX_MARK = regex.compile(r"[\\{}$]")
# A bare % starts a LaTeX comment and a bare & is a table separator: both are plain text here.
_UNESCAPED_SPECIAL = regex.compile(r"(?<!\\)([%&])")
_HTML_TAG = regex.compile(r"</?[a-zA-Z][^>]*>")
# Letters, digits and the marks that belong to them (Devanagari vowel signs, kana voicing).
_NON_WORD = regex.compile(r"[^\p{L}\p{N}\p{M}]+")
_IDEOGRAPH = regex.compile(r"([\p{Han}\p{Hiragana}\p{Katakana}])")
_ASCII_NON_WORD = re.compile(r"[^0-9a-z]+")  # the standard library's: faster on ASCII
_NOT_LATIN = regex.compile(r"[^\p{Latin}\p{Common}\p{Inherited}\p{Greek}]")

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


# Bounded well below a big import's list: each distinct title stays cached (~300 bytes), and
# 65,536 of them were ~20 MB more at 100,000 citations than at 10,000. Repeats are near each other.
@lru_cache(maxsize=1 << 14)
def fold(text: str) -> str:
    """Case- and accent-folded text: `Schölkopf` -> `scholkopf`, `β-Catenin` -> ` beta -catenin`,
    `Ёжик` -> `ёжик`, `ｶﾞ` -> `ガ` (NFKC).

    Keeps punctuation and spacing; callers tokenise as they need."""
    text = strip_markup(text)
    if text.isascii():  # the tables map only "&" and letters outside ASCII: skip their lookups
        return text.replace("&", " and ").lower()
    text = text.translate(_SPECIAL).lower().translate(_GREEK_TABLE)
    if text.isascii():
        return text
    kept: list[str] = []
    strip = False  # whether the marks that follow belong to a Latin or Greek letter
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char):
            if not strip:
                kept.append(char)
            continue
        strip = _accentless(char)
        kept.append(char)
    return unicodedata.normalize("NFKC", "".join(kept)).casefold()


def _accentless(char: str) -> bool:
    """A Latin or Greek letter (or ASCII): the scripts whose accents citers drop."""
    code = ord(char)
    return (
        code < 0x250  # Basic Latin, Latin-1, Latin Extended-A and -B
        or 0x370 <= code < 0x400  # Greek
        or 0x1E00 <= code < 0x2000  # Latin Extended Additional, Greek Extended
    )


def words(text: str) -> list[str]:
    """Folded words of letters and digits, in any script; hyphens and punctuation separate
    words, and each Han or kana character is a word of its own."""
    folded = fold(text)
    if folded.isascii():
        return _ASCII_NON_WORD.sub(" ", folded).split()
    return _NON_WORD.sub(" ", _IDEOGRAPH.sub(r" \1 ", folded)).split()


def is_latin(text: str) -> bool:
    """Whether the text is written in Latin letters only (digits and punctuation aside)."""
    return _NOT_LATIN.search(text) is None


def transliterate(text: str) -> str:
    """The text romanised (`Иванов` -> `Ivanov`, `张伟` -> `ZhangWei`), for comparing a
    romanised citation with a native-script record; never used to compare two native forms."""
    return anyascii(text)


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
