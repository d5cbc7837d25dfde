"""From pair decisions to works: guarded union-find, stable work ids, links between works.

Nodes are new records and library works (a library work is one node: it is never split, and two
library works are never merged, so every existing work_id survives). Merges are applied strongest
first; identifier merges always hold; a weaker merge (ISBN, URL, fuzzy) never joins clusters
holding different DOIs/PMIDs/PMCIDs/arXiv ids or a preprint with a published version, and a fuzzy
merge needs the mean score of all compared pairs between the two clusters to reach `linkage`
(average linkage), so one weak middle record cannot chain two unrelated clusters together.
"""

import hashlib
from collections import defaultdict
from dataclasses import dataclass

import polars as pl

from tasks.citation_ids import unused_id
from tasks.dedupe.compare import LINK, MERGE
from tasks.dedupe.records import CONFLICT_KINDS, ID_KINDS

# Merge reasons, strongest first; these hold against any conflict.
REASONS = ("doi", "citation", "pmid", "pmcid", "arxiv", "isbn", "url", "fuzzy")
UNCONDITIONAL = frozenset({"doi", "citation", "pmid", "pmcid", "arxiv"})
GUARDED_KINDS = (*CONFLICT_KINDS, "preprint")
ASSIGNMENT_SCHEMA = {
    "citation_id": pl.Utf8,
    "work_id": pl.Utf8,
    "duplicate_of": pl.Utf8,
    "dup_reason": pl.Utf8,
    "dup_score": pl.Float64,
}
LINK_SCHEMA = {"work_id_a": pl.Utf8, "work_id_b": pl.Utf8, "kind": pl.Utf8}
# Links that point neither way; stored with the smaller work id first.
UNDIRECTED_LINKS = frozenset({"version-of", "co-publication", "chapter-of-same-book"})


@dataclass(frozen=True)
class Edge:
    x: int  # node
    y: int
    row_x: int  # record row behind each end
    row_y: int
    reason: str
    score: float
    vote: float


class _Clusters:
    """Union-find over nodes, carrying per cluster its identifiers, its library work and the
    count of pairs voting merge/distinct against each neighbouring cluster."""

    def __init__(
        self,
        conflicts: dict[int, dict[str, set[object]]],
        library: dict[int, str],
        linkage: float = 0.0,
    ):
        self.parent: dict[int, int] = {}
        self.linkage = linkage
        self.conflicts = conflicts
        self.library = library
        # votes[x][y] = [sum of pair scores, number of compared pairs] between clusters x, y
        self.votes: dict[int, dict[int, list[float]]] = defaultdict(
            lambda: defaultdict(lambda: [0, 0])
        )

    def find(self, node: int) -> int:
        root = node
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while node != root:  # path compression
            self.parent[node], node = root, self.parent.get(node, node)
        return root

    def vote(self, x: int, y: int, score: float) -> None:
        rx, ry = self.find(x), self.find(y)
        if rx != ry:
            for a, b in ((rx, ry), (ry, rx)):
                self.votes[a][b][0] += score
                self.votes[a][b][1] += 1

    def may_join(self, rx: int, ry: int, reason: str) -> bool:
        if rx in self.library and ry in self.library:
            return False
        if reason in UNCONDITIONAL:
            return True
        cx, cy = self.conflicts.get(rx, {}), self.conflicts.get(ry, {})
        if any(cx.get(k) and cy.get(k) and not cx[k] & cy[k] for k in GUARDED_KINDS):
            return False
        if reason != "fuzzy":
            return True
        total, compared = self.votes[rx][ry]
        return total >= self.linkage * compared

    def join(self, x: int, y: int, reason: str) -> bool:
        rx, ry = self.find(x), self.find(y)
        if rx == ry:
            return True
        if not self.may_join(rx, ry, reason):
            return False
        if len(self.votes[rx]) > len(self.votes[ry]):  # fold the smaller vote table in
            rx, ry = ry, rx
        self.parent[rx] = ry
        for kind, values in self.conflicts.pop(rx, {}).items():
            self.conflicts.setdefault(ry, {}).setdefault(kind, set()).update(values)
        if rx in self.library:
            self.library[ry] = self.library.pop(rx)
        for other, (total, compared) in self.votes.pop(rx, {}).items():
            self.votes[other].pop(rx, None)
            if other != ry:
                for a, b in ((ry, other), (other, ry)):
                    self.votes[a][b][0] += total
                    self.votes[a][b][1] += compared
        self.votes[ry].pop(ry, None)
        return True


def node_ids(records: pl.DataFrame) -> pl.Series:
    """One node per new record, one per library work."""
    return records.select(
        pl.when(pl.col("new"))
        .then(pl.int_range(pl.len()))
        .otherwise(pl.col("work_id").rank("dense") + pl.len())
        .cast(pl.Int64)
    ).to_series()


