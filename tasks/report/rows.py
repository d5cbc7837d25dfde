"""The job report as typed rows (what templates/ lay out), and how a citation is named in them:
by its file, entry key and how it was cited, never by its ids."""

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.audit import Subject


@dataclass(frozen=True)
class StatusCount:
    """A status badge: how many citations have it, in its colour."""

    status: str
    count: int
    colour: str


@dataclass(frozen=True)
class Link:
    """An identifier or notice shown as text, linked when its target is known and safe."""

    label: str
    text: str
    url: str | None


@dataclass(frozen=True)
class Place:
    """Where a citation is: its job (when the report covers several), file and entry key."""

    job_id: str | None
    source_file: str
    entry_key: str
    cited_as: str


@dataclass(frozen=True)
class FieldRow:
    """One field of a flagged citation: as cited, as the registry holds it, and whether the
    decision table (tasks/match/decide.py) counts them as disagreeing."""

    name: str
    cited: str
    record: str
    disagrees: bool


@dataclass(frozen=True)
class Notice:
    kind: str
    date: str
    source: str
    reason: str
    link: Link | None


@dataclass(frozen=True)
class Problem:
    """One problem and every citation that has it (the same work cited with the same verdict,
    or citations that could not be checked for the same reason)."""

    label: str
    status: str
    colour: str
    reason: str
    places: list[Place]
    identifiers: list[Link]
    record: Link | None  # the registry record the comparison is against
    comparison: list[FieldRow]
    suggestion: str
    notice: Notice | None = None

    @property
    def cited_as(self) -> str | None:
        """What all its citations cite, when they cite the same thing."""
        shown = {place.cited_as for place in self.places}
        return shown.pop() if len(shown) == 1 else None


@dataclass(frozen=True)
class ClaimCitationRow:
    entry_key: str
    label: str
    reason: str
    support: str = ""  # claim support's label and score ("unrelated, 0.12"), when it ran
    evidence: str = ""  # the cited abstract's sentence closest to the claim
    unrelated: bool = False
    stance: str = ""  # the cross-encoder's supports / contradicts / undetermined
    verdict: str = ""  # the optional judge's SUPPORT / CONTRADICT / NOT ENOUGH INFO


@dataclass(frozen=True)
class ClaimRow:
    text: str
    unsupported: bool
    strength: float
    colour: str
    verified_count: int
    citation_count: int
    citations: list[ClaimCitationRow]
    # Claim support ran on its verified works and could score none (none has an abstract): its
    # strength says the citations hold up, not that they say what the claim says.
    undetermined: bool = False

    @property
    def percent(self) -> int:
        return round(100 * self.strength)


@dataclass(frozen=True)
class HistogramBin:
    low: float
    high: float
    count: int
    height: int  # percent of the tallest bin


@dataclass(frozen=True)
class Duplicate:
    """A work its job cites more than once: the citation kept first, then its repeats."""

    title: str
    reasons: list[str]
    places: list[Place]


@dataclass(frozen=True)
class FieldChange:
    """One field a scheduled audit found changed: its stored value and the registry's now."""

    name: str
    before: str
    after: str


@dataclass(frozen=True)
class Change:
    place: Place
    fields: list[FieldChange]


@dataclass(frozen=True)
class ChangeGroup:
    kind: str
    changes: list[Change]


@dataclass(frozen=True)
class Report:
    job_id: str
    citation_count: int
    input_error_count: int
    counts: list[StatusCount]
    notices: list[Problem]  # retracted, corrected or of concern: shown apart, first
    flagged: list[Problem]
    claims: list[ClaimRow] | None  # None: the job has no claims
    histogram: list[HistogramBin] | None  # None: no confidence scores
    changes: list[ChangeGroup] | None  # None: not a scheduled audit
    change_count: int
    duplicates: list[Duplicate]
    repeat_count: int
    related: list[dict[str, str]]
    input_errors: list[dict[str, str]]
    style: str
    bibliography_html: list[str]
    bibliography_unconfirmed: list[tuple[str, str]]
    bibliography_note: str
    notice: str
    flagged_left_out: int = 0  # flagged citations of a big job the report does not list
    subjects: list[Subject] = field(default_factory=list)  # the papers whose citations these are

    @property
    def notice_count(self) -> int:
        return sum(len(problem.places) for problem in self.notices)

    @property
    def flagged_count(self) -> int:
        return sum(len(problem.places) for problem in self.flagged)


def has_column(frame: pl.DataFrame, name: str) -> bool:
    return name in frame.columns


def text_of(value: Any) -> str:
    return "" if value is None else str(value)


def cited_as(row: dict[str, Any]) -> str:
    title = row.get("claimed_title") or row.get("raw") or row.get("doi") or row.get("pmid") or ""
    who = row.get("claimed_authors") or ""
    year = row.get("claimed_year")
    head = ", ".join(str(x) for x in (who.split(";")[0] if who else "", year) if x)
    return f"{head}: {title}" if head else str(title)


def place_of(row: dict[str, Any], jobs: bool) -> Place:
    return Place(
        job_id=text_of(row.get("job_id")) if jobs else None,
        source_file=text_of(row.get("source_file")),
        entry_key=text_of(row.get("entry_key")),
        cited_as=cited_as(row),
    )


def title_of(row: dict[str, Any]) -> str:
    return text_of(row.get("matched_title") or row.get("claimed_title")) or cited_as(row)
