"""`citeaudit zotero audit` against a fake Zotero web API over real HTTP: items read in pages
(a 429 with Backoff waited out), audited keyed by item key, findings written back as tags and
notes in batches, with `--fix` verified items corrected as `citeaudit fix` corrects a .bib, an
item the user changed meanwhile left alone, a refused key one line and exit 2; and the reader of
the API's JSON."""

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from pydantic import SecretStr

from models.audit import Checked
from tasks.frames import checked_from_row
from tasks.read.inputs import read_inputs
from tasks.registries.zotero import ZoteroLibrary
from tasks.render.zotero import NOTE_TAG, write_back, zotero_fix
from tests.fake_registry.fixtures import point_env_at
from tests.fake_registry.server import FakeRegistry
from tests.fake_zotero import ITEMS, FakeZotero

ROOT = Path(__file__).parents[1]
KEY = "zotero-secret-key-0123"
ORIGINAL = {item["key"]: item for item in json.loads(ITEMS.read_text())}
TOSATTO_DOI = "10.1038/srep16696"  # the DOI of TOSATTO1's record in the fake registry

pytestmark = pytest.mark.usefixtures("prefect_harness")


def zotero_audit(
    zotero: FakeZotero, out: Path, *extra: str, key: str = KEY, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {}), "CITEAUDIT_ZOTERO_URL": zotero.url, "ZOTERO_API_KEY": key}
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", "zotero", "audit", "--library-id", "475425"]
        + ["--job", "zlib", "--out", str(out), *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@dataclass
class Audited:
    done: subprocess.CompletedProcess[str]
    zotero: FakeZotero
    out: Path
    citations: pl.DataFrame


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Audited]:
    """One `zotero audit --write-back --fix` over the fake library, in pages of two after a 429
    with Backoff, while the user edits MADEUP23 (flagged) and CHEN2020 (verified, to correct)."""
    folder = tmp_path_factory.mktemp("zotero")
    edited = {"MADEUP23", "CHEN2020"}
    with (
        FakeRegistry() as registry,
        FakeZotero(api_key=KEY, page_cap=2, edit_after_read=edited) as zotero,
    ):
        zotero.refuse_next(429, backoff="1")
        env = point_env_at(registry, folder)
        done = zotero_audit(zotero, folder / "out", "--write-back", "--fix", env=env)
        assert done.returncode == 0, done.stderr
        citations = pl.read_parquet(folder / "out" / "zlib" / "citations.parquet")
        yield Audited(done, zotero, folder / "out", citations)


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


def test_audit_writes_back_tags_and_notes_and_leaves_a_changed_item_alone(audited):
    done, zotero = audited.done, audited.zotero
    gets = [path for method, path in zotero.requests if method == "GET" and "/items" in path]
    assert len(gets) >= 4  # three pages of two, the first asked again after its 429

    status = dict(zip(audited.citations["entry_key"], audited.citations["status"], strict=True))
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

    # a second look finds nothing more to write but the items the user changed meanwhile
    library = ZoteroLibrary("475425", api_key=SecretStr(KEY), url=zotero.url)
    again = write_back(library.items(), audited.citations, library.notes(NOTE_TAG))
    assert [i["key"] for i in again.items] == ["MADEUP23"]
    again = write_back(library.items(), audited.citations, library.notes(NOTE_TAG), fix=True)
    assert [i["key"] for i in again.items] == ["CHEN2020", "MADEUP23"]

    for path in audited.out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_fix_corrects_verified_items_with_their_version_and_nothing_else(audited):
    done, zotero = audited.done, audited.zotero
    status = dict(zip(audited.citations["entry_key"], audited.citations["status"], strict=True))
    assert status["TOSATTO1"] == "verified" and status["CHEN2020"] == "verified"
    # A missing DOI and missing pages are added, sent with the version the item was read at
    # (the fake refuses any other with 412), in the same object as the item's tags.
    sent = {o["key"]: o for batch in zotero.posted for o in batch if "key" in o}
    assert sent["TOSATTO1"]["version"] == ORIGINAL["TOSATTO1"]["version"]
    assert zotero.items["TOSATTO1"]["data"]["DOI"] == TOSATTO_DOI
    assert f"TOSATTO1: DOI = {TOSATTO_DOI} (it had none)" in done.stdout
    ralser = zotero.items["RALSER06"]["data"]
    assert ralser["pages"] == "e30" and ralser["tags"] == [{"tag": "metabolism"}]
    assert set(sent["RALSER06"]) == {"key", "version", "tags", "pages"}
    # What the matcher forgave stays the user's: RALSER06's `--` title, TOSATTO1's `Sci. Rep.`
    # and its three of the record's authors.
    for key in ("TOSATTO1", "RALSER06"):
        for name in ("title", "creators", "date", "publicationTitle"):
            assert zotero.items[key]["data"][name] == ORIGINAL[key]["data"][name], (key, name)
    # The user changed CHEN2020 while it was audited: its correction is refused (412),
    # reported, and the item is as the user left it.
    assert "CHEN2020: changed in Zotero since it was read; left alone" in done.stdout
    chen = zotero.items["CHEN2020"]["data"]
    assert chen["pages"] == "" and chen["extra"] == "edited by the user meanwhile"
    # A mismatch (and anything not verified) gets its tag and note, never a field.
    for key in ("WRONGDOI", "MADEUP23"):
        assert status[key] != "verified"
        data = {k: v for k, v in zotero.items[key]["data"].items() if k not in ("tags", "version")}
        original = {k: v for k, v in ORIGINAL[key]["data"].items() if k not in ("tags", "version")}
        assert data == original | ({"extra": chen["extra"]} if key == "MADEUP23" else {})


