"""Manuscripts: a LaTeX or pandoc Markdown paper given beside its .bib (or CSL-JSON) file.

`citeaudit audit paper.tex refs.bib` audits only what the paper cites, and says what does not
line up: a key the paper cites that no reference has, and a reference the paper never cites
(both as input errors naming the file, key and line; the rest of the job runs). Given alone, a
manuscript brings the bibliography files it names (`\\bibliography{refs}`,
`\\addbibresource{refs.bib}`, pandoc's `bibliography:` front matter).

- LaTeX: `\\cite`, `\\citep`, `\\citet`, `\\citealp`, `\\citeauthor`, `\\citeyear`, `\\parencite`,
  `\\autocite`, `\\textcite`, `\\footcite`, `\\nocite` (starred forms and up to two optional
  arguments), several keys separated by commas; `\\nocite{*}` cites everything. `%` comments are
  skipped. The paper is read as TeX reads it: `\\input`, `\\include`, `\\subfile`, `\\import`
  and `\\subimport` are followed (names relative to the paper's folder as TeX's; the import
  package's folders as it sets them), each file once and at most MAX_INCLUDE_DEPTH deep, and a
  citation names the file and line it is in.
- pandoc Markdown (.md, .markdown, .qmd, .Rmd): `[@key]`, `[see @key, p. 3; -@other]`, `@key` in
  the text and `@{key}`, with pandoc's key syntax. A Markdown file is a manuscript when it holds a
  bracketed citation `[@key...]`; otherwise it is read as a crew report.

Containment: the files a manuscript brings are the author's, not the user's choice, so a
manuscript may bring only files inside its own folder tree (symlinks resolved), and as its
bibliography only a format citeaudit reads (BIBLIOGRAPHY_SUFFIXES). Any other file it names is
an input error naming the path, and nothing of it is read: `\\bibliography{../../creds.txt}`
would otherwise send a secret's lines to the registries as queries. Files given on the command
line are the user's choice and read wherever they are.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from models.audit import InputError, ReadResult
from tasks.read.text import UnreadableFileError, read_text

LATEX_SUFFIXES = frozenset({".tex", ".ltx", ".latex"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".qmd", ".rmd"})
# The bibliography formats pandoc and biblatex name that citeaudit reads (CSL YAML it does not).
BIBLIOGRAPHY_SUFFIXES = frozenset({".bib", ".bibtex", ".ris", ".json"})
MAX_INCLUDE_DEPTH = 15  # TeX's own bound on files open at once (max_in_open)
_LATEX_CITE = re.compile(
    r"\\(?:cite(?:p|t|alp|alt|author|year|num)?|[Pp]arencite|[Aa]utocite|[Tt]extcite|"
    r"[Ff]ootcite|[Cc]ite|nocite)\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^{}]*)\}"
)
_LATEX_COMMENT = re.compile(r"(?<!\\)%.*")
# `\input{ch1}`, plain TeX's `\input ch1`, `\include{ch1}`, `\subfile{ch1}`; the import
# package's `\import{dir/}{file}` and `\subimport*{dir/}{file}` (and their -from forms).
_LATEX_INCLUDE = re.compile(
    r"\\(?P<command>input|include|subfile)\s*\{(?P<name>[^{}]*)\}"
    r"|\\input\s+(?P<bare>[^\s{}\\%]+)"
    r"|\\(?P<importer>(?:sub)?(?:import|inputfrom|includefrom))\*?\s*"
    r"\{(?P<folder>[^{}]*)\}\s*\{(?P<file>[^{}]*)\}"
)
# pandoc: a key starts with a letter, digit or _, and may hold :.#$%&-+?<>~/ inside.
_PANDOC_KEY = r"[\w](?:[\w:.#$%&+?<>~/-]*[\w])?"
_PANDOC_CITE = re.compile(r"(?:^|(?<=[\s\[;(]))-?@(?:\{([^{}]+)\}|(" + _PANDOC_KEY + "))")
# A bracketed group without brackets inside, then an `@key` in it: two linear steps (one
# pattern for both backtracked over the whole rest of the text at every `@`, quadratically).
_BRACKETED = re.compile(r"\[[^\[\]]*\]")
_AT_KEY = re.compile(r"@\w")
_CITE_ALL = "*"
_LATEX_BIBLIOGRAPHY = re.compile(
    r"\\(?P<command>bibliography|addbibresource)\s*(?:\[[^\]]*\])?\{(?P<names>[^{}]+)\}"
)


@dataclass(frozen=True)
class Citation:
    """A key as the manuscript cites it, and where (the included file and its line)."""

    source_file: str
    key: str
    line: int


@dataclass(frozen=True)
class _Named:
    """A bibliography file named by the manuscript, and where."""

    name: str
    source_file: str
    line: int | None
    bibtex: bool  # `\\bibliography{refs}`: BibTeX adds .bib to the name


@dataclass
class Manuscript:
    """A manuscript read with the files it includes: its citations, the bibliographies it names
    and what could not be followed."""

    path: Path
    citations: list[Citation] = field(default_factory=list)
    named: list[_Named] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)

    @property
    def root(self) -> Path:
        """The folder tree the manuscript may bring files from."""
        return self.path.parent.resolve()


def is_manuscript(path: Path) -> bool:
    """A LaTeX file, or Markdown with pandoc citations."""
    suffix = path.suffix.lower()
    if suffix in LATEX_SUFFIXES:
        return True
    if suffix not in MARKDOWN_SUFFIXES:
        return False
    try:
        return has_bracketed_citation(read_text(path))
    except UnreadableFileError:
        return False


def has_bracketed_citation(text: str) -> bool:
    """Whether the text holds a pandoc citation in brackets, `[... @key ...]`."""
    return any(_AT_KEY.search(group.group()) for group in _BRACKETED.finditer(text))


def read_manuscript(path: Path) -> Manuscript:
    """The manuscript's citations and named bibliographies, following LaTeX's includes; an
    unreadable manuscript or included file is an error of the result."""
    manuscript = Manuscript(path)
    if path.suffix.lower() in LATEX_SUFFIXES:
        _read_latex(manuscript, path, path.parent, set(), 0)
        return manuscript
    try:
        text = read_text(path)
    except UnreadableFileError as exc:
        manuscript.errors.append(exc.as_input_error(path))
        return manuscript
    if text.startswith("---"):
        front = text[3:].split("\n---", 1)[0]
        manuscript.named += [
            _Named(name, str(path), None, bibtex=False)
            for name in _front_matter_bibliography(front)
        ]
    for number, line in enumerate(text.splitlines(), 1):
        keys = [braced or bare for braced, bare in _PANDOC_CITE.findall(line)]
        manuscript.citations += [Citation(str(path), key, number) for key in keys if key]
    return manuscript


def _read_latex(
    manuscript: Manuscript, path: Path, base: Path, seen: set[Path], depth: int
) -> None:
    """Read one LaTeX file of the manuscript into it, following its includes; `base` is the
    folder TeX resolves its names in, `seen` the files read so far (each is read once)."""
    seen.add(path.resolve())
    try:
        text = read_text(path)
    except UnreadableFileError as exc:
        manuscript.errors.append(exc.as_input_error(path))
        return
    source = str(path)
    for number, raw in enumerate(text.splitlines(), 1):
        line = _LATEX_COMMENT.sub("", raw)
        if "\\" not in line:
            continue
        for group in _LATEX_CITE.findall(line):
            manuscript.citations += [
                Citation(source, key.strip(), number) for key in group.split(",") if key.strip()
            ]
        for match in _LATEX_BIBLIOGRAPHY.finditer(line):
            bibtex = match["command"] == "bibliography"
            manuscript.named += [
                _Named(name.strip(), source, number, bibtex)
                for name in match["names"].split(",")
                if name.strip()
            ]
        for match in _LATEX_INCLUDE.finditer(line):
            included = _included(match, path, base, manuscript)
            if isinstance(included, InputError):
                manuscript.errors.append(included.model_copy(update={"line": number}))
            elif included is not None:
                child, child_base = included
                if child.resolve() in seen:
                    continue  # included before (or a loop)
                if depth >= MAX_INCLUDE_DEPTH:
                    reason = (
                        f"{child} is included more than {MAX_INCLUDE_DEPTH} files deep: not read"
                    )
                    manuscript.errors.append(
                        InputError(source_file=source, line=number, reason=reason)
                    )
                else:
                    _read_latex(manuscript, child, child_base, seen, depth + 1)


def _included(
    match: re.Match[str], including: Path, base: Path, manuscript: Manuscript
) -> tuple[Path, Path] | InputError | None:
    """The file an include names and the folder its own includes are resolved in, or why it is
    not read."""
    if match["importer"]:
        folder = Path(match["folder"].strip())
        # \\import's folder is the document's (or absolute), \\subimport's the including file's.
        top = manuscript.path.parent
        child_base = base / folder if match["importer"].startswith("sub") else top / folder
        name = match["file"].strip()
    else:
        child_base = base
        name = (match["name"] if match["command"] else match["bare"]).strip()
    if not name:
        return None
    # TeX tries name.tex, then the name as written; \\include always adds .tex.
    if match["command"] == "include" or Path(name).suffix.lower() in LATEX_SUFFIXES:
        names = [name if name.endswith(".tex") else f"{name}.tex"]
    else:
        names = [f"{name}.tex", name]
    # Beside the including file too: a chapter written to compile alone names its own folder's.
    folders = dict.fromkeys([child_base, including.parent])
    candidates = [folder / n for folder in folders for n in names]
    inside = [c for c in candidates if _outside(c, manuscript.root) is None]
    if not inside:
        reason = f"includes {name}: {_outside(candidates[0], manuscript.root)}"
    elif found := next((c for c in inside if c.is_file()), None):
        return found, child_base
    else:
        reason = f"includes {name}, which is not there: its citations are not read"
    return InputError(source_file=str(including), reason=reason)


def _outside(path: Path, root: Path) -> str | None:
    """Why the manuscript may not bring `path`: outside its folder tree (symlinks resolved)."""
    if path.resolve().is_relative_to(root):
        return None
    return f"outside the manuscript's folder {root}: not read"


def bibliographies(manuscript: Manuscript) -> tuple[list[Path], list[InputError]]:
    """The bibliography files the manuscript names, in order, and an error for each it may not
    bring or that is not there."""
    found: list[Path] = []
    errors: list[InputError] = []
    for named in manuscript.named:
        name = named.name.strip("'\"")
        candidate = manuscript.path.parent / name  # an absolute name stays itself
        if named.bibtex and candidate.suffix.lower() != ".bib":
            candidate = candidate.with_name(candidate.name + ".bib")
        elif not candidate.suffix:
            candidate = candidate.with_suffix(".bib")
        reason = _outside(candidate, manuscript.root)
        if reason is None and candidate.resolve().suffix.lower() not in BIBLIOGRAPHY_SUFFIXES:
            kinds = ", ".join(sorted(BIBLIOGRAPHY_SUFFIXES))
            reason = f"not a bibliography file ({kinds}): not read"
        elif reason is None and not candidate.is_file():
            reason = "not there"
        if reason is None:
            if candidate not in found:
                found.append(candidate)
            continue
        errors.append(
            InputError(
                source_file=named.source_file,
                line=named.line,
                reason=f"names the bibliography {named.name}: {reason}",
            )
        )
    return found, errors


def _front_matter_bibliography(front: str) -> list[str]:
    """pandoc's `bibliography:` (one file or a list) from a YAML front matter block."""
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError:
        return []
    named = data.get("bibliography") if isinstance(data, dict) else None
    listed = named if isinstance(named, list) else [named]
    return [str(name) for name in listed if isinstance(name, str)]


def cited_only(result: ReadResult, manuscripts: Sequence[Manuscript]) -> ReadResult:
    """The references the manuscripts cite; a cited key no reference has, and a reference never
    cited, each become an input error (as does an include the manuscript could not follow)."""
    citations = [citation for m in manuscripts for citation in m.citations]
    errors = [*result.errors, *(error for m in manuscripts for error in m.errors)]
    if not result.references and not result.errors:
        names = ", ".join(m.path.name for m in manuscripts)
        reason = f"{names} cites references, but no .bib or CSL-JSON file was given beside it"
        errors += [InputError(source_file=str(m.path), reason=reason) for m in manuscripts]
        return result.model_copy(update={"references": [], "errors": errors})
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
                kind="missing",
            )
        )
    if _CITE_ALL in cited:
        return result.model_copy(update={"errors": errors})
    names = ", ".join(m.path.name for m in manuscripts)
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
                kind="uncited",
            )
        )
    return result.model_copy(update={"references": kept, "errors": errors})
