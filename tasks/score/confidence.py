"""Confidence of citations and strength of claims, after the ModelChorus citation engine.

The engine (ModelChorus `utils/citation_formatter.py`) scores what a citation *claims*; we keep
its weights and extend it with what the audit *found* (`ValidationResult`).

Engine score, each factor in [0, 1]:

    engine = 0.4 * base (the citation's own `confidence`)
           + 0.3 * metadata (share of author, year, title, snippet present)
           + 0.2 * source quality
           + 0.1 * location specificity

Source quality: a scholarly identifier (DOI, PMID, PMCID, arXiv, or a link to one on a trusted
host) 1.0; another link to a trusted domain (`tasks.score.trust`) 0.9; other https 0.8; ISBN 0.8;
document file 0.7; plain http 0.6; anything else 0.5. The engine itself only knew arxiv.org and
`doi:` (1.0), https, http, and files. Location: none 0.0; any location 0.5; +0.25 for a page-level
point (page, p., pp., line, paragraph, or a timestamp like 00:15:30); +0.25 for a structural one
(section, chapter, §, figure, table, appendix). The engine ignored timestamps and figures.

Validation evidence then moves the engine score:

    verified      raised toward 1: engine + (1 - engine) * 0.5 * match_score (1 when unknown)
    mismatch      capped at 0.25  (a real identifier, but another work: the typical fabrication)
    not_found     capped at 0.20  (the identifier does not exist)
    unmatched     capped at 0.35  (no identifier and no registry candidate: may be grey literature)
    unverified    unchanged, but `decided` is False: we could not ask, so we do not judge
    expression of concern  capped at 0.5;  retracted  capped at 0.05, whatever the status

Worked example: `Citation(source="https://arxiv.org/abs/1106.5730", location="Section 3.2",
confidence=0.9, metadata={author, year, title})`, no snippet:

    engine = 0.4*0.9 + 0.3*(3/4) + 0.2*1.0 + 0.1*(0.5+0.25) = 0.36 + 0.225 + 0.2 + 0.075 = 0.86
    verified, match_score 0.96:  0.86 + 0.14 * 0.5 * 0.96 = 0.927
    not_found: min(0.86, 0.20) = 0.20;  retracted: 0.05;  unverified: 0.86, decided False

Claims (`CitationMap`), as the engine: 0.5 * mean citation confidence + 0.3 * strength + 0.2 *
count factor (citations / 5, at most 1). With validations, strength is recomputed as the share of
verified citations weighted by each citation's stated confidence, where a failed or retracted
citation counts 0, a verified one 1, and an undecided one keeps the claim's stated strength; the
count factor counts only citations still standing (not failed, not retracted). Claim support
(tasks/support/) adds meaning: a verified citation whose work is `unrelated` to the claim, or
that the cross-encoder reads as contradicting it, counts 0 and does not stand, as a failed one
(the callers pass both as `unrelated`); `no abstract` leaves it as it was. Continuing the
example with a second citation (confidence 0.6, not_found, scored 0.2) under a stated strength of
0.8: strength = (0.9*1 + 0.6*0) / 1.5 = 0.6; overall = 0.5*(0.927+0.2)/2 + 0.3*0.6 + 0.2*(1/5)
= 0.502. A claim none of whose citations stands (all failed or retracted, or no citations at
all) is `unsupported`.
"""

import re
from collections.abc import Collection, Mapping
from typing import Any

from models.audit import Reference, Status, ValidationResult
from models.citation import Citation, CitationMap
from models.csl import CSLItem, named
from tasks.identifiers import find_identifiers, identifiers_of, primary_identifier
from tasks.score.trust import (
    host_is_trusted,
    host_of,
    is_doi_resolver_link,
    load_trusted_domains,
    names_scholarly_identifier,
)

# The engine's weights.
BASE_WEIGHT, METADATA_WEIGHT, SOURCE_WEIGHT, LOCATION_WEIGHT = 0.4, 0.3, 0.2, 0.1
MAP_AVERAGE_WEIGHT, MAP_STRENGTH_WEIGHT, MAP_COUNT_WEIGHT = 0.5, 0.3, 0.2
COUNT_PLATEAU = 5

