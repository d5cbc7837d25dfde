"""Citation and CitationMap, as the ModelChorus citation engine defines them.

A crew report is a list of claims (CitationMap), each backed by citations. `source` is whatever
the crew cited: a DOI, URL, file path, ISBN or a free-text reference.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Citation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(..., min_length=1, description="DOI, URL, file path, ISBN or free text")
    location: str | None = Field(None, description='e.g. "Section 3.2", "Page 45", "00:15:30"')
    confidence: float = Field(..., ge=0.0, le=1.0)
    snippet: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class CitationMap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_id: str = Field(..., min_length=1)
    claim_text: str = Field(..., min_length=1)
    citations: list[Citation] = Field(default_factory=list)
    strength: float = Field(..., ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)
