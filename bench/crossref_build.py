"""Building a crossref snapshot from Crossref's public data file (#30): synthetic files in the
file's format (`N.json.gz`, each `{"items": [...]}` of 5,000 REST API work items) made from the
real works in ../shared/data/crossref (full records only: references, licences, links and all,
as the dump holds them), each work given its own DOI and its title a word of its own (the title
normaliser's cache would otherwise see 1,500 titles again and again).

Figures as bench/dump_build.py gives them. Goals: >= 50,000 records/s on 2 cores; the peak RSS
for 10M records within 1.2x of 1M's.

Run: nice uv run python -m bench.crossref_build [--records N ...] [--workdir DIR]
(default 1,000,000; each N in a fresh process tree; the files are kept under DIR, default
/tmp/citeaudit-bench)
"""

import json
from pathlib import Path
from typing import Any

import msgspec

from bench.dump_build import WORKERS, main, write_gzipped

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "crossref"
PER_FILE = 5_000


def real_works() -> list[dict[str, Any]]:
    """The full work records of ../shared/data/crossref (lists and single answers), by DOI."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(DATA.glob("lists/*.json")) + sorted(DATA.glob("*.json")):
        message = json.loads(path.read_text()).get("message")
        items = message.get("items") if isinstance(message, dict) else None
        for work in items if isinstance(items, list) else [message]:
            if isinstance(work, dict) and work.get("DOI") and work.get("type"):
                found.setdefault(str(work["DOI"]).lower(), work)
    return list(found.values())


def write_files(folder: Path, records: int) -> None:
    """The files of `records` works; a file already written (a run stopped mid-way) is kept."""
    works = real_works()
    folder.mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, records, PER_FILE)):
        target = folder / f"{number}.json.gz"
        if target.is_file():
            continue
        items = []
        for n in range(start, min(start + PER_FILE, records)):
            work = dict(works[n % len(works)])
            work["DOI"] = f"{work['DOI']}.{n}"
            titles = work.get("title") or ["Untitled"]
            work["title"] = [f"{titles[0]} {_word(n)}", *titles[1:]]
            items.append(work)
        encoded = msgspec.json.encode({"items": items})
        write_gzipped(target, encoded)


def _word(n: int) -> str:
    letters = ""
    n += 1
    while n:
        n, rest = divmod(n, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[rest]
    return "q" + letters


def _build(files: Path, root: Path) -> None:
    from tasks.snapshots import crossref, store

    store.build(crossref.builder(), [files], root, workers=WORKERS)


if __name__ == "__main__":
    main("bench.crossref_build", "crossref", write_files, _build, __doc__)
