"""The support stage: every claim paired with each verified work it cites.

The bi-encoder (relevance.py) finds the abstract's sentence closest to the claim and scores their
similarity, which gives the pair's label; a pair without abstract stays `no abstract`, undecided.
No cross-encoder or stance model runs: none trained so far met its goals (bench/cross_encoder.py,
bench/train_stance_model.py; bench/RESULTS.md)."""

from collections.abc import Sequence

from models.audit import Checked, CitationSupport, Claim, Status
from tasks.errors import install_command
from tasks.registries.judge import JudgeClient
from tasks.support import encoder
from tasks.support.relevance import Embeds, Pair, score_pairs

OFF = f"off: needs the support extra: {install_command('support')}"


def support_claims(
    claims: Sequence[Claim],
    checked: Sequence[Checked],
    model: Embeds | None = None,
    judge: JudgeClient | None = None,
) -> list[CitationSupport] | None:
    """One row per claim and verified citation it names; None when support is off (the extra
    is not installed). Only verified citations are scored: a mismatched or missing work says
    nothing about the claim, and its failure already counts against it. `model`: the bi-encoder,
    the shipped one when not given. With a `judge`, each pair with an abstract also gets the
    LLM's entailment verdict, kept apart from the scores."""
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
    return [
        CitationSupport(
            claim_id=claim_id,
            citation_id=citation_id,
            support=bi.support,
            label=bi.label,
            evidence=bi.evidence,
            verdict=verdict,
        )
        for (claim_id, citation_id), bi, verdict in zip(keys, scored, verdicts, strict=True)
    ]