def test_fix_writes_in_batches_of_50(audited, tmp_path):
    """120 verified items each missing its DOI: three writes of 50, 50 and 20."""
    template = ORIGINAL["TOSATTO1"]
    items = []
    for number in range(1, 121):
        item = copy.deepcopy(template)
        item["key"] = item["data"]["key"] = f"TOSA{number:04d}"
        item["version"] = item["data"]["version"] = number
        items.append(item)
    path = tmp_path / "items.json"
    path.write_text(json.dumps(items))
    row = audited.citations.filter(pl.col("entry_key") == "TOSATTO1")
    citations = pl.concat([row.with_columns(entry_key=pl.lit(i["key"])) for i in items])
    with FakeZotero(api_key=KEY, items=path) as zotero:
        library = ZoteroLibrary("475425", api_key=SecretStr(KEY), url=zotero.url)
        plan = write_back(library.items(), citations, library.notes(NOTE_TAG), fix=True)
        outcome = library.write(plan.items)
        assert zotero.write_batches == [50, 50, 20]
        assert len(outcome.written) == 120 and not outcome.conflicts
        assert {i["data"]["DOI"] for i in zotero.items.values()} == {TOSATTO_DOI}


def test_fix_puts_the_doi_where_the_item_type_keeps_it(audited):
    """A type without a DOI field (a thesis, a book) keeps it as a line of extra; a missing
    author list is written as creators of type author, the item's editors kept."""
    row = audited.citations.filter(pl.col("entry_key") == "TOSATTO1").row(0, named=True)
    checked = checked_from_row(row)
    data = copy.deepcopy(ORIGINAL["TOSATTO1"]["data"])
    thesis = data | {"itemType": "thesis", "extra": "PMID: 26582456"}
    fields, changes, _ = zotero_fix(thesis, checked)
    assert fields == {"extra": f"PMID: 26582456\nDOI: {TOSATTO_DOI}"}
    assert [(c.field, c.old) for c in changes] == [("extra", "PMID: 26582456")]
    # a DOI of extra that no registry holds is replaced there (the DOI field stays empty)
    wrong = data | {"extra": "DOI: 10.9999/nowhere"}
    fields, _, _ = zotero_fix(wrong, claiming(checked, DOI="10.9999/nowhere"))
    assert fields == {"extra": f"DOI: {TOSATTO_DOI}"}
    # no authors: the record's, plain text, before the editors the item has
    editor = {"creatorType": "editor", "firstName": "Ann", "lastName": "Editor"}
    fields, _, _ = zotero_fix(data | {"creators": [editor]}, claiming(checked, author=None))
    record = checked.result.record
    assert record is not None and record.author is not None
    first = record.author[0]
    assert fields["creators"][0] == {
        "creatorType": "author",
        "firstName": first.given,
        "lastName": first.family,
    }
    assert fields["creators"][-1] == editor
    assert len(fields["creators"]) == len(record.author) + 1
    # a record of more than ten names would be `and others` in a .bib; Zotero cannot say that,
    # so the list is left alone and the doubt reported
    many = record.model_copy(update={"author": record.author * 3})
    long = checked.model_copy(update={"result": checked.result.model_copy(update={"record": many})})
    fields, changes, doubts = zotero_fix(data | {"creators": []}, claiming(long, author=None))
    assert "creators" not in fields and "creators" not in [c.field for c in changes]
    assert doubts == [
        f"the registry's author list ({len(record.author) * 3} names) is not written: Zotero "
        "keeps no `and others`"
    ]


def claiming(checked: Checked, **fields: object) -> Checked:
    """`checked` as if its item had claimed `fields` (as the reader would read the edited item)."""
    reference = checked.reference.model_copy(
        update={"item": checked.reference.item.model_copy(update=fields)}
    )
    return checked.model_copy(update={"reference": reference})


def test_fix_without_write_back_is_a_usage_error(tmp_path):
    with FakeZotero(api_key=KEY) as zotero:
        done = zotero_audit(zotero, tmp_path / "out", "--fix")
        assert zotero.requests == []  # refused before the library is read
    assert done.returncode == 2
    assert "--fix: corrections are written to the library; add --write-back" in done.stderr


def test_a_refused_key_is_one_line_and_exit_2(tmp_path):
    with FakeZotero(api_key=KEY) as zotero:
        done = zotero_audit(zotero, tmp_path / "out", key="not-the-key")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "API key is not accepted" in done.stderr and "not-the-key" not in done.stderr


def test_a_zotero_that_cannot_be_reached_is_one_line_and_exit_3(tmp_path):
    with FakeZotero(api_key=KEY) as zotero:
        pass
    done = zotero_audit(zotero, tmp_path / "out")  # the fake has stopped: nothing listens
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("citeaudit: error: Zotero library users/475425: not reachable")
    assert done.stderr.count("\n") == 1


def test_a_write_back_zotero_fails_is_said_and_exit_3(tmp_path):
    with FakeRegistry() as registry, FakeZotero(api_key=KEY) as zotero:
        zotero.refuse_writes = 500
        env = point_env_at(registry, tmp_path)
        done = zotero_audit(zotero, tmp_path / "out", "--write-back", env=env)
    assert done.returncode == 3, done.stderr
    assert done.stderr == (
        "citeaudit: error: write-back: Zotero library users/475425: refused (HTTP 500)\n"
    )
    assert (tmp_path / "out" / "zlib" / "citations.parquet").is_file()  # the audit was done
