"""The report's works cited more than once, and the works related to one another (a preprint
and its published version, a paper and its retraction notice)."""

from typing import Any

import polars as pl

from tasks.dedupe.cluster import UNDIRECTED_LINKS
from tasks.dedupe.job import repeats_within_jobs
from tasks.report.flags import several_jobs
from tasks.report.rows import Duplicate, has_column, place_of, text_of, title_of

# How a link between works reads, from its first work to its second.
RELATIONS = {
    "preprint-of": "is a preprint of",
    "version-of": "is another version of",
    "co-publication": "is co-published with",
    "erratum-of": "is an erratum to",
    "retraction-of": "is the retraction notice of",
    "expression-of-concern-for": "is an expression of concern for",
    "chapter-of-same-book": "is a chapter of the same book as",
    "part-of": "is part of",
}


def related_citations(citations: pl.DataFrame, links: pl.DataFrame) -> list[dict[str, str]]:
    """Citations of this job whose works are related but not the same (a preprint and its
    published version, a conference paper and its journal version, a paper and its retraction
    notice): one row per link of a kind in RELATIONS, naming the first citation of each work
    (file and entry), in input order of the citation each row starts with."""
    if links.is_empty() or not has_column(citations, "work_id"):
        return []
    first = citations.with_row_index("position").group_by("work_id", maintain_order=True).first()
    cited = {row["work_id"]: row for row in first.iter_rows(named=True)}
    rows = []
    for a, b, kind in links.select("work_id_a", "work_id_b", "kind").iter_rows():
        if a in cited and b in cited and kind in RELATIONS:
            x, y = cited[a], cited[b]
            if kind in UNDIRECTED_LINKS and y["position"] < x["position"]:
                x, y = y, x
            rows.append(
                (
                    (x["position"], y["position"]),
                    {
                        "citation": f"{x['source_file']}: {x['entry_key']}",
                        "relation": RELATIONS[kind],
                        "related to": f"{y['source_file']}: {y['entry_key']}",
                    },
                )
            )
    return [row for _, row in sorted(rows, key=lambda pair: pair[0])]


def duplicates(citations: pl.DataFrame) -> list[Duplicate]:
    """Each work its job cites more than once, named by its title, with every citation of it
    (file and entry key), the one kept first: never by work or citation ids."""
    repeats = repeats_within_jobs(citations)
    if not repeats.height:
        return []
    group = [c for c in ("job_id", "work_id") if has_column(citations, c)]
    jobs = several_jobs(citations)
    repeated = set(repeats.select(group).iter_rows())
    repeat_ids = set(repeats["citation_id"])
    members: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in citations.iter_rows(named=True):
        key = tuple(row[c] for c in group)
        if key in repeated:
            members.setdefault(key, []).append(row)
    found = []
    for rows in members.values():
        rows.sort(key=lambda r: (r["citation_id"] in repeat_ids, r["citation_id"]))
        reasons = sorted({text_of(r.get("dup_reason")) for r in rows if r.get("dup_reason")})
        found.append(Duplicate(title_of(rows[0]), reasons, [place_of(r, jobs) for r in rows]))
    return found
