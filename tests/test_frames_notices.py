"""A retracted, corrected or concerned work keeps its status, and its notice is in
citations.parquet where a reader (and --fail-on) can act on it."""

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from models.audit import Checked, Lookup, Provenance, Reference, Status
from models.csl import CSLItem
from tasks.frames import citations_frame, result_from_row
from tasks.match.decide import decide_identified
from tasks.registries.crossref_map import crossref_work_to_csl

WORK = json.loads(
    (
        Path(__file__).parent
        / "fixtures"
        / "registries"
        / "crossref_10.1371_journal.pone.0033693.json"
    ).read_text()
)["message"]


def test_retraction_notice_columns_round_trip(tmp_path: Path) -> None:
    work = {
        **WORK,
        "updated-by": [
            *WORK["updated-by"],  # the real correction notice of 2012
            {
                "DOI": "10.1371/journal.pone.0999999",
                "type": "retraction",
                "source": "retraction-watch",
                "reasons": ["+Manipulation of Images"],
                "updated": {"date-parts": [[2023, 6, 1]]},
            },
        ],
    }
    record = crossref_work_to_csl(work)
    ref = Reference(
        citation_id="c1",
        item=CSLItem.model_validate(
            {"id": "k", "title": record.item.title, "DOI": record.identifier}
        ),
        provenance=Provenance(source_file="refs.bib", entry_key="sadasivan2012"),
    )
    result = decide_identified(ref, Lookup(identifier=record.identifier, record=record))
    assert result.status is Status.VERIFIED and result.retracted and result.corrected
    path = tmp_path / "citations.parquet"
    citations_frame("job", [Checked(reference=ref, result=result)]).write_parquet(path)
    (row,) = pl.read_parquet(path).iter_rows(named=True)
    assert row["status"] == "verified"
    assert (row["notice_kind"], row["notice_id"], row["notice_date"]) == (
        "retraction",
        "10.1371/journal.pone.0999999",
        "2023-06-01",
    )
    assert row["notice_url"] == "https://doi.org/10.1371/journal.pone.0999999"
    assert (row["notice_source"], row["notice_reason"]) == (
        "retraction-watch",
        "Manipulation of Images",
    )
    assert result_from_row(row).notices == result.notices
    assert [n["kind"] for n in json.loads(row["notices_json"])] == ["correction", "retraction"]


@pytest.mark.usefixtures("prefect_harness")
def test_fail_on_retracted_gates_and_the_notice_reaches_the_parquet(registry_env, tmp_path):
    """Through the CLI against the fake registry's retracted record (Retraction Watch notice)."""
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{rw2012,\n  doi = {10.5555/citeaudit.retracted-rw}\n}\n")
    args = ["audit", str(bib), "--job", "rw", "--out", str(tmp_path / "out"), "--styles", "apa"]
    result = CliRunner().invoke(app, [*args, "--fail-on", "retracted"])
    assert result.exit_code == 1, result.output
    (row,) = pl.read_parquet(tmp_path / "out" / "rw" / "citations.parquet").iter_rows(named=True)
    assert (row["status"], row["retracted"]) == ("verified", True)
    assert (row["notice_kind"], row["notice_id"], row["notice_source"], row["notice_date"]) == (
        "retraction",
        "10.5555/citeaudit.retracted-rw.notice",
        "retraction-watch",
        "2024-01-01",
    )
    assert CliRunner().invoke(app, [*args, "--fail-on", "mismatch"]).exit_code == 0
