"""A snapshot's index: what lookups read, built once per build from the Parquet parts
(tasks/snapshots/store.py), and the two questions lookups ask of it.

| file                | holds                                                              |
|---------------------|--------------------------------------------------------------------|
| `records.arrow`     | the records (a later part's replaces one of the same `id`), with   |
|                     | `container_full` from the `parent`'s title and `title_key` (the    |
|                     | normalised title), in blocks of BLOCK: each a JSON array of their  |
|                     | rows (the columns in order), zstd-compressed, with its size; a     |
|                     | record's `rid` is its position                                     |
| `id_keys.arrow`     | each identifier as `kind:value` (`doi:10.1/x`, `arxiv:2404.05961`, |
|                     | `pmid:1`, `id:conf/x/Y`), sorted, with how many records hold it    |
|                     | (`n`) and where their rids `start` in `id_rids.u32`                |
| `id_rids.u32`       | each identifier's rids, ascending, one after another               |
| `title_terms.arrow` | each title word (tasks/textnorm's normalised title, stopwords     |
|                     | aside), sorted, with how many titles hold it (`n`) and where their |
|                     | rids `start` in `title_rids.u32`                                   |
| `title_rids.u32`    | each word's rids, ascending, one word after another                |
| `title_words.u8`    | each record's title length in words, by rid                        |
| `doi_prefixes.txt`  | the DOI prefixes its records hold (`10.1145`), one a line, sorted: |
|                     | a complete snapshot's absence rule asks whether it knows a prefix  |

The record store and the title index are memory-mapped files, not DuckDB tables: a title search
asks for words and records by the dozen, and DuckDB fetches a row through its ART index by
decompressing a vector of each column (5 ms of CPU for one record of 200,000, 15 ms for eight). A
word's rids are a slice of a file; a record costs one small zstd frame and a JSON decode of its
block (~0.07 ms). Not Arrow IPC's own compression: it compresses each column's buffers apart,
and a record of 21 columns cost ~1 ms to read (~0.3 ms in blocks of 128, at a fifth more
disk), its conversion to Python alone 0.1 ms. Identifiers are kept as the title words are
(binary search of a memory-mapped sorted file), not in an ART index: DuckDB builds one in
memory whole (2 keys a Crossref work: ~140 MB at 1M works, growing with the dump), where the
sort of the keys spills past BUILD_MEMORY to disk.

Everything a build holds is bounded whatever the dump's size: DuckDB's share by BUILD_MEMORY
(the ids' grouping, the sorts, spilled to the staging folder beyond it), the pass's rows by
PASS_FILES, the sorted pairs by their batches.

A title search looks at the CHECKED rarest words of the title asked that the index knows (a
misspelt word is not known, and is left out), never at a long list whole:

1. candidates: the records holding any of its RAREST rarest words while their lists are short
   (BUDGET together); else, the records holding two of them (one may be a word of the citer's
   own, or a typo that spells another word), found by binary search of the shorter list in the
   longer; of more than CAP (thousands of titles sharing those words), those holding the most
   of the three, then the nearest in length;
2. each scored by how many of the words it holds (each list searched for the candidates) and,
   of those holding as many, the ones whose titles are about as long first: the POOL best;
3. those ranked by title similarity (tasks/match/titles.py), equals by the quick ratio.

DuckDB's FTS extension (its PyPI wheel `duckdb-extension-fts` loads offline here) is not used:
`match_bm25` scores every row for each query (146 ms a query at the median on 1M titles).
"""

import bisect
import contextlib
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import chain, combinations, pairwise
from pathlib import Path
from typing import Any, TypedDict

import duckdb
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from rapidfuzz.fuzz import ratio

from tasks.match.titles import title_similarity
from tasks.snapshots.schema import DELETED, FORMAT_VERSION, TABLES, Table
from tasks.snapshots.store import TITLE_KEY, Manifest, current, damage
from tasks.store.names import sql_string
from tasks.textnorm import STOPWORDS, normalise_title

