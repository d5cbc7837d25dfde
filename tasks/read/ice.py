"""ICE (Investment Context Engine) answers with their `enriched_sources`.

A query result holds the answer and its sources, either at the top (`enriched_sources`, or the
structured style's `citations`) or under `source_metadata`. Each source is
`{source, label, date, confidence, quality_badge, link}` where `source` is the kind (email, api,
entity_extraction, sec_filing, news, research). Most are not scholarly works: they are kept,
scored and rendered, but marked `scholarly=False` so validation does not ask Crossref about an
e-mail. The answer becomes one claim resting on all its sources.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.audit import Claim, ReadResult
from models.csl import CSLItem
from tasks.read.agent_json import (
    csl_date,
    entry_error,
    load_shape,
    reference,
    sniff_json,
    unit_score,
    validation_reason,
)
from tasks.read.common import read_each

FORMAT = "ice"

ANSWER_CLAIM_ID = "answer"
# ICE's source kinds -> CSL type
_CSL_TYPES = {
    "email": "personal_communication",
    "api": "dataset",
    "entity_extraction": "document",
    "sec_filing": "report",
    "news": "article-newspaper",
    "research": "report",
}
_NEVER_SCHOLARLY = frozenset({"email", "api", "entity_extraction"})


class EnrichedSource(BaseModel):
    model_config = ConfigDict(extra="allow")

    source: str = Field(..., min_length=1, description="kind: email, api, entity_extraction, …")
    label: str | None = None
    date: str | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    quality_badge: str | None = None
    link: str | None = None


def _sources(data: Any) -> tuple[list[Any], dict[str, Any]] | None:
    """The source list and the answer object around it (empty for a bare list)."""
    if isinstance(data, list) and data and all(_looks_like_source(s) for s in data):
        return data, {}
    if not isinstance(data, dict):
        return None
    metadata = data.get("source_metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("enriched_sources"), list):
        return metadata["enriched_sources"], data
    if isinstance(data.get("enriched_sources"), list):
        return data["enriched_sources"], data
    citations = data.get("citations")
    if isinstance(citations, list) and citations and all(_looks_like_source(s) for s in citations):
        return citations, data
    return None


def _looks_like_source(value: Any) -> bool:
    return isinstance(value, dict) and "quality_badge" in value


def detect(path: Path, head: str) -> bool:
    return _sources(sniff_json(path, head)) is not None


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_file)


def read_file(path: Path) -> ReadResult:
    result, found = load_shape(path, _sources, "an ICE answer with enriched_sources")
    if found is None:
        return result
    sources, answer = found
    list_key = "citations" if sources is answer.get("citations") else "enriched_sources"
    claim_ids = _answer_claim(path, answer, result)
    for i, raw in enumerate(sources):
        key = f"{list_key}[{i}]"
        try:
            source = EnrichedSource.model_validate(_with_inferred_kind(raw))
        except ValidationError as exc:
            result.errors.append(entry_error(path, key, validation_reason(exc)))
            continue
        ref = reference(
            _item(key, source),
            path,
            key,
            claim_ids=claim_ids,
            stated_confidence=source.confidence,
        )
        ids = ref.ids
        ref.scholarly = (
            source.source.lower() not in _NEVER_SCHOLARLY
            and not (source.link or "").lower().startswith("mailto:")
            and bool(ids.doi or ids.pmid or ids.pmcid or ids.arxiv)
        )
        result.references.append(ref)
    return result


def _answer_claim(path: Path, answer: dict[str, Any], result: ReadResult) -> list[str]:
    text = answer.get("answer")
    if not isinstance(text, str) or not text.strip():
        return []
    result.claims.append(
        Claim(
            claim_id=ANSWER_CLAIM_ID,
            claim_text=text.strip(),
            stated_strength=unit_score(answer.get("confidence")),
            source_file=str(path),
        )
    )
    return [ANSWER_CLAIM_ID]


def _with_inferred_kind(raw: Any) -> Any:
    # ICE labels carry the kind as a prefix ("email:Tencent Q2 2025 Earnings.eml") when the
    # source field was lost in retrieval.
    if isinstance(raw, dict) and not raw.get("source") and isinstance(raw.get("label"), str):
        kind, sep, _ = raw["label"].partition(":")
        if sep and kind in _CSL_TYPES:
            return {**raw, "source": kind}
    return raw


def _item(key: str, source: EnrichedSource) -> CSLItem:
    link = source.link or ""
    web = link.lower().startswith(("http://", "https://"))
    return CSLItem.model_validate(
        {
            "id": key,
            "type": _CSL_TYPES.get(source.source.lower(), "document"),
            "title": _title(source),
            "issued": csl_date(source.date),
            "URL": link if web else None,
            "ice": source.model_dump(exclude_none=True),
        }
    )


def _title(source: EnrichedSource) -> str | None:
    """The label without the kind prefix ICE file labels carry ("email:Q2 Earnings.eml")."""
    label = source.label or ""
    kind, sep, rest = label.partition(":")
    return (rest if sep and kind.lower() == source.source.lower() else label).strip() or None
