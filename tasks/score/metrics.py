"""Scores for a job: each citation's confidence, each claim's strength, the job's metrics.

Pure functions over the validated references; the numbers come from tasks/score/confidence.py and
tasks/score/trust.py, this module only lays them out as tables."""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.audit import Checked, CitationSupport, Claim, Reference, Status, ValidationResult
from models.citation import Citation, CitationMap
from tasks.score.confidence import (
    DEFAULT_CONFIDENCE,
    calculate_citation_map_confidence,
    citation_from_reference,
    score_reference,
)
from tasks.score.trust import is_trusted, load_trusted_domains
from tasks.support.claims import OFF

CITATION_SCORE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "citation_id": pl.Utf8,
    "confidence": pl.Float64,
    "confidence_decided": pl.Boolean,
    "engine_confidence": pl.Float64,
    "source_quality_score": pl.Float64,
    "metadata_score": pl.Float64,
    "location_score": pl.Float64,
    "validation_effect": pl.Utf8,
    "is_trusted": pl.Boolean,
    "completeness": pl.Float64,
}

# Why a citation naming no reference of the input (Claim.missing_citations) counts as failed.
MISSING_REASON = "the input holds no reference this citation names"

CLAIM_SCORE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "claim_id": pl.Utf8,
    "strength": pl.Float64,
    "confidence": pl.Float64,
    "citation_count": pl.Int64,
    "verified_count": pl.Int64,
    "failed_count": pl.Int64,
    "unsupported": pl.Boolean,
    "unrelated_count": pl.Int64,
    "contradicting_count": pl.Int64,  # cited works the cross-encoder reads as contradicting
    "support": pl.Float64,  # mean support of the claim's scored pairs
    "citation_support": pl.List(
        pl.Struct(
            {
                "citation_id": pl.Utf8,
                "support": pl.Float64,
                "label": pl.Utf8,
                "evidence": pl.Utf8,
                "verdict": pl.Utf8,
                "relevance": pl.Float64,
                "stance": pl.Utf8,
            }
        )
    ),
}


@dataclass
class Assessment:
    citation_scores: pl.DataFrame  # one row per citation: join on citation_id
    claim_scores: pl.DataFrame  # one row per claim: join on claim_id
    metrics: dict[str, Any]


def citation_scores(checked: Sequence[Checked]) -> pl.DataFrame:
    """Each citation's confidence and the parts it is made of: one row per citation."""
    domains = load_trusted_domains()
    rows = []
    for ref, result in ((c.reference, c.result) for c in checked):
        score = score_reference(ref, result)
        source = citation_from_reference(ref, result).source
        rows.append(
            {
                "citation_id": ref.citation_id,
                "confidence": score["overall_confidence"],
                "confidence_decided": score["decided"],
                "engine_confidence": score["engine_confidence"],
                "source_quality_score": score["source_quality_score"],
                "metadata_score": score["metadata_score"],
                "location_score": score["location_score"],
                "validation_effect": score["validation_effect"],
                "is_trusted": is_trusted(source, domains),
                "completeness": ref.item.completeness(),
            }
        )
    return pl.DataFrame(rows, schema=CITATION_SCORE_SCHEMA)


@dataclass
class Tally:
    """What the job's metrics count of its citations' results, added a batch at a time (a bulk
    import never holds all its results at once)."""

    total: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    retracted: int = 0
    corrected: int = 0
    expression_of_concern: int = 0
    requests: Counter[str] = field(default_factory=Counter)
    asked: Counter[str] = field(default_factory=Counter)
    decided_by: Counter[str] = field(default_factory=Counter)

    def add(self, results: Iterable[ValidationResult]) -> "Tally":
        for result in results:
            self.total += 1
            self.statuses[result.status.value] += 1
            self.retracted += result.retracted
            self.corrected += result.corrected
            self.expression_of_concern += result.expression_of_concern
            self.requests.update(result.requests)
            self.asked.update(result.asked)
            if result.registry:
                self.decided_by[result.registry] += 1
        return self


def assess(
    checked: Sequence[Checked],
    claims: Sequence[Claim],
    duplicates: int = 0,
    supports: Sequence[CitationSupport] | None = None,
) -> Assessment:
    """`supports`: claim support's pairs, None when support is off."""
    tally = Tally().add(c.result for c in checked)
    return assessment(citation_scores(checked), tally, claims, checked, duplicates, supports)


def assessment(
    scores: pl.DataFrame,
    tally: Tally,
    claims: Sequence[Claim],
    cited: Sequence[Checked],
    duplicates: int = 0,
    supports: Sequence[CitationSupport] | None = None,
) -> Assessment:
    """The job's assessment from its citations' scores (`citation_scores`) and results (`tally`);
    `cited`: at least the citations the claims cite."""
    claim_scores = score_claims(
        claims,
        {c.citation_id: c.reference for c in cited},
        {c.citation_id: c.result for c in cited},
        supports or (),
    )
    metrics = job_metrics(tally, scores, claim_scores, duplicates)
    return Assessment(scores, claim_scores, metrics | support_metrics(supports))


