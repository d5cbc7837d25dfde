"""What the job report shows, as data: plain functions from the job's frames to typed rows,
which the templates (tasks/report/templates/) only lay out. Flagged citations and unsupported
claims come first, each with its reason."""

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tasks.dedupe.cluster import UNDIRECTED_LINKS
from tasks.dedupe.job import repeats_within_jobs
from tasks.metrics import MISSING_REASON

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
    metrics: dict[str, Any] = field(default_factory=dict)
    style: str = ""
    bibliography_html: list[str] = field(default_factory=list)  # pandoc citeproc's, escaped
    # Listed works no registry confirmed: (status, entry HTML), shown apart and marked.
    bibliography_unconfirmed: list[tuple[str, str]] = field(default_factory=list)
    changes: pl.DataFrame | None = None  # scheduled audits: what changed since the last one
    links: pl.DataFrame = field(default_factory=pl.DataFrame)  # work_id_a, work_id_b, kind


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
    not found (tasks/metrics.py), and shown so, for the reader to see why the claim fails."""
    return {"entry_key": written, "status": "not_found", "reason": MISSING_REASON}


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
    status: str
    count: int
    colour: str


@dataclass(frozen=True)
class FlaggedRow:
    label: str
    status: str
    colour: str
    job_id: str | None  # set when the report covers several jobs
    source_file: str
    entry_key: str
    cited_as: str
    reason: str


@dataclass(frozen=True)
class ClaimCitationRow:
    entry_key: str
    label: str
    reason: str
    support: str = ""  # claim support's label and score ("unrelated, 0.12"), when it ran
    evidence: str = ""  # the cited abstract's sentence closest to the claim
    unrelated: bool = False


@dataclass(frozen=True)
class ClaimRow:
    text: str
    unsupported: bool
    strength: float
    colour: str
    verified_count: int
    citation_count: int
    citations: list[ClaimCitationRow]

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
class Table:
    columns: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Report:
    job_id: str
    citation_count: int
    input_error_count: int
    counts: list[StatusCount]
    flagged: list[FlaggedRow]
    claims: list[ClaimRow] | None  # None: the job has no claims
    histogram: list[HistogramBin] | None  # None: no confidence scores
    changes: Table | None  # None: not a scheduled audit
    duplicates: list[dict[str, str]]
    related: list[dict[str, str]]
    input_errors: list[dict[str, str]]
    style: str
    bibliography_html: list[str]
    bibliography_unconfirmed: list[tuple[str, str]]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _flagged_rows(citations: pl.DataFrame) -> list[FlaggedRow]:
    flagged = flagged_citations(citations)
    jobs = several_jobs(flagged)
    return [
        FlaggedRow(
            label=flag_label(row),
            status=row["status"],
            colour="#cf222e"
            if row.get("retracted")
            else STATUS_COLOURS.get(row["status"], "#6e7781"),
            job_id=row["job_id"] if jobs else None,
            source_file=_text(row["source_file"]),
            entry_key=_text(row["entry_key"]),
            cited_as=cited_as(row),
            reason=_text(row.get("reason") or row.get("error")),
        )
        for row in flagged.iter_rows(named=True)
    ]


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
        rows.append(
            ClaimRow(
                text=_text(row["claim_text"]),
                unsupported=bool(row["unsupported"]),
                strength=strength,
                colour="#cf222e"
                if row["unsupported"]
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
    score = pair and pair["support"]
    return ClaimCitationRow(
        entry_key=_text(cited["entry_key"]),
        label=flag_label(cited),
        reason=_text(cited.get("reason") or cited.get("error")),
        support=f"{pair['label']}, {score:.2f}" if pair and score is not None else "",
        evidence=_text(pair and pair["evidence"]),
        unrelated=bool(pair and pair["label"] == "unrelated"),
    )


def _histogram_bins(citations: pl.DataFrame, bins: int = 10) -> list[HistogramBin] | None:
    if not _column(citations, "confidence") or not citations.height:
        return None
    counts = histogram([float(v) for v in citations["confidence"].drop_nulls()], bins)
    top = max(counts) or 1
    return [
        HistogramBin(i / bins, (i + 1) / bins, c, round(100 * c / top))
        for i, c in enumerate(counts)
    ]


def _table(frame: pl.DataFrame, columns: list[str]) -> list[dict[str, str]]:
    present = [c for c in columns if _column(frame, c)]
    return [
        {c: _text(row[c]) for c in present} for row in frame.select(present).iter_rows(named=True)
    ]


def select(data: ReportData) -> Report:
    """Everything the report shows, in the order it shows it."""
    cites = data.citations
    changes = None
    if data.changes is not None:
        changes = Table(
            list(data.changes.columns),
            [[_text(v) for v in row] for row in data.changes.iter_rows()],
        )
    return Report(
        job_id=data.job_id,
        citation_count=cites.height,
        input_error_count=data.input_errors.height,
        counts=[StatusCount(s, n, STATUS_COLOURS[s]) for s, n in status_counts(cites).items()],
        flagged=_flagged_rows(cites),
        claims=_claim_rows(data.claims, cites),
        histogram=_histogram_bins(cites),
        changes=changes,
        duplicates=_table(
            repeats_within_jobs(cites),
            ["source_file", "entry_key", "duplicate_of", "dup_reason", "work_id"],
        ),
        related=related_citations(cites, data.links),
        input_errors=_table(data.input_errors, ["source_file", "entry_key", "line", "reason"]),
        style=data.style,
        bibliography_html=data.bibliography_html,
        bibliography_unconfirmed=data.bibliography_unconfirmed,
    )
