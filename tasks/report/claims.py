"""The report's claims: each claim with its citations, and those its citations do not hold up."""

from typing import Any

import polars as pl

from tasks.report.flags import STATUS_COLOURS, flag_label
from tasks.report.rows import ClaimCitationRow, ClaimRow, has_column, text_of
from tasks.score.metrics import MISSING_REASON


def claim_citations(
    claims: pl.DataFrame, citations: pl.DataFrame
) -> dict[str, list[dict[str, Any]]]:
    """Each claim's citations (entry key, status, flags, reason), in the order the claim cites
    them: what a crew reader checks first when a claim is unsupported."""
    if not claims.height or not has_column(claims, "citation_ids"):
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
    if not claims.height or not has_column(claims, "unsupported"):
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


def claim_rows(claims: pl.DataFrame, citations: pl.DataFrame) -> list[ClaimRow] | None:
    if not claims.height or not has_column(claims, "strength"):
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
                text=text_of(row["claim_text"]),
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
        entry_key=text_of(cited["entry_key"]),
        label=flag_label(cited),
        reason=text_of(cited.get("reason") or cited.get("error")),
        support=f"{pair['label']}, {score:.2f}" if pair and score is not None else "",
        evidence=text_of(pair and pair["evidence"]),
        unrelated=bool(pair and pair["label"] == "unrelated"),
        verdict=text_of(pair and pair.get("verdict")),
        stance=text_of(pair and pair.get("stance")),
    )