CHECKED = 8  # of each title asked: the rarest words known to the index that candidates hold
RAREST = 3  # of those, the ones whose records are the candidates
BUDGET = 20_000  # the rarest words' lists together up to this: every record on them a candidate
CAP = 2_000  # candidates at most: of more, those holding most rare words, then nearest in length
LONG = 10_000  # of a longer list, only the titles nearest in length are looked for in another
POOL = 20  # candidates per title asked ranked by similarity
KINDS = {"id": "id", "doi": "doi", "arxiv": "arxiv_id", "pmid": "pmid"}
BLOCK = 16  # records per compressed block: what fetching one record decompresses
BLOCKS_PER_BATCH = 4_096  # blocks per batch of records.arrow
PASS_FILES = 32  # parts a query of the records pass reads (its result is held whole)
# DuckDB's share of a build's memory; the rest spills to the staging folder. Low enough that a
# 1M-work build already reaches it (its sorts held ~0.3 GB): with 1 GB, a larger dump climbed
# to the cap (the peak grew 1.5x from 1M to 2M works).
BUILD_MEMORY = "256MB"
SORTED_BATCH = 1 << 17  # (term, rid) pairs a batch of a sorted stream (2^20: ~0.1 GB more held)
_CODEC = pa.Codec("zstd", compression_level=3)
FILES = (
    "records.arrow",
    "id_keys.arrow",
    "id_rids.u32",
    "title_terms.arrow",
    "title_rids.u32",
    "title_words.u8",
    "doi_prefixes.txt",
)
KEYS = "keys.parquet"  # a build's: each record's rid, identifiers and title key


@dataclass(frozen=True)
class Extent:
    """What a build's index found its records to span."""

    records: int
    newest: date | None  # the newest value of the table's dated column: the snapshot's date
    highest_pmid: int | None  # of a table with PMIDs


