"""Time to export 20,000 DOI-only items as BibTeX, RIS and CSL-JSON (`uv run python -m
bench.exports`).

The worst case for made-up citation keys: items without author, year or title all share the base
key `anonnd`, so each needs a suffix (issue #20 measured 120 s for this before keys were linear).
"""

import time

from models.csl import CSLItem
from tasks.render.exports import ExportEntry, citation_keys, to_bibtex, to_csl_json, to_ris

ITEMS = 20_000
GOAL_S = 10.0


def doi_only_entries(count: int) -> list[ExportEntry]:
    return [
        ExportEntry(
            CSLItem.from_csl({"id": f"c{n}", "DOI": f"10.5555/bench.{n}"}),
            status="unverified",
            reason="offline",
        )
        for n in range(count)
    ]


def main() -> int:
    entries = doi_only_entries(ITEMS)
    figures = {}
    for name, export in (
        ("citation keys", citation_keys),
        ("BibTeX", to_bibtex),
        ("RIS", to_ris),
        ("CSL-JSON", to_csl_json),
    ):
        start = time.perf_counter()
        export(entries)
        figures[name] = time.perf_counter() - start
    total = sum(figures[n] for n in ("BibTeX", "RIS", "CSL-JSON"))
    print(f"bench.exports: {ITEMS:,} DOI-only items (all sharing the base key 'anonnd')")
    for name, seconds in figures.items():
        print(f"  {name:<14} {seconds:6.2f} s")
    verdict = "met" if total <= GOAL_S else "MISSED"
    print(f"  all three exports {total:.2f} s (goal <= {GOAL_S:.0f} s: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
