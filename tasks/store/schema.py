"""The library's tables, declared once, the schema version a library is at, and the step that
brings an older library up to date.

Every column comes from a declared polars schema: the frames' own (tasks/frames.py,
tasks/score/metrics.py, tasks/dedupe/, tasks/job/changes.py) for the tables of citations, claims and
works, and `STORE_TABLES` below for the store's bookkeeping. A table's DDL is rendered from its
schema with the types DuckDB gives those columns when it reads such a frame. A write bringing a
column its table does not declare is refused (`UndeclaredColumns`): a new column is declared
where its frame is, with a new SCHEMA_VERSION."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property

import duckdb
import polars as pl

from tasks.errors import InfrastructureError

# 1: no recorded version; 2: the store's own tables declared, frame tables grown from frames;
# 3: every table declared; 4: input errors have a kind, and claim support a relevance, a
# stance and contradicting_count (the cross-encoder's second pass).
SCHEMA_VERSION = 4

PolarsSchema = Mapping[str, pl.DataType | type[pl.DataType]]


class UndeclaredColumns(InfrastructureError):
    """A frame, or an older library, holds columns its table does not declare."""


@dataclass(frozen=True)
class Table:
    name: str
    columns: PolarsSchema
    key: tuple[str, ...] = ()  # a primary key, where the backend has them

    @cached_property
    def sql_columns(self) -> list[tuple[str, str]]:
        """(name, DuckDB type) of each column, in order."""
        with duckdb.connect() as con:
            empty = con.from_arrow(pl.DataFrame(schema=dict(self.columns)).to_arrow())
            return list(zip(empty.columns, [str(t) for t in empty.types], strict=True))

    def ddl(self, name: str | None = None, keys: bool = True) -> str:
        parts = [f'"{column}" {sql_type}' for column, sql_type in self.sql_columns]
        if keys and self.key:
            parts.append("PRIMARY KEY (" + ", ".join(f'"{k}"' for k in self.key) + ")")
        return f'CREATE TABLE IF NOT EXISTS "{name or self.name}" ({", ".join(parts)})'

    def check(self, columns: Iterable[str]) -> None:
        undeclared = [c for c in columns if c not in self.columns]
        if undeclared:
            raise UndeclaredColumns(
                f"the library's table {self.name} has no column {', '.join(undeclared)}: "
                "declare it in the schema its frame comes from and bump SCHEMA_VERSION "
                "(tasks/store/schema.py)"
            )


STORE_TABLES = (
    Table("library_meta", {"key": pl.Utf8, "value": pl.Utf8}, key=("key",)),
    Table(
        "jobs",
        {
            "job_id": pl.Utf8,
            "created_at": pl.Datetime("us", "UTC"),
            "updated_at": pl.Datetime("us", "UTC"),
            "inputs": pl.Utf8,  # JSON list of the input files
            "n_citations": pl.Int64,
            "n_input_errors": pl.Int64,
            "status_counts": pl.Utf8,  # JSON {status: count}
        },
        key=("job_id",),
    ),
    Table(
        "bulk_progress",
        {
            "job_id": pl.Utf8,
            "batch": pl.Int64,
            "fingerprint": pl.Utf8,
            "n_citations": pl.Int64,
            "done_at": pl.Datetime("us", "UTC"),
        },
        key=("job_id", "batch", "fingerprint"),
    ),
)


def _without(schema: PolarsSchema, column: str) -> PolarsSchema:
    return {name: dtype for name, dtype in schema.items() if name != column}


@cache
def library_tables() -> dict[str, Table]:
    """Every table of the library, by name. The frames' modules are imported on first use, so
    that readers (`citeaudit jobs`, `report`) do not load scoring and dedupe."""
    from tasks import frames
    from tasks.dedupe.canonical import WORKS_SCHEMA
    from tasks.dedupe.cluster import ASSIGNMENT_SCHEMA, LINK_SCHEMA
    from tasks.dedupe.job import DEDUPE_COLUMNS
    from tasks.dedupe.records import LIBRARY_SCHEMA
    from tasks.job.changes import CHANGES_SCHEMA
    from tasks.score import metrics

    # A job's citation rows: the citation, its scores and its work (tasks/job/render.py job_tables).
    citations = {
        **frames.CITATION_SCHEMA,
        **_without(metrics.CITATION_SCORE_SCHEMA, "citation_id"),
        **{c: ASSIGNMENT_SCHEMA[c] for c in DEDUPE_COLUMNS if c != "citation_id"},
    }
    claims = {**frames.CLAIM_SCHEMA, **_without(metrics.CLAIM_SCORE_SCHEMA, "claim_id")}
    frame_tables = (
        Table("citations", citations),
        Table("input_errors", frames.INPUT_ERROR_SCHEMA),
        Table("claims", claims),
        Table("dedupe_records", {**LIBRARY_SCHEMA, "job_id": pl.Utf8}),
        Table("works", WORKS_SCHEMA),
        Table("work_links", LINK_SCHEMA),
        Table("citation_changes", CHANGES_SCHEMA),
    )
    return {table.name: table for table in (*STORE_TABLES, *frame_tables)}


# A citation's validation lives on its row of `citations` (one row per input citation, replaced
# with its job); this view shows just the verdicts, for SQL users of the library.
VALIDATIONS_VIEW = """CREATE OR REPLACE VIEW validations AS SELECT
    job_id, citation_id, status, reason, registry, matched_id, match_score, agreement_title,
    agreement_authors, agreement_year, agreement_container, agreement_pages, retracted,
    corrected, expression_of_concern, attempts, error, checked_at
    FROM citations"""

# A column a version added, and how the rows written before it get theirs (else null): an input
# error's kind, told by the reason the readers wrote for each kind (models/audit.py InputError).
BACKFILLS = {
    ("input_errors", "kind"): """CASE
        WHEN reason LIKE 'cites %, which no reference file given has'
          OR reason LIKE 'cites %, which the reference list does not have'
          OR reason LIKE 'cites %, but % by first author and year: %' THEN 'missing'
        WHEN reason LIKE 'never cited in %: not audited' THEN 'uncited'
        WHEN reason LIKE 'warning: %' THEN 'warning'
        ELSE 'malformed' END""",
}

_HERE = "table_catalog = current_database() AND table_schema = current_schema()"


def table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The tables and views of the library `con` is using."""
    rows = con.execute(f"SELECT table_name FROM information_schema.tables WHERE {_HERE}")
    return {r[0] for r in rows.fetchall()}


