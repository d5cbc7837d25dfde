"""What the job report shows, as data: plain functions from the job's frames to typed rows,
which the templates (tasks/report/templates/) only lay out. Flagged citations and unsupported
claims come first, each with its reason."""

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.audit import FieldAgreement, Subject
from tasks.dedupe.cluster import UNDIRECTED_LINKS
from tasks.dedupe.job import repeats_within_jobs
from tasks.match.decide import decide, names_another_paper
from tasks.report.links import arxiv_url, doi_url, pmid_url
from tasks.score.metrics import MISSING_REASON

FLAGGED = ("mismatch", "not_found", "unmatched")
STATUS_ORDER = ("verified", "mismatch", "not_found", "unmatched", "unverified")
STATUS_COLOURS = {
    "verified": "#1a7f37",
    "mismatch": "#cf222e",
    "not_found": "#cf222e",
    "unmatched": "#bc4c00",
    "unverified": "#6e7781",
}


@dataclass
class ReportData:
    job_id: str
    citations: pl.DataFrame
    claims: pl.DataFrame = field(default_factory=pl.DataFrame)
    input_errors: pl.DataFrame = field(default_factory=pl.DataFrame)
    style: str = ""
    bibliography_html: list[str] = field(default_factory=list)  # pandoc citeproc's, escaped
    # Listed works no registry confirmed: (status, entry HTML), shown apart and marked.
    bibliography_unconfirmed: list[tuple[str, str]] = field(default_factory=list)
    changes: pl.DataFrame | None = None  # scheduled audits: what changed since the last one
    links: pl.DataFrame = field(default_factory=pl.DataFrame)  # work_id_a, work_id_b, kind
    bibliography_note: str = ""  # why there is no bibliography (too many items), if so
    notice: str = ""  # what the reader must know first (the job was not stored), if anything
    subjects: list[Subject] = field(default_factory=list)  # the papers audited (a PDF's own)
    # A big job's report shows only its first flagged citations (`citations`: at most
    # MAX_REPORTED_CITATIONS of them); `whole` then counts every citation, for the status
    # counts, the histogram and how many flagged citations are left out.
    whole: "Totals | None" = None


# Past this many citations a report lists only the first this many flagged ones (worst first)
# and counts the rest: one row per citation would make the report, and the memory it takes to
# write it, grow with the list (a bulk import). Every citation stays in citations.parquet.
MAX_REPORTED_CITATIONS = 5_000


HISTOGRAM_BINS = 10


@dataclass
class Totals:
    """What a big job's report counts of every citation while it lists only the first flagged
    ones (a bulk import past MAX_REPORTED_CITATIONS), added a batch of citation rows at a time:
    no row is held."""

    citations: int = 0
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUS_ORDER, 0))
    confidence: list[int] = field(default_factory=lambda: [0] * HISTOGRAM_BINS)  # histogram
    flagged: int = 0
    repeats: int = 0  # citations of a work the job cites already (repeats_within_jobs)

    def add(self, citations: pl.DataFrame) -> None:
        self.citations += citations.height
        for status, count in status_counts(citations).items():
            self.statuses[status] += count
        values: list[float] = (
            citations["confidence"].drop_nulls().cast(pl.Float64).to_list()
            if _column(citations, "confidence")
            else []
        )
        for bin_, count in enumerate(histogram(values, HISTOGRAM_BINS)):
            self.confidence[bin_] += count
        self.flagged += flagged_citations(citations).height


def _column(frame: pl.DataFrame, name: str) -> bool:
    return name in frame.columns


def status_counts(citations: pl.DataFrame) -> dict[str, int]:
    counts = dict(citations.group_by("status").len().iter_rows()) if citations.height else {}
    return {s: int(counts.get(s, 0)) for s in STATUS_ORDER}


def flagged_citations(citations: pl.DataFrame) -> pl.DataFrame:
    """Citations a reader must look at, worst first: retracted, then failed statuses, then
    corrections/concerns, then the ones we could not check."""
    if not citations.height:
        return citations
    rank = (
        pl.when(pl.col("retracted"))
        .then(0)
        .when(pl.col("status").is_in(FLAGGED))
        .then(1)
        .when(pl.col("corrected") | pl.col("expression_of_concern"))
        .then(2)
        .when(pl.col("status") == "unverified")
        .then(3)
        .otherwise(None)
    )
    return (
        citations.with_columns(rank.alias("_rank"))
        .filter(pl.col("_rank").is_not_null())
        .sort(["_rank", "status", "source_file", "entry_key"])
        .drop("_rank")
    )


