"""CSL items as pandoc's citeproc should read them, and the order author-sorted styles list
them in.

pandoc_item maps what citeproc-js reads and pandoc does not (Zotero-era field names, `doi:`
URLs), drops what pandoc would reject (a field of the wrong shape fails the whole run) or must
not link, marks "et al." as the one name pandoc prints so, and meets two citeproc quirks:
"Daniel S" and "Daniel S." taken for two people (initials_take_period), and CSL's title case
capitalising prepositions that MLA and Chicago lowercase."""

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from models.csl import ET_AL, CSLItem, is_et_al_text, named
from tasks.identifiers import is_safe_link, normalize_doi
from tasks.render.citeproc.styles import initials_take_period

# Zotero-era CSL-JSON names that citeproc-js reads and pandoc does not.
_LEGACY_FIELDS = {"shortTitle": "title-short", "journalAbbreviation": "container-title-short"}
_NAME_VARIABLES = frozenset(
    [
        "author",
        "chair",
        "collection-editor",
        "compiler",
        "composer",
        "container-author",
        "contributor",
        "curator",
        "director",
        "editor",
        "editorial-director",
        "executive-producer",
        "guest",
        "host",
        "illustrator",
        "interviewer",
        "narrator",
        "organizer",
        "original-author",
        "performer",
        "producer",
        "recipient",
        "reviewed-author",
        "script-writer",
        "series-creator",
        "translator",
    ]
)
# A capital standing alone in a given name ("S" in "Daniel S"), not already followed by a full
# stop and not an elided word ("D'Arcy").
_BARE_INITIAL = re.compile(r"\b([^\W\d_])(?![\w.'’])")
_DATE_VARIABLES = frozenset(
    ["accessed", "available-date", "event-date", "issued", "original-date", "submitted"]
)
_TITLE_VARIABLES = frozenset(
    [
        "collection-title",
        "container-title",
        "container-title-short",
        "original-title",
        "part-title",
        "reviewed-title",
        "title",
        "title-short",
        "volume-title",
    ]
)
# MLA (Handbook 9th ed.; style.mla.org, "two-word prepositions in titles") and Chicago (17th ed.
# 8.159) lowercase every preposition inside a title, however long. CSL 1.0.2's title case knows
# only a short stop-word list, so pandoc writes "Diseases Through Data". Listed: prepositions
# missing from that list that are prepositions in nearly every title; words that are often
# adverbs, adjectives or subordinating conjunctions (after, along, around, like, since, until),
# which these manuals capitalise in those uses, are left to CSL.
_LOWERCASE_PREPOSITION_STYLES = frozenset(["mla", "chicago-author-date", "chicago-notes"])
_PREPOSITIONS = (
    "across",
    "against",
    "alongside",
    "amid",
    "amidst",
    "among",
    "amongst",
    "atop",
    "beneath",
    "beside",
    "between",
    "beyond",
    "despite",
    "during",
    "per",
    "through",
    "throughout",
    "toward",
    "towards",
    "under",
    "underneath",
    "unto",
    "upon",
    "versus",
    "within",
    "without",
)
# A listed preposition as the writer lowercased it, inside the title: after a word (not after a
# colon or full stop, where a subtitle or sentence starts) and before another word (CSL
# capitalises a title's last word).
_INNER_PREPOSITION = re.compile(rf"(?<=[\w,]\s)({'|'.join(_PREPOSITIONS)})(?=\s+\w)")
# CSL-JSON's markup (read by pandoc and citeproc-js alike) for text no case change may touch.
_NOCASE = r'<span class="nocase">\1</span>'


def pandoc_items(items: Sequence[CSLItem], keys: Sequence[str], style: str) -> list[dict[str, Any]]:
    """The items under `keys`, as one style's pandoc run reads them (see pandoc_item)."""
    return [
        pandoc_item(
            item,
            key,
            initials_period=initials_take_period(style),
            lowercase_prepositions=style in _LOWERCASE_PREPOSITION_STYLES,
        )
        for item, key in zip(items, keys, strict=True)
    ]


