"""RAG retrieval contexts (the calcium-imaging pipeline's RAGContext): parallel lists of
`chunks`, `sources` (PDF file names, optionally "paper.pdf - Section"), `scores`, `pages`
(0 = the whole paper) and `full_paths`.

One file may hold one context, a list of them, or `{"contexts": [...]}`. Chunks are merged across
contexts into one reference per paper: its pages grouped (`1-3, 5`), its best chunk as snippet,
a `file://` link to the PDF. A paper's DOI is looked for in its file name, then in its first
page when the PDF is at hand; otherwise the reference stays without identifiers.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from models.audit import ReadResult, Reference
from models.csl import CSLItem
from tasks.identifiers import normalize_doi
from tasks.pages import group_pages
from tasks.read.agent_json import (
    entry_error,
    load_shape,
    reference,
    sniff_json,
    unit_score,
    validation_reason,
)
from tasks.read.common import read_each
from tasks.read.kinds import doi_on_first_page

FORMAT = "rag-context"

_SECTION_SEPARATOR = " - "


class RAGContextModel(BaseModel):
    """The pipeline's RAGContext as its `to_dict()` writes it, with the same length rules."""

    model_config = ConfigDict(extra="allow")

    chunks: list[str]
    sources: list[str]
    scores: list[float] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)
    full_paths: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _parallel(self) -> Self:
        n = len(self.chunks)
        if len(self.sources) != n:
            raise ValueError(f"{len(self.sources)} sources for {n} chunks")
        for name in ("scores", "pages", "full_paths"):
            values = getattr(self, name)
            if values and len(values) != n:
                raise ValueError(f"{len(values)} {name} for {n} chunks")
        return self


@dataclass
class _Paper:
    """What the contexts say about one PDF, gathered chunk by chunk."""

    entry_key: str
    file_name: str
    full_path: str | None = None
    sources: list[str] = field(default_factory=list)
    pages: set[int] = field(default_factory=set)
    whole_paper: bool = False  # a chunk with page 0 stands for the whole paper
    scores: list[float] = field(default_factory=list)
    best_chunk: str | None = None
    best_score: float | None = None
    chunks: int = 0


def _contexts(data: Any) -> list[Any] | None:
    if isinstance(data, dict) and "contexts" in data:
        data = data["contexts"]
    elif isinstance(data, dict):
        data = [data]
    if isinstance(data, list) and any(
        isinstance(c, dict) and "chunks" in c and "sources" in c for c in data
    ):
        return data
    return None


def detect(path: Path, head: str) -> bool:
    return _contexts(sniff_json(path, head)) is not None


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_file)


def read_file(path: Path) -> ReadResult:
    result, contexts = load_shape(path, _contexts, "a RAG context or list of contexts")
    if contexts is None:
        return result
    papers: dict[str, _Paper] = {}
    for c, raw in enumerate(contexts):
        prefix = f"contexts[{c}]." if len(contexts) > 1 else ""
        try:
            context = RAGContextModel.model_validate(raw)
        except ValidationError as exc:
            result.errors.append(
                entry_error(path, prefix.rstrip(".") or "context", validation_reason(exc))
            )
            continue
        _gather(path, prefix, context, papers, result)
    for paper in papers.values():
        result.references.append(_reference(path, paper))
    return result


def _gather(
    path: Path, prefix: str, context: RAGContextModel, papers: dict[str, _Paper], out: ReadResult
) -> None:
    for i, (chunk, source) in enumerate(zip(context.chunks, context.sources, strict=True)):
        key = f"{prefix}sources[{i}]"
        page = context.pages[i] if context.pages else None
        if not source.strip():
            out.errors.append(entry_error(path, key, "empty source file name"))
            continue
        if page is not None and page < 0:
            out.errors.append(entry_error(path, key, f"page {page} is not a page number"))
            continue
        file_name = source.split(_SECTION_SEPARATOR, 1)[0].strip()
        paper = papers.setdefault(file_name, _Paper(entry_key=key, file_name=file_name))
        paper.chunks += 1
        if source not in paper.sources:
            paper.sources.append(source)
        if page:
            paper.pages.add(page)
        elif page == 0:
            paper.whole_paper = True
        if context.full_paths and context.full_paths[i] and not paper.full_path:
            paper.full_path = context.full_paths[i]
        score = context.scores[i] if context.scores else None
        if score is not None:
            paper.scores.append(score)
        if paper.best_chunk is None or (
            score is not None and (paper.best_score is None or score > paper.best_score)
        ):
            paper.best_chunk, paper.best_score = chunk, score


def _reference(path: Path, paper: _Paper) -> Reference:
    pdf_path = _pdf_path(path, paper)
    pdf = pdf_path if pdf_path and pdf_path.is_file() else None
    doi, found_in = _doi_from_name(paper.file_name), "file name"
    if not doi and pdf:
        doi, found_in = doi_on_first_page(pdf), "first page"
    rag: dict[str, Any] = {
        "sources": paper.sources,
        "pages": sorted(paper.pages),
        "scores": paper.scores,
        "chunks": paper.chunks,
        "full_path": paper.full_path,
    }
    if doi:
        rag["doi_found_in"] = found_in
    item = CSLItem.model_validate(
        {
            "id": paper.file_name,
            "type": "article",
            "DOI": doi,
            "URL": pdf_path.as_uri() if pdf_path else None,
            "rag": rag,
        }
    )
    return reference(
        item,
        path,
        paper.entry_key,
        raw=paper.file_name,
        location=_location(paper),
        snippet=paper.best_chunk,
        stated_confidence=unit_score(paper.best_score),
    )


def _location(paper: _Paper) -> str | None:
    parts = ["whole paper"] if paper.whole_paper else []
    if paper.pages:
        parts.append(f"pp. {group_pages(paper.pages)}")
    return "; ".join(parts) or None


def _pdf_path(path: Path, paper: _Paper) -> Path | None:
    """Where the PDF is: its full path, a relative one taken from the context file's folder."""
    if not paper.full_path:
        return None
    pdf = Path(paper.full_path).expanduser()
    return (pdf if pdf.is_absolute() else path.parent / pdf).resolve()


def _doi_from_name(file_name: str) -> str | None:
    # Saved papers are often named after their DOI with "/" made "_": 10.7554_eLife.01567.pdf
    stem = unquote(Path(file_name).stem)
    if not stem.startswith("10."):
        return None
    prefix, sep, suffix = stem.partition("/") if "/" in stem else stem.partition("_")
    return normalize_doi(f"{prefix}/{suffix}") if sep else None
