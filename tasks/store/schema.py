"""The library's own tables, declared once, with the schema version a file is at and the steps
that bring an older file up to date.

The per-job frame tables (citations, input_errors, claims, dedupe_records) and the shared works
tables take their columns from the frames' declared schemas (tasks/frames.py, tasks/dedupe/); the
tables below are the store's own bookkeeping."""

import duckdb

SCHEMA_VERSION = 2

DDL = """
CREATE TABLE IF NOT EXISTS library_meta (
    key VARCHAR PRIMARY KEY,
    value VARCHAR
);
CREATE TABLE IF NOT EXISTS jobs (
    job_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    inputs VARCHAR,
    n_citations BIGINT,
    n_input_errors BIGINT,
    status_counts VARCHAR
);
CREATE TABLE IF NOT EXISTS bulk_progress (
    job_id VARCHAR,
    batch BIGINT,
    fingerprint VARCHAR,
    n_citations BIGINT,
    done_at TIMESTAMPTZ,
    PRIMARY KEY (job_id, batch, fingerprint)
);
"""

# A citation's validation lives on its row of `citations` (one row per input citation, replaced
# with its job); this view shows just the verdicts, for SQL users of the library.
VALIDATIONS_VIEW = """CREATE OR REPLACE VIEW validations AS SELECT
    job_id, citation_id, status, reason, registry, matched_id, match_score, agreement_title,
    agreement_authors, agreement_year, agreement_container, agreement_pages, retracted,
    corrected, expression_of_concern, attempts, error, checked_at
    FROM citations"""


def version_of(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version of an open library: 0 new, 1 before versions were recorded."""
    tables = {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    if "library_meta" in tables:
        row = con.execute("SELECT value FROM library_meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0
    return 1 if "jobs" in tables else 0


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Bring the library to SCHEMA_VERSION in one transaction; the version it was at.
    Version 1 (no recorded version, `bulk_progress` made on first use) needs only the tables
    it lacks and the version stamp."""
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
        con.execute(DDL)
        con.execute(
            "INSERT OR REPLACE INTO library_meta VALUES ('schema_version', ?)",
            [str(SCHEMA_VERSION)],
        )
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return found
