"""A snapshot's index (`index.duckdb`) and the two questions lookups ask of it.

Built once per build from the Parquet parts (tasks/snapshots/store.py):

| table   | order | holds                                                | answers       |
|---------|-------|------------------------------------------------------|---------------|
| records | rid   | the records, one per `id` (a later part's replaces an | what is found |
|         |       | earlier one); `container_full` from the `parent`'s title |            |
| ids     | key   | (`kind:value`, rid): `doi:10.1/x`, `arxiv:2404.05961`, | `by_ids`      |
|         |       | `pmid:1`, `id:conf/x/Y`                              |               |
| terms   | term  | (word, rid) for each word of a normalised title      | `by_title`    |
| df      | term  | (word, how many titles hold it)                      | rare words    |

A title search takes the rarest few words of each title asked (a typo in one still leaves the
others), the records holding the most of them, and ranks those by title similarity
(tasks/match/titles.py). Ordered tables let DuckDB's zone maps skip to the few row groups a
word or rid lives in, so one search reads kilobytes, not the index.

DuckDB's FTS extension (its PyPI wheel loads offline) is not used: `match_bm25` scores every row
of the table for each query, hundreds of milliseconds at dblp's 7M titles, against a few here.
"""

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from tasks.match.titles import title_similarity
from tasks.snapshots.schema import FORMAT_VERSION, Table
from tasks.snapshots.store import TITLE_KEY, Manifest, current
from tasks.textnorm import STOPWORDS, normalise_title

RARE_WORDS = 4  # of each title asked: the rarest words known to the index
POOL = 40  # records per title asked ranked by similarity
KINDS = {"id": "id", "doi": "doi", "arxiv": "arxiv_id", "pmid": "pmid"}


def build_index(folder: Path, table: Table) -> tuple[int, date | None]:
    """Write `folder`/index.duckdb from `folder`/parts; (records, the newest dated value)."""
    target = folder / "index.duckdb"
    target.unlink(missing_ok=True)
    parts = str(folder / "parts" / "[0-9]*[0-9]" / "*.parquet")
    columns = ", ".join(f'"{name}"' for name in table.schema.names)
    with duckdb.connect(str(target)) as con:
        con.execute("SET preserve_insertion_order = false")
        con.execute(
            f"""CREATE TEMP TABLE latest AS
            SELECT {columns}, {TITLE_KEY} FROM read_parquet('{parts}', filename = true,
                file_row_number = true)
            QUALIFY row_number() OVER (PARTITION BY id ORDER BY filename DESC,
                file_row_number DESC) = 1"""
        )
        full = "coalesce(w.container_full, p.title)" if "parent" in table.schema.names else "NULL"
        select = ", ".join(
            full + " AS container_full" if name == "container_full" else f'w."{name}"'
            for name in table.schema.names
        )
        parent = "LEFT JOIN latest p ON p.id = w.parent" if "parent" in table.schema.names else ""
        con.execute(
            f"""CREATE TABLE records AS
            SELECT (row_number() OVER (ORDER BY w.id))::UINTEGER AS rid, {select},
                w.{TITLE_KEY}
            FROM latest w {parent} ORDER BY rid"""
        )
        keys = " UNION ALL ".join(
            f"SELECT '{kind}:' || \"{column}\" AS key, rid FROM records "
            f'WHERE "{column}" IS NOT NULL'
            for kind, column in KINDS.items()
            if column in table.identifiers
        )
        con.execute(f"CREATE TABLE ids AS SELECT * FROM ({keys}) ORDER BY key")
        if table.titled:
            stop = ", ".join(f"'{w}'" for w in sorted(STOPWORDS))
            con.execute(
                f"""CREATE TABLE terms AS
                SELECT DISTINCT term, rid FROM (
                    SELECT unnest(string_split({TITLE_KEY}, ' ')) AS term, rid FROM records
                    WHERE {TITLE_KEY} <> '')
                WHERE term NOT IN ({stop}) ORDER BY term, rid"""
            )
            con.execute(
                "CREATE TABLE df AS SELECT term, count(*)::UINTEGER AS n FROM terms "
                "GROUP BY term ORDER BY term"
            )
        con.execute(f"ALTER TABLE records DROP COLUMN {TITLE_KEY}")
        row = con.execute(f'SELECT count(*), max("{table.dated}") FROM records').fetchone()
        con.execute("CHECKPOINT")
    assert row is not None
    return int(row[0]), row[1]


