"""`citeaudit fix INPUT.bib [-o OUT.bib]`: read -> identify -> look up -> rewrite the user's file.

No Prefect run and no library: the file is audited in this process (the registries' own rate
limits still apply) and rewritten by tasks/render/fix.py. The corrected BibTeX goes to OUT.bib
(or stdout), the per-entry diff to stdout (or stderr when the BibTeX is on stdout).
"""

import sys
from pathlib import Path
from typing import Annotated

import typer


def fix(
    input_bib: Annotated[Path, typer.Argument(metavar="INPUT.bib", help="Your BibTeX file.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write the corrected file (default stdout)."),
    ] = None,
    offline: Annotated[bool, typer.Option(help="Do not contact the registries.")] = False,
) -> None:
    """Correct INPUT.bib from the registries, mark what cannot be trusted, show what changed."""
    from flows.cli.main import usage_error
    from tasks.citation_ids import assign_citation_ids
    from tasks.lookup import lookup_references
    from tasks.read import bibtex, decoding_warnings
    from tasks.read.text import UnreadableFileError, read_text
    from tasks.registries import Registries, RegistryPool, RegistrySettings
    from tasks.render.fix import fix_bibtex

    try:
        text = read_text(input_bib)
    except UnreadableFileError as exc:
        usage_error(f"{input_bib}: {exc}")
    if not bibtex.detect(input_bib, text[:4096]):
        usage_error(f"{input_bib}: not a BibTeX file (fix rewrites .bib files only)")
    if output is not None and output.resolve() == input_bib.resolve():
        usage_error("-o must name a new file: the input is kept as it is")
    read = bibtex.read([input_bib])
    refs = assign_citation_ids(read.references)
    if offline:
        results = lookup_references(refs, None, offline=True)
    else:
        with Registries.from_settings(RegistrySettings(), RegistryPool()) as registries:
            results = lookup_references(refs, registries)
    fixed = fix_bibtex(text, refs, {r.citation_id: r for r in results})
    report = sys.stderr if output is None else sys.stdout
    # a file not in UTF-8 is rewritten in UTF-8: say what it was read as
    for note in decoding_warnings([input_bib]):
        print(f"{note.where}: {note.reason}; the fixed file is UTF-8", file=report)
    for error in read.errors:
        print(f"{error.where}: {error.reason}", file=report)
    print(fixed.diff(), end="", file=report)
    print(fixed.summary(len(refs)), file=report)
    if output is None:
        sys.stdout.write(fixed.text)
    else:
        output.write_text(fixed.text, encoding="utf-8")