def build_index(folder: Path, table: Table) -> Extent:
    """Write `folder`'s index files from `folder`/parts; what the records span."""
    for name in (*FILES, "build.duckdb", "build.duckdb.wal", KEYS):
        (folder / name).unlink(missing_ok=True)
    names = table.schema.names
    columns = ", ".join(f'"{name}"' for name in names)
    # The records are gathered in a database of the build's own, removed once the index is
    # written: the index keeps only the identifiers.
    with duckdb.connect(str(folder / "build.duckdb")) as con:
        con.execute(f"SET memory_limit = '{BUILD_MEMORY}'")
        con.execute(f"SET temp_directory = {sql_string(str(folder / 'spill'))}")
        con.execute("SET preserve_insertion_order = false")
        con.execute("SET enable_progress_bar = false")
        # DuckDB keeps what it read of each file in its buffer pool: the records pass rose by
        # ~7 MB a query, to the whole of BUILD_MEMORY at 10M works (0.48 -> 0.80 GB RSS).
        con.execute("SET enable_external_file_cache = false")
        # A record of a later part replaces one of the same id before it: the newest part of
        # each id found on (id, file) alone, so the wide rows are never sorted.
        files = sorted(str(p) for p in (folder / "parts").glob("[0-9]*[0-9]/*.parquet"))

        def source(chosen: Sequence[str]) -> str:
            listed = ", ".join(sql_string(f) for f in chosen)
            return f"read_parquet([{listed}], filename = true)"

        if len(files) > 1:
            # Only the rows a later part replaces, found on (id, file) alone: the ids seen more
            # than once (none, in a dump that repeats no id) against their newest part.
            _repeated_ids(con, source(files))
            con.execute(
                f"""CREATE TEMP TABLE newest AS SELECT id, max(filename) AS filename
                FROM {source(files)} SEMI JOIN repeated USING (id) GROUP BY id"""
            )
            con.execute(
                f"""CREATE TEMP TABLE replaced AS SELECT id, filename FROM {source(files)}
                SEMI JOIN newest USING (id) ANTI JOIN newest USING (id, filename)"""
            )

        def latest(chosen: Sequence[str]) -> str:
            """The records of `chosen` parts that no later part replaces or deletes."""
            kept = f"SELECT {columns}, {TITLE_KEY} FROM {source(chosen)}"
            replaced = " ANTI JOIN replaced USING (id, filename)" if len(files) > 1 else ""
            live = f"\"type\" IS DISTINCT FROM '{DELETED}'" if "type" in names else "true"
            return f"({kept}{replaced} WHERE {live})"

        full = "coalesce(w.container_full, p.title)" if "parent" in names else "NULL"
        parent = ""
        if "parent" in names:
            # Only the records some record names as its parent (dblp's proceedings): a hash
            # table of all 7M titles spilled.
            con.execute(
                f"CREATE TEMP TABLE parents AS SELECT id, title FROM {latest(files)} SEMI JOIN"
                f" (SELECT parent AS id FROM {latest(files)} WHERE parent IS NOT NULL) USING (id)"
            )
            parent = "LEFT JOIN parents p ON p.id = w.parent"
        values = ", ".join(
            full if name == "container_full" else f'w."{name}"' for name in [*names, TITLE_KEY]
        )
        kept = [column for column in KINDS.values() if column in table.identifiers]
        # One pass over the records, PASS_FILES parts at a time (DuckDB hands a query's result
        # to Python whole: of all the records, 1.6 GB at 2M works): each as its row of
        # records.arrow (a JSON array, a comma after it), beside the few columns the index is
        # made of; a record's rid is its place in the pass. (Gathering them in a table first and
        # reading it back cost two fifths of a build's index.)
        select = f"""SELECT json_array({values})::VARCHAR || ',' AS row,
                least(len(string_split(coalesce(w.{TITLE_KEY}, ''), ' ')), 255)::UTINYINT,
                w."{table.dated}", {", ".join(f'w."{c}"' for c in kept)}, w.{TITLE_KEY}"""
        rows = (
            batch
            for at in range(0, len(files), PASS_FILES)
            for batch in con.execute(
                f"{select} FROM {latest(files[at : at + PASS_FILES])} w {parent}"
            ).to_arrow_reader(BLOCK * BLOCKS_PER_BATCH)
        )
        count, newest = _write_records(rows, folder, [*kept, TITLE_KEY], table.titled)
        keys_file = sql_string(str(folder / KEYS))
        con.execute(f"CREATE TEMP VIEW records AS FROM read_parquet({keys_file})")
        keys = " UNION ALL ".join(
            f"SELECT '{kind}:' || \"{column}\" AS key, rid FROM records "
            f'WHERE "{column}" IS NOT NULL'
            for kind, column in KINDS.items()
            if column in kept
        )
        _write_postings(con, f"SELECT key, rid FROM ({keys})", folder, "id_keys", "id_rids")
        highest = _spans(con, folder, kept)
        if table.titled:
            stop = ", ".join(f"'{w}'" for w in sorted(STOPWORDS))
            terms = f"""SELECT term, rid FROM (
                SELECT unnest(list_distinct(string_split({TITLE_KEY}, ' '))) AS term, rid
                FROM records WHERE {TITLE_KEY} <> '')
            WHERE term NOT IN ({stop})"""
            _write_postings(con, terms, folder, "title_terms", "title_rids")
    for name in ("build.duckdb", "build.duckdb.wal", KEYS):
        (folder / name).unlink(missing_ok=True)
    return Extent(count, newest, highest)


def _spans(con: duckdb.DuckDBPyConnection, folder: Path, kept: list[str]) -> int | None:
    """doi_prefixes.txt from the records' DOIs; the highest PMID they hold."""
    if "doi" in kept:
        prefixes = con.execute(
            "SELECT DISTINCT split_part(doi, '/', 1) FROM records WHERE doi IS NOT NULL ORDER BY 1"
        ).fetchall()
        (folder / "doi_prefixes.txt").write_text("".join(f"{p}\n" for (p,) in prefixes))
    if "pmid" not in kept:
        return None
    [(highest,)] = con.execute("SELECT max(TRY_CAST(pmid AS UBIGINT)) FROM records").fetchall()
    return int(highest) if highest is not None else None


def _repeated_ids(con: duckdb.DuckDBPyConnection, records: str) -> None:
    """Table `repeated`: the ids `records` hold more than once, found in the ids sorted (a sort
    spills past BUILD_MEMORY; DuckDB's GROUP BY over every id did not: 0.82 GB at 10M works
    under a 256 MB limit)."""
    found: list[pa.Array] = []
    last = None  # the previous batch's last id
    for batch in con.execute(f"SELECT id FROM {records} ORDER BY id").to_arrow_reader(SORTED_BATCH):
        ids = batch.column(0).cast(pa.string())
        if not len(ids):
            continue
        before = pa.concat_arrays([pa.array([last], pa.string()), ids[:-1]])
        found.append(pc.filter(ids, pc.fill_null(pc.equal(ids, before), False)))
        last = ids[-1].as_py()
    con.register("seen", pa.table({"id": pa.concat_arrays([pa.array([], pa.string()), *found])}))
    con.execute("CREATE TEMP TABLE repeated AS SELECT DISTINCT id FROM seen")
    con.unregister("seen")