# Our extension: what validation does to a score.
VERIFIED_LIFT = 0.5
FAILED_CAPS: dict[Status, float] = {
    Status.NOT_FOUND: 0.20,
    Status.MISMATCH: 0.25,
    Status.UNMATCHED: 0.35,
}
CONCERN_CAP = 0.5
RETRACTED_CAP = 0.05

# Confidence of a bibliographic reference that states none: neither trusted nor doubted.
DEFAULT_CONFIDENCE = 0.5

_DOCUMENT_SUFFIXES = (".pdf", ".doc", ".docx", ".txt")
_PAGE_LEVEL = re.compile(
    r"\b(?:pages?|pp?\.|lines?|l{1,2}\.|paragraphs?|para\.)|¶|\b\d{1,2}:\d{2}(?::\d{2})?\b",
    re.IGNORECASE,
)
_STRUCTURE_LEVEL = re.compile(
    r"\b(?:sections?|sec\.|chapters?|ch\.|figures?|fig\.|tables?|appendix|supplement\w*)|§",
    re.IGNORECASE,
)


def source_quality(source: str, domains: Collection[str] | None = None) -> tuple[float, str]:
    """How much the kind of source is worth, and what kind it is (see the module docstring)."""
    trusted = load_trusted_domains() if domains is None else domains
    host = host_of(source)
    if host is not None:
        if host_is_trusted(host, trusted):
            found = find_identifiers(source)
            # doi.org links are identifiers even in shortDOI form (https://doi.org/gcgk7g).
            if is_doi_resolver_link(source) or any(
                (found.doi, found.pmid, found.pmcid, found.arxiv)
            ):
                return 1.0, "scholarly identifier"
            return 0.9, "trusted domain"
        is_https = source.strip().lower().startswith("https://")
        return (0.8, "https web page") if is_https else (0.6, "http web page")
    if names_scholarly_identifier(source):
        return 1.0, "scholarly identifier"
    text = source.strip().lower()
    if text.startswith("file://") or text.endswith(_DOCUMENT_SUFFIXES):
        return 0.7, "document file"
    if find_identifiers(source).isbn:
        return 0.8, "book (ISBN)"
    return 0.5, "unknown"


def location_specificity(location: str | None) -> float:
    """0 without a location, 0.5 with one, +0.25 each for a page-level and a structural point."""
    if not location or not location.strip():
        return 0.0
    score = 0.5
    if _PAGE_LEVEL.search(location):
        score += 0.25
    if _STRUCTURE_LEVEL.search(location):
        score += 0.25
    return score


def metadata_completeness(citation: Citation) -> dict[str, bool]:
    metadata = citation.metadata or {}
    return {
        "has_author": bool(metadata.get("author")),
        "has_year": bool(metadata.get("year") or metadata.get("publication_date")),
        "has_title": bool(metadata.get("title")),
        "has_snippet": bool(citation.snippet),
    }


def _engine_score(citation: Citation) -> dict[str, Any]:
    completeness = metadata_completeness(citation)
    metadata_score = sum(completeness.values()) / len(completeness)
    quality, kind = source_quality(citation.source)
    location_score = location_specificity(citation.location)
    overall = (
        BASE_WEIGHT * citation.confidence
        + METADATA_WEIGHT * metadata_score
        + SOURCE_WEIGHT * quality
        + LOCATION_WEIGHT * location_score
    )
    return {
        "overall_confidence": overall,
        "base_confidence": citation.confidence,
        "metadata_score": round(metadata_score, 3),
        "source_quality_score": round(quality, 3),
        "location_score": round(location_score, 3),
        "factors": {
            "metadata_completeness": completeness,
            "source_type": kind,
            "has_specific_location": location_score > 0.5,
        },
    }


