"""A job's dedupe over records held in a working database (tasks/store/scratch.py), not in memory: a
bulk import's million citations, whose records, pairs and works would not fit.

It gives what `dedupe_records` gives, row for row, a group of records at a time:
1. candidate pairs over every record at once, by the same queries (`pairs_query`), in the
   working database, which spills to disk past its memory limit;
2. the components those pairs join (a library work is one node, as in `cluster`), and the new
   records founding works on one id base kept together (their works are numbered together),
   packed into groups of about `group` new records;
3. the recurring titles, counted over every record (`recurring_keys`, `repeated_in_list`);
4. per group: its records and pairs read back, decided and clustered (`decided_works`), its
   rows and works (`job_rows`, `works_of`) appended to the outputs. Records no pair joins are
   decided by nothing, so a group's outcome is the whole's for its records.

Inputs (tables of the working database): `dedupe_new` (the job's `job_records`, with `rid` its
position in input order and `base` its `work_id_bases`), `dedupe_library` (every other job's
records, LIBRARY_SCHEMA, with a negative `rid` in citation id order: the library's rows come
first, as in `prepared_records`) and `dedupe_previous` (work ids the job's earlier run cited).
Outputs: `job_columns` (DEDUPE_COLUMNS), `job_records` (the library's dedupe_records rows),
`job_works`, `job_links` and `job_retired` (work_id), as JobDedupe holds them.
"""

import numpy as np
import polars as pl

from tasks.dedupe.assign import conformed_records, decided_works
from tasks.dedupe.candidates import KEY_COLUMNS, pairs_query
from tasks.dedupe.canonical import WORKS_SCHEMA, canonical_works
from tasks.dedupe.cluster import ASSIGNMENT_SCHEMA, LINK_SCHEMA, work_id_bases
from tasks.dedupe.job import DEDUPE_COLUMNS, job_rows, repeats_within_jobs, works_of
from tasks.dedupe.records import LIBRARY_SCHEMA, RECORD_SCHEMA
from tasks.dedupe.recurring import recurring_flag, recurring_keys, repeated_in_list
from tasks.dedupe.thresholds import DedupeThresholds
from tasks.store.scratch import Scratch

GROUP = 5_000  # new records decided at once (a component larger than this is one group)
LIBRARY_RIDS = -(1 << 40)  # the first library record's rid: below every new record's
BASE_LENGTH = len("w-") + 16  # a work id's base: `w-HASH` of `w-HASH-2`
OUTPUTS = ("job_columns", "job_records", "job_works", "job_links", "job_retired")


def add_new(spill: Scratch, records: pl.DataFrame) -> None:
    """The job's next records in input order (`job_records` of a batch)."""
    start = spill.count("dedupe_new") if spill.has("dedupe_new") else 0
    spill.append(
        "dedupe_new",
        records.select(
            pl.int_range(start, start + records.height, dtype=pl.Int64).alias("rid"),
            work_id_bases(records).alias("base"),
            *RECORD_SCHEMA,
        ),
    )


def add_library(spill: Scratch, records: pl.DataFrame) -> None:
    """Other jobs' next records (LIBRARY_SCHEMA), in citation id order."""
    start = LIBRARY_RIDS + (spill.count("dedupe_library") if spill.has("dedupe_library") else 0)
    spill.append(
        "dedupe_library",
        records.select(
            pl.int_range(start, start + records.height, dtype=pl.Int64).alias("rid"),
            *LIBRARY_SCHEMA,
        ),
    )


def add_previous(spill: Scratch, work_ids: pl.Series) -> None:
    """Work ids the job's earlier run cited."""
    spill.append("dedupe_previous", pl.DataFrame({"work_id": work_ids.cast(pl.Utf8)}))