def _write_records(
    rows: Iterator[pa.RecordBatch], folder: Path, keyed: list[str], titled: bool
) -> tuple[int, date | None]:
    """records.arrow from the pass's rows, in the order they come: blocks of BLOCK rows, each
    a zstd-compressed JSON array of rows, BLOCKS_PER_BATCH blocks a batch; title_words.u8 (each
    title's length in words) if `titled`; the rows' rid and index columns to KEYS (a Parquet
    file: inserted in a DuckDB table they cost as much again). How many rows, the newest dated
    value."""
    schema = pa.schema([("block", pa.binary()), ("size", pa.int32())])
    held = pa.array([], pa.large_string())  # rows of a block not yet whole
    blocks: list[bytes] = []
    count = 0
    newest: date | None = None
    key_schema = pa.schema([("rid", pa.uint32()), *((name, pa.string()) for name in keyed)])
    with (
        pq.ParquetWriter(folder / KEYS, key_schema, compression="none") as keys,
        ipc.new_file(str(folder / "records.arrow"), schema) as out,
        open(folder / "title_words.u8", "wb") if titled else contextlib.nullcontext() as words,
    ):
        for batch in rows:
            if words is not None:
                words.write(batch.column(1).to_numpy().astype(np.uint8).tobytes())
            dated = pc.max(batch.column(2)).as_py()
            newest = dated if newest is None or (dated is not None and dated > newest) else newest
            rid = pa.array(np.arange(count, count + batch.num_rows, dtype=np.uint32))
            keyed_columns = [column.cast(pa.string()) for column in batch.columns[3:]]
            keys.write_batch(pa.record_batch([rid, *keyed_columns], schema=key_schema))
            count += batch.num_rows
            held = pa.concat_arrays([held, batch.column(0).cast(pa.large_string())])
            whole = len(held) // BLOCK * BLOCK
            blocks.extend(_blocks(held[:whole]))
            held = held[whole:]
            while len(blocks) >= BLOCKS_PER_BATCH:
                out.write_batch(_batch(blocks[:BLOCKS_PER_BATCH], schema))
                del blocks[:BLOCKS_PER_BATCH]
        blocks.extend(_blocks(held))
        if blocks:
            out.write_batch(_batch(blocks, schema))
    return count, newest


def _blocks(rows: pa.LargeStringArray) -> list[bytes]:
    """Rows (JSON arrays, each with a comma after it) as blocks of BLOCK: `[row,row,...]`."""
    if not len(rows):
        return []
    offsets = np.frombuffer(rows.buffers()[1], np.int64)[rows.offset : rows.offset + len(rows) + 1]
    data = memoryview(rows.buffers()[2])
    bounds = offsets[::BLOCK].tolist()
    if len(rows) % BLOCK:  # the last rows, fewer than a block
        bounds.append(int(offsets[-1]))
    # Each block without its last row's comma.
    return [b"".join((b"[", data[start : end - 1], b"]")) for start, end in pairwise(bounds)]


def _batch(blocks: list[bytes], schema: pa.Schema) -> pa.RecordBatch:
    """Blocks compressed, with their sizes."""
    compressed = [_CODEC.compress(block, asbytes=True) for block in blocks]
    sizes = [len(block) for block in blocks]
    return pa.record_batch([pa.array(compressed), pa.array(sizes, pa.int32())], schema=schema)


