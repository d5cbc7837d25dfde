"""HALLMARK with local snapshots (#30.1): the dev split decided by snapshots built from dumps.

    nice -n 15 uv run python -m bench.hallmark_snapshots [--show-errors] [--workdir DIR]

The snapshots' inputs are written in the dumps' own formats from what bench.hallmark's realistic
coverage lets the fake registry answer (`fill_realistic`: its DBLP hits, arXiv Atom entries,
Crossref works and OpenAlex works), beside the real records the fake bundles
(tests/fixtures/registry, recorded from ../shared/data):

| snapshot | input written                          | written by                                  |
|----------|----------------------------------------|---------------------------------------------|
| dblp     | dblp.xml.gz, dblp.dtd beside it        | build_snapshot_fixtures.dblp_records (the   |
|          |                                        | hits' `mdate` is their YEAR-06-01) and its  |
|          |                                        | constructed records (the newest mdate,      |
|          |                                        | 2026-11-02, dates the dump)                 |
| arxiv    | arxiv-metadata-oai-snapshot.json       | build_snapshot_fixtures.arxiv_record        |
| crossref | N.json.gz parts, `{"items": [work]}`   | the works as they are, PART works a file;   |
|          |                                        | arXiv's DataCite DOIs are not in Crossref's |
|          |                                        | file; a work without `indexed` (the         |
|          |                                        | benchmark's own) is indexed on DUMP_DATE    |
| openalex | data/works/updated_date=2026-11-01/    | the fake's OpenAlex works (recorded, and    |
|          | part_000.gz and the manifest           | the coverage's: all but one in twenty valid |
|          |                                        | entries), dated by their partition          |

Semantic Scholar has no snapshot (in the realistic coverage DBLP holds every valid work, so the
snapshots can decide each one).
HALLMARK has no retraction case: no Retraction Watch snapshot is built.

Each snapshot is built by `citeaudit snapshot build` (a real process; CITEAUDIT_SNAPSHOTS a
folder under DIR), then the split is audited three times, the snapshots asked first:
offline       no registry at all (`lookup_references(offline=True)`, no server started): what
              no snapshot decides stays `unmatched` (no identifier, a title search was made) or
              `unverified`, unless a complete snapshot's silence decides it
              (tasks/lookup/absence.py)
realistic     bench.hallmark's realistic registries without keys (S2 keyless and answering),
              asked for what the snapshots left
s2-refusing   bench.hallmark's `hallmark-s2-refusing` set-up (keyless, Semantic Scholar refusing
              every request, one attempt), what the snapshots left to the fake's live registries
Printed per run as bench.hallmark prints it: precision, recall, F1 and FPR, recall per
hallucination type, status counts, the biggest error classes, who decided (and, live, requests
per citation: all live requests over all citations, the goal's figure); then how many entries
the snapshots alone flag that S2's failure leaves `unverified` live, and the F1 had they been
flagged (a what-if, not citeaudit's figure).
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from bench.hallmark import (
    FLAGGED,
    SPLIT,
    Work,
    audit,
    fake_registry,
    fill_realistic,
    fill_s2_down,
    load_entries,
    look_up,
    read_references,
    report,
    report_requests,
    valid_works,
    with_unread,
)
from models.audit import Status, ValidationResult
from tasks.lookup import lookup_references
from tasks.lookup.snapshots import LocalSnapshots
from tasks.snapshots.store import status
from tests.fake_registry import FakeRegistry
from tests.fake_registry.build_snapshot_fixtures import (
    DBLP_CONSTRUCTED,
    OUT,
    arxiv_record,
    atom_entry,
    dblp_document,
    dblp_records,
)

ROOT = Path(__file__).resolve().parents[1]
PART = 500  # works per Crossref file (the real ones hold a few thousand)
DUMP_DATE = [2026, 11, 1]  # the `indexed` date of the benchmark's own Crossref works
ARXIV_DOI = "10.48550/"
OPENALEX_PARTITION = "updated_date=2026-11-01"  # the benchmark's OpenAlex works have no date


def coverage(works: list[Work], entries: list[dict[str, Any]]) -> FakeRegistry:
    """What the realistic registries hold: the fake's recorded records (not its synthetic
    retraction cases) and bench.hallmark's realistic coverage. Never started: only read."""
    fake = FakeRegistry(bundled=True, synthetic=False, rate_limits=False)
    fill_realistic(fake, works, entries)
    return fake


