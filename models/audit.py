"""What an audit works on and produces: references with provenance, statuses (models/status.py),
validation results."""

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from models.csl import CSLItem
from models.status import Status  # its own module: the CLI checks --fail-on without pydantic

Registry = Literal[
    "crossref",
    "pubmed",
    "datacite",
    "other-agency",
    "dblp",
    "arxiv",
    "semantic_scholar",
    "openalex",
    "europepmc",
]

# A local snapshot of a registry's public dump (tasks/snapshots), named with its date.
SnapshotLabel = Annotated[str, StringConstraints(pattern=r"^[a-z_]+@\d{4}-\d{2}-\d{2}$")]


class Identifiers(BaseModel):
    """Normalised identifiers of a reference (see tasks/identifiers.py for the rules)."""

    doi: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    arxiv: str | None = None
    isbn: str | None = None
    url: str | None = None

    def any(self) -> bool:
        return any(self.model_dump().values())


class Provenance(BaseModel):
    source_file: str
    entry_key: str = Field(..., description="BibTeX/CSL key, RIS record number, or line number")
    line: int | None = None


class Reference(BaseModel):
    """One citation as the input wrote it: claimed metadata plus where it came from."""

    citation_id: str = ""  # assigned by the flow: stable hash of provenance, unique in the job
    item: CSLItem
    provenance: Provenance
    ids: Identifiers = Field(default_factory=Identifiers)
    raw: str | None = Field(None, description="free-text form, when the input had one")
    claim_ids: list[str] = Field(default_factory=list)
    location: str | None = None
    snippet: str | None = None
    stated_confidence: float | None = Field(None, ge=0.0, le=1.0)
    # False for sources no scholarly registry can hold (e-mails, API feeds, extracted entities):
    # they are kept, scored and rendered, but never sent to Crossref or PubMed.
    scholarly: bool = True


class Claim(BaseModel):
    """A claim of a crew report and the citations it rests on."""

    claim_id: str = Field(..., min_length=1)
    claim_text: str = Field(..., min_length=1)
    stated_strength: float | None = Field(None, ge=0.0, le=1.0)
    citation_ids: list[str] = Field(default_factory=list)
    source_file: str = ""
    # Citations the input writes but does not hold (`[12]` past the end of the reference list):
    # nothing to validate, so scoring counts each as a failed citation.
    missing_citations: list[str] = Field(default_factory=list)


# What an input error is (InputError.kind):
#   malformed  an entry or file the job could not read as its format
#   missing    a citation the input writes whose reference it does not hold (a `\cite` key no
#              .bib has, `[9]` past the end of a reference list): a failed citation, which the
#              `--fail-on missing` gate counts
#   uncited    a reference the manuscript never cites: not audited, harmless
#   warning    read, with a note (an encoding guessed, a field given twice)
InputErrorKind = Literal["malformed", "missing", "uncited", "warning"]


class InputError(BaseModel):
    """An input the job could not use as written: reported, never fatal to the rest of the job."""

    source_file: str
    entry_key: str | None = None
    line: int | None = None
    reason: str
    kind: InputErrorKind = "malformed"

    @property
    def where(self) -> str:
        """`file:entry`, `file:line`, or the file alone (a warning about the whole file)."""
        return ":".join(str(x) for x in (self.source_file, self.entry_key or self.line) if x)


class Subject(BaseModel):
    """The paper an input is (a PDF's own DOI, title and authors): what the job audits the
    citations of, never a citation itself."""

    source_file: str
    doi: str | None = None
    title: str | None = None
    authors: list[str] = Field(default_factory=list)


class ReadResult(BaseModel):
    references: list[Reference] = Field(default_factory=list)
    claims: list[Claim] = Field(default_factory=list)
    errors: list[InputError] = Field(default_factory=list)
    subjects: list[Subject] = Field(default_factory=list)

    def extend(self, other: "ReadResult") -> None:
        self.references.extend(other.references)
        self.claims.extend(other.claims)
        self.errors.extend(other.errors)
        self.subjects.extend(other.subjects)


class FieldAgreement(BaseModel):
    """How well each claimed field agrees with the registry record, in [0, 1].

    None means the field could not be compared (missing on one side)."""

    title: float | None = Field(None, ge=0.0, le=1.0)
    authors: float | None = Field(None, ge=0.0, le=1.0)
    year: float | None = Field(None, ge=0.0, le=1.0)
    container: float | None = Field(None, ge=0.0, le=1.0)
    pages: float | None = Field(None, ge=0.0, le=1.0)


NoticeKind = Literal["retraction", "correction", "expression_of_concern"]


class Notice(BaseModel):
    """A registry's notice on a work (a retraction, correction or expression of concern): what a
    reader needs to act on it."""

    kind: NoticeKind
    identifier: str | None = Field(None, description="the notice's DOI or PMID")
    url: str | None = None
    date: str | None = Field(None, description="ISO 8601: YYYY, YYYY-MM or YYYY-MM-DD")
    source: str | None = Field(None, description="publisher, retraction-watch, pubmed or arxiv")
    reason: str | None = None


