"""Real records of the DBLP-ACM benchmark (tests/fixtures/dedupe/dblp_acm_sample.csv, copied from
../shared/data/dedupe) as References, for the dedupe tests."""

import csv
import html
from pathlib import Path

from bench.dedupe_sources import names, reference
from models.audit import Reference
from models.csl import CSLDate, CSLItem

FIXTURES = Path(__file__).parent / "fixtures" / "dedupe"


def dblp_acm_references(source: str | None = None) -> list[Reference]:
    """The sample's records, those of one `source` (DBLP2, ACM) or all."""
    with (FIXTURES / "dblp_acm_sample.csv").open(encoding="utf-8", newline="") as handle:
        return [
            reference(
                f"{row['source']}:{row['id']}",
                row["source"],
                CSLItem(
                    id=f"{row['source']}:{row['id']}",
                    type="paper-conference",
                    title=html.unescape(row["title"]),
                    author=names(row["authors"]),
                    container_title=html.unescape(row["venue"]),
                    issued=CSLDate.from_year(int(row["year"])),
                ),
            )
            for row in csv.DictReader(handle)
            if source is None or row["source"] == source
        ]
