"""A snapshot's index (`index.duckdb`) and the two questions lookups ask of it.

Built once per build from the Parquet parts (tasks/snapshots/store.py), its tables looked up
through ART indexes (a key asked costs a probe, not a scan):

| table    | key   | holds                                                                |
|----------|-------|----------------------------------------------------------------------|
| records  | rid   | the records (a later part's replaces one of the same `id`);    |
|          |       | `container_full` from the `parent`'s title; `title_key`, `words`:  |
|          |       | its normalised title and that title's length in words              |
| ids      | key   | (`kind:value`, rid): `doi:10.1/x`, `arxiv:2404.05961`, `pmid:1`,   |
|          |       | `id:conf/x/Y`                                                      |
| postings | term  | each title word (tasks/textnorm's normalised title, stopwords      |
|          |       | aside): how many titles hold it (`n`) and which (`rids`)           |

A title search takes the rarest few words of each title asked (a typo in one still leaves the
others), the records holding the most of them (of those, the ones whose titles are about as
long first), and ranks those by title similarity (tasks/match/titles.py). A few keys are asked
as an IN list (index probes); many, as a join (one scan of the table for the whole chunk).

DuckDB's FTS extension (its PyPI wheel `duckdb-extension-fts` loads offline here) is not used:
`match_bm25` scores every row for each query. On 1M synthetic titles, on this 2-core machine
shared with other jobs, it took 146 ms a query at the median (252 ms p95), this index 24 ms.
"""

import threading
from collections.abc import Sequence
from datetime import date
from itertools import chain
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from rapidfuzz.fuzz import ratio

from tasks.match.titles import title_similarity
from tasks.snapshots.schema import FORMAT_VERSION, Table
from tasks.snapshots.store import TITLE_KEY, Manifest, current
from tasks.textnorm import STOPWORDS, normalise_title

RARE_WORDS = 4  # of each title asked: the rarest words known to the index
POOL = 20  # records per title asked ranked by similarity
IN_LIST = 200  # keys asked as an IN list (index probes); more, by a join
KINDS = {"id": "id", "doi": "doi", "arxiv": "arxiv_id", "pmid": "pmid"}
POSTINGS_SLICE = 1_000_000  # titles' worth of posting lists aggregated at once
BUILD_MEMORY = "1GB"  # DuckDB's share of a build's memory; the rest spills to the staging folder