class ValidationResult(BaseModel):
    citation_id: str
    status: Status
    registry: Registry | SnapshotLabel | None = None  # `dblp@2026-11-01`: decided by a snapshot
    matched_id: str | None = Field(None, description="DOI or PMID of the matched record")
    record: CSLItem | None = None
    agreement: FieldAgreement = Field(default_factory=FieldAgreement)
    match_score: float | None = Field(None, ge=0.0, le=1.0)
    reason: str = Field("", description="one human sentence: why this status")
    retracted: bool = False
    corrected: bool = False
    expression_of_concern: bool = False
    notices: list[Notice] = Field(default_factory=list, description="the matched record's notices")
    # The matched record's registry relations (RegistryRecord.relations), for dedupe's links.
    relations: dict[str, list[str]] = Field(default_factory=dict)
    attempts: int = 0
    error: str | None = None
    # The registries asked about this citation, in order, and the requests spent on it per
    # registry (a batched request counts as its share: 1 / the ids it carried).
    asked: list[str] = Field(default_factory=list)
    requests: dict[str, float] = Field(default_factory=dict)
    # A mismatch whose identifier names another paper: the record found by searching the claimed
    # title and authors instead, i.e. the work the citer probably meant (the status stays mismatch).
    suggested: "RegistryRecord | None" = None
    checked_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class Checked(BaseModel):
    """One citation from lookup onward: the reference as the input wrote it and what checking
    it gave, travelling together so no stage has to re-join them by id."""

    reference: Reference
    result: ValidationResult

    @property
    def citation_id(self) -> str:
        return self.reference.citation_id


SupportLabel = Literal["related", "unrelated", "no abstract"]
# The optional judge's answer (tasks/registries/judge.py): entailment, kept apart from `support`.
Verdict = Literal["SUPPORT", "CONTRADICT", "NOT ENOUGH INFO"]
# A stance model's reading of a cited abstract: empty while none ships (README, claim support).
Stance = Literal["supports", "contradicts", "undetermined"]


class CitationSupport(BaseModel):
    """How well one cited work supports one claim (tasks/support/relevance.py says how)."""

    claim_id: str
    citation_id: str
    support: float | None = Field(None, description="best claim-sentence similarity, in [0, 1]")
    label: SupportLabel
    evidence: str | None = Field(None, description="the abstract sentence closest to the claim")
    relevance: float | None = Field(
        None,
        description="a relevance model's probability that the claim rests on this work, in "
        "[0, 1]; None where none ran (none ships: the bi-encoder's label decides)",
    )
    stance: Stance | None = Field(
        None,
        description="a stance model's stance where confident (none ships yet: always None); a "
        "contradicting work counts 0 towards the claim's strength, as an unrelated one",
    )
    verdict: Verdict | None = Field(
        None,
        description="the optional LLM judge's answer; None: judge off, no abstract, or no usable "
        "answer. It never changes the claim's strength",
    )


class RegistryRecord(BaseModel):
    """A work as a registry holds it, mapped to CSL, with the flags the registry sets on it."""

    registry: Registry
    identifier: str = Field(
        ...,
        description="the registry's own id: normalised DOI (crossref/datacite), PMID (pubmed), "
        "arXiv id, DBLP key, Semantic Scholar paperId, OpenAlex W-id, PMCID or Europe PMC id",
    )
    item: CSLItem
    retracted: bool = False
    corrected: bool = False
    expression_of_concern: bool = False
    # Crossref `relation` / PubMed links: kind -> identifiers, e.g. {"is-preprint-of": ["10.1/x"]}
    relations: dict[str, list[str]] = Field(default_factory=dict)
    notices: list[Notice] = Field(default_factory=list, description="its update notices")
    metadata_missing: bool = Field(
        default=False,
        description="the registry confirmed the identifier exists and answered that it has no "
        "metadata to give: `item` holds the identifier only (not evidence of fabrication)",
    )

    def add_notice(self, notice: Notice) -> None:
        """Flag the work by the notice's kind and keep the notice (once per notice id)."""
        if notice.kind == "retraction":
            self.retracted = True
        elif notice.kind == "correction":
            self.corrected = True
        else:
            self.expression_of_concern = True
        if notice.identifier is None or all(
            n.identifier != notice.identifier for n in self.notices
        ):
            self.notices.append(notice)


class Lookup(BaseModel):
    """What asking a registry about one identifier gave.

    record set        the registry holds it
    record None, error None   the registry answered: no such record
    error set         we could not ask (after retries): the citation stays unverified"""

    identifier: str
    record: RegistryRecord | None = None
    error: str | None = None
    attempts: int = 0


ValidationResult.model_rebuild()  # `suggested` names RegistryRecord, declared after it
