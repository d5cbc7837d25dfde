"""Candidate pairs, never all pairs: DuckDB joins on identifiers and on rare title words.

Every pair has at least one new record; the library is only ever the other side of a hash join,
so the cost is one pass over the library's keys plus work proportional to the new records.

Title blocking: every record's blocking keys are the pairs of its `keys` rarest title words
(document frequency over library and new records together); blocks larger than `block_cap` are
dropped. Duplicates share most words, and a typo or a dropped word changes one of the rarest
few, so two true duplicates still share pairs; pairs of rare words make small blocks even in a
library of millions, where single words would not.
"""

import tempfile
from dataclasses import dataclass

import duckdb
import polars as pl

from tasks.dedupe.records import ID_KINDS
from tasks.textnorm import STOPWORDS

# DuckDB's own default is 80 % of the machine's memory, which it may take while polars holds the
# records; above this it spills to a temporary directory (the 1M-record scale bench runs as
# fast under a 1 GB limit).
DUCKDB_MEMORY = "2GB"
# Book parts whose siblings in one container are distinct works worth linking.
CHAPTER_TYPES = ("chapter", "entry", "entry-encyclopedia", "entry-dictionary")


@dataclass(frozen=True)
class Blocking:
    keys: int = 4  # a record's rarest title words, paired up into its blocking keys
    # ... an undated (scraped) record's: names glued to its title crowd out the work's words.
    undated_keys: int = 6
    block_cap: int = 1000  # a key shared by more works than this is no block
    year_window: int = 3  # wider than the match window: preprints precede their papers
    # By the same first author, wider still: a journal version may follow its conference paper
    # by up to six years.
    version_window: int = 6
    head_words: int = 4  # a title's first and last words, whose rarest pairs are two more keys
    # The last words' pair is a key to glued heads only: common endings ("... large databases")
    # would make blocks of mostly strangers, so a tail key blocks no more works than this.
    tail_cap: int = 100
    chapter_cap: int = 500  # chapters of one (container, year) considered for links
    # A title this long is looked for inside others by its author, and may match as part of one.
    contained_words: int = 4


def candidate_pairs(records: pl.DataFrame, blocking: Blocking = Blocking()) -> pl.DataFrame:
    """Pairs (a, b) of row numbers of `records` (a < b) worth comparing, with the registry
    `relation` between them when the registry record of row `relation_from` names the other, and
    `keyed`: found by a shared key (identifier, book, relation), not by title words alone.

    `records` holds library rows and new rows; its `new` column says which is which."""
    with tempfile.TemporaryDirectory(prefix="citeaudit-dedupe-") as spill:
        con = duckdb.connect(
            ":memory:", config={"memory_limit": DUCKDB_MEMORY, "temp_directory": spill}
        )
        try:
            keys = records.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("rid"), *KEY_COLUMNS)
            relations = (
                keys.select("rid")
                .with_columns(records["relations"])
                .explode("relations")
                .drop_nulls("relations")
                .unnest("relations")
            )
            con.register("recs", keys.to_arrow())
            con.register("rels", relations.to_arrow())
            pairs = con.sql(pairs_query(con, blocking)).pl()
        finally:
            con.close()
    return pairs.with_columns(pl.col("a", "b", "relation_from").cast(pl.Int64))


# What blocking reads of a record (`recs` holds them, with its row number `rid`).
KEY_COLUMNS = (
    "citation_id", "new", "work_id", *ID_KINDS, "title_key", "year", "notice", "type",
    "container", "first_author", "pages",
)  # fmt: skip


