"""The support stage: every claim paired with each verified work it cites.

Two passes over each pair: the bi-encoder (relevance.py) finds the abstract's sentence closest
to the claim and scores their similarity; the cross-encoder (cross.py) reads the claim with the
title and the abstract's sentences that share most of the claim's words, and gives the pair's
`relevance` and `stance`. Where the cross-encoder ran (the work has an abstract), its relevance
decides `label`; a pair without abstract stays `no abstract`, undecided. A package without the
cross-encoder's file (cross.shipped) gives the bi-encoder's label alone."""

from collections.abc import Sequence
from typing import Protocol

from models.audit import Checked, CitationSupport, Claim, Status, Verdict
from tasks.errors import install_command
from tasks.registries.judge import JudgeClient
from tasks.support import cross, encoder
from tasks.support.relevance import Embeds, Pair, Support, score_pairs

OFF = f"off: needs the support extra: {install_command('support')}"


class Judges(Protocol):
    def judge(self, claim: str, title: str | None, abstract: str) -> cross.Judged: ...


def support_claims(
    claims: Sequence[Claim],
    checked: Sequence[Checked],
    model: Embeds | None = None,
    judge: JudgeClient | None = None,
    reader: Judges | None = None,
) -> list[CitationSupport] | None:
    """One row per claim and verified citation it names; None when support is off (the extra
    is not installed). Only verified citations are scored: a mismatched or missing work says
    nothing about the claim, and its failure already counts against it. `model` and `reader`:
    the bi-encoder and the cross-encoder, the shipped ones when not given. With a `judge`, each
    pair with an abstract also gets the LLM's entailment verdict, kept apart from the scores."""
    if model is None and not encoder.available():
        return None
    by_id = {c.citation_id: c for c in checked}
    keys: list[tuple[str, str]] = []
    pairs: list[Pair] = []
    for claim in claims:
        for citation_id in claim.citation_ids:
            found = by_id.get(citation_id)
            if found is None or found.result.status is not Status.VERIFIED:
                continue
            record = found.result.record or found.reference.item
            keys.append((claim.claim_id, citation_id))
            pairs.append(Pair(claim.claim_text, record.title, record.abstract))
    if not pairs:
        return []  # no model loaded for a job without claims on verified works
    verdicts = judge.verdicts(pairs) if judge is not None else [None] * len(pairs)
    scored = score_pairs(pairs, model or encoder.encoder())
    reader = reader or (cross.cross_encoder() if cross.shipped() else None)
    return [
        _row(claim_id, citation_id, pair, bi, reader, verdict)
        for (claim_id, citation_id), pair, bi, verdict in zip(
            keys, pairs, scored, verdicts, strict=True
        )
    ]


def _row(
    claim_id: str,
    citation_id: str,
    pair: Pair,
    bi: Support,
    reader: Judges | None,
    verdict: Verdict | None,
) -> CitationSupport:
    row = CitationSupport(
        claim_id=claim_id,
        citation_id=citation_id,
        support=bi.support,
        label=bi.label,
        evidence=bi.evidence,
        verdict=verdict,
    )
    if not pair.abstract or reader is None:
        return row
    read = reader.judge(pair.claim, pair.title, pair.abstract)
    label = "unrelated" if read.relevance < cross.UNRELATED_BELOW else "related"
    return row.model_copy(
        update={"relevance": read.relevance, "stance": read.stance, "label": label}
    )
