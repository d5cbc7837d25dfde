"""Building an openalex snapshot from OpenAlex's works snapshot: synthetic parts in the
snapshot's format (`updated_date=YYYY-MM-DD/part_NNN.gz`, gzipped JSON lines, PER_PART works
each, and the `manifest` listing them) made from the real, full OpenAlex works in
../shared/data/registries/refchecker/api_cache/openalex (authorships with institutions,
abstracts' inverted indexes, referenced works, concepts and all: ~13 KB of JSON a work), each
given its own id and DOI and its title a word of its own.

Figures as bench/dump_build.py gives them. Goals: >= 20,000 works/s of CPU on 2 cores; the peak
RSS for 10M works within 1.2x of 1M's.

Run: nice uv run python -m bench.openalex_build [--records N ...] [--workdir DIR]
(default 1,000,000; each N in a fresh process tree; the files are kept under DIR, default
/tmp/citeaudit-bench)
"""

import json
from pathlib import Path
from typing import Any

import msgspec

from bench.crossref_build import _word
from bench.dump_build import ROOT, WORKERS, main, write_gzipped

DATA = ROOT.parent / "shared" / "data" / "registries" / "refchecker" / "api_cache" / "openalex"
PER_PART = 50_000
PARTITION = "updated_date=2026-11-01"


def real_works() -> list[dict[str, Any]]:
    """The OpenAlex works of the cache (lists and single answers), by id."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(DATA.glob("*.json")):
        body = json.loads(path.read_text())
        listed = body.get("results", [body]) if isinstance(body, dict) else body
        for work in listed if isinstance(listed, list) else []:
            if isinstance(work, dict) and str(work.get("id", "")).startswith("https://openalex"):
                found.setdefault(work["id"], work)
    return list(found.values())


def write_files(folder: Path, records: int) -> None:
    """The parts of `records` works and the manifest; a part already written is kept."""
    works = real_works()
    parts = folder / "data" / "works" / PARTITION
    parts.mkdir(parents=True, exist_ok=True)
    entries = []
    for number, start in enumerate(range(0, records, PER_PART)):
        target = parts / f"part_{number:03d}.gz"
        entries.append({"url": f"s3://openalex/data/works/{PARTITION}/{target.name}"})
        if target.is_file():
            continue
        lines = []
        for n in range(start, min(start + PER_PART, records)):
            work = dict(works[n % len(works)])
            work["id"] = f"https://openalex.org/W{9_000_000_000 + n}"
            work["doi"] = f"https://doi.org/10.99999/bench.{n}"
            work["ids"] = {**(work.get("ids") or {}), "doi": work["doi"]}
            work["display_name"] = work["title"] = f"{work.get('title') or 'Untitled'} {_word(n)}"
            lines.append(msgspec.json.encode(work))
        write_gzipped(target, b"\n".join(lines) + b"\n")
    (folder / "data" / "works" / "manifest").write_text(json.dumps({"entries": entries}))


def _build(files: Path, root: Path) -> None:
    from tasks.snapshots import openalex, store

    store.build(openalex.builder(), [files], root, workers=WORKERS)


if __name__ == "__main__":
    main("bench.openalex_build", "openalex", write_files, _build, __doc__)