def pairs_query(con: duckdb.DuckDBPyConnection, blocking: Blocking) -> str:
    """The query of `candidate_pairs` over the relations `recs` (rid and KEY_COLUMNS; a new
    record's work_id is null) and `rels` (rid, kind, id: a record's registry relations) of
    `con`, which may hold them in memory or in a database file (a bulk import's, too big for
    memory): each source of pairs is first made a temporary table there."""
    parts = [
        _SAME_CITATION,
        _identifier_pairs(con),
        _title_pairs(con, blocking),
        _chapter_pairs(con, blocking),
        _locator_pairs(con, blocking),
        _contained_title_pairs(con, blocking),
        _relation_pairs(con),
    ]
    # Each source of pairs is materialised on its own: planned as one query, DuckDB now and then
    # (one run in four on the scale bench) chose a plan that grew to its memory cap (18 GB here).
    for number, part in enumerate(parts):
        con.execute(f"CREATE TEMP TABLE pairs_{number} AS {part}")
    union = " UNION ALL ".join(f"SELECT * FROM pairs_{number}" for number in range(len(parts)))
    return f"""
        SELECT least(x, y) AS a, greatest(x, y) AS b, max(relation) AS relation,
               max(CASE WHEN relation IS NOT NULL THEN x END) AS relation_from,
               bool_or(keyed) AS keyed
        FROM ({union}) WHERE x <> y GROUP BY 1, 2 ORDER BY a, b"""


# The same citation seen again (a re-run): compared, so that even an empty one finds its work.
_SAME_CITATION = """
    SELECT n.rid AS x, o.rid AS y, NULL AS relation, true AS keyed
    FROM recs n JOIN recs o USING (citation_id) WHERE n.new AND NOT o.new"""


def _identifier_pairs(con: duckdb.DuckDBPyConnection) -> str:
    # One library record per (identifier, work) is enough: the rest of the work is the same node.
    joins = []
    for kind in ID_KINDS:
        con.execute(f"""
            CREATE TEMP TABLE ids_{kind} AS
            SELECT {kind} AS v, min(rid) AS rid FROM recs
            WHERE {kind} IS NOT NULL GROUP BY {kind}, CASE WHEN new THEN rid END, work_id""")
        joins.append(f"""
            SELECT n.rid AS x, o.rid AS y, NULL AS relation, true AS keyed
            FROM recs n JOIN ids_{kind} o ON n.{kind} = o.v WHERE n.new""")
    return " UNION ALL ".join(joins)


