"""Title agreement: same work despite casing, markup, hyphens, spelling variants and a dropped
subtitle; a different title when a content word is swapped, added or removed ("near miss")."""

import re
from collections.abc import Sequence

import regex
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from tasks.textnorm import STOPWORDS, fold, is_latin, normalise_title, transliterate

_SUBTITLE_SPLIT = re.compile(r"\s*(?::|\s[-–—]{1,3}\s|\?|\.\s)\s*")
_DIGITS = re.compile(r"\d+")
_NOTE = re.compile(
    r"\([^()]*\)|\[[^\[\]]*\]|^\s*(?:tutorial|panel|keynote|invited talk|abstract)\s*:", re.I
)

# Scores for the benign differences; both are above the acceptance line in tasks/match/decide.py.
SAME_BUT_SPELLING = 0.97
SAME_BUT_SUBTITLE = 0.95
# A citer who shortens a long title keeps its head: "... in a mouse model" for "... in a mouse
# model through modulation of neuroinflammation". Accepted when the kept head is long enough to
# name one work on its own.
SAME_BUT_TRUNCATED = 0.92
TRUNCATED_MIN_WORDS = 8
TRUNCATED_MIN_SHARE = 0.6
# A free-text reference that drops the subtitle sets the main title off by punctuation, as a
# structured title field would: "Pandey P. Vector quotient filters. SIGMOD 2021." Scored as a
# dropped subtitle only when the main title has this many content words: "Introduction." or
# "Deep learning," inside a reference string names no one work.
MAIN_TITLE_MIN_CONTENT_WORDS = 3
_BEFORE_TITLE = r"(?:^|[^\s\p{L}\p{N}\p{M}])\s*"
_BETWEEN_WORDS = r"[^\p{L}\p{N}\p{M}]+"
# Not ":" or a dash: the citer's text would go on with a subtitle of its own.
_AFTER_TITLE = r"\s*(?:$|[.,;!?\"'”’)\]}*_])"
# Each substantive word edit costs this much off the character similarity, so that one swapped
# content word ("Attention Is All You Want") falls below the acceptance line however long the title.
WORD_EDIT_PENALTY = 0.1


def best_title_similarity(claimed: str, record_titles: Sequence[str]) -> float:
    """Agreement of a claimed title with the best of a record's titles (its title with subtitle,
    its original-language title, its short title): a citer may give any of them."""
    return max((title_similarity(claimed, title) for title in record_titles), default=0.0)


def best_title_in_text(record_titles: Sequence[str], text: str) -> float:
    """How well the best of a record's titles appears inside a free-text reference."""
    return max((title_in_text(title, text) for title in record_titles), default=0.0)


def title_similarity(claimed: str, record: str) -> float:
    """Agreement of two titles in [0, 1]; 1.0 for the same title up to markup, case and spacing.

    A romanised title against a native-script one (`Nejronnye seti` / `Нейронные сети`) is
    compared transliterated, and at most as a spelling variant."""
    direct = _same_script_similarity(claimed, record)
    if direct < SAME_BUT_SPELLING and is_latin(claimed) != is_latin(record):
        romanised = _same_script_similarity(transliterate(claimed), transliterate(record))
        return max(direct, min(romanised, SAME_BUT_SPELLING))
    return direct


def _same_script_similarity(claimed: str, record: str) -> float:
    a, b = normalise_title(claimed), normalise_title(record)
    if not a or not b:
        return 0.0
    if a == b or a.replace(" ", "") == b.replace(" ", ""):
        return 1.0
    if b in _main_titles(claimed) or a in _main_titles(record):  # one side omits the subtitle
        return SAME_BUT_SUBTITLE
    # Editorial notes are not part of the title: "(Panel Abstract)", "[Review]", "Tutorial:".
    bare_a, bare_b = _without_notes(claimed), _without_notes(record)
    if bare_a and bare_a == bare_b:
        return SAME_BUT_SUBTITLE
    edits = substantive_word_edits(a.split(), b.split())
    if edits == 0:
        return SAME_BUT_SPELLING
    if _is_truncation(a.split(), b.split()) or _is_truncation(b.split(), a.split()):
        return SAME_BUT_TRUNCATED
    return max(0.0, fuzz.ratio(a, b) / 100 - WORD_EDIT_PENALTY * edits)


