"""CSL-JSON, the reference format of Zotero, Mendeley, pandoc and Crossref content negotiation.

Field names follow the CSL-JSON schema (hyphenated keys such as `container-title`); models read and
write them by alias, and keep unknown fields so nothing a user wrote is lost on a round trip.
"""

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The years a reference can give, 1500-2099: every year pattern of citeaudit is built from this.
YEARS = r"1[5-9]\d\d|20\d\d"
_YEAR = re.compile(rf"\b({YEARS})\b")
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
# How inputs write the marker of a shortened author list: BibTeX's `and others`, "et al.".
_ET_AL_TEXTS = frozenset({"others", "and others", "et al", "et al.", "et. al", "et. al.", "etal"})
# The one form readers store it in, as {"literal": ET_AL}: pandoc's citeproc, like BibTeX, prints
# that as "et al." (as "and others" where a style lists every name, e.g. MLA beside another
# entry by the same first authors), never as a person named Others.
ET_AL = "others"


def month_number(text: str | int | None) -> int | None:
    """`3`, `mar`, `March`, `Mar.` -> 3; anything else -> None."""
    if text is None:
        return None
    value = str(text).strip().lower().rstrip(".")
    if value.isdigit():
        return int(value) if 1 <= int(value) <= 12 else None
    return _MONTHS.get(value) or _MONTHS.get(value[:3])


class _CSLBase(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    def to_csl(self) -> dict[str, Any]:
        """Plain CSL-JSON: hyphenated keys, no empty fields."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class CSLName(_CSLBase):
    family: str | None = None
    given: str | None = None
    literal: str | None = None
    non_dropping_particle: str | None = Field(None, alias="non-dropping-particle")
    dropping_particle: str | None = Field(None, alias="dropping-particle")
    suffix: str | None = None

    def display(self) -> str:
        if self.literal:
            return self.literal
        parts = [self.given, self.dropping_particle, self.non_dropping_particle, self.family]
        return " ".join(p for p in parts if p)

    def is_et_al(self) -> bool:
        """The "and others" / "et al." marker: the list names only its first authors."""
        return not self.given and is_et_al_text(self.literal or self.family or "")


def is_et_al_text(text: str) -> bool:
    return text.strip().lower() in _ET_AL_TEXTS


def named(names: list[CSLName] | None) -> list[CSLName]:
    """The people of a name list, without its et-al marker."""
    return [name for name in names or [] if not name.is_et_al()]


class CSLDate(_CSLBase):
    date_parts: list[list[int | str]] | None = Field(None, alias="date-parts")
    literal: str | None = None
    raw: str | None = None
    season: int | str | None = None
    circa: bool | int | str | None = None

    def year(self) -> int | None:
        if self.date_parts and self.date_parts[0]:
            try:
                return int(str(self.date_parts[0][0]).strip())
            except ValueError:
                pass
        for text in (self.raw, self.literal):
            if text and (m := _YEAR.search(text)):
                return int(m.group(1))
        return None

    @classmethod
    def from_year(cls, year: int) -> "CSLDate":
        return cls(date_parts=[[year]])


class CSLItem(_CSLBase):
    id: str
    type: str = "article"
    author: list[CSLName] | None = None
    editor: list[CSLName] | None = None
    title: str | None = None
    # A registry's other titles a citer may give instead: the original-language or translated
    # title (Crossref `original-title`, a second `title`; PubMed `VernacularTitle`), the short one.
    original_title: str | None = Field(None, alias="original-title")
    title_short: str | None = Field(None, alias="title-short")
    container_title: str | None = Field(None, alias="container-title")
    container_title_short: str | None = Field(None, alias="container-title-short")
    collection_title: str | None = Field(None, alias="collection-title")
    event_title: str | None = Field(None, alias="event-title")
    issued: CSLDate | None = None
    # Crossref's CSL-JSON (content negotiation) carries it: a journal's print issue can come
    # years after the online-first `issued`, and citers give either year.
    published_print: CSLDate | None = Field(None, alias="published-print")
    accessed: CSLDate | None = None
    DOI: str | None = None
    PMID: str | None = None
    PMCID: str | None = None
    URL: str | None = None
    ISBN: str | None = None
    ISSN: str | None = None
    publisher: str | None = None
    publisher_place: str | None = Field(None, alias="publisher-place")
    volume: str | None = None
    issue: str | None = None
    page: str | None = None
    number: str | None = None
    edition: str | None = None
    genre: str | None = None
    language: str | None = None
    abstract: str | None = None
    note: str | None = None

    @field_validator(
        "id", "volume", "issue", "page", "number", "edition", "PMID", "ISBN", "ISSN", mode="before"
    )
    @classmethod
    def _numbers_as_text(cls, value: Any) -> Any:
        # Real CSL-JSON writes volume 12 and "12" alike; CSL treats them as text.
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, list):  # Crossref and some exporters give ISSN/ISBN as lists
            return ", ".join(str(v) for v in value) or None
        return value

    @field_validator(
        "title",
        "original_title",
        "title_short",
        "container_title",
        "container_title_short",
        mode="before",
    )
    @classmethod
    def _first_of_list(cls, value: Any) -> Any:
        # Crossref's JSON writes titles as lists; CSL-JSON wants one string.
        if isinstance(value, list):
            return next((str(v) for v in value if v), None)
        return value

    def year(self) -> int | None:
        return self.issued.year() if self.issued else None

    def titles(self) -> list[str]:
        """Every title the work goes by: its title, then its original-language and short titles."""
        found = (self.title, self.original_title, self.title_short)
        return list(dict.fromkeys(title for title in found if title))

    def years(self) -> list[int]:
        """The issued year, then the print year when it differs: either is the work's year."""
        found = [self.year(), self.published_print.year() if self.published_print else None]
        return list(dict.fromkeys(year for year in found if year is not None))

    def first_author_family(self) -> str | None:
        for name in named(self.author or self.editor):
            if name.family:
                return name.family
            if name.literal:
                return name.literal.split()[-1] if name.literal.split() else None
        return None

    def completeness(self) -> float:
        """Share of the fields a reader needs to find the work: authors, title, year, container,
        and an identifier or locator (DOI/PMID/URL/ISBN, or volume and pages)."""
        has_locator = bool(self.DOI or self.PMID or self.URL or self.ISBN) or bool(
            self.volume and self.page
        )
        checks = [
            bool(self.author or self.editor),
            bool(self.title),
            self.year() is not None,
            bool(self.container_title or self.publisher),
            has_locator,
        ]
        return sum(checks) / len(checks)

    @classmethod
    def from_csl(cls, data: dict[str, Any]) -> "CSLItem":
        return cls.model_validate(data)
