"""Citations, input errors and claims as library rows, and back: the one mapping both ways.

Frames out (`citations_frame`, ...): the job's outputs, one row per input citation, input error
and claim. Rows in (`reference_from_row`, `result_from_row`): a resumed bulk import and a
scheduled audit start from rows already in the library, not from a fresh validation. Pure
functions: building the tables is separate from writing them (tasks/store/)."""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from models.audit import (
    Checked,
    Claim,
    FieldAgreement,
    Identifiers,
    InputError,
    Notice,
    Provenance,
    Reference,
    RegistryRecord,
    Status,
    ValidationResult,
)
from models.csl import CSLItem, CSLName

CITATION_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "job_id": pl.Utf8,
    "citation_id": pl.Utf8,
    "source_file": pl.Utf8,
    "entry_key": pl.Utf8,
    "line": pl.Int64,
    "claim_ids": pl.List(pl.Utf8),
    "location": pl.Utf8,
    "raw": pl.Utf8,
    "claimed_title": pl.Utf8,
    "claimed_authors": pl.Utf8,
    "claimed_year": pl.Int64,
    "claimed_container": pl.Utf8,
    "claimed_type": pl.Utf8,
    "doi": pl.Utf8,
    "pmid": pl.Utf8,
    "pmcid": pl.Utf8,
    "arxiv": pl.Utf8,
    "isbn": pl.Utf8,
    "url": pl.Utf8,
    "status": pl.Utf8,
    "reason": pl.Utf8,
    "registry": pl.Utf8,
    "registries_asked": pl.List(pl.Utf8),
    "matched_id": pl.Utf8,
    "matched_title": pl.Utf8,
    "matched_authors": pl.Utf8,
    "matched_year": pl.Int64,
    "matched_container": pl.Utf8,
    "agreement_title": pl.Float64,
    "agreement_authors": pl.Float64,
    "agreement_year": pl.Float64,
    "agreement_container": pl.Float64,
    "agreement_pages": pl.Float64,
    "match_score": pl.Float64,
    "retracted": pl.Boolean,
    "corrected": pl.Boolean,
    "expression_of_concern": pl.Boolean,
    # The notice a reader acts on first (a retraction before a concern before a correction, the
    # latest first); every notice in notices_json.
    "notice_kind": pl.Utf8,
    "notice_id": pl.Utf8,
    "notice_url": pl.Utf8,
    "notice_date": pl.Utf8,
    "notice_source": pl.Utf8,
    "notice_reason": pl.Utf8,
    "notices_json": pl.Utf8,
    # For a mismatch whose identifier names another paper: the record the claimed title and
    # authors verify against, the work probably meant (tasks/lookup/).
    "suggested_registry": pl.Utf8,
    "suggested_id": pl.Utf8,
    "suggested_title": pl.Utf8,
    "suggested_authors": pl.Utf8,
    "suggested_year": pl.Int64,
    "suggested_container": pl.Utf8,
    "suggested_json": pl.Utf8,
    "attempts": pl.Int64,
    "error": pl.Utf8,
    "checked_at": pl.Datetime("us", "UTC"),
    "claimed_json": pl.Utf8,
    "record_json": pl.Utf8,
}

INPUT_ERROR_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "job_id": pl.Utf8,
    "source_file": pl.Utf8,
    "entry_key": pl.Utf8,
    "line": pl.Int64,
    "reason": pl.Utf8,
    "kind": pl.Utf8,  # InputError.kind (older libraries' rows get theirs in tasks/store/schema.py)
}

CLAIM_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "job_id": pl.Utf8,
    "claim_id": pl.Utf8,
    "claim_text": pl.Utf8,
    "source_file": pl.Utf8,
    "stated_strength": pl.Float64,
    "citation_ids": pl.List(pl.Utf8),
    "missing_citations": pl.List(pl.Utf8),
}


def authors_text(names: Sequence[CSLName] | None) -> str | None:
    """Authors as a reader writes them: `Family, Given; Family, Given`."""
    if not names:
        return None
    parts = []
    for name in names:
        if name.is_et_al():
            parts.append("et al.")
        elif name.literal:
            parts.append(name.literal)
        elif name.family:
            family = " ".join(p for p in (name.non_dropping_particle, name.family) if p)
            parts.append(f"{family}, {name.given}" if name.given else family)
    return "; ".join(parts) or None


def _item_columns(prefix: str, item: CSLItem | None) -> dict[str, object]:
    return {
        f"{prefix}_title": item.title if item else None,
        f"{prefix}_authors": authors_text(item.author or item.editor) if item else None,
        f"{prefix}_year": item.year() if item else None,
        f"{prefix}_container": item.container_title if item else None,
    }