def write_dumps(fake: FakeRegistry, folder: Path) -> dict[str, Path]:
    """The fake's DBLP, arXiv and Crossref records as each dump's files; the input of each."""
    dblp, crossref = folder / "dblp", folder / "crossref"
    for made in (dblp, crossref):
        made.mkdir(parents=True, exist_ok=True)
    shutil.copy(OUT / "dblp.dtd", dblp / "dblp.dtd")
    document = dblp_document([*dblp_records(list(fake.scholarly.dblp.values())), DBLP_CONSTRUCTED])
    with gzip.open(dblp / "dblp.xml.gz", "wb") as out:
        out.write(document)
    arxiv = folder / "arxiv-metadata-oai-snapshot.json"
    records = [arxiv_record(atom_entry(xml)) for _, xml in sorted(fake.scholarly.arxiv.items())]
    arxiv.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    items = [
        {"indexed": {"date-parts": [DUMP_DATE]}, **work}
        for doi, work in sorted(fake.data.crossref.items())
        if not doi.startswith(ARXIV_DOI)
    ]
    for number, start in enumerate(range(0, len(items), PART)):
        with gzip.open(crossref / f"{number}.json.gz", "wt", encoding="utf-8") as out:
            json.dump({"items": items[start : start + PART]}, out)
    openalex = folder / "openalex"
    works = openalex / "data" / "works"
    part = works / OPENALEX_PARTITION / "part_000.gz"
    part.parent.mkdir(parents=True, exist_ok=True)
    stamp = {"updated_date": f"{OPENALEX_PARTITION.split('=')[1]}T00:00:00"}
    alex = [{**work, **stamp} for _, work in sorted(fake.scholarly.openalex.items())]
    with gzip.open(part, "wt", encoding="utf-8") as out:
        out.write("".join(json.dumps(work) + "\n" for work in alex))
    url = f"s3://openalex/data/works/{OPENALEX_PARTITION}/part_000.gz"
    (works / "manifest").write_text(json.dumps({"entries": [{"url": url}]}))
    print(
        f"dumps: dblp.xml.gz {len(fake.scholarly.dblp):,} hits, arXiv {len(records):,} records, "
        f"Crossref {len(items):,} works in {-(-len(items) // PART)} files, "
        f"OpenAlex {len(alex):,} works"
    )
    inputs = {"dblp": dblp / "dblp.xml.gz", "arxiv": arxiv, "crossref": crossref}
    return {**inputs, "openalex": openalex}


def build_all(inputs: dict[str, Path], root: Path) -> None:
    """Each snapshot built by the `citeaudit snapshot build` command, as a user builds it."""
    env = {**os.environ, "CITEAUDIT_SNAPSHOTS": str(root)}
    for name, path in inputs.items():
        began = time.perf_counter()
        command = [sys.executable, "-m", "flows.cli", "snapshot", "build", name, str(path)]
        subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True)
        print(f"build {name}: {time.perf_counter() - began:.1f} s")
    for snap in status(root):
        print(f"  {snap.name}@{snap.date}: {snap.records:,} records")


def held_back(
    entries: list[dict[str, Any]],
    offline: dict[str, ValidationResult],
    live: dict[str, ValidationResult],
) -> None:
    """How many hallucinated entries the snapshots alone flag but the live run leaves
    unverified (a live registry that could have held them failed), and the F1 had they stayed
    flagged: what the rule "a failed registry leaves the reference unverified" costs here."""
    tp = fp = fn = held = 0
    for entry in entries:
        key = entry["bibtex_key"]
        hallucinated, flagged = entry["label"] == "HALLUCINATED", live[key].status in FLAGGED
        unverified = live[key].status is Status.UNVERIFIED
        if hallucinated and unverified and offline[key].status in FLAGGED:
            flagged, held = True, held + 1
        tp += hallucinated and flagged
        fp += flagged and not hallucinated
        fn += hallucinated and not flagged
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    print(
        f"\n{held} hallucinated entries flagged by the snapshots alone (offline) are unverified "
        f"here, a live registry that may hold them having failed; flagged, recall would be "
        f"{tp / (tp + fn):.3f} and F1 {f1:.3f} (a what-if, not a figure of citeaudit)"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None, help="kept (default: a temp dir)")
    args = parser.parse_args(argv)
    if not SPLIT.exists():
        print(f"HALLMARK data not found at {SPLIT}: nothing to benchmark.")
        return 0
    print(f"load average: {' '.join(f'{n:.1f}' for n in os.getloadavg())}")
    entries = load_entries(SPLIT)
    refs = read_references(entries)
    works = valid_works(refs, {e["bibtex_key"]: e for e in entries})
    print(f"HALLMARK dev_public: {len(entries)} entries, {len(works)} distinct valid works")
    work = args.workdir or Path(os.environ.get("TMPDIR", "/tmp")) / f"hallsnap-{os.getpid()}"
    root = work / "snapshots"
    if root.exists():
        shutil.rmtree(root)
    try:
        build_all(write_dumps(coverage(works, entries), work / "dumps"), root)
        snapshots = LocalSnapshots.open(root)
        assert snapshots is not None
        print("\n=== no network at all: the snapshots only (offline, no server) ===")
        began = time.perf_counter()
        offline = partial(lookup_references, registries=None, offline=True, snapshots=snapshots)
        results = with_unread(entries, look_up(refs, offline))
        print(f"looked up in {time.perf_counter() - began:.1f} s")
        report(entries, results, args.show_errors)
        decided = Counter(r.registry or "-" for r in results.values())
        print("decided by: " + ", ".join(f"{k} {v}" for k, v in decided.most_common()))
        print("\n=== the realistic registries without keys, the snapshots first ===")
        with fake_registry() as registry:
            fill_realistic(registry, works, entries)
            answering = with_unread(entries, audit(refs, registry, snapshots=snapshots))
            report(entries, answering, args.show_errors)
            report_requests(refs, answering, registry)
        print("\n=== without keys, Semantic Scholar refusing everything, the snapshots first ===")
        with fake_registry() as registry:
            fill_s2_down(registry, works, entries)
            live = audit(refs, registry, snapshots=snapshots, max_attempts=1)
            live = with_unread(entries, live)
            report(entries, live, args.show_errors)
            report_requests(refs, live, registry)
        held_back(entries, results, live)
        snapshots.close()
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
