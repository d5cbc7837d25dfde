"""`citeaudit zotero audit` against a fake Zotero web API over real HTTP: items read in pages
(a 429 with Backoff waited out), audited keyed by item key, findings written back as tags and
notes in batches, an item the user changed meanwhile left alone, a refused key one line and
exit 2; and the reader of the API's JSON."""

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from pydantic import SecretStr

from tasks.read import read_inputs
from tasks.registries.zotero import ZoteroLibrary
from tasks.render.zotero import NOTE_TAG, write_back
from tests.fake_zotero import ITEMS, FakeZotero

ROOT = Path(__file__).parents[1]
KEY = "zotero-secret-key-0123"

pytestmark = pytest.mark.usefixtures("prefect_harness")


def zotero_audit(
    zotero: FakeZotero, out: Path, *extra: str, key: str = KEY
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CITEAUDIT_ZOTERO_URL": zotero.url, "ZOTERO_API_KEY": key}
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", "zotero", "audit", "--library-id", "475425"]
        + ["--job", "zlib", "--out", str(out), *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_reader_maps_items_and_passes_over_attachments():
    read = read_inputs([ITEMS])
    assert not read.errors
    by_key = {r.provenance.entry_key: r for r in read.references}
    assert sorted(by_key) == ["CHEN2020", "MADEUP23", "RALSER06", "TOSATTO1", "WRONGDOI"]
    assert by_key["RALSER06"].ids.doi == "10.1371/journal.pone.0000030"
    made = by_key["MADEUP23"].item
    assert made.type == "paper-conference"
    assert (
        made.container_title
        == "Proceedings of the 40th International Conference on Machine Learning"
    )
    assert [a.family for a in by_key["CHEN2020"].item.author or []][:2] == ["Chen", "Xie"]


def test_audit_writes_back_tags_and_notes_and_leaves_a_changed_item_alone(registry_env, tmp_path):
    with FakeZotero(api_key=KEY, page_cap=2, edit_after_read="MADEUP23") as zotero:
        zotero.refuse_next(429, backoff="1")
        done = zotero_audit(zotero, tmp_path / "out", "--write-back")
        assert done.returncode == 0, done.stderr
        gets = [path for method, path in zotero.requests if method == "GET" and "/items" in path]
        assert len(gets) >= 4  # three pages of two, the first asked again after its 429

        citations = pl.read_parquet(tmp_path / "out" / "zlib" / "citations.parquet")
        status = dict(zip(citations["entry_key"], citations["status"], strict=True))
        assert status["WRONGDOI"] == "mismatch" and status["RALSER06"] == "verified"
        assert "PDFATT01" not in status  # an attachment is no reference

        assert zotero.tags("WRONGDOI") == ["citeaudit:mismatch"]
        assert zotero.tags("RALSER06") == ["metabolism"]  # the earlier run's tag it no longer earns
        (note,) = zotero.notes("WRONGDOI")
        assert "mismatch" in note["note"] and "different paper" in note["note"]
        assert note["tags"] == [{"tag": NOTE_TAG}]
        # the user edited MADEUP23 while it was audited: reported, never overwritten
        assert "MADEUP23: changed in Zotero since it was read; left alone" in done.stdout
        assert zotero.tags("MADEUP23") == []
        assert zotero.items["MADEUP23"]["data"]["extra"] == "edited by the user meanwhile"
        assert all(size <= 50 for size in zotero.write_batches)

        # a second look finds nothing more to write for the items it wrote
        library = ZoteroLibrary("475425", api_key=SecretStr(KEY), url=zotero.url)
        again = write_back(library.items(), citations, library.notes(NOTE_TAG))
        assert [i["key"] for i in again.items] == ["MADEUP23"]

    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_refused_key_is_one_line_and_exit_2(tmp_path):
    with FakeZotero(api_key=KEY) as zotero:
        done = zotero_audit(zotero, tmp_path / "out", key="not-the-key")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "API key is not accepted" in done.stderr and "not-the-key" not in done.stderr