def _title_pairs(con: duckdb.DuckDBPyConnection, blocking: Blocking) -> str:
    con.execute("""
        CREATE TEMP TABLE words AS
        SELECT DISTINCT rid, year IS NULL AS undated, unnest(string_split(title_key, ' ')) AS word
        FROM recs
        WHERE title_key IS NOT NULL""")
    con.execute("CREATE TEMP TABLE freq AS SELECT word, count(*) AS n FROM words GROUP BY word")
    con.execute(f"""
        CREATE TEMP TABLE rarest AS
        SELECT rid, word FROM (
            SELECT w.rid, w.word, w.undated,
                   row_number() OVER (PARTITION BY w.rid ORDER BY f.n, w.word) AS k
            FROM words w JOIN freq f USING (word)
            WHERE f.n > 1 AND (length(w.word) > 2 OR NOT w.undated))
        WHERE k <= {blocking.keys} OR undated AND k <= {blocking.undated_keys}""")
    # A word no other record holds blocks nothing: the rarest words are the rarest shared ones,
    # so that a scraping slip ("hellersteirr", "mixa") does not push a record's real words out;
    # nor, in an undated (scraped) citation, does a word of one or two letters: an initial glued
    # to its title ("weld d 2001 updating xml"), debris ("et ai"). (In dated citations such
    # words are real ones: dropping them cost the scale bench a few true pairs.) An undated
    # citation keeps more of its rarest words (`undated_keys`): names glued to its head are
    # rarer than the work's words ("gm and meri aldo p 1997 to weave the web").
    # Keys: each pair of a record's rarest words (its only word, for one-word titles).
    con.execute("""
        CREATE TEMP TABLE title_keys AS
        SELECT a.rid, a.word || ' ' || b.word AS key
        FROM rarest a JOIN rarest b ON a.rid = b.rid AND a.word < b.word
        UNION ALL
        SELECT rid, any_value(word) AS key FROM rarest GROUP BY rid HAVING count(*) = 1""")
    # A citation that drops the subtitle keeps the head of the title, whose rarest words need
    # not be among the whole title's: one more key, the two rarest of the first few words. A
    # scraped one with names glued to its head ("d kossmann el wimmers and j yang optimizing
    # queries across diverse data sources") keeps the tail: one more, of the last few words.
    # (A title no longer than the head has no other tail.) Glued heads are scraped citations',
    # which lack their year: tails are keyed only when a new record has none (every record's
    # tail costs the 1M-record scale bench about a third more time).
    n = blocking.head_words
    ends = {"head": (f"[1:{n}]", 0), "tail": (f"[-{n}:]", n)}
    undated = con.execute("SELECT count(*) FROM recs WHERE new AND year IS NULL").fetchone()
    if not (undated and undated[0]):
        del ends["tail"]
    for end, (words, longer) in ends.items() if n >= 2 else ():  # a pair of words
        con.execute(f"""
        INSERT INTO title_keys
        SELECT rid, '{end} ' || string_agg(word, ' ' ORDER BY word) AS key FROM (
            SELECT h.rid, h.word, row_number() OVER (PARTITION BY h.rid ORDER BY f.n, h.word) AS k
            FROM (SELECT DISTINCT rid, unnest(string_split(title_key, ' '){words}) AS word
                  FROM recs WHERE len(string_split(title_key, ' ')) > {longer}) h
            JOIN freq f USING (word))
        WHERE k <= 2 GROUP BY rid HAVING count(*) = 2""")
    # A scraped title may keep none of its rarest words whole ("implementing data cubes e cie
    # ntl y", a ligature's bytes lost; "updating xml acm sig mod int", a venue glued on): its
    # first author and first word are one more key, made, like the tail's, for undated records.
    if "tail" in ends:
        stopwords = ", ".join(f"'{word}'" for word in sorted(STOPWORDS))
        con.execute(f"""
        INSERT INTO title_keys
        SELECT rid, 'author ' || first_author || ' ' || opening AS key FROM (
            SELECT rid, first_author,
                   list_filter(string_split(title_key, ' '),
                               w -> length(w) > 2 AND w NOT IN ({stopwords}))[1] AS opening
            FROM recs WHERE first_author IS NOT NULL AND title_key IS NOT NULL)
        WHERE opening IS NOT NULL""")
    con.execute("DROP TABLE words")
    # Block size in nodes: a library work cited a thousand times is one. Only an undated new
    # record's tail key makes a block.
    con.execute(f"""
        CREATE TEMP TABLE blocks AS
        SELECT key FROM title_keys JOIN recs USING (rid)
        WHERE key IN (SELECT t.key FROM title_keys t JOIN recs r USING (rid)
                      WHERE r.new AND (r.year IS NULL OR t.key NOT LIKE 'tail %'
                                       AND t.key NOT LIKE 'author %'))
        GROUP BY key HAVING count(DISTINCT coalesce(work_id, rid::VARCHAR))
            <= CASE WHEN key LIKE 'tail %' OR key LIKE 'author %' THEN {blocking.tail_cap}
                    ELSE {blocking.block_cap} END
        """)
    # Only the keys that make blocks, materialised before the self-join: planned as one query,
    # DuckDB may join every key's records with each other first (6,000 generated titles of one
    # template sharing a key: 36M rows, past its memory cap) and only then drop the big keys.
    con.execute(
        "CREATE TEMP TABLE blocked AS SELECT rid, key FROM title_keys JOIN blocks USING (key)"
    )
    return f"""
        SELECT DISTINCT n.rid AS x, o.rid AS y, NULL AS relation, false AS keyed
        FROM blocked n JOIN blocked o USING (key)
        JOIN recs a ON a.rid = n.rid JOIN recs b ON b.rid = o.rid
        WHERE a.new
          AND (a.year IS NULL OR b.year IS NULL OR abs(a.year - b.year) <= {blocking.year_window}
               OR abs(a.year - b.year) <= {blocking.version_window}
                  AND a.first_author = b.first_author
               OR a.notice IS NOT NULL OR b.notice IS NOT NULL)"""


