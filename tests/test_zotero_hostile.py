"""A Zotero server that misbehaves, over real HTTP (tests/fake_zotero.py): paging that never
ends is stopped."""

import pytest
from pydantic import SecretStr

from tasks.registries.zotero import MAX_PAGES, PAGE, ZoteroError, ZoteroLibrary
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
