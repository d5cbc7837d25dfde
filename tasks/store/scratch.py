"""Working tables too big to hold in memory: a DuckDB database file of one run's own (a bulk
import's: its citation ids in input order, match keys, scores and dedupe), appended a batch at
a time and read back a part at a time, under a memory limit past which DuckDB spills to disk.

It is not the library: nothing else reads it, and it is deleted when the run ends (a resumed
import makes it again from the library's stored batches)."""

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import duckdb
import polars as pl
import pyarrow as pa

from tasks.store.names import sql_string

# What DuckDB may hold of the working tables before it writes them out; with one thread (each
# thread keeps buffers of its own). Large enough for a batch's joins, small beside the 1M-citation
# import it bounds (no slower than a limit several times larger).
MEMORY_LIMIT = "300MB"
THREADS = 1


class Scratch:
    """A fresh working database in a temporary folder under `where` (default: the system's),
    named `prefix`..., removed on close."""

    def __init__(self, where: str | Path | None = None, prefix: str = ".citeaudit-spill-") -> None:
        if where is not None:
            Path(where).mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
        self.path = self.folder / "work.duckdb"
        try:
            self.con = duckdb.connect(
                str(self.path),
                config={
                    "memory_limit": MEMORY_LIMIT,
                    "threads": THREADS,
                    "temp_directory": str(self.folder / "tmp"),
                    "preserve_insertion_order": True,
                },
            )
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def has(self, table: str) -> bool:
        found = self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [table]
        ).fetchone()
        return bool(found and found[0])

    def append(self, table: str, frame: pl.DataFrame) -> None:
        """`frame`'s rows at the end of `table`, made with `frame`'s columns if new (an empty
        frame makes an empty table of its schema)."""
        self.con.register("_appended", frame.to_arrow())
        try:
            if self.has(table):
                self.con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM _appended')
            else:
                self.con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM _appended')
        finally:
            self.con.unregister("_appended")

    def frame(self, query: str, params: list[object] | None = None) -> pl.DataFrame:
        return self.con.execute(query, params or []).pl()

    def parts(
        self, query: str, rows: int, params: list[object] | None = None
    ) -> Iterator[pl.DataFrame]:
        """The query's rows, `rows` at a time (about: DuckDB's vectors round it), on a cursor of
        its own: the working tables may be written between two parts."""
        with self.con.cursor() as cursor:
            reader = cursor.execute(query, params or []).to_arrow_reader(rows)
            for batch in reader:
                if batch.num_rows:
                    yield pl.DataFrame(pa.Table.from_batches([batch]))

    def parquet(self, query: str, name: str) -> Path:
        """The query's rows as the Parquet file `name`.parquet in the working folder, for
        another database to read itself (a library save: tasks/store/core.Rows)."""
        path = self.folder / f"{name}.parquet"
        self.con.execute(f"COPY ({query}) TO {sql_string(str(path))} (FORMAT parquet)")
        return path

    def count(self, table: str) -> int:
        found = self.con.execute(f'SELECT count(*) FROM "{table}"').fetchone()
        return int(found[0]) if found else 0