def _is_truncation(head: list[str], full: list[str]) -> bool:
    """`head` is the first words of `full`, long enough to stand for it."""
    return (
        len(head) < len(full)
        and full[: len(head)] == head
        and len(head) >= TRUNCATED_MIN_WORDS
        and len(head) >= TRUNCATED_MIN_SHARE * len(full)
    )


def title_in_text(title: str, text: str) -> float:
    """How well a record's title appears inside a free-text reference, in [0, 1]."""
    needle, haystack = normalise_title(title), normalise_title(text)
    if not needle or not haystack:
        return 0.0
    if f" {needle} " in f" {haystack} ":
        return 1.0
    if _head_in_text(needle.split(), f" {haystack} "):
        return SAME_BUT_TRUNCATED
    if _main_title_in_text(title, text):
        return SAME_BUT_SUBTITLE
    alignment = fuzz.partial_ratio_alignment(needle, haystack)
    if alignment is None:
        return 0.0
    start, end = _widen_to_words(haystack, alignment.dest_start, alignment.dest_end)
    return title_similarity(needle, haystack[start:end])


def _main_title_in_text(title: str, text: str) -> bool:
    """The text gives the title's main part, subtitle dropped, set off as a whole title."""
    main = _main_title(title).split()
    if (
        main == normalise_title(title).split()
        or _content_words(main) < MAIN_TITLE_MIN_CONTENT_WORDS
    ):
        return False
    body = _BETWEEN_WORDS.join(map(regex.escape, main))
    return regex.search(_BEFORE_TITLE + body + _AFTER_TITLE, fold(text)) is not None


def _head_in_text(title_words: list[str], padded_text: str) -> bool:
    """The text quotes a long enough head of the title (a citer's shortened title)."""
    shortest = max(TRUNCATED_MIN_WORDS, int(TRUNCATED_MIN_SHARE * len(title_words) + 0.999))
    return any(
        f" {' '.join(title_words[:n])} " in padded_text
        for n in range(len(title_words) - 1, shortest - 1, -1)
    )


def substantive_word_edits(a: list[str], b: list[str]) -> int:
    """Word-level edits between two normalised titles that change meaning.

    Benign: stop words added or dropped, a word split or joined (`pre training`/`pretraining`),
    a spelling variant of the same word (`optimisation`/`optimization`, plurals)."""
    edits = 0
    for op in Levenshtein.opcodes(a, b):
        if op.tag == "equal":
            continue
        left, right = a[op.src_start : op.src_end], b[op.dest_start : op.dest_end]
        if "".join(left) == "".join(right):
            continue
        if op.tag == "replace" and len(left) == len(right):
            edits += sum(not _same_word(x, y) for x, y in zip(left, right, strict=True))
            continue
        edits += max(_content_words(left), _content_words(right))
    return edits


def _content_words(words: list[str]) -> int:
    return sum(w not in STOPWORDS for w in words)


def _same_word(x: str, y: str) -> bool:
    if x in STOPWORDS and y in STOPWORDS:
        return True
    if _DIGITS.findall(x) != _DIGITS.findall(y):
        return False  # GPT-3 vs GPT-4, 2019 vs 2020: different things
    return min(len(x), len(y)) >= 4 and fuzz.ratio(x, y) >= 80


def _main_title(title: str) -> str:
    """The part of a title before its subtitle separator, normalised."""
    return normalise_title(_SUBTITLE_SPLIT.split(fold(title).strip(), maxsplit=1)[0])


def _main_titles(title: str) -> list[str]:
    """Each head of a title that ends at a subtitle separator, normalised: `A: B: C` gives `a`
    and `a b` (a registry's title may hold a colon of its own before the subtitle it adds)."""
    parts = _SUBTITLE_SPLIT.split(fold(title).strip())
    return [normalise_title(" ".join(parts[:n])) for n in range(1, len(parts))]


def _without_notes(title: str) -> str:
    return normalise_title(_NOTE.sub(" ", fold(title)))


def _widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and text[start - 1] != " ":
        start -= 1
    while end < len(text) and text[end] != " ":
        end += 1
    return start, end
