"""What a job flow is asked to do (`JobParams`) and what it answers (`JobSummary`).

The job flows (audit_job, crew_report, bulk_import) share `JobParams`: Prefect builds each
deployment's parameter schema from it, field descriptions included."""

from typing import Any

from pydantic import BaseModel, Field

from models.audit import InputError

DEFAULT_CHUNK = 200
DEFAULT_STYLES = ("apa",)


class JobParams(BaseModel):
    """One research job: which files, under which name, written where."""

    inputs: list[str] = Field(
        ..., description="reference files (BibTeX, RIS, CSL-JSON, plain text, crew JSON, Markdown)"
    )
    job_id: str = Field(
        ..., description="the job's name in the library and its folder (letters, digits, . _ -)"
    )
    out_dir: str = Field("out", description="where job folders are written (out_dir/job_id/)")
    db: str | None = Field(
        None, description="the DuckDB library file (default $CITEAUDIT_DB or ./citeaudit.duckdb)"
    )
    offline: bool = Field(
        False, description="skip the registries: every citation is unverified (reason: offline)"
    )
    input_format: str | None = Field(
        None, description="force one input format instead of detecting it from content"
    )
    chunk_size: int = Field(DEFAULT_CHUNK, ge=1, description="citations checked per Prefect task")
    styles: list[str] | None = Field(
        None,
        description="bibliography styles to write (default: apa only); the first is the report's",
    )

    def chosen_styles(self) -> list[str]:
        return list(DEFAULT_STYLES) if self.styles is None else list(self.styles)


class Flagged(BaseModel):
    """A citation a reader must look at, as the summary lists it."""

    source_file: str
    entry_key: str
    label: str = Field(..., description="status, with RETRACTED/corrected/... before it")
    reason: str
    error: str | None = None


class JobSummary(BaseModel):
    """What a finished job reports back (the CLI prints it; the files hold the rest)."""

    job_id: str
    out: str = Field(..., description="the job's folder")
    citations: int
    status_counts: dict[str, int]
    input_errors: list[InputError] = Field(default_factory=list)
    flagged: list[Flagged] = Field(default_factory=list)
    # flagged citations `flagged` leaves out (a big import lists the report's first ones only)
    flagged_left_out: int = 0
    metrics: dict[str, Any] = Field(default_factory=dict)


class ClaimCitation(BaseModel):
    entry_key: str
    status: str
    reason: str


class UnsupportedClaim(BaseModel):
    claim_id: str
    claim_text: str
    strength: float
    citations: list[ClaimCitation]


class CrewSummary(JobSummary):
    unsupported_claims: list[UnsupportedClaim] = Field(
        default_factory=list, description="weakest claim first"
    )


class BulkSummary(JobSummary):
    batches: int
    batches_skipped: int = Field(..., description="already stored by an earlier run")
    bibliographies_skipped: bool


class RecheckSummary(BaseModel):
    """What a scheduled audit re-checked and what changed."""

    audit_id: str
    out: str = Field(..., description="the audit's folder")
    rechecked: int
    updated: int
    changed_citations: int
    changes_by_field: dict[str, int]
