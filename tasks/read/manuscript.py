"""Manuscripts: a LaTeX or pandoc Markdown paper given beside its .bib (or CSL-JSON) file.

`citeaudit audit paper.tex refs.bib` audits only what the paper cites, and says what does not
line up: a key the paper cites that no reference has, and a reference the paper never cites
(both as input errors naming the file, key and line; the rest of the job runs). Given alone, a
manuscript brings the bibliography files it names (`\\bibliography{refs}`,
`\\addbibresource{refs.bib}`, pandoc's `bibliography:` front matter), found beside it.

- LaTeX: `\\cite`, `\\citep`, `\\citet`, `\\citealp`, `\\citeauthor`, `\\citeyear`, `\\parencite`,
  `\\autocite`, `\\textcite`, `\\footcite`, `\\nocite` (starred forms and up to two optional
  arguments), several keys separated by commas; `\\nocite{*}` cites everything. `%` comments are
  skipped.
- pandoc Markdown (.md, .markdown, .qmd, .Rmd): `[@key]`, `[see @key, p. 3; -@other]`, `@key` in
  the text and `@{key}`, with pandoc's key syntax. A Markdown file is a manuscript when it holds a
  bracketed citation `[@key...]`; otherwise it is read as a crew report.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from models.audit import InputError, ReadResult
from tasks.read.text import UnreadableFileError, read_text

LATEX_SUFFIXES = frozenset({".tex", ".ltx", ".latex"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".qmd", ".rmd"})
_LATEX_CITE = re.compile(
    r"\\(?:cite(?:p|t|alp|alt|author|year|num)?|[Pp]arencite|[Aa]utocite|[Tt]extcite|"
    r"[Ff]ootcite|[Cc]ite|nocite)\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^{}]*)\}"
)
_LATEX_COMMENT = re.compile(r"(?<!\\)%.*")
# pandoc: a key starts with a letter, digit or _, and may hold :.#$%&-+?<>~/ inside.
_PANDOC_KEY = r"[\w](?:[\w:.#$%&+?<>~/-]*[\w])?"
_PANDOC_CITE = re.compile(r"(?:^|(?<=[\s\[;(]))-?@(?:\{([^{}]+)\}|(" + _PANDOC_KEY + "))")
_PANDOC_BRACKETED = re.compile(r"\[[^\[\]]*-?@" + _PANDOC_KEY + r"[^\[\]]*\]")
_CITE_ALL = "*"
_LATEX_BIBLIOGRAPHY = re.compile(r"\\(?:bibliography|addbibresource)\s*(?:\[[^\]]*\])?\{([^{}]+)\}")


@dataclass(frozen=True)
class Citation:
    """A key as the manuscript cites it, and where."""

    source_file: str
    key: str
    line: int


def is_manuscript(path: Path) -> bool:
    """A LaTeX file, or Markdown with pandoc citations."""
    suffix = path.suffix.lower()
    if suffix in LATEX_SUFFIXES:
        return True
    if suffix not in MARKDOWN_SUFFIXES:
        return False
    try:
        return _PANDOC_BRACKETED.search(read_text(path)) is not None
    except UnreadableFileError:
        return False


def bibliographies_named(path: Path) -> list[Path]:
    """The bibliography files the manuscript names that exist beside it, in order."""
    try:
        text = read_text(path)
    except UnreadableFileError:
        return []  # cited_only says why the manuscript could not be read
    names: list[str] = []
    if path.suffix.lower() in LATEX_SUFFIXES:
        for group in _LATEX_BIBLIOGRAPHY.findall(_LATEX_COMMENT.sub("", text)):
            names += [n.strip() for n in group.split(",")]
    elif text.startswith("---"):
        names += _front_matter_bibliography(text[3:].split("\n---", 1)[0])
    found = []
    for name in (n.strip().strip("'\"") for n in names):
        candidate = path.parent / name
        if not candidate.suffix:
            candidate = candidate.with_suffix(".bib")
        if name and candidate.is_file() and candidate not in found:
            found.append(candidate)
    return found


def _front_matter_bibliography(front: str) -> list[str]:
    """pandoc's `bibliography:` (one file or a list) from a YAML front matter block."""
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError:
        return []
    named = data.get("bibliography") if isinstance(data, dict) else None
    listed = named if isinstance(named, list) else [named]
    return [str(name) for name in listed if isinstance(name, str)]


def citations_in(path: Path) -> list[Citation]:
    """Every citation of the manuscript, in order (a key cited twice appears twice)."""
    latex = path.suffix.lower() in LATEX_SUFFIXES
    found = []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if latex:
            groups = _LATEX_CITE.findall(_LATEX_COMMENT.sub("", line))
            keys = [k.strip() for group in groups for k in group.split(",")]
        else:
            keys = [braced or bare for braced, bare in _PANDOC_CITE.findall(line)]
        found += [Citation(str(path), key, number) for key in keys if key]
    return found


def cited_only(result: ReadResult, manuscripts: Sequence[Path]) -> ReadResult:
    """The references the manuscripts cite; a cited key no reference has, and a reference never
    cited, each become an input error."""
    citations: list[Citation] = []
    errors = list(result.errors)
    for path in manuscripts:
        try:
            citations += citations_in(path)
        except UnreadableFileError as exc:
            errors.append(exc.as_input_error(path))
    if not result.references and not result.errors:
        names = ", ".join(p.name for p in manuscripts)
        reason = f"{names} cites references, but no .bib or CSL-JSON file was given beside it"
        errors += [InputError(source_file=str(p), reason=reason) for p in manuscripts]
        return ReadResult(claims=result.claims, errors=errors)
    keys = {ref.provenance.entry_key.lower() for ref in result.references}
    cited = {c.key.lower() for c in citations}
    reported: set[str] = set()
    for citation in citations:
        if citation.key == _CITE_ALL or citation.key.lower() in keys | reported:
            continue
        reported.add(citation.key.lower())
        errors.append(
            InputError(
                source_file=citation.source_file,
                entry_key=citation.key,
                line=citation.line,
                reason=f"cites {citation.key!r}, which no reference file given has",
            )
        )
    if _CITE_ALL in cited:
        return ReadResult(references=result.references, claims=result.claims, errors=errors)
    names = ", ".join(p.name for p in manuscripts)
    kept = []
    for ref in result.references:
        if ref.provenance.entry_key.lower() in cited:
            kept.append(ref)
            continue
        errors.append(
            InputError(
                source_file=ref.provenance.source_file,
                entry_key=ref.provenance.entry_key,
                line=ref.provenance.line,
                reason=f"never cited in {names}: not audited",
            )
        )
    return ReadResult(references=kept, claims=result.claims, errors=errors)