class Snapshot:
    """One built snapshot, opened read-only: `by_ids` and `by_title` answer from its index.

    Records come back as dicts of the table's columns (tasks/snapshots/schema.py). `label` is
    how rows name it (`dblp@2026-11-01`)."""

    def __init__(self, folder: Path) -> None:
        self.manifest = Manifest.read(folder)
        self.name = self.manifest.name
        self.date = date.fromisoformat(self.manifest.date) if self.manifest.date else None
        self.label = f"{self.name}@{self.manifest.date}"
        self._con = duckdb.connect(str(folder / "index.duckdb"), read_only=True)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def by_ids(self, ids: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """The records holding each (kind, value) asked, kind one of id, doi, arxiv, pmid,
        values normalised as tasks/identifiers normalises them; one query for them all."""
        keys = sorted({f"{kind}:{value}" for kind, value in ids if kind in KINDS})
        found: dict[tuple[str, str], list[dict[str, Any]]] = {tuple(i): [] for i in ids}  # type: ignore[misc]
        if not keys:
            return found
        asked = pa.table({"key": pa.array(keys, pa.string())})
        self._con.register("asked", asked)
        try:
            rows = self._con.execute(
                """SELECT i.key, r.* EXCLUDE (rid) FROM asked a JOIN ids i USING (key)
                JOIN records r USING (rid) ORDER BY i.key, r.rid"""
            ).to_arrow_table()
        finally:
            self._con.unregister("asked")
        for record in rows.to_pylist():
            kind, _, value = record.pop("key").partition(":")
            found.setdefault((kind, value), []).append(record)
        return found

    def by_title(
        self, titles: Sequence[str], limit: int = 5, min_score: float = 0.5
    ) -> list[list[dict[str, Any]]]:
        """For each title, up to `limit` records whose titles are most like it (title similarity
        at least `min_score`), best first, each with its `score` (0-1); one query for them all."""
        asked = [
            (number, term)
            for number, title in enumerate(titles)
            for term in dict.fromkeys(normalise_title(title).split())
            if term not in STOPWORDS
        ]
        results: list[list[dict[str, Any]]] = [[] for _ in titles]
        if not asked:
            return results
        query = pa.table(
            {
                "qid": pa.array([q for q, _ in asked], pa.uint32()),
                "term": pa.array([t for _, t in asked], pa.string()),
            }
        )
        self._con.register("asked", query)
        try:
            rows = self._con.execute(
                f"""WITH rare AS (
                    SELECT a.qid, a.term FROM asked a JOIN df USING (term)
                    QUALIFY row_number() OVER (PARTITION BY a.qid ORDER BY df.n, a.term)
                        <= {RARE_WORDS}),
                hits AS (
                    SELECT r.qid, t.rid, count(*) AS shared FROM rare r JOIN terms t USING (term)
                    GROUP BY r.qid, t.rid
                    QUALIFY row_number() OVER (PARTITION BY r.qid ORDER BY count(*) DESC, t.rid)
                        <= {POOL})
                SELECT h.qid, r.* EXCLUDE (rid) FROM hits h JOIN records r USING (rid)"""
            ).to_arrow_table()
        finally:
            self._con.unregister("asked")
        for record in rows.to_pylist():
            qid = record.pop("qid")
            record["score"] = title_similarity(titles[qid], record["title"] or "")
            results[qid].append(record)
        for number, candidates in enumerate(results):
            candidates.sort(key=lambda r: -r["score"])
            results[number] = [r for r in candidates[:limit] if r["score"] >= min_score]
        return results


def open_snapshot(root: Path, name: str) -> Snapshot | None:
    """The snapshot `name` under `root`, or None if none is built (or built by another format)."""
    folder = current(root, name)
    if folder is None or Manifest.read(folder).format_version != FORMAT_VERSION:
        return None
    return Snapshot(folder)
