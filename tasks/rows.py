"""Library rows back into models: the inverse of `tasks/tables.citation_row`.

A resumed bulk import and a scheduled audit start from rows already in the library, not from a
fresh validation; these functions give them the References and ValidationResults the rest of the
pipeline (scoring, bibliographies, reports) takes."""

import json
from collections.abc import Mapping
from typing import Any

from models.audit import (
    FieldAgreement,
    Identifiers,
    Provenance,
    Reference,
    Status,
    ValidationResult,
)
from models.csl import CSLItem

IDENTIFIER_COLUMNS = ("doi", "pmid", "pmcid", "arxiv", "isbn", "url")


def _item(text: str | None) -> CSLItem | None:
    return CSLItem.from_csl(json.loads(text)) if text else None


def reference_from_row(row: Mapping[str, Any]) -> Reference:
    """The citation as its input wrote it. Rows do not record `scholarly`: callers re-check
    only rows with a DOI, PMID or arXiv id, which are scholarly by construction."""
    item = _item(row["claimed_json"]) or CSLItem(id=str(row["citation_id"]))
    return Reference(
        citation_id=row["citation_id"],
        item=item,
        provenance=Provenance(
            source_file=row["source_file"], entry_key=row["entry_key"], line=row["line"]
        ),
        ids=Identifiers(**{name: row[name] for name in IDENTIFIER_COLUMNS}),
        raw=row["raw"],
        claim_ids=list(row["claim_ids"] or []),
    )


def result_from_row(row: Mapping[str, Any]) -> ValidationResult:
    """The stored outcome of checking the citation (registry relations are not stored)."""
    return ValidationResult(
        citation_id=row["citation_id"],
        status=Status(row["status"]),
        registry=row["registry"],
        matched_id=row["matched_id"],
        record=_item(row["record_json"]),
        agreement=FieldAgreement(
            title=row["agreement_title"],
            authors=row["agreement_authors"],
            year=row["agreement_year"],
            container=row["agreement_container"],
            pages=row["agreement_pages"],
        ),
        match_score=row["match_score"],
        reason=row["reason"] or "",
        retracted=bool(row["retracted"]),
        corrected=bool(row["corrected"]),
        expression_of_concern=bool(row["expression_of_concern"]),
        attempts=row["attempts"] or 0,
        error=row["error"],
        checked_at=row["checked_at"],
    )
