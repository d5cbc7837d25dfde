"""The title index's search (tasks/snapshots/index.py) on small dblp dumps written for each case:
a title of common words only, a word of the citer's own, a misspelt word. The index's limits
(how long a word's list may be before only the titles nearest in length are candidates) are
set small here, so a few dozen records stand for the millions that reach them."""

import shutil
from pathlib import Path

import pytest

from tasks.snapshots import dblp, index
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.store import build

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"


def _snapshot(folder: Path, titles: list[str]) -> Snapshot:
    """A dblp snapshot of one article per title, keyed journals/x/0, journals/x/1, ..."""
    dump = folder / "input"
    dump.mkdir(parents=True)
    shutil.copy(FIXTURES / "dblp.dtd", dump / "dblp.dtd")
    records = "".join(
        f'<article mdate="2026-11-01" key="journals/x/{n}"><author>Ada Lovelace</author>'
        f"<title>{title}.</title><journal>X</journal><year>2024</year></article>\n"
        for n, title in enumerate(titles)
    )
    (dump / "dblp.xml").write_text(
        '<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE dblp SYSTEM "dblp.dtd">\n'
        f"<dblp>\n{records}</dblp>\n",
        encoding="iso-8859-1",
    )
    build(dblp.BUILDER, [dump / "dblp.xml"], folder / "snapshots")
    snapshot = open_snapshot(folder / "snapshots", "dblp")
    assert snapshot is not None
    return snapshot


def _first(snapshot: Snapshot, title: str) -> str | None:
    [found] = snapshot.by_title([title])
    return found[0]["id"] if found else None


def test_a_title_of_common_words_only_finds_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every word of the title asked is in 31 titles: past CAP, so of each list only the titles
    # nearest its length are candidates. The record asked is the last written.
    longer = [f"Deep learning for images of {'many ' * n}kinds" for n in range(30)]
    monkeypatch.setattr(index, "CAP", 3)
    monkeypatch.setattr(index, "BUDGET", 10)
    with _snapshot(tmp_path, [*longer, "Deep Learning for Images"]) as snapshot:
        assert _first(snapshot, "Deep learning for images") == "journals/x/30"
        assert _first(snapshot, "Deep lerning for images") == "journals/x/30"
        # One common word: its titles nearest in length are the candidates.
        [found] = snapshot.by_title(["Images"])
        assert all(record["score"] >= 0.5 for record in found)
        # Stop words only, or words no title holds: nothing to look for, nothing found.
        assert snapshot.by_title(["On the", "Zyzzyva quux"]) == [[], []]


def test_a_word_of_the_citers_own_or_a_misspelt_one_still_finds_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The title asked adds "revisited", a word one other title holds (the rarest word asked),
    # and misspells "attention": the record is found by its other words.
    titles = [
        "Sparse attention with learned routing for long documents",
        "Transformers revisited",
        "Learned routing in networks",
        *(f"Sparse codes for long documents, part {n}" for n in range(8)),
        *(f"Learned attention over long documents, part {n}" for n in range(8)),
    ]
    monkeypatch.setattr(index, "BUDGET", 2)
    with _snapshot(tmp_path, titles) as snapshot:
        asked = "Sparse atention with learned routing for long documents revisited"
        assert _first(snapshot, asked) == "journals/x/0"