def flag_label(row: dict[str, Any]) -> str:
    labels = []
    if row.get("retracted"):
        labels.append("RETRACTED")
    if row.get("corrected"):
        labels.append("corrected")
    if row.get("expression_of_concern"):
        labels.append("expression of concern")
    labels.append(str(row["status"]))
    return ", ".join(labels)


def flagged_list(citations: pl.DataFrame) -> list[dict[str, Any]]:
    """The flagged citations as plain dicts (the CLI's and the flows' summaries)."""
    return [
        {
            "source_file": row["source_file"],
            "entry_key": row["entry_key"],
            "label": flag_label(row),
            "reason": row["reason"] or row["error"] or "",
            "error": row["error"],
        }
        for row in flagged_citations(citations).iter_rows(named=True)
    ]


def several_jobs(citations: pl.DataFrame) -> bool:
    """A scheduled audit's report covers several jobs: one file audited as two jobs gives two
    identical rows, which only the job tells apart."""
    return _column(citations, "job_id") and citations["job_id"].n_unique() > 1


def cited_as(row: dict[str, Any]) -> str:
    title = row.get("claimed_title") or row.get("raw") or row.get("doi") or row.get("pmid") or ""
    who = row.get("claimed_authors") or ""
    year = row.get("claimed_year")
    head = ", ".join(str(x) for x in (who.split(";")[0] if who else "", year) if x)
    return f"{head}: {title}" if head else str(title)


def claim_citations(
    claims: pl.DataFrame, citations: pl.DataFrame
) -> dict[str, list[dict[str, Any]]]:
    """Each claim's citations (entry key, status, flags, reason), in the order the claim cites
    them: what a crew reader checks first when a claim is unsupported."""
    if not claims.height or not _column(claims, "citation_ids"):
        return {}
    by_id = {row["citation_id"]: row for row in citations.iter_rows(named=True)}
    return {
        claim["claim_id"]: [by_id[cid] for cid in claim["citation_ids"] or [] if cid in by_id]
        + [_missing_citation(written) for written in claim.get("missing_citations") or []]
        for claim in claims.iter_rows(named=True)
    }


def _missing_citation(written: str) -> dict[str, Any]:
    """A citation the input names but does not hold (`[12]` past the end of its list): scored as
    a failed citation (tasks/score/metrics.py) and shown as `missing` (the input error's kind,
    what `--fail-on missing` gates), never `not_found`: no registry was asked, the reader is
    told the claim fails because its source is absent from the input."""
    return {"entry_key": written, "status": "missing", "reason": MISSING_REASON}


def unsupported_claims(claims: pl.DataFrame, citations: pl.DataFrame) -> list[dict[str, Any]]:
    """Claims whose citations do not hold them up, weakest first, each with its citations'
    statuses and reasons."""
    if not claims.height or not _column(claims, "unsupported"):
        return []
    cited = claim_citations(claims, citations)
    return [
        {
            "claim_id": row["claim_id"],
            "claim_text": row["claim_text"],
            "strength": row["strength"],
            "citations": [
                {
                    "entry_key": c["entry_key"],
                    "status": flag_label(c),
                    "reason": c.get("reason") or c.get("error") or "",
                }
                for c in cited.get(row["claim_id"], [])
            ],
        }
        for row in claims.filter(pl.col("unsupported")).sort("strength").iter_rows(named=True)
    ]


def histogram(values: list[float], bins: int = 10) -> list[int]:
    counts = [0] * bins
    for v in values:
        counts[min(int(v * bins), bins - 1)] += 1
    return counts


# How a link between works reads, from its first work to its second.
RELATIONS = {
    "preprint-of": "is a preprint of",
    "version-of": "is another version of",
    "co-publication": "is co-published with",
    "erratum-of": "is an erratum to",
    "retraction-of": "is the retraction notice of",
    "expression-of-concern-for": "is an expression of concern for",
    "chapter-of-same-book": "is a chapter of the same book as",
    "part-of": "is part of",
}