def _apply_validation(
    engine: float, validation: ValidationResult | None
) -> tuple[float, bool, float | None, str]:
    """(score, decided, cap, one-sentence effect) once validation evidence is taken into account."""
    if validation is None:
        return engine, False, None, "not validated: engine score only"
    status = validation.status
    cap: float | None = None
    if status is Status.VERIFIED:
        match = 1.0 if validation.match_score is None else validation.match_score
        score, decided = engine + (1.0 - engine) * VERIFIED_LIFT * match, True
        effect = f"verified: raised toward 1 (match {match:.2f})"
    elif status in FAILED_CAPS:
        cap = FAILED_CAPS[status]
        score, decided = min(engine, cap), True
        effect = f"{status.value}: capped at {cap:.2f}"
    else:
        score, decided = engine, False
        why = validation.reason or validation.error or "the registry could not be asked"
        effect = f"unverified ({why}): engine score kept, undecided"
    if validation.expression_of_concern:
        score, cap = min(score, CONCERN_CAP), min(cap or 1.0, CONCERN_CAP)
        effect += f"; expression of concern: capped at {CONCERN_CAP:.2f}"
    if validation.retracted:
        score, cap, decided = min(score, RETRACTED_CAP), RETRACTED_CAP, True
        effect += f"; retracted: capped at {RETRACTED_CAP:.2f}"
    return score, decided, cap, effect


def calculate_citation_confidence(
    citation: Citation, validation: ValidationResult | None = None
) -> dict[str, Any]:
    """The engine's confidence breakdown of one citation, moved by validation evidence.

    Keys: overall_confidence, base_confidence, metadata_score, source_quality_score,
    location_score, factors (the engine's), plus engine_confidence (before validation), status,
    decided, cap and validation_effect."""
    scores = _engine_score(citation)
    engine = scores["overall_confidence"]
    overall, decided, cap, effect = _apply_validation(engine, validation)
    scores.update(
        overall_confidence=round(min(max(overall, 0.0), 1.0), 3),
        engine_confidence=round(engine, 3),
        status=validation.status.value if validation else None,
        decided=decided,
        cap=cap,
        validation_effect=effect,
    )
    return scores


def _fails(validation: ValidationResult | None) -> bool:
    return validation is not None and (validation.status in FAILED_CAPS or validation.retracted)


def _validation_for(
    citation: Citation, validations: Mapping[str, ValidationResult] | None
) -> ValidationResult | None:
    citation_id = _citation_id(citation)
    if validations is None or not citation_id:
        return None
    return validations.get(citation_id)


def _citation_id(citation: Citation) -> str | None:
    citation_id = (citation.metadata or {}).get("citation_id")
    return str(citation_id) if citation_id else None


def _fails_claim(
    citation: Citation, validation: ValidationResult | None, unrelated: Collection[str]
) -> bool:
    """A citation fails its claim when it fails as a citation, or when the work it names is
    about something else (claim support's `unrelated`)."""
    return _fails(validation) or _citation_id(citation) in unrelated


def claim_strength(
    cmap: CitationMap,
    validations: Mapping[str, ValidationResult] | None = None,
    unrelated: Collection[str] = (),
) -> float:
    """Strength of a claim from its validated citations (module docstring); the stated strength
    when none of its citations was validated."""
    found = [_validation_for(citation, validations) for citation in cmap.citations]
    if not any(found):
        return cmap.strength
    weights = [citation.confidence for citation in cmap.citations]
    if sum(weights) == 0:
        weights = [1.0] * len(weights)
    support = [
        0.0
        if _fails_claim(citation, validation, unrelated)
        else 1.0
        if validation is not None and validation.status is Status.VERIFIED
        else cmap.strength
        for citation, validation in zip(cmap.citations, found, strict=True)
    ]
    return sum(w * s for w, s in zip(weights, support, strict=True)) / sum(weights)