def dedupe_stored(
    job_id: str, spill: Scratch, thresholds: DedupeThresholds | None = None, group: int = GROUP
) -> int:
    """Dedupe the job's records in `spill` (see the module) into its output tables; how many
    of the job's citations repeat a work it cites already (`repeats_within_jobs`)."""
    thresholds = thresholds or DedupeThresholds()
    con = spill.con
    for add, table in ((add_new, "dedupe_new"), (add_library, "dedupe_library")):
        if not spill.has(table):
            add(spill, pl.DataFrame(schema=LIBRARY_SCHEMA))
    if not spill.has("dedupe_previous"):
        add_previous(spill, pl.Series([], dtype=pl.Utf8))
    for table in OUTPUTS:
        con.execute(f'DROP TABLE IF EXISTS "{table}"')
    spill.append("job_columns", pl.DataFrame(schema=ASSIGNMENT_SCHEMA).select(DEDUPE_COLUMNS))
    spill.append("job_records", pl.DataFrame(schema={**LIBRARY_SCHEMA, "job_id": pl.Utf8}))
    spill.append("job_works", pl.DataFrame(schema=WORKS_SCHEMA))
    spill.append("job_links", pl.DataFrame(schema=LINK_SCHEMA))
    _candidate_pairs(spill, thresholds)
    groups = _groups(spill, group)
    recurring = _recurring(spill, thresholds)
    duplicates = 0
    for number in range(groups):
        duplicates += _decide_group(job_id, spill, number, recurring, thresholds)
    _untouched_previous(spill)
    return duplicates


def _candidate_pairs(spill: Scratch, thresholds: DedupeThresholds) -> None:
    """`pairs` (a, b, relation, relation_from, keyed: rids), as `candidate_pairs` finds them."""
    keys = ", ".join(c for c in KEY_COLUMNS if c not in ("new", "work_id"))
    spill.con.execute(f"""
        CREATE OR REPLACE VIEW recs AS
        SELECT rid, {keys}, false AS new, work_id FROM dedupe_library
        UNION ALL SELECT rid, {keys}, true AS new, NULL::VARCHAR AS work_id FROM dedupe_new""")
    spill.con.execute("""
        CREATE OR REPLACE VIEW rels AS
        SELECT rid, relation.kind AS kind, relation.id AS id FROM (
            SELECT rid, unnest(relations) AS relation FROM dedupe_library
            UNION ALL SELECT rid, unnest(relations) AS relation FROM dedupe_new)
        WHERE relation IS NOT NULL""")
    # the blocking's temporary tables are its cursor's, dropped with it
    with spill.con.cursor() as cursor:
        query = pairs_query(cursor, thresholds.blocking)
        cursor.execute(f"CREATE OR REPLACE TABLE pairs AS {query}")


def _groups(spill: Scratch, group: int) -> int:
    """`groups` (rid, grp) for every new record and every library record a pair holds: whole
    components of the pair graph (and new records of one work id base together), packed in
    input order into groups of about `group` new records; how many groups."""
    con = spill.con
    new = spill.count("dedupe_new")
    # Nodes: a new record is its rid (0..new-1); a library work is one node past them.
    con.execute(f"""
        CREATE OR REPLACE TABLE library_nodes AS
        SELECT rid, {new} - 1 + dense_rank() OVER (ORDER BY coalesce(work_id, citation_id)) AS node
        FROM dedupe_library WHERE rid IN (SELECT a FROM pairs UNION SELECT b FROM pairs)""")
    nodes = new + spill.count("library_nodes")
    edges = con.execute("""
        SELECT coalesce(x.node, p.a) AS x, coalesce(y.node, p.b) AS y FROM pairs p
        LEFT JOIN library_nodes x ON x.rid = p.a LEFT JOIN library_nodes y ON y.rid = p.b
        UNION ALL
        SELECT rid, min(rid) OVER (PARTITION BY base) FROM dedupe_new""").fetchnumpy()
    labels = components(nodes, edges["x"], edges["y"])
    # A component's label is its smallest node: its first new record in input order.
    sizes = np.bincount(labels[:new], minlength=new)
    firsts = np.flatnonzero(sizes)
    before = np.cumsum(sizes[firsts]) - sizes[firsts]
    group_of = np.zeros(max(new, 1), dtype=np.int64)
    group_of[firsts] = _packed(before, sizes[firsts], group)
    spill.con.execute("DROP TABLE IF EXISTS groups")
    spill.append(
        "groups",
        pl.DataFrame(
            {"rid": np.arange(new, dtype=np.int64), "grp": group_of[labels[:new]]}
            if new
            else {"rid": [], "grp": []},
            schema={"rid": pl.Int64, "grp": pl.Int64},
        ),
    )
    library = con.execute("SELECT rid, node FROM library_nodes").fetchnumpy()
    spill.append(
        "groups",
        pl.DataFrame(
            {"rid": library["rid"], "grp": group_of[labels[library["node"]]]},
            schema={"rid": pl.Int64, "grp": pl.Int64},
        ),
    )
    return int(group_of[firsts].max()) + 1 if new else 0