def first_author_batches(items: Sequence[CSLItem], size: int) -> list[list[int]]:
    """Positions of the items in batches of at most `size` (a larger group stays whole), each
    batch holding whole groups of items whose first author has the same family name, batches
    in the order of that name: the order author-sorted styles list them in."""
    groups: dict[str, list[int]] = {}
    for position, item in enumerate(items):
        groups.setdefault(_sort_name(item), []).append(position)
    batches: list[list[int]] = []
    for name in sorted(groups):
        if not batches or len(batches[-1]) + len(groups[name]) > size:
            batches.append([])
        batches[-1].extend(groups[name])
    return [batch for batch in batches if batch]


def _sort_name(item: CSLItem) -> str:
    # What a style sorts by first: the first author's family name, else (as CSL substitutes)
    # the editor's, else the title; folded the way a reader alphabetises.
    first = next(iter(named(item.author or item.editor)), None)
    name = (first.family or first.literal if first else None) or item.title or ""
    folded = unicodedata.normalize("NFKD", name)
    return "".join(c for c in folded if not unicodedata.combining(c)).casefold().strip()


def pandoc_item(
    item: CSLItem, key: str, *, initials_period: bool = False, lowercase_prepositions: bool = False
) -> dict[str, Any]:
    """The item as pandoc should see it: our key as id, legacy field names mapped, and no link
    that we would not render (a `doi:` URL becomes https://doi.org/...).

    With `initials_period` (see initials_take_period) bare initials in given names get the full
    stop the style would print anyway, so that pandoc sees one spelling of each name. With
    `lowercase_prepositions` (see _PREPOSITIONS) a lowercase preposition inside a title is kept
    lowercase under the style's title case, as CSL's own stop words are."""
    data = item.to_csl()
    data["id"] = key
    for legacy, field in _LEGACY_FIELDS.items():
        value = data.pop(legacy, None)
        if isinstance(value, str) and value and field not in data:
            data[field] = value
    url = data.get("URL")
    if isinstance(url, str) and url.strip().lower().startswith("doi:"):
        doi = normalize_doi(url)
        data["URL"] = f"https://doi.org/{doi}" if doi else None
    if not is_safe_link(data.get("URL")):
        data.pop("URL", None)
    for field in _NAME_VARIABLES.intersection(data):
        data[field] = _et_al_marked(data[field])
    if initials_period:
        for field in _NAME_VARIABLES.intersection(data):
            data[field] = _with_initial_periods(data[field])
    if lowercase_prepositions:
        for field in _TITLE_VARIABLES.intersection(data):
            if isinstance(data[field], str):
                data[field] = _INNER_PREPOSITION.sub(_NOCASE, data[field])
    return {field: value for field, value in data.items() if _csl_shaped(field, value)}


def _et_al_marked(names: Any) -> Any:
    """An input's "et al." / "others" name as the one marker pandoc prints as "et al." (any other
    spelling would print as a person); a list of nothing but the marker names nobody."""
    if not isinstance(names, list):
        return names  # not CSL-shaped; _csl_shaped drops it
    marked = [{"literal": ET_AL} if _is_et_al(name) else name for name in names]
    return marked if any(name != {"literal": ET_AL} for name in marked) else None


def _is_et_al(name: Any) -> bool:
    # Any input's names reach here, CSL-valid or not (extra name variables are not validated).
    if not isinstance(name, dict) or name.get("given"):
        return False
    text = name.get("literal") or name.get("family")
    return isinstance(text, str) and is_et_al_text(text)


def _with_initial_periods(names: Any) -> Any:
    if not isinstance(names, list):
        return names  # not CSL-shaped; _csl_shaped drops it
    return [
        name | {"given": _BARE_INITIAL.sub(_initial_with_period, name["given"])}
        if isinstance(name, dict) and isinstance(name.get("given"), str)
        else name
        for name in names
    ]


def _initial_with_period(match: re.Match[str]) -> str:
    initial = match.group(1)
    return f"{initial}." if initial.isupper() else initial


def _csl_shaped(field: str, value: Any) -> bool:
    """What pandoc's citeproc accepts: names as lists of objects, dates as objects, every other
    variable as text or a number. Anything else an input carried along (tracker fields, keyword
    lists) stays in the job's data but never reaches pandoc, which would reject the whole job."""
    if field in _NAME_VARIABLES:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if field in _DATE_VARIABLES:
        return isinstance(value, dict)
    return isinstance(value, str | int | float) and not isinstance(value, bool)