def citation_row(job_id: str, ref: Reference, result: ValidationResult) -> dict[str, object]:
    agreement = result.agreement
    return {
        "job_id": job_id,
        "citation_id": ref.citation_id,
        "source_file": ref.provenance.source_file,
        "entry_key": ref.provenance.entry_key,
        "line": ref.provenance.line,
        "claim_ids": ref.claim_ids,
        "location": ref.location,
        "raw": ref.raw,
        **_item_columns("claimed", ref.item),
        "claimed_type": ref.item.type,
        **ref.ids.model_dump(),
        "status": result.status.value,
        "reason": result.reason,
        "registry": result.registry,
        "registries_asked": result.asked,
        "matched_id": result.matched_id,
        **_item_columns("matched", result.record),
        "agreement_title": agreement.title,
        "agreement_authors": agreement.authors,
        "agreement_year": agreement.year,
        "agreement_container": agreement.container,
        "agreement_pages": agreement.pages,
        "match_score": result.match_score,
        "retracted": result.retracted,
        "corrected": result.corrected,
        "expression_of_concern": result.expression_of_concern,
        **_notice_columns(result.notices),
        **_suggested_columns(result.suggested),
        "attempts": result.attempts,
        "error": result.error,
        "checked_at": result.checked_at,
        "claimed_json": _item_json(ref.item),
        "record_json": _item_json(result.record),
    }


def _item_json(item: CSLItem | None) -> str | None:
    return json.dumps(item.to_csl(), ensure_ascii=False, sort_keys=True) if item else None


def _suggested_columns(suggested: RegistryRecord | None) -> dict[str, object]:
    return {
        "suggested_registry": suggested.registry if suggested else None,
        "suggested_id": suggested.identifier if suggested else None,
        **_item_columns("suggested", suggested.item if suggested else None),
        "suggested_json": _item_json(suggested.item if suggested else None),
    }


def _suggested(row: Mapping[str, Any]) -> RegistryRecord | None:
    item = _item(row.get("suggested_json"))  # a library older than the column has none
    if item is None or not row.get("suggested_registry"):
        return None
    return RegistryRecord(
        registry=row["suggested_registry"], identifier=row["suggested_id"], item=item
    )


_NOTICE_ORDER = {"retraction": 0, "expression_of_concern": 1, "correction": 2}


def leading_notice(notices: Sequence[Notice]) -> Notice | None:
    """The notice to act on first: the most serious kind, then the latest."""
    latest_first = sorted(notices, key=lambda n: n.date or "", reverse=True)
    return min(latest_first, key=lambda n: _NOTICE_ORDER[n.kind], default=None)


def _notice_columns(notices: Sequence[Notice]) -> dict[str, object]:
    lead = leading_notice(notices)
    return {
        "notice_kind": lead.kind if lead else None,
        "notice_id": lead.identifier if lead else None,
        "notice_url": lead.url if lead else None,
        "notice_date": lead.date if lead else None,
        "notice_source": lead.source if lead else None,
        "notice_reason": lead.reason if lead else None,
        "notices_json": (
            json.dumps([n.model_dump(exclude_none=True) for n in notices], ensure_ascii=False)
            if notices
            else None
        ),
    }


def citations_frame(job_id: str, checked: Sequence[Checked]) -> pl.DataFrame:
    """One row per input citation, sorted by citation_id so re-runs write identical files."""
    rows = [citation_row(job_id, c.reference, c.result) for c in checked]
    return pl.DataFrame(rows, schema=CITATION_SCHEMA).sort("citation_id")


def input_errors_frame(job_id: str, errors: Sequence[InputError]) -> pl.DataFrame:
    rows = [{"job_id": job_id, **e.model_dump()} for e in errors]
    return pl.DataFrame(rows, schema=INPUT_ERROR_SCHEMA).sort(
        ["source_file", "line", "entry_key"], nulls_last=True
    )


def claims_frame(job_id: str, claims: Sequence[Claim]) -> pl.DataFrame:
    rows = [
        {
            "job_id": job_id,
            "claim_id": c.claim_id,
            "claim_text": c.claim_text,
            "source_file": c.source_file,
            "stated_strength": c.stated_strength,
            "citation_ids": c.citation_ids,
            "missing_citations": c.missing_citations,
        }
        for c in claims
    ]
    return pl.DataFrame(rows, schema=CLAIM_SCHEMA).sort("claim_id")


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
        location=row.get("location"),  # a library older than the column has none
    )


def result_from_row(row: Mapping[str, Any]) -> ValidationResult:
    """The stored outcome of checking the citation (registry relations are not stored)."""
    return ValidationResult(
        citation_id=row["citation_id"],
        status=Status(row["status"]),
        registry=row["registry"],
        asked=list(row.get("registries_asked") or []),
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
        notices=[Notice.model_validate(n) for n in json.loads(row.get("notices_json") or "[]")],
        suggested=_suggested(row),
        attempts=row["attempts"] or 0,
        error=row["error"],
        checked_at=row["checked_at"],
    )


def checked_from_row(row: Mapping[str, Any]) -> Checked:
    return Checked(reference=reference_from_row(row), result=result_from_row(row))
