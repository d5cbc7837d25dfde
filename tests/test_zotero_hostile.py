"""A Zotero server that misbehaves, over real HTTP (tests/fake_zotero.py): paging that never
ends is stopped, a huge Backoff is capped and said; and a user's own note is never rewritten."""

import threading
from datetime import UTC, datetime
from typing import Any

import polars as pl
import pytest
from pydantic import SecretStr

from tasks.registries.zotero import MAX_PAGES, PAGE, ZoteroError, ZoteroLibrary
from tasks.render.zotero import MARKER, NOTE_TAG, write_back
from tests.fake_zotero import FakeZotero

KEY = "zotero-secret-key-0123"


def library(zotero: FakeZotero, max_pages: int = MAX_PAGES) -> ZoteroLibrary:
    return ZoteroLibrary("475425", api_key=SecretStr(KEY), url=zotero.url, max_pages=max_pages)


def test_notes_stop_when_a_full_page_repeats():
    with FakeZotero(api_key=KEY, endless="repeat", total_results=10**9) as zotero:
        notes = library(zotero).notes("citeaudit")
    assert len(notes) == PAGE  # the first page, each note once
    assert len(zotero.requests) == 2  # the second page repeated the first: no third


def test_paging_stops_at_total_results():
    with FakeZotero(api_key=KEY, endless="fresh", total_results=250) as zotero:
        notes = library(zotero).notes("citeaudit")
        items = library(zotero).items()
    assert len(notes) == len(items) == 300  # three full pages reach 250
    assert len(zotero.requests) == 6


def test_paging_without_end_is_refused_past_the_most_pages():
    with FakeZotero(api_key=KEY, endless="fresh") as zotero:  # no Total-Results
        with pytest.raises(ZoteroError, match="still paging after 5 pages"):
            library(zotero, max_pages=5).notes("citeaudit")
        assert len(zotero.requests) == 5


def test_a_huge_backoff_is_capped_and_said():
    """Backoff 100000 and a Retry-After date far ahead wait the registries' cap, said on stderr,
    with no timer left behind to hold the process open."""
    slept: list[float] = []
    said: list[str] = []
    with FakeZotero(api_key=KEY) as zotero:
        zotero.refuse_next(429, backoff="100000")
        zotero.refuse_next(503, retry_after="Wed, 21 Oct 2099 07:28:00 GMT")
        found = ZoteroLibrary(
            "475425",
            api_key=SecretStr(KEY),
            url=zotero.url,
            retry_after_cap_s=120.0,
            sleep=slept.append,
            notice=said.append,
        ).items()
    assert len(found) == 6
    assert 119 < max(slept) <= 120.0
    assert said == [
        f"citeaudit: Zotero library users/475425 asks to wait; waiting {s:.0f} s"
        for s in slept
        if s > 60
    ]
    assert len(said) == 2
    assert not [t for t in threading.enumerate() if isinstance(t, threading.Timer)]


def citations(**status: str) -> pl.DataFrame:
    """The job's rows as write_back reads them: `entry_key=status` each."""
    return pl.DataFrame(
        [
            {
                "entry_key": key,
                "status": value,
                "reason": f"the {value} reason",
                "error": None,
                "matched_id": None,
                "registry": None,
                "checked_at": datetime(2026, 12, 7, tzinfo=UTC),
            }
            for key, value in status.items()
        ]
    )


def test_only_notes_citeaudit_wrote_are_updated():
    """A user's own note tagged `citeaudit` is left as it is; citeaudit's own (its marker) is
    updated."""
    with FakeZotero(api_key=KEY) as zotero:
        zotero.items["USERNOTE"] = note("USERNOTE", "WRONGDOI", "<p>My own reading notes</p>")
        ours = f"<div {MARKER}>\n<h2>citeaudit: unverified</h2>\n</div>"
        zotero.items["OURNOTE1"] = note("OURNOTE1", "RALSER06", ours)
        lib = library(zotero)
        plan = write_back(
            lib.items(), citations(WRONGDOI="mismatch", RALSER06="verified"), lib.notes(NOTE_TAG)
        )
        lib.write(plan.notes)
        user = zotero.items["USERNOTE"]["data"]
        assert user["note"] == "<p>My own reading notes</p>" and user["version"] == 1
        (updated,) = [n for n in zotero.notes("RALSER06")]
        assert "it verifies now" in updated["note"] and MARKER in updated["note"]
        added = [n for n in zotero.notes("WRONGDOI") if n["key"] != "USERNOTE"]
        assert len(added) == 1 and MARKER in added[0]["note"] and "mismatch" in added[0]["note"]


def note(key: str, parent: str, text: str) -> dict[str, Any]:
    data = {
        "key": key,
        "version": 1,
        "itemType": "note",
        "parentItem": parent,
        "note": text,
        "tags": [{"tag": NOTE_TAG}],
    }
    return {"key": key, "version": 1, "library": {"type": "user", "id": 475425}, "data": data}