def calculate_citation_map_confidence(
    cmap: CitationMap,
    validations: Mapping[str, ValidationResult] | None = None,
    unrelated: Collection[str] = (),
) -> dict[str, Any]:
    """Aggregate confidence of a claim. `validations` is keyed by citation id, which a Citation
    names in `metadata["citation_id"]` (as `citation_from_reference` sets it); `unrelated` names
    the citations whose work claim support found to be about something else."""
    found = [_validation_for(citation, validations) for citation in cmap.citations]
    individual = [
        calculate_citation_confidence(citation, validation)
        for citation, validation in zip(cmap.citations, found, strict=True)
    ]
    standing = sum(
        not _fails_claim(citation, validation, unrelated)
        for citation, validation in zip(cmap.citations, found, strict=True)
    )
    result: dict[str, Any] = {
        "citation_count": len(cmap.citations),
        "supporting_count": standing,
        "failed_count": len(cmap.citations) - standing,
        "undecided_count": sum(not score["decided"] for score in individual),
        "stated_strength": cmap.strength,
        "unsupported": standing == 0,
        "individual_scores": individual,
    }
    if not individual:
        return result | {
            "overall_confidence": 0.0,
            "average_citation_confidence": 0.0,
            "min_confidence": 0.0,
            "max_confidence": 0.0,
            "strength": cmap.strength,
        }
    confidences = [score["overall_confidence"] for score in individual]
    average = sum(confidences) / len(confidences)
    strength = claim_strength(cmap, validations, unrelated)
    count_factor = min(standing / COUNT_PLATEAU, 1.0)
    overall = (
        MAP_AVERAGE_WEIGHT * average
        + MAP_STRENGTH_WEIGHT * strength
        + MAP_COUNT_WEIGHT * count_factor
    )
    return result | {
        "overall_confidence": round(overall, 3),
        "average_citation_confidence": round(average, 3),
        "min_confidence": round(min(confidences), 3),
        "max_confidence": round(max(confidences), 3),
        "strength": round(strength, 3),
    }


def _author_label(item: CSLItem) -> str | None:
    people = item.author or item.editor or []
    names = [name for person in named(people) if (name := person.family or person.literal)]
    if not names:
        return None
    if any(person.is_et_al() for person in people):  # the list itself says it is shortened
        return f"{names[0]} et al."
    if len(names) == 1:
        return names[0]
    return f"{names[0]} & {names[1]}" if len(names) == 2 else f"{names[0]} et al."


# How a Citation source string writes each identifier (a PMCID carries its own `PMC`).
_SOURCE_PREFIXES = {"doi": "doi:", "pmid": "PMID:", "pmcid": "", "arxiv": "arXiv:"}


def _source_of(reference: Reference) -> str:
    """The most checkable thing the reference names, as a Citation source string."""
    item = reference.item
    ids = reference.ids if reference.ids.any() else identifiers_of(item, reference.raw)
    if primary := primary_identifier(ids):
        kind, value = primary
        return f"{_SOURCE_PREFIXES[kind]}{value}"
    if item.URL or ids.url:
        return item.URL or f"https://{ids.url}"
    if ids.isbn:
        return f"ISBN {ids.isbn}"
    text = reference.raw or item.title
    if text and text.strip():
        return text.strip()
    return f"{reference.provenance.source_file}#{reference.provenance.entry_key}"


def citation_from_reference(
    reference: Reference,
    validation: ValidationResult | None = None,
    default_confidence: float = DEFAULT_CONFIDENCE,
) -> Citation:
    """A bibliographic reference as a Citation, so it is scored like a crew's citation.

    The fields are what the input *claimed* (the score must judge the claim, not the registry's
    record); a validation only adds its outcome to the metadata for renderers."""
    item = reference.item
    metadata: dict[str, Any] = {"citation_id": reference.citation_id}
    if author := _author_label(item):
        metadata["author"] = author
    if (year := item.year()) is not None:
        metadata["year"] = year
    if item.title:
        metadata["title"] = item.title
    metadata["confidence_stated"] = reference.stated_confidence is not None
    if validation is not None:
        metadata["status"] = validation.status.value
        metadata["matched_id"] = validation.matched_id
        metadata["retracted"] = validation.retracted
    confidence = (
        default_confidence if reference.stated_confidence is None else reference.stated_confidence
    )
    return Citation(
        source=_source_of(reference),
        location=reference.location,
        confidence=confidence,
        snippet=reference.snippet,
        metadata=metadata,
    )


def score_reference(
    reference: Reference, validation: ValidationResult | None = None
) -> dict[str, Any]:
    """`calculate_citation_confidence` of a bibliographic reference and its validation."""
    return calculate_citation_confidence(citation_from_reference(reference, validation), validation)