def related_citations(citations: pl.DataFrame, links: pl.DataFrame) -> list[dict[str, str]]:
    """Citations of this job whose works are related but not the same (a preprint and its
    published version, a conference paper and its journal version, a paper and its retraction
    notice): one row per link of a kind in RELATIONS, naming the first citation of each work
    (file and entry), in input order of the citation each row starts with."""
    if links.is_empty() or not _column(citations, "work_id"):
        return []
    first = citations.with_row_index("position").group_by("work_id", maintain_order=True).first()
    cited = {row["work_id"]: row for row in first.iter_rows(named=True)}
    rows = []
    for a, b, kind in links.select("work_id_a", "work_id_b", "kind").iter_rows():
        if a in cited and b in cited and kind in RELATIONS:
            x, y = cited[a], cited[b]
            if kind in UNDIRECTED_LINKS and y["position"] < x["position"]:
                x, y = y, x
            rows.append(
                (
                    (x["position"], y["position"]),
                    {
                        "citation": f"{x['source_file']}: {x['entry_key']}",
                        "relation": RELATIONS[kind],
                        "related to": f"{y['source_file']}: {y['entry_key']}",
                    },
                )
            )
    return [row for _, row in sorted(rows, key=lambda pair: pair[0])]


# ---------------------------------------------------------------- the report as rows


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


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _place(row: dict[str, Any], jobs: bool) -> Place:
    return Place(
        job_id=_text(row.get("job_id")) if jobs else None,
        source_file=_text(row.get("source_file")),
        entry_key=_text(row.get("entry_key")),
        cited_as=cited_as(row),
    )


def identifier_links(row: dict[str, Any]) -> list[Link]:
    """The identifiers the citation gives, each linked to its resolver."""
    return [
        Link(label, row[name], url(row[name]))
        for name, label, url in (
            ("doi", "DOI", doi_url),
            ("pmid", "PMID", pmid_url),
            ("arxiv", "arXiv", arxiv_url),
        )
        if row.get(name)
    ]


def record_link(row: dict[str, Any]) -> Link | None:
    """The matched record's identifier: a PMID at PubMed and Europe PMC, an arXiv id at arXiv,
    a DOI wherever it looks like one; other registries' keys are shown unlinked."""
    matched, registry = row.get("matched_id"), row.get("registry") or "registry"
    if not matched:
        return None
    if matched.startswith("10."):
        return Link(f"{registry} DOI", matched, doi_url(matched))
    if registry in ("pubmed", "europepmc") and matched.isdigit():
        return Link(f"{registry} PMID", matched, pmid_url(matched))
    if registry == "arxiv":
        return Link("arXiv", matched, arxiv_url(matched))
    return Link(registry, matched, None)


# Column suffix -> what the reader calls it.
COMPARED_FIELDS = {"title": "title", "authors": "authors", "year": "year", "container": "venue"}


def comparison(row: dict[str, Any]) -> list[FieldRow]:
    """The claimed entry beside the registry record, field by field; a field disagrees when the
    decision table does not count its score as agreeing. Empty for a verified citation whose
    fields all agree: there is nothing to compare."""
    if not row.get("matched_id"):
        return []
    scores = {f: row.get(f"agreement_{f}") for f in COMPARED_FIELDS}
    agreed = decide(FieldAgreement(**scores)).agreed
    rows = [
        FieldRow(
            name=label,
            cited=_text(row.get(f"claimed_{field}")),
            record=_text(row.get(f"matched_{field}")),
            disagrees=scores[field] is not None and field not in agreed,
        )
        for field, label in COMPARED_FIELDS.items()
        if row.get(f"claimed_{field}") is not None or row.get(f"matched_{field}") is not None
    ]
    # a verified citation (flagged for its notice) is worth comparing only where it differs
    agrees = row.get("status") == "verified" and not any(r.disagrees for r in rows)
    return [] if agrees else rows