def _write_postings(
    con: duckdb.DuckDBPyConnection, pairs_query: str, folder: Path, terms_file: str, rids_file: str
) -> None:
    """`terms_file`.arrow and `rids_file`.u32 from `pairs_query`'s (term, rid) pairs: the
    pairs in order (DuckDB's sort, spilled past BUILD_MEMORY), streamed once (their runs give
    the terms and their counts)."""
    # In the order of the terms (DuckDB's and Python's: by code point), as lookups search them.
    pairs = con.execute(f"{pairs_query} ORDER BY 1, 2").to_arrow_reader(SORTED_BATCH)
    schema = pa.schema([("term", pa.string()), ("n", pa.uint32()), ("start", pa.int64())])
    start = 0  # where the next word's rids start
    last: tuple[str, int] | None = None  # the last word of a batch, its count so far: it may go on
    with (
        ipc.new_file(str(folder / f"{terms_file}.arrow"), schema) as out_terms,
        open(folder / f"{rids_file}.u32", "wb") as out_rids,
    ):
        for batch in pairs:
            out_rids.write(batch.column(1).to_numpy().astype("<u4").tobytes())
            runs = pc.run_end_encode(batch.column(0).cast(pa.string()))
            terms = runs.values.to_pylist()
            counts = np.diff(runs.run_ends.to_numpy(), prepend=0).tolist()
            if last is not None and terms and terms[0] == last[0]:
                counts[0] += last[1]
            elif last is not None:
                terms, counts = [last[0], *terms], [last[1], *counts]
            if not terms:
                continue
            last = (terms.pop(), counts.pop())
            start = _write_terms(out_terms, schema, terms, counts, start)
        if last is not None:
            _write_terms(out_terms, schema, [last[0]], [last[1]], start)


def _write_terms(
    out: ipc.RecordBatchFileWriter,
    schema: pa.Schema,
    terms: list[str],
    counts: list[int],
    start: int,
) -> int:
    """Write words with their counts and where their rids start; where the next word's start."""
    n = np.asarray(counts, np.int64)
    starts = start + np.cumsum(n) - n
    out.write_batch(
        pa.record_batch(
            [pa.array(terms), pa.array(n, pa.uint32()), pa.array(starts)], schema=schema
        )
    )
    return start + int(n.sum())


class _Terms:
    """A file of terms (title_terms.arrow, id_keys.arrow), memory-mapped: a term's (n, start),
    by binary search (none for `path` None)."""

    def __init__(self, path: Path | None) -> None:
        batches = ipc.open_file(pa.memory_map(str(path))).read_all().to_batches() if path else []
        self._batches = [b for b in batches if b.num_rows]
        self._firsts = [b.column(0)[0].as_py() for b in self._batches]

    def find(self, word: str) -> tuple[int, int] | None:
        at = bisect.bisect_right(self._firsts, word) - 1
        if at < 0:
            return None
        batch = self._batches[at]
        terms = batch.column(0)
        row = bisect.bisect_left(terms, word, key=lambda term: term.as_py())
        if row == len(terms) or terms[row].as_py() != word:
            return None
        return batch.column(1)[row].as_py(), batch.column(2)[row].as_py()