def cluster(
    records: pl.DataFrame, decided: pl.DataFrame, linkage: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(assignments of the new records, in order: citation_id, work_id, duplicate_of,
    dup_reason, dup_score; links between works: work_id_a, work_id_b, kind)."""
    nodes = node_ids(records)
    decided = decided.with_columns(
        x=nodes.gather(decided["a"]),
        y=nodes.gather(decided["b"]),
        key_a=records["citation_id"].gather(decided["a"]),
        key_b=records["citation_id"].gather(decided["b"]),
        order=pl.col("label").replace_strict(
            {r: i for i, r in enumerate(REASONS)}, default=len(REASONS), return_dtype=pl.Int64
        ),
    ).filter(pl.col("x") != pl.col("y"))
    # Sorting on citation ids, never on row numbers, makes the outcome independent of input order.
    # Records of one form (papers, demos) pair up first; of equal merges, those naming alike
    # venues first: a paper printed in two venues pairs up with the record of the same venue.
    merges = decided.filter(pl.col("decision") == MERGE).sort(
        ["order", "forms_alike", "score", "venues_alike", "key_a", "key_b"],
        descending=[False, True, True, True, False, False],
        nulls_last=True,
    )
    edges = [
        Edge(*row)
        for row in merges.select("x", "y", "a", "b", "label", "score", "vote").iter_rows()
    ]
    clusters = _Clusters(*_node_facts(records, nodes, decided), linkage=linkage)
    _count_votes(clusters, edges, decided)
    for edge in edges:
        clusters.join(edge.x, edge.y, edge.reason)
    node_list = nodes.to_list()
    new_rows = records.with_row_index().filter(pl.col("new"))["index"].to_list()
    roots = {row: clusters.find(node_list[row]) for row in new_rows}
    for edge in edges:
        roots[edge.row_x] = clusters.find(edge.x)
        roots[edge.row_y] = clusters.find(edge.y)
    keys = identity_keys(records)
    founders = _founders(records, keys, new_rows, roots, clusters.library)
    work_ids = _work_ids(records, keys, founders, clusters.library)
    assignments = _assignments(records, new_rows, roots, work_ids, founders, edges)
    links = decided.filter(pl.col("decision") == LINK).select(
        pl.col("x").map_elements(clusters.find, return_dtype=pl.Int64),
        pl.col("y").map_elements(clusters.find, return_dtype=pl.Int64),
        "label",
        "forward",
    )
    return assignments, _links(links, work_ids)


def _node_facts(
    records: pl.DataFrame, nodes: pl.Series, decided: pl.DataFrame
) -> tuple[dict[int, dict[str, set[object]]], dict[int, str]]:
    """Identifiers and stage per involved node, and the work id of library nodes."""
    involved = pl.concat([decided["a"], decided["b"]]).unique()
    rows = records.select("work_id", "new", *GUARDED_KINDS).with_columns(node=nodes)
    touched = rows.filter(pl.col("node").is_in(nodes.gather(involved).implode()))
    conflicts: dict[int, dict[str, set[object]]] = {}
    library: dict[int, str] = {}
    for row in touched.iter_rows(named=True):
        facts = conflicts.setdefault(row["node"], {})
        for kind in GUARDED_KINDS:
            if row[kind] is not None:
                facts.setdefault(kind, set()).add(row[kind])
        if not row["new"]:
            library[row["node"]] = row["work_id"]
    return conflicts, library


def _count_votes(clusters: _Clusters, edges: list[Edge], decided: pl.DataFrame) -> None:
    """Votes between nodes that merges could ever bring together (same merge component)."""
    reach = _Clusters({}, {})
    for edge in edges:
        reach.join(edge.x, edge.y, "doi")  # an unconditional reason: everything reachable
    for edge in edges:
        clusters.vote(edge.x, edge.y, edge.vote)
    merged = pl.Series([n for edge in edges for n in (edge.x, edge.y)], dtype=pl.Int64).implode()
    apart = decided.filter(
        (pl.col("decision") != MERGE) & pl.col("x").is_in(merged) & pl.col("y").is_in(merged)
    ).select("x", "y", "vote")
    for x, y, vote in apart.iter_rows():
        if reach.find(x) == reach.find(y):
            clusters.vote(x, y, vote)


def identity_keys(records: pl.DataFrame) -> pl.Series:
    """The key a founding record gives its work: its strongest identifier, else its title,
    year and first author."""
    described = pl.concat_str(
        [pl.lit("title:"), pl.col("title_key"), pl.col("notice"), pl.col("year").cast(pl.Utf8),
         pl.col("first_author")],
        separator="|",
        ignore_nulls=True,
    )  # fmt: skip
    return records.select(
        pl.coalesce([pl.lit(f"{kind}:") + pl.col(kind) for kind in ID_KINDS] + [described])
    ).to_series()


def _work_id(key: str) -> str:
    return "w-" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def work_id_bases(records: pl.DataFrame) -> pl.Series:
    """The work id each record would found its work under, but the `-2`, `-3` a taken one gets:
    works founded on one base are numbered together (`_work_ids`)."""
    return pl.Series([_work_id(key) for key in identity_keys(records)], dtype=pl.Utf8)


def _founders(
    records: pl.DataFrame,
    keys: pl.Series,
    new_rows: list[int],
    roots: dict[int, int],
    library: dict[int, str],
) -> dict[int, int]:
    """The founding record of each new work: the strongest identity key, then citation id."""
    citation_ids = records["citation_id"]
    rank = {kind: i for i, kind in enumerate(ID_KINDS)}
    best: dict[int, tuple[int, str, str, int]] = {}
    for row in new_rows:
        root = roots[row]
        if root in library:
            continue
        key = keys[row]
        candidate = (rank.get(key.split(":", 1)[0], len(rank)), key, citation_ids[row], row)
        best[root] = min(best.get(root, candidate), candidate)
    return {root: found[3] for root, found in best.items()}


def _work_ids(
    records: pl.DataFrame, keys: pl.Series, founders: dict[int, int], library: dict[int, str]
) -> dict[int, str]:
    """Work id per cluster root: the library's, else derived from the founding record's key."""
    citation_ids = records["citation_id"]
    by_base: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for root, row in founders.items():
        by_base[_work_id(keys[row])].append((citation_ids[row], root))
    taken = set(
        records.filter(~pl.col("new") & pl.col("work_id").str.slice(0, 18).is_in(list(by_base)))[
            "work_id"
        ].to_list()
    )
    ids = dict(library)
    # Distinct works with one founding key (e.g. untitled, unidentified citations) are numbered
    # in founding-citation order, so the same input always gets the same ids.
    for base, claimants in sorted(by_base.items()):
        for _, root in sorted(claimants):
            ids[root] = unused_id(base, taken)
    return ids


def _assignments(
    records: pl.DataFrame,
    new_rows: list[int],
    roots: dict[int, int],
    work_ids: dict[int, str],
    founders: dict[int, int],
    edges: list[Edge],
) -> pl.DataFrame:
    """A founding record is a duplicate of nothing; every other new record is a duplicate of
    its strongest merge partner inside its work that leads back to the founder or to a library
    record, so following `duplicate_of` always ends at one of those (never in a loop)."""
    citation_ids = records["citation_id"]
    unassigned = set(new_rows) - set(founders.values())
    inside = [edge for edge in edges if roots[edge.row_x] == roots[edge.row_y]]
    matched: dict[int, tuple[str, str, float]] = {}
    reached = True
    while reached:  # one pass per step away from the founders and library records
        reached = False
        for edge in inside:
            for row, partner in ((edge.row_x, edge.row_y), (edge.row_y, edge.row_x)):
                anchored = partner not in unassigned or partner in matched
                if row in unassigned and row not in matched and anchored:
                    matched[row] = (citation_ids[partner], edge.reason, edge.score)
                    reached = True
    return pl.DataFrame(
        {
            "citation_id": citation_ids.gather(new_rows),
            "work_id": [work_ids[roots[r]] for r in new_rows],
            "duplicate_of": [matched[r][0] if r in matched else None for r in new_rows],
            "dup_reason": [matched[r][1] if r in matched else None for r in new_rows],
            "dup_score": [matched[r][2] if r in matched else None for r in new_rows],
        },
        schema=ASSIGNMENT_SCHEMA,
    )


def ordered_links(links: pl.DataFrame) -> pl.DataFrame:
    """`links` with each undirected link's smaller work id first, sorted."""
    swap = pl.col("kind").is_in(list(UNDIRECTED_LINKS)) & (
        pl.col("work_id_b") < pl.col("work_id_a")
    )
    return (
        links.select(
            pl.when(swap).then("work_id_b").otherwise("work_id_a").alias("work_id_a"),
            pl.when(swap).then("work_id_a").otherwise("work_id_b").alias("work_id_b"),
            "kind",
        )
        .unique()
        .sort(list(LINK_SCHEMA))
    )


def _links(links: pl.DataFrame, work_ids: dict[int, str]) -> pl.DataFrame:
    """Links between distinct works, pointing from preprint/notice to the work it is about;
    undirected kinds are ordered by work id (ordered_links)."""
    rows = []
    for x, y, kind, forward in links.iter_rows():
        a, b = work_ids.get(x), work_ids.get(y)
        if a is None or b is None or a == b:
            continue
        rows.append((b, a, kind) if forward is False else (a, b, kind))
    return ordered_links(pl.DataFrame(rows, schema=LINK_SCHEMA, orient="row"))
