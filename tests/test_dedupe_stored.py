"""The dedupe of records held in a working database (tasks/dedupe/stored.py, a bulk import's) a
group at a time gives what the dedupe of the records in memory gives, row for row: real records
of the DBLP-ACM and Cora samples (tests/fixtures/dedupe), a library of earlier jobs' records,
duplicates within the job and works an earlier run cited."""

import csv
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bench.dedupe_sources import cora_item, names, reference
from models.audit import Checked, Reference, Status, ValidationResult
from models.csl import CSLDate, CSLItem
from tasks.dedupe.job import dedupe_records, job_records, repeats_within_jobs
from tasks.dedupe.stored import add_library, add_new, add_previous, components, dedupe_stored
from tasks.store.scratch import Scratch
from tests.dedupe_samples import dblp_acm_references

FIXTURES = Path(__file__).parent / "fixtures" / "dedupe"


def dblp_acm(source: str) -> list[Reference]:
    return dblp_acm_references(source)


def cora() -> list[Reference]:
    with (FIXTURES / "cora_fields_sample.csv").open(encoding="utf-8", newline="") as handle:
        return [reference(f"cora:{r['id']}", "cora", cora_item(r)) for r in csv.DictReader(handle)]


def checked(refs: list[Reference]) -> list[Checked]:
    return [
        Checked(reference=r, result=ValidationResult(citation_id=r.citation_id, status=s))
        for r, s in zip(refs, [Status.UNVERIFIED, Status.NOT_FOUND] * len(refs), strict=False)
    ]


def rows(frame: pl.DataFrame, key: str | list[str]) -> list[dict]:
    return frame.sort(key).to_dicts()


@pytest.fixture(scope="module")
def inputs() -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """The job's records (ACM, Cora and a few of them cited twice), the library (DBLP, deduped
    as job `lib`) and the works an earlier run of the job cited (two the library holds, one
    no job holds any more)."""
    earlier = dedupe_records("lib", job_records("lib", checked(dblp_acm("DBLP2"))), pl.DataFrame())
    library = earlier.records.drop("job_id").sort("citation_id")
    acm, listed = dblp_acm("ACM"), cora()
    again = [
        r.model_copy(update={"citation_id": f"{r.citation_id}-2"}) for r in acm[:3] + listed[:2]
    ]
    # untitled and unidentified: no pair joins them, yet they found works on one key (numbered)
    bare = CSLItem(
        id="bare", type="article", author=names("John Smith"), issued=CSLDate.from_year(1999)
    )
    unnamed = [reference(f"bare:{n}", "bare", bare) for n in (3, 1, 2)]
    new = job_records("job", checked(unnamed[:1] + acm + listed + unnamed[1:] + again))
    previous = [*library["work_id"].unique().sort().head(2).to_list(), "w-0000000000000000"]
    return new, library, previous


@pytest.mark.parametrize("group", [1, 7, 5_000])
def test_stored_dedupe_gives_the_in_memory_dedupe_row_for_row(inputs, tmp_path, group) -> None:
    new, library, previous = inputs
    whole = dedupe_records("job", new, library, previous_works=previous)
    with Scratch(tmp_path) as spill:
        for start in range(0, new.height, 10):  # as an import adds them, a batch at a time
            add_new(spill, new.slice(start, 10))
        for start in range(0, library.height, 16):
            add_library(spill, library.slice(start, 16))
        add_previous(spill, pl.Series(previous))
        duplicates = dedupe_stored("job", spill, group=group)
        stored = {
            name: spill.frame(f"SELECT * FROM {name}")
            for name in ("job_columns", "job_records", "job_works", "job_links", "job_retired")
        }
    assert whole.columns["duplicate_of"].drop_nulls().len() >= 5  # the job's own repeats found
    numbered = whole.columns.filter(pl.col("citation_id").str.starts_with("bare:"))["work_id"]
    assert numbered.str.slice(18).sort().to_list() == ["", "-2", "-3"]
    assert rows(stored["job_columns"], "citation_id") == rows(whole.columns, "citation_id")
    assert rows(stored["job_records"], "citation_id") == rows(whole.records, "citation_id")
    assert rows(stored["job_works"], "work_id") == rows(whole.works, "work_id")
    assert rows(stored["job_links"], ["work_id_a", "work_id_b", "kind"]) == rows(
        whole.links, ["work_id_a", "work_id_b", "kind"]
    )
    assert stored["job_retired"]["work_id"].to_list() == whole.retired == ["w-0000000000000000"]
    assert duplicates == repeats_within_jobs(whole.columns).height


def test_components_label_each_node_with_its_smallest() -> None:
    # 0-3-5 (a path found out of order), 1-4, 2 alone; 6-7-8-9 a chain
    x = np.array([5, 3, 4, 9, 8, 7])
    y = np.array([3, 0, 1, 8, 7, 6])
    assert components(10, x, y).tolist() == [0, 1, 2, 0, 1, 0, 6, 6, 6, 6]
