"""Everything citeaudit writes: the job folders (jobfolder.py) and the library (library.py: a
DuckDB file, or a DuckLake with a PostgreSQL catalog in lake.py; its lock in lock.py, its
declared schema and migrations in schema.py, bulk-import progress in bulk.py, scheduled-audit
updates in recheck.py).

A library's name is resolved in one place (`names.library_at`: --db, else $CITEAUDIT_DB) and a
library opened in one (`library.open_library`); an entry point resolves the name once and passes
the `LibraryPath` down. names.py, which also checks a job id, imports the standard library
alone: a command checks --db and --job before DuckDB, Polars and pyarrow load. So this package
re-exports nothing: each name is imported from its module."""
