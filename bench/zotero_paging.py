"""A Zotero server that pages without end (the fake of tests/fake_zotero.py, over real HTTP):
full pages of new notes and no Total-Results. `notes()` must stop at its page limit
(tasks/registries/zotero.MAX_PAGES) with one error, its memory bounded by what those pages hold;
the figures are the time it took and the process's peak RSS (the fake server included).

    uv run python -m bench.zotero_paging
"""

import resource
import time

from pydantic import SecretStr

from tasks.registries.zotero import MAX_PAGES, ZoteroError, ZoteroLibrary
from tests.fake_zotero import FakeZotero

KEY = "bench-key"
# The goal: refused, with a peak RSS under this.
GOAL_PEAK_MB = 500


def main() -> None:
    with FakeZotero(api_key=KEY, endless="fresh", patience=MAX_PAGES + 1) as zotero:
        library = ZoteroLibrary("475425", api_key=SecretStr(KEY), url=zotero.url)
        started = time.monotonic()
        try:
            library.notes("citeaudit")
            outcome = "read to an end (MISSED: the server never ends)"
        except ZoteroError as exc:
            outcome = f"refused: {exc}"
        seconds = time.monotonic() - started
        requests = len(zotero.requests)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    verdict = "met" if peak_mb < GOAL_PEAK_MB and outcome.startswith("refused") else "MISSED"
    print(f"zotero notes, endless pages: {outcome}")
    print(f"  {requests} requests, {seconds:.1f} s, peak RSS {peak_mb:.0f} MB ({verdict})")


if __name__ == "__main__":
    main()
