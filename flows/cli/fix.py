"""`citeaudit fix INPUT.bib [-o OUT.bib]`: read -> identify -> look up -> rewrite the user's file.

No Prefect run and no library: the file is audited in this process (the registries' own rate
limits still apply) and rewritten by tasks/render/fix.py. Its progress shows as audit's does
(flows/cli/run.py: bars on a terminal, a line now and then in a pipe or a log). The corrected
BibTeX goes to OUT.bib (or stdout), the per-entry diff to stdout (or stderr when the BibTeX is
on stdout).

OUT.bib is checked before the audit (a new file, in a folder that exists) and written whole or
not at all: to a temporary file beside it, flushed to disk, renamed into place; the diff and
summary are printed only once it is there. The fixed file keeps the input's BOM (and the
encoding it names) and line endings.
"""

import os
import sys
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.app import fail, internal_error, usage_error
from flows.cli.checks import registry_settings
from flows.cli.run import progress_bars


def fix(
    input_bib: Annotated[Path, typer.Argument(metavar="INPUT.bib", help="Your BibTeX file.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write the corrected file (default stdout)."),
    ] = None,
    offline: Annotated[bool, typer.Option(help="Do not contact the registries.")] = False,
) -> None:
    """Correct INPUT.bib from the registries, mark what cannot be trusted, show what changed."""
    from tasks.read.kinds import (
        NotABibliography,
        check_bibliographies,
        head_text,
        looks_like_bibtex,
    )

    # The file and -o with the standard library first, then the settings: the reader (its
    # parser library) and the registry clients load only once these are right.
    try:
        check_bibliographies([input_bib])
    except NotABibliography as exc:
        fail(exc)
    if not looks_like_bibtex(input_bib, head_text(input_bib)):
        usage_error(f"{input_bib}: not a BibTeX file (fix rewrites .bib files only)")
    if output is not None and (problem := _unwritable(output, input_bib)):
        usage_error(f"-o {output}: {problem}")
    settings = None if offline else registry_settings()
    from flows.interrupt import stop_on_signals

    stop_on_signals()  # Ctrl-C and SIGTERM: one line, at once, whatever the lookup waits on
    from tasks.read import bibtex
    from tasks.read.inputs import decoding_warnings
    from tasks.read.text import UnreadableFileError, encoded_like, read_text

    try:
        text = read_text(input_bib)
        original = input_bib.read_bytes()
    except UnreadableFileError as exc:
        usage_error(f"{input_bib}: {exc}")
    # the lookup's modules (the registry clients among them) once the arguments are right
    from flows import progress
    from models.job import DEFAULT_CHUNK
    from tasks.citation_ids import assign_citation_ids
    from tasks.lookup.checker import Checker
    from tasks.render.fix import fix_bibtex
    from tasks.store.jobfolder import write_output

    read = bibtex.read([input_bib])
    refs = assign_citation_ids(read.references)
    with progress_bars(), Checker(settings) as checker:
        shown = partial(progress.report, "validate")  # as audit's `validate` stage is
        checked = checker.check_in_chunks(refs, DEFAULT_CHUNK, shown)
    fixed = fix_bibtex(text, refs, {c.citation_id: c.result for c in checked})
    data = encoded_like(fixed.text, original)
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        try:
            write_output(output, data)
        except OSError as exc:
            internal_error(f"{output}: not written ({exc.strerror or exc}); it is as it was")
    report = sys.stderr if output is None else sys.stdout
    # a file in a legacy encoding is rewritten in UTF-8: say what it was read as
    for note in decoding_warnings([input_bib]):
        print(f"{note.where}: {note.reason}; the fixed file is UTF-8", file=report)
    for error in read.errors:
        print(f"{error.where}: {error.reason}", file=report)
    print(fixed.diff(), end="", file=report)
    print(fixed.summary(len(refs)), file=report)


def _unwritable(output: Path, input_bib: Path) -> str | None:
    """Why `output` cannot take the fixed file, or None. The same file under another name (a
    symbolic or hard link: same device and inode) is the input."""
    if output.is_dir():
        return "is a folder: name the file to write"
    folder = output.resolve().parent
    if not folder.is_dir():
        return f"no folder {folder}"
    if output.exists() and os.path.samefile(output, input_bib):
        return "is the input file (-o must name a new file: the input is kept as it is)"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write in {folder}"
    return None