def _packed(before: np.ndarray, sizes: np.ndarray, group: int) -> np.ndarray:
    """Group numbers of components of `sizes` in order (`before`: new records ahead of each):
    a new group starts where the next component would pass `group` records."""
    numbers = np.empty(len(sizes), dtype=np.int64)
    number, held = 0, 0
    for index, size in enumerate(sizes.tolist()):
        if held and held + size > group:
            number, held = number + 1, 0
        numbers[index] = number
        held += size
    return numbers


def components(nodes: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each node's component label (its smallest node) given the edges x[i] - y[i]: hooking
    roots onto smaller ones and halving paths, a whole array at a time."""
    labels = np.arange(nodes, dtype=np.int64)
    x, y = x.astype(np.int64), y.astype(np.int64)
    while True:
        low = np.minimum(labels[x], labels[y])
        hooked = labels.copy()
        np.minimum.at(hooked, labels[x], low)
        np.minimum.at(hooked, labels[y], low)
        while True:  # every node points at its root
            jumped = hooked[hooked]
            if np.array_equal(jumped, hooked):
                break
            hooked = jumped
        if np.array_equal(hooked, labels):
            return labels
        labels = hooked


def _recurring(spill: Scratch, thresholds: DedupeThresholds) -> pl.Series:
    """The recurring title keys, counted over every record (`recurring_keys`; read: the records
    whose title is a new record's short one), and `recurring_rows` (rid, repeated) for every
    record with a recurring title (`repeated_in_list` counts within such titles only)."""
    spaces = "length(title_key) - length(replace(title_key, ' ', ''))"
    counted = spill.frame(f"""
        SELECT title_key, container, year, new FROM recs WHERE title_key IN (
            SELECT title_key FROM dedupe_new WHERE {spaces} < {thresholds.recurring_words})""")
    keys = recurring_keys(counted, thresholds)
    rids = [
        part.filter(recurring_flag(part["title_key"], keys))["rid"]
        for part in spill.parts("SELECT rid, title_key FROM recs", 100_000)
    ]
    flagged = pl.concat(rids) if rids else pl.Series("rid", [], pl.Int64)
    spill.con.execute("DROP TABLE IF EXISTS recurring_rids")
    spill.append("recurring_rids", pl.DataFrame({"rid": flagged}, schema={"rid": pl.Int64}))
    rows = spill.frame("""
        SELECT rid, source, title_key, year, surnames, volume, pages, true AS recurring
        FROM (SELECT rid, source, title_key, year, surnames, volume, pages FROM dedupe_library
              UNION ALL SELECT rid, source, title_key, year, surnames, volume, pages
              FROM dedupe_new)
        WHERE rid IN (SELECT rid FROM recurring_rids)""")
    spill.con.execute("DROP TABLE IF EXISTS recurring_rows")
    spill.append(
        "recurring_rows",
        rows.select("rid", repeated_in_list(rows)) if rows.height else
        pl.DataFrame(schema={"rid": pl.Int64, "repeated": pl.Int8}),
    )  # fmt: skip
    return keys


def _decide_group(
    job_id: str, spill: Scratch, number: int, recurring: pl.Series, thresholds: DedupeThresholds
) -> int:
    """One group's works into the outputs; how many of its citations repeat a work."""
    new_columns = ", ".join(f'n."{c}"' for c in ("rid", "base", *RECORD_SCHEMA))
    new = spill.frame(
        f"""SELECT {new_columns} FROM dedupe_new n JOIN groups g USING (rid)
            WHERE g.grp = ? ORDER BY rid""",
        [number],
    )
    spill.con.register("_bases", new.select("base").unique().to_arrow())
    try:
        library = spill.frame(
            f"""SELECT * FROM dedupe_library WHERE rid IN (
                    SELECT rid FROM groups WHERE grp = ? AND rid < 0)
                OR substr(work_id, 1, {BASE_LENGTH}) IN (SELECT base FROM _bases)
                ORDER BY rid""",
            [number],
        )
    finally:
        spill.con.unregister("_bases")
    rids = pl.concat([library["rid"], new["rid"]])
    repeats = spill.frame(
        "SELECT rid, repeated FROM recurring_rows WHERE rid IN (SELECT unnest(?::BIGINT[]))",
        [rids.to_list()],
    )
    new_records = new.select(list(RECORD_SCHEMA))
    records = conformed_records(new_records, library.drop("rid"))
    records = records.with_columns(
        recurring_flag(records["title_key"], recurring),
        pl.DataFrame({"rid": rids})
        .join(repeats, on="rid", how="left", maintain_order="left")["repeated"]
        .fill_null(0)
        .cast(pl.Int8),
    )
    rows = (
        pl.DataFrame({"rid": rids}).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    )
    pairs = spill.frame(
        """SELECT a, b, relation, relation_from, keyed FROM pairs
           WHERE b IN (SELECT rid FROM groups WHERE grp = ?) ORDER BY a, b""",
        [number],
    )
    pairs = _local(pairs, rows)
    result = decided_works(records, pairs, thresholds)
    columns, job_records = job_rows(job_id, new_records, result)
    touched = columns["work_id"].drop_nulls().unique()
    works = works_of(_library_of(spill, touched), job_records)
    spill.append("job_columns", columns)
    spill.append("job_records", job_records)
    spill.append("job_works", works)
    spill.append("job_links", result.links)
    return repeats_within_jobs(columns).height


def _local(pairs: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """`pairs` with their rids made row numbers of the group's records (`rows`: rid, row)."""
    local = pairs
    for end in ("a", "b", "relation_from"):
        local = (
            local.join(
                rows.rename({"rid": end, "row": f"_{end}"}),
                on=end,
                how="left",
                maintain_order="left",
            )
            .with_columns(pl.col(f"_{end}").alias(end))
            .drop(f"_{end}")
        )
    return local


def _library_of(spill: Scratch, works: pl.Series) -> pl.DataFrame:
    """Every other job's records of these works."""
    spill.con.register("_works", pl.DataFrame({"work_id": works.cast(pl.Utf8)}).to_arrow())
    try:
        return spill.frame(
            """SELECT * EXCLUDE (rid) FROM dedupe_library
               WHERE work_id IN (SELECT work_id FROM _works) ORDER BY rid"""
        )
    finally:
        spill.con.unregister("_works")


def _untouched_previous(spill: Scratch, chunk: int = 50_000) -> None:
    """The works the job's earlier run cited and this one does not: other jobs' records of them
    make them anew (their counts and best records change); the rest are retired."""
    spill.con.execute("""
        CREATE OR REPLACE TABLE untouched AS
        SELECT DISTINCT work_id FROM dedupe_previous WHERE work_id IS NOT NULL
        EXCEPT SELECT work_id FROM job_columns""")
    for part in spill.parts("SELECT work_id FROM untouched ORDER BY work_id", chunk):
        related = _library_of(spill, part["work_id"])
        if related.height:
            spill.append("job_works", canonical_works(related))
    spill.con.execute("""
        CREATE TABLE job_retired AS
        SELECT work_id FROM untouched EXCEPT SELECT work_id FROM dedupe_library
        ORDER BY work_id""")
