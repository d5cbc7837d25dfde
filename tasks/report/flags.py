"""The report's flag rules: which citations a reader must look at and in what order, how each
is labelled, compared with its record and advised, grouped by problem."""

from typing import Any

import polars as pl

from models.audit import FieldAgreement
from tasks.match.decide import decide, names_another_paper
from tasks.report.links import arxiv_url, doi_url, pmid_url
from tasks.report.rows import (
    FieldRow,
    Link,
    Notice,
    Problem,
    cited_as,
    has_column,
    place_of,
    text_of,
)

FLAGGED = ("mismatch", "not_found", "unmatched")


STATUS_ORDER = ("verified", "mismatch", "not_found", "unmatched", "unverified")


STATUS_COLOURS = {
    "verified": "#1a7f37",
    "mismatch": "#cf222e",
    "not_found": "#cf222e",
    "unmatched": "#bc4c00",
    "unverified": "#6e7781",
}


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
    return has_column(citations, "job_id") and citations["job_id"].n_unique() > 1


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
            cited=text_of(row.get(f"claimed_{field}")),
            record=text_of(row.get(f"matched_{field}")),
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
    if not kind and not has_notice(row):
        return None
    target = row.get("notice_url") or (
        doi_url(row["notice_id"]) if text_of(row.get("notice_id")).startswith("10.") else None
    )
    return Notice(
        kind=text_of(kind).replace("_", " ") or flag_label(row).split(", ")[0],
        date=text_of(row.get("notice_date")),
        source=text_of(row.get("notice_source")),
        reason=text_of(row.get("notice_reason")),
        link=Link("notice", text_of(row.get("notice_id")) or text_of(target), target)
        if row.get("notice_id") or target
        else None,
    )


def _problem_key(row: dict[str, Any]) -> tuple[str, ...]:
    """Citations with the same problem: unverified ones by their reason alone (an outage hits a
    whole list); the others by verdict and the work they cite."""
    reason = text_of(row.get("reason") or row.get("error"))
    if row["status"] == "unverified" and not has_notice(row):
        return (flag_label(row), reason)
    work = [text_of(row.get(c)) for c in ("doi", "pmid", "arxiv", "matched_id")]
    return (flag_label(row), reason, cited_as(row), *work)


def has_notice(row: dict[str, Any]) -> bool:
    return bool(row.get("retracted") or row.get("corrected") or row.get("expression_of_concern"))


def problem_rows(rows: list[dict[str, Any]], jobs: bool) -> list[Problem]:
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
                reason=text_of(first.get("reason") or first.get("error")),
                places=[place_of(row, jobs) for row in members],
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
