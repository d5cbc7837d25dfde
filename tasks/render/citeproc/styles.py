"""The style registry: the seven CSL styles we ship (styles/, with their patches in
styles/README.md) and what each style file says of itself: its locale, its citation format, and
whether its names give initials a full stop."""

import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

STYLE_DIR = Path(__file__).resolve().parent / "styles"

STYLES: dict[str, str] = {
    "apa": "apa.csl",
    "mla": "modern-language-association.csl",
    "chicago-author-date": "chicago-author-date.csl",
    "chicago-notes": "chicago-notes-bibliography.csl",
    "ieee": "ieee.csl",
    "vancouver": "vancouver.csl",
    "harvard": "harvard-cite-them-right.csl",
}
_CSL_NS = "http://purl.org/net/xbiblio/csl"


def style_path(style: str) -> Path:
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; known: {', '.join(STYLES)}")
    return STYLE_DIR / STYLES[style]


@cache
def style_locale(style: str) -> str:
    """The style's `default-locale`, else en-US, as CSL itself falls back."""
    root = ET.parse(style_path(style)).getroot()
    return root.get("default-locale") or "en-US"


@cache
def initials_take_period(style: str) -> bool:
    """Whether to write bare initials in given names with their full stop for this style.

    True when (1) every cs:name puts a full stop after initials (its initialize-with, own or
    inherited, ends in "."), so CSL 1.0.2 renders "Daniel S" as "Daniel S." in every form and
    adding the stop changes no output; and (2) the citation names a givenname-disambiguation-rule
    other than by-cite, the case where pandoc's citeproc first groups all names by their
    spelling: "Daniel S" and "Daniel S." are then two people printed alike, their works get year
    suffixes, and names are not added as the style asks."""
    root = ET.parse(style_path(style)).getroot()
    citation = root.find(f"{{{_CSL_NS}}}citation")
    rule = (
        citation.get("givenname-disambiguation-rule", "by-cite")
        if citation is not None
        else "by-cite"
    )
    default = root.get("initialize-with")
    contexts = [root.find(f"{{{_CSL_NS}}}{part}") for part in ("citation", "bibliography")]
    inherited = {default} | {c.get("initialize-with", default) for c in contexts if c is not None}
    values = {
        name.get("initialize-with") if "initialize-with" in name.attrib else value
        for name in root.iter(f"{{{_CSL_NS}}}name")
        for value in inherited
    }
    periods = all(value is not None and value.rstrip().endswith(".") for value in values)
    return periods and rule != "by-cite"


@cache
def style_format(style: str) -> str:
    """The style's citation format: author-date, author, numeric, note or label."""
    root = ET.parse(style_path(style)).getroot()
    category = root.find(f".//{{{_CSL_NS}}}category[@citation-format]")
    return category.get("citation-format", "") if category is not None else ""
