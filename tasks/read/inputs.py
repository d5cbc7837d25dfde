"""Reading a job's inputs: each file's reader detected (or forced) and asked, as the package's
docstring (tasks/read/__init__.py) lays out. Importing this module imports every reader and its
parser library."""

from collections.abc import Iterable, Iterator, Sequence
from importlib import import_module
from pathlib import Path
from types import ModuleType

from models.audit import InputError, ReadResult, Reference
from tasks.read import FORMATS, pdf
from tasks.read.common import (
    FIELD_TOO_LONG,
    MAX_FIELD_CHARS,
    merged,
    too_long_field,
    young_collections_only,
)
from tasks.read.kinds import check_bibliographies
from tasks.read.manuscript import (
    Manuscript,
    bibliographies,
    cited_only,
    is_manuscript,
    read_manuscript,
)
from tasks.read.text import UnreadableFileError, decoding_note, read_head

READERS: tuple[ModuleType, ...] = tuple(
    import_module(f"tasks.read.{module}") for module in FORMATS.values()
)


def reader_for(format: str) -> ModuleType:
    for reader in READERS:
        if format == reader.FORMAT:
            return reader
    known = ", ".join(reader.FORMAT for reader in READERS)
    raise ValueError(f"unknown input format {format!r}; known: {known}")


def detect_reader(path: Path, head: str) -> ModuleType:
    """The first reader that recognises the file (plaintext takes any text)."""
    return next(reader for reader in READERS if reader.detect(path, head))


def read_inputs(paths: Sequence[Path], format: str | None = None) -> ReadResult:
    """Read a job's input files: each file's format detected from its content unless `format`
    forces one (an unknown `format` is a caller's error: ValueError)."""
    files, manuscripts, refused = _inputs(paths, format)
    with young_collections_only():
        result = merged(_read_parts(files, format))
    if not manuscripts:
        return result
    chosen = cited_only(result, manuscripts)
    chosen.errors[:0] = refused
    return chosen


def stream_inputs(
    paths: Sequence[Path], format: str | None, batch_size: int
) -> Iterator[ReadResult]:
    """read_inputs in consecutive batches of `batch_size` references (the last may hold fewer,
    or none: the files' warnings come last), each error and claim in the batch it was read
    with. Readers with a `stream` read as the batches are consumed, so memory holds a batch,
    not the list; other readers' files are read whole first. A manuscript chooses among all
    references: with one, the inputs are read whole and then cut."""
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    files, manuscripts, _ = _inputs(paths, format)
    if manuscripts:
        parts: Iterable[ReadResult] = [read_inputs(paths, format)]
    else:
        parts = _read_parts(files, format)
    pending = ReadResult()
    for part in parts:
        pending.extend(part)
        while len(pending.references) >= batch_size:
            batch = pending.model_copy(update={"references": pending.references[:batch_size]})
            pending = ReadResult(references=pending.references[batch_size:])
            yield batch
    if pending.references or pending.claims or pending.errors or pending.subjects:
        yield pending


def _inputs(
    paths: Sequence[Path], format: str | None
) -> tuple[list[Path], list[Manuscript], list[InputError]]:
    """The files to read, the manuscripts among the inputs (read, with the files they include)
    and the errors of the bibliographies they name: a manuscript alone brings those it may
    (tasks/read/manuscript.py)."""
    found = [] if format else [path for path in paths if is_manuscript(path)]
    files = [path for path in paths if path not in found]
    manuscripts = [read_manuscript(path) for path in found]
    refused: list[InputError] = []
    if manuscripts and not files:  # alone: the files they name
        for manuscript in manuscripts:
            named, errors = bibliographies(manuscript)
            files += [path for path in named if path not in files]
            refused += errors
    return files, manuscripts, refused


def _read_parts(files: Sequence[Path], format: str | None) -> Iterator[ReadResult]:
    """Each file's reader (forced or detected) reading its files, part by part; then an error
    per file that gave nothing and a warning per file that was not clean text."""
    forced = reader_for(format) if format else None
    groups: dict[str, tuple[ModuleType, list[Path]]] = {}
    for path in files:
        try:
            reader = forced or (pdf if pdf.is_pdf(path) else detect_reader(path, read_head(path)))
        except UnreadableFileError as exc:
            yield ReadResult(errors=[exc.as_input_error(path)])
            continue
        groups.setdefault(reader.FORMAT, (reader, []))[1].append(path)
    for reader, group in groups.values():
        named: set[str] = set()
        parts = reader.stream(group) if hasattr(reader, "stream") else [reader.read(group)]
        for part in parts:
            named.update(_files_named(part))
            yield within_bounds(part)
        yield ReadResult(errors=nothing_read(group, named, reader.FORMAT))
        if reader is not pdf:
            yield ReadResult(errors=decoding_warnings(group))


def decoding_warnings(paths: Sequence[Path]) -> list[InputError]:
    """A warning row per text file that was not clean UTF-8 (or its BOM's encoding)."""
    return [
        InputError(source_file=str(path), reason=f"warning: {note}", kind="warning")
        for path in paths
        if (note := decoding_note(path))
    ]


def within_bounds(read: ReadResult) -> ReadResult:
    """The part with each reference that has a field longer than MAX_FIELD_CHARS turned into an
    input error naming its file and entry: the one place this bound holds for every format
    (BibTeX also bounds a field while expanding its @string macros)."""
    kept: list[Reference] = []
    errors = list(read.errors)
    for ref in read.references:
        field = too_long_field(ref.item.model_dump(exclude_none=True))
        if field is None and ref.raw is not None and len(ref.raw) > MAX_FIELD_CHARS:
            field = "raw text"
        if field is None:
            kept.append(ref)
            continue
        where = ref.provenance
        reason = f"{FIELD_TOO_LONG}: {field}"
        errors.append(
            InputError(
                source_file=where.source_file,
                entry_key=where.entry_key,
                line=where.line,
                reason=reason,
            )
        )
    return read.model_copy(update={"references": kept, "errors": errors})


def _files_named(read: ReadResult) -> set[str]:
    return (
        {ref.provenance.source_file for ref in read.references}
        | {claim.source_file for claim in read.claims}
        | {error.source_file for error in read.errors}
    )


def nothing_read(paths: Sequence[Path], named: set[str], format: str) -> list[InputError]:
    """An error per input that gave nothing (`named`: the files the reader's results name),
    which a job must say rather than pass with 0 citations: an empty file, or files read
    together none of which gave a reference, claim or error (not in the format they were read
    as). One of several BibTeX files read together may rightly hold only @string definitions
    the others use; other formats read each file alone."""
    silent = [path for path in paths if str(path) not in named]
    if format == "bibtex" and len(silent) < len(paths):
        silent = [path for path in silent if not read_head(path).strip()]
    return [
        InputError(source_file=str(path), reason=f"no references found (read as {format})")
        for path in silent
    ]


def read(paths: Sequence[str], input_format: str | None) -> ReadResult:
    """Raises NotABibliography (the run ends Failed) for a missing input or one that holds no
    bibliography (an image, a Word document, an empty file)."""
    files = [Path(p) for p in paths]
    check_bibliographies(files)
    return read_inputs(files, input_format)


def read_batches(
    paths: Sequence[str], input_format: str | None, batch_size: int
) -> Iterator[ReadResult]:
    """`read` in batches of `batch_size` references, read as they are consumed
    (tasks/read:stream_inputs)."""
    files = [Path(p) for p in paths]
    check_bibliographies(files)
    return stream_inputs(files, input_format, batch_size)