NOTICE_ADVICE = {
    "retraction": "Retracted: do not rely on it; if you discuss it, cite the notice too.",
    "expression_of_concern": "An expression of concern: read the notice before relying on it.",
    "correction": "Corrected: read the correction and cite the corrected version.",
}


def suggestion(row: dict[str, Any]) -> str:
    """What the reader can do about the citation, from what citeaudit knows today."""
    status, matched = row["status"], row.get("matched_id")
    if row.get("notice_kind") in NOTICE_ADVICE:
        return NOTICE_ADVICE[row["notice_kind"]]
    if row.get("retracted"):
        return NOTICE_ADVICE["retraction"]
    if status == "mismatch" and row.get("suggested_id"):
        meant = row.get("suggested_title") or row["suggested_id"]
        return (
            f"The identifier names another work, {row.get('matched_title') or matched!s}. The "
            f"title and authors you cite are {row['suggested_registry']} record "
            f"{row['suggested_id']} ({meant}): if that is the work you meant, cite it by its "
            "identifier."
        )
    if status == "mismatch" and names_another_paper(
        FieldAgreement(title=row.get("agreement_title"), authors=row.get("agreement_authors")),
        row.get("registry"),
    ):
        return (
            f"The identifier names another work, {row.get('matched_title') or matched!s}, and no "
            "registry record matched the title and authors you cite: correct or remove the "
            "identifier, and check that the work you meant exists."
        )
    if status == "mismatch":
        return (
            f"The identifier's record, {row.get('matched_title') or matched!s}, disagrees on the "
            "fields marked: if it is the work you meant, take the registry's values."
        )
    if status == "not_found":
        return (
            "The registry answered that it holds no such record: check the identifier for a typo, "
            "or give the work's DOI or PMID."
        )
    if status == "unmatched":
        return (
            "No registry record matched (the reason names the closest candidate): check that the "
            "work exists, and give its DOI or PMID."
        )
    if status == "unverified":
        return "No registry could be asked: re-run the audit when the registries can be reached."
    if row.get("corrected") or row.get("expression_of_concern"):
        return NOTICE_ADVICE["correction" if row.get("corrected") else "expression_of_concern"]
    return ""


def _notice(row: dict[str, Any]) -> Notice | None:
    kind = row.get("notice_kind")
    if not kind and not _has_notice(row):
        return None
    target = row.get("notice_url") or (
        doi_url(row["notice_id"]) if _text(row.get("notice_id")).startswith("10.") else None
    )
    return Notice(
        kind=_text(kind).replace("_", " ") or flag_label(row).split(", ")[0],
        date=_text(row.get("notice_date")),
        source=_text(row.get("notice_source")),
        reason=_text(row.get("notice_reason")),
        link=Link("notice", _text(row.get("notice_id")) or _text(target), target)
        if row.get("notice_id") or target
        else None,
    )


def _problem_key(row: dict[str, Any]) -> tuple[str, ...]:
    """Citations with the same problem: unverified ones by their reason alone (an outage hits a
    whole list); the others by verdict and the work they cite."""
    reason = _text(row.get("reason") or row.get("error"))
    if row["status"] == "unverified" and not _has_notice(row):
        return (flag_label(row), reason)
    work = [_text(row.get(c)) for c in ("doi", "pmid", "arxiv", "matched_id")]
    return (flag_label(row), reason, cited_as(row), *work)


def _has_notice(row: dict[str, Any]) -> bool:
    return bool(row.get("retracted") or row.get("corrected") or row.get("expression_of_concern"))


def _problems(rows: list[dict[str, Any]], jobs: bool) -> list[Problem]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(_problem_key(row), []).append(row)
    problems = []
    for members in groups.values():
        first = members[0]
        problems.append(
            Problem(
                label=flag_label(first),
                status=first["status"],
                colour="#cf222e"
                if first.get("retracted")
                else STATUS_COLOURS.get(first["status"], "#6e7781"),
                reason=_text(first.get("reason") or first.get("error")),
                places=[_place(row, jobs) for row in members],
                # one work per group, except unverified citations grouped by reason alone
                identifiers=identifier_links(first)
                if len(members) == 1 or len(_problem_key(first)) > 2
                else [],
                record=record_link(first),
                comparison=comparison(first),
                suggestion=suggestion(first),
                notice=_notice(first),
            )
        )
    return problems