def columns_of(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    """(name, type) of each column of `table` as the library holds it, in order; [] if absent."""
    return [
        (name, sql_type)
        for name, sql_type in con.execute(
            f"""SELECT column_name, data_type FROM information_schema.columns
                WHERE {_HERE} AND table_name = ? ORDER BY ordinal_position""",
            [table],
        ).fetchall()
    ]


def version_of(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version of an open library: 0 new, 1 before versions were recorded."""
    tables = table_names(con)
    if "library_meta" in tables:
        row = con.execute("SELECT value FROM library_meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0
    return 1 if "jobs" in tables else 0


def _bring_up_to_date(con: duckdb.DuckDBPyConnection, table: Table, keys: bool) -> None:
    """Create `table`, or rebuild it in its declared shape keeping every row: columns it lacks
    come as nulls (or their BACKFILLS value), columns in another order or of another type are
    copied over (cast). A column the declaration lacks is refused, never dropped."""
    held = columns_of(con, table.name)
    if not held:
        con.execute(table.ddl(keys=keys))
        return
    if held == table.sql_columns:
        return
    table.check(name for name, _ in held)
    had = {name for name, _ in held}
    filled = {c: value for (t, c), value in BACKFILLS.items() if t == table.name and c not in had}
    staged = f"{table.name}_v{SCHEMA_VERSION}"
    names = ", ".join(f'"{name}"' for name, _ in held)
    con.execute(table.ddl(staged, keys=keys))
    values = "".join(f', {value} AS "{name}"' for name, value in filled.items())
    con.execute(f'INSERT INTO "{staged}" BY NAME SELECT {names}{values} FROM "{table.name}"')
    con.execute(f'DROP TABLE "{table.name}"')
    con.execute(f'ALTER TABLE "{staged}" RENAME TO "{table.name}"')


def migrate(con: duckdb.DuckDBPyConnection, keys: bool = True) -> int:
    """Bring the library to SCHEMA_VERSION in one transaction; the version it was at. `keys`:
    declare primary keys (a DuckLake has none)."""
    found = version_of(con)
    if found == SCHEMA_VERSION:
        return found
    if found > SCHEMA_VERSION:
        raise RuntimeError(
            f"this library is at schema version {found}, newer than this citeaudit "
            f"({SCHEMA_VERSION}): upgrade citeaudit"
        )
    con.execute("BEGIN TRANSACTION")
    try:
        for table in library_tables().values():
            _bring_up_to_date(con, table, keys)
        con.execute(VALIDATIONS_VIEW)
        con.execute("DELETE FROM library_meta WHERE key = 'schema_version'")
        con.execute("INSERT INTO library_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return found