def _chapter_pairs(con: duckdb.DuckDBPyConnection, blocking: Blocking) -> str:
    types = ", ".join(f"'{t}'" for t in CHAPTER_TYPES)
    con.execute(f"""
        CREATE TEMP TABLE chapters AS
        SELECT rid, new, container, coalesce(year, -1) AS year FROM recs
        WHERE type IN ({types}) AND container IS NOT NULL""")
    con.execute(f"""
        CREATE TEMP TABLE books AS SELECT container, year FROM chapters
        GROUP BY container, year HAVING count(*) <= {blocking.chapter_cap}""")
    return """
        SELECT n.rid AS x, o.rid AS y, NULL AS relation, true AS keyed
        FROM chapters n JOIN books USING (container, year) JOIN chapters o USING (container, year)
        WHERE n.new"""


def _locator_pairs(con: duckdb.DuckDBPyConnection, blocking: Blocking) -> str:
    # A citation without a title still names its work by first author, year and first page.
    con.execute(r"""
        CREATE TEMP TABLE locators AS
        SELECT rid, new, title_key IS NULL AS untitled, work_id,
               first_author || '|' || year || '|' || regexp_extract(pages, '\d+') AS key
        FROM recs
        WHERE first_author IS NOT NULL AND year IS NOT NULL AND regexp_extract(pages, '\d+') <> ''
        """)
    return f"""
        SELECT n.rid AS x, o.rid AS y, NULL AS relation, false AS keyed
        FROM locators n JOIN locators o USING (key)
        WHERE n.new AND (n.untitled OR o.untitled) AND {_small_block("locators", blocking)}"""


def _contained_title_pairs(con: duckdb.DuckDBPyConnection, blocking: Blocking) -> str:
    # A title that is all of another's words in a row ("Database issues in telecommunications
    # network management" in "SIGMOD challenges paper: database issues in ..."; a reviewed
    # book's title in "Review of X by Y") need not share the other's rarest words; the same
    # first author and year bring them together. One library record per (key, work, title).
    con.execute(f"""
        CREATE TEMP TABLE titled AS
        SELECT rid, new, work_id, first_author || '|' || year AS key, ' ' || title_key || ' ' AS t
        FROM recs
        WHERE first_author IS NOT NULL AND year IS NOT NULL
          AND length(title_key) - length(replace(title_key, ' ', ''))
              >= {blocking.contained_words - 1}""")
    con.execute("""
        CREATE TEMP TABLE authored AS
        SELECT min(rid) AS rid, new, work_id, key, t FROM titled
        WHERE key IN (SELECT key FROM titled WHERE new)
        GROUP BY key, t, new, work_id, CASE WHEN new THEN rid END""")
    con.execute("DROP TABLE titled")
    return f"""
        SELECT n.rid AS x, o.rid AS y, NULL AS relation, false AS keyed
        FROM authored n JOIN authored o USING (key)
        WHERE n.new AND n.rid <> o.rid AND (contains(o.t, n.t) OR contains(n.t, o.t))
          AND {_small_block("authored", blocking)}"""


def _small_block(table: str, blocking: Blocking) -> str:
    """SQL: the row's `key` is shared by at most `block_cap` works (a library work counts once;
    a common surname in a common year is no block)."""
    return f"""key IN (
            SELECT key FROM {table} GROUP BY key
            HAVING count(DISTINCT coalesce(work_id, rid::VARCHAR)) <= {blocking.block_cap})"""


def _relation_pairs(con: duckdb.DuckDBPyConnection) -> str:
    # Registry relations name DOIs (Crossref) or PMIDs (PubMed); either side may be new.
    return " UNION ALL ".join(
        f"""SELECT r.rid AS x, o.rid AS y, r.kind AS relation, true AS keyed
            FROM rels r JOIN recs s ON s.rid = r.rid JOIN recs o ON o.{kind} = r.id
            WHERE s.new OR o.new"""
        for kind in ("doi", "pmid")
    )