def build_index(folder: Path, table: Table) -> tuple[int, date | None]:
    """Write `folder`/index.duckdb from `folder`/parts; (records, the newest dated value)."""
    target = folder / "index.duckdb"
    target.unlink(missing_ok=True)
    parts = str(folder / "parts" / "[0-9]*[0-9]" / "*.parquet")
    names = table.schema.names
    columns = ", ".join(f'"{name}"' for name in names)
    with duckdb.connect(str(target)) as con:
        con.execute(f"SET memory_limit = '{BUILD_MEMORY}'")
        con.execute(f"SET temp_directory = '{folder / 'spill'}'")
        con.execute("SET preserve_insertion_order = false")
        # A record of a later part replaces one of the same id before it: the newest part of
        # each id found on (id, file) alone, so the wide rows are never sorted.
        source = f"read_parquet('{parts}', filename = true)"
        newest = f"SELECT id, max(filename) AS filename FROM {source} GROUP BY id"
        one_part = len(list((folder / "parts").glob("[0-9]*[0-9]/*.parquet"))) == 1
        # A view, not a copy: the parts are read as the records are written (a copy of 7M dblp
        # records spilled gigabytes).
        con.execute(
            f"""CREATE TEMP VIEW latest AS SELECT {columns}, {TITLE_KEY} FROM {source}"""
            + ("" if one_part else f" SEMI JOIN ({newest}) USING (id, filename)")
        )
        full = "coalesce(w.container_full, p.title)" if "parent" in names else "NULL"
        parent = (
            "LEFT JOIN (SELECT id, title FROM latest) p ON p.id = w.parent"
            if "parent" in names
            else ""
        )
        select = ", ".join(
            f"{full} AS container_full" if name == "container_full" else f'w."{name}"'
            for name in names
        )
        con.execute(
            f"""CREATE TABLE records AS
            SELECT (row_number() OVER ())::UINTEGER AS rid, {select}, w.{TITLE_KEY},
                len(string_split(coalesce(w.{TITLE_KEY}, ''), ' '))::UTINYINT AS words
            FROM latest w {parent}"""
        )
        con.execute("CREATE UNIQUE INDEX records_rid ON records (rid)")
        keys = " UNION ALL ".join(
            f"SELECT '{kind}:' || \"{column}\" AS key, rid FROM records "
            f'WHERE "{column}" IS NOT NULL'
            for kind, column in KINDS.items()
            if column in table.identifiers
        )
        con.execute(f"CREATE TABLE ids AS {keys}")
        con.execute("CREATE INDEX ids_key ON ids (key)")
        if table.titled:
            stop = ", ".join(f"'{w}'" for w in sorted(STOPWORDS))
            # In slices of the vocabulary: a list being aggregated stays in memory (it does not
            # spill), and 7M titles' lists at once passed the build's memory limit.
            (count,) = con.execute("SELECT count(*) FROM records").fetchone() or (0,)
            slices = max(1, -(-int(count) // POSTINGS_SLICE))
            con.execute("CREATE TABLE postings (term VARCHAR, n UINTEGER, rids UINTEGER[])")
            for number in range(slices):
                con.execute(
                    f"""INSERT INTO postings
                    SELECT term, count(*)::UINTEGER, list(rid) FROM (
                        SELECT DISTINCT term, rid FROM (
                            SELECT unnest(string_split({TITLE_KEY}, ' ')) AS term, rid
                            FROM records WHERE {TITLE_KEY} <> '')
                        WHERE term NOT IN ({stop}) AND hash(term) % {slices} = {number})
                    GROUP BY term"""
                )
            con.execute("CREATE UNIQUE INDEX postings_term ON postings (term)")
        row = con.execute(f'SELECT count(*), max("{table.dated}") FROM records').fetchone()
        con.execute("CHECKPOINT")
    assert row is not None
    return int(row[0]), row[1]


class Snapshot:
    """One built snapshot, opened read-only: `by_ids` and `by_title` answer from its index.

    Records come back as dicts of the table's columns (tasks/snapshots/schema.py). `label` is
    how rows name it (`dblp@2026-11-01`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.manifest = Manifest.read(folder)
        self.name = self.manifest.name
        self.date = date.fromisoformat(self.manifest.date) if self.manifest.date else None
        self.label = f"{self.name}@{self.manifest.date}"
        # One thread a query: a lookup asks a few index probes, which a second thread slows
        # (half the latency on 2 cores); lookups run side by side in the flow's threads.
        self._con = duckdb.connect(
            str(folder / "index.duckdb"), read_only=True, config={"threads": 1}
        )
        self._local = threading.local()
        self._lengths: np.ndarray | None = None

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def by_ids(self, ids: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """The records holding each (kind, value) asked, kind one of id, doi, arxiv, pmid,
        values normalised as tasks/identifiers normalises them; one query for them all."""
        found: dict[tuple[str, str], list[dict[str, Any]]] = {(k, v): [] for k, v in ids}
        keys = sorted({f"{kind}:{value}" for kind, value in ids if kind in KINDS})
        if not keys:
            return found
        pairs = self._where("SELECT key, rid FROM ids", "key", keys).to_pylist()
        records = self._records({pair["rid"] for pair in pairs})
        for pair in sorted(pairs, key=lambda p: (p["key"], p["rid"])):
            kind, _, value = pair["key"].partition(":")
            found.setdefault((kind, value), []).append(dict(records[pair["rid"]]))
        return found

    def by_title(
        self, titles: Sequence[str], limit: int = 5, min_score: float = 0.5
    ) -> list[list[dict[str, Any]]]:
        """For each title, up to `limit` records whose titles are most like it (title similarity
        at least `min_score`), best first, each with its `score` (0-1). Four queries for them
        all, whatever their number."""
        asked = [normalise_title(title).split() for title in titles]
        words = [[w for w in dict.fromkeys(title) if w not in STOPWORDS] for title in asked]
        rows = self._where("SELECT term, n FROM postings", "term", sorted({*chain(*words)}))
        counts = dict(zip(rows["term"].to_pylist(), rows["n"].to_pylist(), strict=True))
        rare = [sorted((w for w in t if w in counts), key=lambda w: (counts[w], w)) for t in words]
        rare = [t[:RARE_WORDS] for t in rare]
        rows = self._where("SELECT term, rids FROM postings", "term", sorted({*chain(*rare)}))
        holding = {
            term: rids.values.to_numpy()
            for term, rids in zip(rows["term"].to_pylist(), rows["rids"], strict=True)
        }
        pools = [
            self._pool([holding[w] for w in t], len(a)) for t, a in zip(rare, asked, strict=True)
        ]
        rows = self._where("SELECT rid, title FROM records", "rid", sorted({*chain(*pools)}))
        named = dict(zip(rows["rid"].to_pylist(), rows["title"].to_pylist(), strict=True))
        scored = []
        for title, pool in zip(titles, pools, strict=True):
            # A quick likeness first: the decision table's similarity only for the likeliest.
            key = normalise_title(title)
            likely = sorted(pool, key=lambda r: -ratio(key, normalise_title(named[r] or "")))
            scores = [(title_similarity(title, named[r] or ""), r) for r in likely[: limit + 3]]
            scores.sort(reverse=True)
            scored.append([(score, rid) for score, rid in scores[:limit] if score >= min_score])
        records = self._records({rid for found in scored for _, rid in found})
        return [[{**records[rid], "score": score} for score, rid in found] for found in scored]

    def _pool(self, holding: list[np.ndarray], length: int) -> list[int]:
        """The records holding most of a title's rare words; of those, the ones whose titles
        are about as long as it first."""
        if not holding:
            return []
        rids, shared = np.unique(np.concatenate(holding), return_counts=True)
        gap = np.abs(self._words()[rids].astype(np.int16) - length)
        return [int(rid) for rid in rids[np.lexsort((gap, -shared))[:POOL]]]

    def _words(self) -> np.ndarray:
        """Each record's title length in words, by rid (read once: a byte per record)."""
        if self._lengths is None:
            rows = self._cursor().execute("SELECT rid, words FROM records").fetchnumpy()
            lengths = np.zeros(int(rows["rid"].max(initial=0)) + 1, np.uint8)
            lengths[rows["rid"]] = rows["words"]
            self._lengths = lengths
        return self._lengths

    def _records(self, rids: set[int]) -> dict[int, dict[str, Any]]:
        rows = self._where(
            f"SELECT * EXCLUDE (words, {TITLE_KEY}) FROM records", "rid", sorted(rids)
        )
        return {record.pop("rid"): record for record in rows.to_pylist()}

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor: a connection is not for two threads at once."""
        cursor: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = self._con.cursor()
        return cursor

    def _where(self, select: str, column: str, keys: Sequence[str | int]) -> pa.Table:
        """`select`'s rows whose `column` is one of `keys`: probes of the column's index for a
        few keys (as literals: a parameter's type hides the index from the planner), one join
        for many."""
        cursor = self._cursor()
        if not keys:
            return cursor.execute(f"{select} LIMIT 0").to_arrow_table()
        if len(keys) <= IN_LIST:
            listed = ", ".join(
                str(int(k)) if isinstance(k, int) else "'" + k.replace("'", "''") + "'"
                for k in keys
            )
            return cursor.execute(f"{select} WHERE {column} IN ({listed})").to_arrow_table()
        cursor.register("asked", pa.table({"k": keys}))
        try:
            return cursor.execute(
                f"{select} WHERE {column} IN (SELECT k FROM asked)"
            ).to_arrow_table()
        finally:
            cursor.unregister("asked")


def open_snapshot(root: Path, name: str) -> Snapshot | None:
    """The snapshot `name` under `root`, or None if none is built (or built by another format)."""
    folder = current(root, name)
    if folder is None or Manifest.read(folder).format_version != FORMAT_VERSION:
        return None
    return Snapshot(folder)
