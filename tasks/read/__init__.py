"""Input readers: every input file of a job becomes References (with provenance), Claims and
InputErrors, whatever its format.

The reader protocol. A reader is a module in this package with

    FORMAT: str                                  its name in FORMATS (below), which
                                                 `read_inputs(format=...)` and --format take
    detect(path: Path, head: str) -> bool        does this file look like mine? `head` is the
                                                 file's first 4 KB, decoded (tasks/read/text.py)
    read(paths: Sequence[Path]) -> ReadResult    read these files; never raise for bad content:
                                                 a bad entry or file is an InputError

and, where the format allows, `stream(paths) -> Iterator[ReadResult]`: the same read in parts as
they are consumed (stream_inputs then holds a batch of references, never the whole list). A
reader is listed in FORMATS. Detection asks the readers in order and the first that says yes
reads the file, so specific formats come first and catch-alls last: the agent JSON formats
before `csljson` (any JSON), `markdown` before `plaintext` (any text). All files a reader claims are
handed to one `read` call, in input order, so the .bib files of a job form one library.

A manuscript (LaTeX, or Markdown with pandoc citations) is no reader's: it says which of the
other inputs' references are audited (tasks/read/manuscript.py).

This package's own import loads no reader: `FORMATS` names them, and kinds.py refuses what is no
bibliography with the standard library, so that the CLI answers a missing file or a bad
`--format` before any parser library loads. The reading itself (`read_inputs`, `stream_inputs`,
`READERS`) is in inputs.py, which imports every reader.
"""

PDF_MAGIC = b"%PDF-"  # how a PDF starts (kinds.py and the pdf reader tell one by it)

# The readers in detection order, by the name `--format` takes, each with its module here.
FORMATS: dict[str, str] = {
    "pdf": "pdf",  # by its magic bytes; the text formats below never start with them
    "bibtex": "bibtex",
    "ris": "ris",
    # Agent JSON formats, told apart by content, before csljson; ivcap last of them, as its
    # store is CSL-JSON with tracking fields.
    "modelchorus": "modelchorus",
    "clinical": "clinical",
    "ice": "ice",
    "rag-context": "rag_context",
    "ivcap": "ivcap",
    "zotero": "zotero",  # a list of {key, version, data: {itemType}}: before csljson's any list
    "csljson": "csljson",
    "markdown": "markdown",
    "plaintext": "plaintext",
}