def _claim_rows(claims: pl.DataFrame, citations: pl.DataFrame) -> list[ClaimRow] | None:
    if not claims.height or not _column(claims, "strength"):
        return None
    cited = claim_citations(claims, citations)
    rows = []
    for row in claims.sort(["unsupported", "strength"], descending=[True, False]).iter_rows(
        named=True
    ):
        strength = row["strength"] or 0.0
        percent = round(100 * strength)
        support = {pair["citation_id"]: pair for pair in row.get("citation_support") or []}
        undetermined = bool(support) and all(p["support"] is None for p in support.values())
        rows.append(
            ClaimRow(
                text=_text(row["claim_text"]),
                unsupported=bool(row["unsupported"]),
                undetermined=undetermined,
                strength=strength,
                colour="#cf222e"
                if row["unsupported"]
                else STATUS_COLOURS["unverified"]  # grey: not known to hold, not known to fail
                if undetermined
                else "#1a7f37"
                if percent >= 60
                else "#bc4c00",
                verified_count=row.get("verified_count") or 0,
                citation_count=row.get("citation_count") or 0,
                citations=[
                    _claim_citation(c, support.get(c.get("citation_id")))
                    for c in cited.get(row["claim_id"], [])
                ],
            )
        )
    return rows


def _claim_citation(cited: dict[str, Any], pair: dict[str, Any] | None) -> ClaimCitationRow:
    # the cross-encoder's relevance where it ran (it decided the label), else the similarity
    score = pair and (pair["support"] if pair.get("relevance") is None else pair["relevance"])
    return ClaimCitationRow(
        entry_key=_text(cited["entry_key"]),
        label=flag_label(cited),
        reason=_text(cited.get("reason") or cited.get("error")),
        support=f"{pair['label']}, {score:.2f}" if pair and score is not None else "",
        evidence=_text(pair and pair["evidence"]),
        unrelated=bool(pair and pair["label"] == "unrelated"),
        verdict=_text(pair and pair.get("verdict")),
        stance=_text(pair and pair.get("stance")),
    )


def _histogram(counts: list[int] | None) -> list[HistogramBin] | None:
    if not counts or not sum(counts):
        return None
    bins, top = len(counts), max(counts) or 1
    return [
        HistogramBin(i / bins, (i + 1) / bins, c, round(100 * c / top))
        for i, c in enumerate(counts)
    ]


def _title(row: dict[str, Any]) -> str:
    return _text(row.get("matched_title") or row.get("claimed_title")) or cited_as(row)


def duplicates(citations: pl.DataFrame) -> list[Duplicate]:
    """Each work its job cites more than once, named by its title, with every citation of it
    (file and entry key), the one kept first: never by work or citation ids."""
    repeats = repeats_within_jobs(citations)
    if not repeats.height:
        return []
    group = [c for c in ("job_id", "work_id") if _column(citations, c)]
    jobs = several_jobs(citations)
    repeated = set(repeats.select(group).iter_rows())
    repeat_ids = set(repeats["citation_id"])
    members: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in citations.iter_rows(named=True):
        key = tuple(row[c] for c in group)
        if key in repeated:
            members.setdefault(key, []).append(row)
    found = []
    for rows in members.values():
        rows.sort(key=lambda r: (r["citation_id"] in repeat_ids, r["citation_id"]))
        reasons = sorted({_text(r.get("dup_reason")) for r in rows if r.get("dup_reason")})
        found.append(Duplicate(_title(rows[0]), reasons, [_place(r, jobs) for r in rows]))
    return found


# A scheduled audit's changes, by what they mean to a reader; a citation is listed once, under
# the first kind that applies, with all its changed fields.
CHANGE_KINDS = (
    "Newly retracted, corrected or of concern",
    "Newly resolving",
    "Status changed",
    "Metadata changed",
)
_NOTICE_FIELDS = ("retracted", "corrected", "expression_of_concern")


def change_kind(fields: dict[str, tuple[str, str]]) -> str:
    if any(fields.get(f, ("", ""))[1] == "true" for f in _NOTICE_FIELDS):
        return CHANGE_KINDS[0]
    if "status" in fields:
        return CHANGE_KINDS[1] if fields["status"][1] == "verified" else CHANGE_KINDS[2]
    return CHANGE_KINDS[3]


