"""The records every snapshot holds, declared once: builders write these, lookups read them.

Two tables. `works` is a registry's record of a work, whatever dump it came from (dblp, arXiv,
Crossref): the fields the decision table compares, identifiers normalised as
tasks/identifiers.py normalises them (DOI lower case, arXiv id without version, PMID digits).
`notices` is a retraction, correction or expression of concern about a work (Retraction Watch).

Each table names its *dated* column: the snapshot's date is the newest value in it, the dump's
own date (dblp's newest `mdate`, arXiv's newest `update_date`), never the day it was built.
"""

import contextlib
import functools
import gc
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

# Bumped when a column or an index file changes: a snapshot of another version is rebuilt,
# never read wrongly (3: identifiers in id_keys.arrow, not an ART index in index.duckdb).
FORMAT_VERSION = 3

AUTHOR = pa.struct(
    [
        pa.field("family", pa.string()),
        pa.field("given", pa.string()),
        pa.field("literal", pa.string()),  # a name the dump gives whole (an organisation)
    ]
)

UPDATE = pa.struct(  # Crossref's `updated-by`: a notice about this work
    [
        pa.field("type", pa.string()),  # retraction, correction, expression_of_concern, ...
        pa.field("doi", pa.string()),  # the notice's DOI
        pa.field("date", pa.date32()),
    ]
)

WORKS = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),  # the dump's own key: dblp key, arXiv id, DOI
        pa.field("doi", pa.string()),
        pa.field("arxiv_id", pa.string()),
        pa.field("pmid", pa.string()),
        pa.field("title", pa.string()),
        pa.field("subtitle", pa.string()),
        pa.field("authors", pa.list_(AUTHOR)),  # in the order the dump gives them
        pa.field("year", pa.int16()),
        pa.field("container", pa.string()),  # journal, booktitle (dblp's short form) or venue
        pa.field("container_full", pa.string()),  # the proceedings' own title (dblp `crossref`)
        pa.field("volume", pa.string()),
        pa.field("issue", pa.string()),
        pa.field("pages", pa.string()),
        pa.field("type", pa.string()),  # a CSL type: article-journal, paper-conference, ...
        pa.field("informal", pa.bool_()),  # a preprint or informal publication (CoRR, arXiv)
        pa.field("withdrawn", pa.bool_()),  # withdrawn by its authors (arXiv)
        pa.field("version", pa.int16()),  # the latest version (arXiv)
        pa.field("parent", pa.string()),  # the `id` of the work this one is part of (dblp)
        pa.field("updates", pa.list_(UPDATE)),  # notices about it (Crossref `updated-by`)
        pa.field("updated", pa.date32()),  # the record's own date in the dump
    ]
)

NOTICES = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),  # Retraction Watch's Record ID
        pa.field("doi", pa.string()),  # the original paper's
        pa.field("pmid", pa.string()),
        pa.field("title", pa.string()),
        pa.field("nature", pa.string()),  # retraction, correction, expression_of_concern, ...
        pa.field("date", pa.date32()),  # the notice's
        pa.field("notice_doi", pa.string()),
        pa.field("notice_pmid", pa.string()),
        pa.field("reason", pa.string()),  # the reasons, `;`-separated as the dump gives them
    ]
)


@dataclass(frozen=True)
class Table:
    """One kind of snapshot table: its columns, its dated column, its identifier columns."""

    name: str
    schema: pa.Schema
    dated: str
    identifiers: tuple[str, ...]  # the columns a batched identifier lookup joins on
    titled: bool  # whether it gets a title index


WORKS_TABLE = Table("works", WORKS, "updated", ("id", "doi", "arxiv_id", "pmid"), True)
NOTICES_TABLE = Table("notices", NOTICES, "date", ("doi", "pmid"), False)
TABLES = {table.name: table for table in (WORKS_TABLE, NOTICES_TABLE)}


# The `type` of a row that removes its `id`'s record from the parts before it (PubMed's
# DeleteCitation); the index leaves the row itself out.
DELETED = "deleted"

BATCH = 20_000  # rows per record batch a builder hands the store
R = TypeVar("R")
NAMED = 20  # broken records named in a build's summary (the rest are counted)


@dataclass
class Skipped:
    """The broken records a builder left out: how many, and where the first NAMED are and what
    is wrong with them (`dump.json:12: $.title: expected str, got array`)."""

    count: int = 0
    named: list[str] = field(default_factory=list)

    def add(self, where: str) -> None:
        self.count += 1
        if len(self.named) < NAMED:
            self.named.append(where)

    def merge(self, other: "int | Skipped | None") -> None:
        """Add what another part (or piece) skipped: a count, or counted and named."""
        if isinstance(other, Skipped):
            self.count += other.count
            self.named.extend(other.named[: NAMED - len(self.named)])
        elif other:
            self.count += other


def in_batches(
    rows: Generator[Any, None, R],
    schema: pa.Schema,
    to_batch: Callable[[list[Any]], pa.RecordBatch] | None = None,
) -> Generator[pa.RecordBatch, None, R]:
    """A builder's rows (dicts; tuples with `to_batch`, tuples_batch) in record batches of
    `schema`; returns what `rows` returns (the broken records it skipped: how many, or a
    Skipped naming them)."""
    batch: list[Any] = []
    made = to_batch or functools.partial(pa.RecordBatch.from_pylist, schema=schema)
    while True:
        try:
            batch.append(next(rows))
        except StopIteration as end:
            skipped: R = end.value
            break
        if len(batch) >= BATCH:
            yield made(batch)
            batch = []
    if batch:
        yield made(batch)
    return skipped


def tuples_batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """Rows (tuples of the works schema's columns, in order) as a record batch, column by column
    (a builder's quick path: no dict per row)."""
    columns = zip(*rows, strict=True)
    return pa.record_batch(
        [pa.array(column, kind.type) for column, kind in zip(columns, WORKS, strict=True)],
        schema=WORKS,
    )


@contextlib.contextmanager
def uncollected() -> Iterator[None]:
    """Python's cycle collector paused while a builder makes rows: a file's works are hundreds of
    thousands of objects, freed by reference counting (they hold no cycles), and the collector
    walking them again and again as rows are made costs the readers much of their CPU."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