class Snapshot:
    """One built snapshot, opened read-only: `by_ids` and `by_title` answer from its index.

    Records come back as dicts of the table's columns (tasks/snapshots/schema.py). `label` is
    how rows name it (`dblp@2026-11-01`). Every file is opened here: a reader keeps reading the
    snapshot it opened when a new build is swapped in and the old one removed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.manifest = Manifest.read(folder)
        self.name = self.manifest.name
        self.date = date.fromisoformat(self.manifest.date) if self.manifest.date else None
        self.label = f"{self.name}@{self.manifest.date}"
        self.complete = self.manifest.complete
        schema = TABLES[self.manifest.table].schema.append(pa.field(TITLE_KEY, pa.string()))
        self._names = schema.names
        # A block's rows are split apart undecoded; only the rows asked are decoded.
        self._block = msgspec.json.Decoder(list[msgspec.Raw])
        self._row = msgspec.json.Decoder(_row_type(schema))
        self._blocks = [
            (batch.column(0), batch.column(1).to_numpy())
            for batch in ipc.open_file(pa.memory_map(str(folder / "records.arrow")))
            .read_all()
            .to_batches()
        ]
        self._keys = _Terms(folder / "id_keys.arrow")
        self._key_rids = _mapped(folder / "id_rids.u32", np.dtype("<u4"))
        self._titled = (folder / "title_terms.arrow").is_file()
        if self._titled:
            self._terms = _Terms(folder / "title_terms.arrow")
            self._rids = _mapped(folder / "title_rids.u32", np.dtype("<u4"))
            self._words = _mapped(folder / "title_words.u8", np.dtype(np.uint8))

    @functools.cached_property
    def doi_prefixes(self) -> frozenset[str]:
        """The DOI prefixes its records hold (none known for a snapshot built without them)."""
        listed = self.folder / "doi_prefixes.txt"
        return frozenset(listed.read_text().split()) if listed.is_file() else frozenset()

    def close(self) -> None:
        """Let go of the files (each unmapped once nothing else holds it)."""
        self._blocks.clear()
        self._keys = _Terms(None)
        self._titled = False

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def by_ids(self, ids: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """The records holding each (kind, value) asked, kind one of id, doi, arxiv, pmid,
        values normalised as tasks/identifiers normalises them; each record read once."""
        found: dict[tuple[str, str], list[dict[str, Any]]] = {(k, v): [] for k, v in ids}
        held = {}  # each key asked that the index holds: its rids, ascending
        for key in sorted({f"{kind}:{value}" for kind, value in ids if kind in KINDS}):
            if (at := self._keys.find(key)) is not None:
                n, start = at
                held[key] = self._key_rids[start : start + n].tolist()
        records = self._records({rid for rids in held.values() for rid in rids})
        for key, rids in held.items():
            kind, _, value = key.partition(":")
            found.setdefault((kind, value), []).extend(_without_key(records[r]) for r in rids)
        return found

    def by_title(
        self, titles: Sequence[str], limit: int = 5, min_score: float = 0.5
    ) -> list[list[dict[str, Any]]]:
        """For each title, up to `limit` records whose titles are most like it (title similarity
        at least `min_score`), best first, each with its `score` (0-1)."""
        keys = [normalise_title(title) for title in titles]
        pools = [self._pool(key) for key in keys] if self._titled else [[] for _ in keys]
        records = self._records({*chain(*pools)})
        found = []
        for title, key, pool in zip(titles, keys, pools, strict=True):
            # A quick likeness first: the decision table's similarity only for the likeliest,
            # and the quick one to tell apart records it finds equally like (a word spelt
            # either way: `babai`, `babaihe`).
            quick = {rid: ratio(key, records[rid][TITLE_KEY] or "") for rid in pool}
            likely = sorted(pool, key=lambda rid: -quick[rid])[: limit + 3]
            scored = sorted(
                (
                    (title_similarity(title, records[rid]["title"] or ""), quick[rid], rid)
                    for rid in likely
                ),
                key=lambda s: (-s[0], -s[1], s[2]),
            )
            found.append(
                [
                    {**_without_key(records[rid]), "score": score}
                    for score, _, rid in scored[:limit]
                    if score >= min_score
                ]
            )
        return found

    def _pool(self, key: str) -> list[int]:
        """The POOL records holding most of the title's rarest words (module docstring)."""
        asked = key.split()
        known = sorted(
            found
            for word in dict.fromkeys(asked)
            if word not in STOPWORDS and (found := self._terms.find(word)) is not None
        )[:CHECKED]
        if not known:
            return []
        lists = [self._rids[start : start + n] for n, start in known]
        rarest = lists[:RAREST]
        if sum(len(rids) for rids in rarest) <= BUDGET:
            candidates, shared = np.unique(np.concatenate(rarest), return_counts=True)
        else:
            # Long lists: the records holding two of the rarest words (the third may be the
            # citer's own, or misspelt into another word), else those holding the rarest.
            # Each pair's first (rarer) list, cut once: all but the last (a lone word's own).
            firsts = rarest[: max(1, len(rarest) - 1)]
            nearest = [self._nearest(rids, len(asked), LONG) for rids in firsts]
            pairs = [_common(nearest[a], rarest[b]) for a, b in combinations(range(len(rarest)), 2)]
            candidates = _union(pairs)
            if not len(candidates):
                candidates = nearest[0]
            shared = np.zeros(len(candidates), np.int64)
            for rids in rarest:
                shared += _holding(candidates, rids)
            if len(candidates) > CAP:  # those holding the most of them, then the nearest in length
                gap = np.abs(self._words[candidates].astype(np.int64) - len(asked))
                best = np.sort(np.argpartition(gap - 256 * shared, CAP)[:CAP])
                candidates, shared = candidates[best], shared[best]
        for rids in lists[RAREST:]:
            shared += _holding(candidates, rids)
        gap = np.abs(self._words[candidates].astype(np.int16) - len(asked))
        return [int(r) for r in candidates[np.lexsort((gap, -shared))[:POOL]]]

    def _nearest(self, rids: np.ndarray, length: int, most: int) -> np.ndarray:
        """`rids` (ascending); of more than `most`, the `most` whose titles are nearest `length`
        words long."""
        if len(rids) <= most:
            return rids
        gap = np.abs(self._words[rids].astype(np.int16) - length)
        return rids[np.sort(np.argpartition(gap, most)[:most])]

    def _records(self, rids: set[int]) -> dict[int, dict[str, Any]]:
        """The records of `rids` (with their `title_key`), by rid: each block read once."""
        found: dict[int, dict[str, Any]] = {}
        by_block: dict[int, list[int]] = {}
        for rid in rids:
            by_block.setdefault(rid // BLOCK, []).append(rid)
        for number, wanted in by_block.items():
            blocks, sizes = self._blocks[number // BLOCKS_PER_BATCH]
            at = number % BLOCKS_PER_BATCH
            rows = self._block.decode(
                _CODEC.decompress(blocks[at].as_buffer(), int(sizes[at]), asbytes=True)
            )
            for rid in wanted:
                row = self._row.decode(rows[rid % BLOCK])
                found[rid] = dict(zip(self._names, row, strict=True))
        return found


def _without_key(record: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in record.items() if name != TITLE_KEY}


def _row_type(schema: pa.Schema) -> Any:
    """The Python type of a row of records.arrow (an array of `schema`'s columns), for msgspec
    to decode with dates as dates."""
    return tuple.__class_getitem__(tuple(_python_type(field.type) for field in schema))


_TYPED_DICT: Any = TypedDict  # called with the fields of a struct column, known only then


def _python_type(arrow: pa.DataType) -> Any:
    kind: Any
    if pa.types.is_struct(arrow):
        fields = [arrow.field(i) for i in range(arrow.num_fields)]
        kind = _TYPED_DICT(f"_Row{id(arrow)}", {f.name: _python_type(f.type) for f in fields})
    elif pa.types.is_list(arrow):
        kind = list.__class_getitem__(_python_type(arrow.value_type))
    elif pa.types.is_integer(arrow):
        kind = int
    else:
        kind = {"string": str, "bool": bool, "date32[day]": date}[str(arrow)]
    return kind | None


def _mapped(path: Path, dtype: np.dtype) -> np.ndarray:
    """A file of numbers, memory-mapped (an empty one cannot be)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype)
    # A plain array over the map: slicing a np.memmap costs ~10x more (0.9 ms a lookup).
    return np.asarray(np.memmap(path, dtype, "r"))


def _union(arrays: list[np.ndarray]) -> np.ndarray:
    """The rids in any of `arrays`, ascending (sorted and deduplicated: numpy 2's `unique`
    hashes, twenty times slower on these)."""
    rids = np.sort(np.concatenate([np.empty(0, np.uint32), *arrays]))
    return rids[np.concatenate(([True], rids[1:] != rids[:-1]))] if len(rids) else rids


def _common(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rids in both `a` and `b` (ascending): the shorter searched in the longer."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not len(long):
        return short[:0]
    at = np.minimum(np.searchsorted(long, short), len(long) - 1)
    return short[long[at] == short]


def _holding(candidates: np.ndarray, rids: np.ndarray) -> np.ndarray:
    """Which of `candidates` (ascending) are in `rids` (ascending): the shorter searched in the
    longer."""
    if len(rids) < len(candidates):
        at = np.searchsorted(candidates, rids)
        found = at < len(candidates)
        found[found] = candidates[at[found]] == rids[found]
        held = np.zeros(len(candidates), bool)
        held[at[found]] = True
        return held
    at = np.minimum(np.searchsorted(rids, candidates), len(rids) - 1)
    return rids[at] == candidates


def open_snapshot(root: Path, name: str) -> Snapshot | None:
    """The snapshot `name` under `root`, or None if none is built, it was built by another
    format, or its files are not those built (store.damage: the audit's warning names it)."""
    folder = current(root, name)
    if folder is None or damage(folder) is not None:
        return None
    if Manifest.read(folder).format_version != FORMAT_VERSION:
        return None
    return Snapshot(folder)
