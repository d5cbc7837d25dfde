"""ModelChorus citation maps: claims, each backed by citations of {source, location, confidence,
snippet, metadata}.

A crew writes a list of CitationMap objects, `{"claims": [...]}`, or one CitationMap. Each claim
and each citation is validated on its own (models/citation.py), so one bad citation costs only
itself. `source` may be a DOI, URL, arXiv URL, file path, ISBN or free text: it is kept as the
reference's raw text, from which identifiers are also read.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.audit import Claim, ReadResult
from models.citation import Citation, CitationMap
from models.csl import CSLItem
from tasks.citation_ids import unused_id
from tasks.identifiers import normalize_doi, normalize_isbn
from tasks.read.agent_json import (
    entry_error,
    load_shape,
    loose_csl_fields,
    reference,
    sniff_json,
    validation_reason,
)
from tasks.read.common import read_each

FORMAT = "modelchorus"


def _claim_list(data: Any) -> list[Any] | None:
    if isinstance(data, dict) and isinstance(data.get("claims"), list):
        data = data["claims"]
    elif isinstance(data, dict) and "claim_id" in data:
        return [data]
    if isinstance(data, list) and any(isinstance(c, dict) and "claim_id" in c for c in data):
        return data
    return None


def detect(path: Path, head: str) -> bool:
    return _claim_list(sniff_json(path, head)) is not None


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_file)


def read_file(path: Path) -> ReadResult:
    result, claims = load_shape(path, _claim_list, "a ModelChorus CitationMap list")
    if claims is None:
        return result
    for i, raw_claim in enumerate(claims):
        _read_claim(path, f"claims[{i}]", raw_claim, result)
    return result


def _read_claim(path: Path, key: str, raw_claim: Any, result: ReadResult) -> None:
    if not isinstance(raw_claim, dict):
        result.errors.append(entry_error(path, key, "claim is not an object"))
        return
    raw_citations = raw_claim.get("citations") or []
    try:
        claim = CitationMap.model_validate({**raw_claim, "citations": []})
    except ValidationError as exc:
        result.errors.append(entry_error(path, key, validation_reason(exc)))
        return
    if not isinstance(raw_citations, list):
        result.errors.append(entry_error(path, key, "citations is not a list"))
        raw_citations = []
    # two claims under one id would pool their citations
    claim_id = unused_id(claim.claim_id, {c.claim_id for c in result.claims})
    if claim_id != claim.claim_id:
        reason = f"claim_id {claim.claim_id!r} repeats an earlier claim's; read as {claim_id!r}"
        result.errors.append(entry_error(path, key, reason))
    result.claims.append(
        Claim(
            claim_id=claim_id,
            claim_text=claim.claim_text,
            stated_strength=claim.strength,
            source_file=str(path),
        )
    )
    for j, raw_citation in enumerate(raw_citations):
        entry = f"{key}.citations[{j}]"
        try:
            citation = Citation.model_validate(raw_citation)
        except ValidationError as exc:
            result.errors.append(entry_error(path, entry, validation_reason(exc)))
            continue
        result.references.append(
            reference(
                _item(entry, citation),
                path,
                entry,
                raw=citation.source,
                claim_ids=[claim_id],
                location=citation.location,
                snippet=citation.snippet,
                stated_confidence=citation.confidence,
            )
        )


def _item(entry: str, citation: Citation) -> CSLItem:
    """The claimed work: the citation's metadata in CSL, identifiers from `source` when the
    metadata has none; metadata CSL has no variable for is kept under `modelchorus`."""
    meta = citation.metadata
    loose, used = loose_csl_fields(meta)
    fields: dict[str, Any] = {"id": entry, **loose}
    source = citation.source.strip()
    if "DOI" not in fields and source.lower().startswith(("10.", "doi:", "https://doi.org/")):
        fields["DOI"] = normalize_doi(source)
    if "URL" not in fields and source.lower().startswith(("http://", "https://")):
        fields["URL"] = source
    if "ISBN" not in fields and source.upper().startswith("ISBN") and normalize_isbn(source):
        fields["ISBN"] = source.split(None, 1)[-1]
    fields.setdefault("type", _guess_type(fields))
    rest = {k: v for k, v in meta.items() if k not in used}
    if rest:
        fields["modelchorus"] = rest
    return CSLItem.model_validate(fields)


def _guess_type(fields: dict[str, Any]) -> str:
    if fields.get("ISBN"):
        return "book"
    if fields.get("container-title") or fields.get("DOI"):
        return "article-journal"
    if fields.get("URL") and not fields.get("title"):
        return "webpage"
    return "article"