def support_metrics(supports: Sequence[CitationSupport] | None) -> dict[str, Any]:
    """What claim support found, or that it is off."""
    if supports is None:
        return {"claim_support": OFF}
    labels = [s.label for s in supports]
    stances = [s.stance for s in supports]
    # The judge's verdicts, apart from the labels; no_verdict: a pair with an abstract and no
    # usable answer (the judge is off, the request failed, or the answer was not a verdict).
    verdicts = [s.verdict for s in supports if s.label != "no abstract"]
    return {
        "claim_support": {
            "pairs": len(labels),
            "related": labels.count("related"),
            "unrelated": labels.count("unrelated"),
            "no_abstract": labels.count("no abstract"),
            "stances": {
                "supports": stances.count("supports"),
                "contradicts": stances.count("contradicts"),
                "undetermined": stances.count("undetermined"),
            },
            "verdicts": {
                "support": verdicts.count("SUPPORT"),
                "contradict": verdicts.count("CONTRADICT"),
                "not_enough_info": verdicts.count("NOT ENOUGH INFO"),
                "no_verdict": verdicts.count(None),
            },
        }
    }


def score_claims(
    claims: Sequence[Claim],
    refs: Mapping[str, Reference],
    results: Mapping[str, ValidationResult],
    supports: Sequence[CitationSupport] = (),
) -> pl.DataFrame:
    """A claim's strength recomputed from its validated citations and, where claim support ran,
    how well their works fit the claim (confidence.py)."""
    by_claim: dict[str, list[CitationSupport]] = {}
    for pair in supports:
        by_claim.setdefault(pair.claim_id, []).append(pair)
    rows = []
    for claim in claims:
        pairs = by_claim.get(claim.claim_id, [])
        unrelated = {p.citation_id for p in pairs if p.label == "unrelated"}
        contradicting = {p.citation_id for p in pairs if p.stance == "contradicts"}
        scored = [p.support for p in pairs if p.support is not None]
        cited = [refs[cid] for cid in claim.citation_ids if cid in refs]
        missing, missing_results = _missing_citations(claim)
        cmap = CitationMap(
            claim_id=claim.claim_id,
            claim_text=claim.claim_text,
            citations=[citation_from_reference(ref, results.get(ref.citation_id)) for ref in cited]
            + missing,
            strength=DEFAULT_CONFIDENCE if claim.stated_strength is None else claim.stated_strength,
        )
        own = {
            ref.citation_id: results[ref.citation_id] for ref in cited if ref.citation_id in results
        }
        score = calculate_citation_map_confidence(
            cmap, own | missing_results, unrelated | contradicting
        )
        verified = sum(1 for ref in cited if results[ref.citation_id].status is Status.VERIFIED)
        rows.append(
            {
                "claim_id": claim.claim_id,
                "strength": score["strength"],
                "confidence": score["overall_confidence"],
                "citation_count": score["citation_count"],
                "verified_count": verified,
                "failed_count": score["failed_count"],
                "unsupported": score["unsupported"],
                "unrelated_count": len(unrelated),
                "contradicting_count": len(contradicting),
                "support": round(sum(scored) / len(scored), 4) if scored else None,
                "citation_support": [
                    p.model_dump(
                        include={
                            "citation_id",
                            "support",
                            "label",
                            "evidence",
                            "verdict",
                            "relevance",
                            "stance",
                        }
                    )
                    for p in pairs
                ],
            }
        )
    return pl.DataFrame(rows, schema=CLAIM_SCORE_SCHEMA)


def _missing_citations(claim: Claim) -> tuple[list[Citation], dict[str, ValidationResult]]:
    """A claim's citations that name no reference (Claim.missing_citations), as citations whose
    source could not be found: each counts as failed, as a made-up identifier does (scored as
    not_found is; the report labels it `missing`, since no registry was asked)."""
    citations, found = [], {}
    for n, written in enumerate(claim.missing_citations, start=1):
        citation_id = f"{claim.claim_id}:missing:{n}"
        citations.append(
            Citation(
                source=written,
                confidence=DEFAULT_CONFIDENCE,
                metadata={"citation_id": citation_id},
            )
        )
        found[citation_id] = ValidationResult(
            citation_id=citation_id,
            status=Status.NOT_FOUND,
            reason=MISSING_REASON,
        )
    return citations, found


def job_metrics(
    tally: Tally,
    citation_scores: pl.DataFrame,
    claim_scores: pl.DataFrame,
    duplicates: int,
) -> dict[str, Any]:
    """The job's quality metrics (metrics.json)."""
    total = tally.total
    counts = {s.value: tally.statuses[s.value] for s in Status}
    decided = total - counts[Status.UNVERIFIED.value]

    def share(n: int, of: int) -> float | None:
        return round(n / of, 4) if of else None

    return {
        "citations": total,
        "status_counts": counts,
        # verified among the citations we could check: network trouble does not lower it
        "validation_rate": share(counts[Status.VERIFIED.value], decided),
        "checked_rate": share(decided, total),
        "metadata_completeness": _mean(citation_scores["completeness"]),
        "duplicate_rate": share(duplicates, total),
        "trust_ratio": share(int(citation_scores["is_trusted"].sum()), total),
        "mean_confidence": _mean(citation_scores["confidence"]),
        "retracted": tally.retracted,
        "corrected": tally.corrected,
        "expression_of_concern": tally.expression_of_concern,
        # Requests sent per citation, per registry (searches, and each citation's share of
        # its batched lookups), and how often each registry was asked or decided.
        "requests_per_citation": {
            name: round(n / total, 4) for name, n in sorted(tally.requests.items())
        },
        "registries_asked": dict(tally.asked),
        "decided_by": dict(tally.decided_by),
        "claims": claim_scores.height,
        "unsupported_claims": int(claim_scores["unsupported"].sum()) if claim_scores.height else 0,
    }


def _mean(values: pl.Series) -> float | None:
    mean = values.mean()
    return round(float(mean), 4) if isinstance(mean, int | float) else None