def change_groups(changes: pl.DataFrame, citations: pl.DataFrame) -> list[ChangeGroup]:
    """The changes of a scheduled audit, one row per citation (named by title and entry key)
    with each changed field's old and new value, grouped by kind in CHANGE_KINDS order."""
    keys = ("job_id", "citation_id")
    by_key = {tuple(r[k] for k in keys): r for r in citations.iter_rows(named=True)}
    jobs = changes["job_id"].n_unique() > 1 if changes.height else False
    fields: dict[tuple[Any, ...], dict[str, tuple[str, str]]] = {}
    for row in changes.iter_rows(named=True):
        key = tuple(row[k] for k in keys)
        fields.setdefault(key, {})[row["field"]] = (_text(row["before"]), _text(row["after"]))
    grouped: dict[str, list[Change]] = {kind: [] for kind in CHANGE_KINDS}
    for key, changed in fields.items():
        row = by_key.get(key) or {"job_id": key[0], "entry_key": key[1], "source_file": ""}
        grouped[change_kind(changed)].append(
            Change(
                Place(
                    job_id=_text(row.get("job_id")) if jobs else None,
                    source_file=_text(row.get("source_file")),
                    entry_key=_text(row.get("entry_key")),
                    cited_as=_title(row),
                ),
                [FieldChange(name, *values) for name, values in changed.items()],
            )
        )
    return [ChangeGroup(kind, rows) for kind, rows in grouped.items() if rows]


def _table(frame: pl.DataFrame, columns: list[str]) -> list[dict[str, str]]:
    present = [c for c in columns if _column(frame, c)]
    return [
        {c: _text(row[c]) for c in present} for row in frame.select(present).iter_rows(named=True)
    ]


def select(data: ReportData) -> Report:
    """Everything the report shows, in the order it shows it."""
    cites = data.citations
    whole = data.whole or totals_of(cites)
    flagged = flagged_citations(cites)
    jobs = several_jobs(flagged)
    rows = list(flagged.iter_rows(named=True))
    return Report(
        job_id=data.job_id,
        citation_count=whole.citations,
        input_error_count=data.input_errors.height,
        counts=[StatusCount(s, n, STATUS_COLOURS[s]) for s, n in whole.statuses.items()],
        notices=_problems([r for r in rows if _has_notice(r)], jobs),
        flagged=_problems([r for r in rows if not _has_notice(r)], jobs),
        claims=_claim_rows(data.claims, cites),
        histogram=_histogram(whole.confidence),
        changes=None if data.changes is None else change_groups(data.changes, cites),
        change_count=0 if data.changes is None else data.changes.height,
        duplicates=duplicates(cites),
        repeat_count=whole.repeats,
        related=related_citations(cites, data.links),
        input_errors=_table(data.input_errors, ["source_file", "entry_key", "line", "reason"]),
        style=data.style,
        bibliography_html=data.bibliography_html,
        bibliography_unconfirmed=data.bibliography_unconfirmed,
        bibliography_note=data.bibliography_note,
        notice=data.notice,
        flagged_left_out=whole.flagged - flagged.height,
        subjects=data.subjects,
    )


def totals_of(citations: pl.DataFrame) -> Totals:
    """`Totals` of citations all at hand."""
    totals = Totals(repeats=repeats_within_jobs(citations).height)
    totals.add(citations)
    return totals


def reported_citations(shown: pl.DataFrame, more: pl.DataFrame, cap: int) -> pl.DataFrame:
    """What a big job's report lists, a batch of citations (`more`) at a time: the first `cap`
    (MAX_REPORTED_CITATIONS) flagged citations of `shown` and `more`, worst first.

    Copied out through Arrow: a row polars picks keeps its strings as views into the whole
    batch they came from, and the rows kept come from every batch, so without the copy the
    list held every batch's strings (at 200,000 citations the pass held 520 MB after it, 289 MB
    with the copy; ~1.3 GB more at 1M)."""
    return pl.DataFrame(flagged_citations(pl.concat([shown, more])).head(cap).to_arrow())
