"""Time to render 1,000 entries in each of the seven CSL styles (`uv run python -m bench.render`).

The entries are the 46 real items of ../shared/data/csl, repeated with fresh ids and titles; the
repeats keep their authors and years, so author-date styles also pay for heavy disambiguation.
"""

import json
import os
import resource
import sys
import time
from pathlib import Path

from models.csl import CSLItem
from tasks.render.citeproc import STYLES, render_bibliographies, render_bibliography

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ITEMS = SHARED / "csl" / "items.json"
ENTRIES = 1000
GOAL_S = 10.0


def thousand_items(base: list[dict[str, object]]) -> list[CSLItem]:
    items = []
    for n in range(ENTRIES):
        record = dict(base[n % len(base)])
        record["id"] = f"bench-{n}"
        record["title"] = f"{record.get('title') or 'Untitled'} (part {n // len(base) + 1})"
        items.append(CSLItem.from_csl(record))
    return items


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    if not ITEMS.exists():
        print(f"bench.render: {ITEMS} is missing; nothing to measure.")
        return 0
    items = thousand_items(json.loads(ITEMS.read_text(encoding="utf-8")))
    # CPU seconds of the pandoc children say what the work costs on a busy (shared) machine.
    load = os.getloadavg()[0]
    print(f"{ENTRIES} entries per style; load average {load:.1f} on {os.cpu_count()} cores")
    print(f"  {'style':<20} {'wall':>7} {'pandoc CPU':>11}")
    serial = cpu = 0.0
    for style in STYLES:
        start, cpu_start = time.perf_counter(), _children_cpu()
        bibliography = render_bibliography(items, style)
        elapsed, used = time.perf_counter() - start, _children_cpu() - cpu_start
        serial, cpu = serial + elapsed, cpu + used
        assert len(bibliography.entries) == ENTRIES
        print(f"  {style:<20} {elapsed:6.2f}s {used:10.2f}s")
    print(f"  {'total, one by one':<20} {serial:6.2f}s {cpu:10.2f}s")
    start = time.perf_counter()
    render_bibliographies(items)
    together = time.perf_counter() - start
    verdict = "meets" if together <= GOAL_S else "misses"
    print(f"  {'total, side by side':<20} {together:6.2f}s ({verdict} the {GOAL_S:.0f} s goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
