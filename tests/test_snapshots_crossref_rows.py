"""What a crossref snapshot stores, row by row, against the rows a build stored before the
reader was made fast (tests/fixtures/snapshots/crossref_rows.json.gz, written by the reader of
commit 63b0eb0: each work through crossref_map.slim_work and textnorm.normalise_title one by
one): the three fixture files, the 1,364 recorded Crossref works
(tests/fixtures/registry/crossref_works.jsonl.gz: markup, entities, non-Latin titles, LaTeX,
subtitles, organisations, notices) and works of shapes the public data file may hold beside the
documented one (a title given as a string, numbers where strings are expected, a DOI as a
resolver URL, dates without parts, an author that is no object).

Regenerate the expected rows only from a reader known to be right:
`uv run python -m tests.test_snapshots_crossref_rows`."""

import gzip
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.registries.crossref_map import doi_of
from tasks.snapshots import crossref
from tasks.snapshots.index import open_snapshot
from tasks.snapshots.store import build, title_keys
from tasks.textnorm import normalise_title

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = FIXTURES / "snapshots" / "crossref_rows.json.gz"

ODD_WORKS: list[Any] = [
    {"DOI": "https://doi.org/10.1234/Resolver.URL", "title": "A title given as a string"},
    {"DOI": "doi:10.1234/TRAILING.", "title": ["  Spaced \n out\ttitle  "], "volume": 12},
    {"DOI": "10.1234/%3Cencoded%3E", "title": ["<i>Italic</i> &amp; entities &lt;3"]},
    {"DOI": "10.48550/arXiv.2404.05961", "type": "posted-content", "title": ["An arXiv DOI"]},
    {
        "DOI": "10.1234/dates",
        "title": ["", "The second title"],
        "subtitle": [None, "A subtitle"],
        "issued": {"date-parts": [[None]]},
        "published-online": {"date-parts": [[2019, 13, 40]]},
        "indexed": {"date-parts": [[2020, 2, 30]]},
        "page": 7,
        "issue": "",
    },
    {
        "DOI": "10.1234/people",
        "title": ['{BERT}: $\\alpha$-pre-training of Sch\\"{o}lkopf’s ＢＥＲＴ — Ёжик が'],
        "author": [
            None,
            {"given": "Ada", "family": "Lovelace", "suffix": "Jr."},
            {"name": "The <b>Consortium</b>"},
            {"given": "Only a given name"},
            {"family": "  Van   der Maaten ", "given": ""},
        ],
        "container-title": ["", "  Journal &amp; Letters "],
        "issued": {"date-parts": [[99999]]},
        "created": {"date-parts": [[2001]]},
    },
    {
        "DOI": "10.1234/notices",
        "title": ["A work with notices"],
        "updated-by": [
            {"DOI": "10.1234/notice.1", "type": "Retraction", "updated": {"date-parts": [[2024]]}},
            {"DOI": "10.1234/notice.2", "type": "new_version"},
        ],
        "update-to": [{"DOI": "10.1234/NOTICES", "type": "expression-of-concern"}],
    },
    {"DOI": "10.1234/no-title", "author": {"given": "not a list"}, "issued": {}},
    {"DOI": "   "},
    [],
]


def inputs(folder: Path) -> Path:
    """The fixture files, the recorded works as a fourth file and the odd works as a fifth."""
    folder.mkdir(parents=True)
    for part in sorted((FIXTURES / "snapshots" / "crossref").iterdir()):
        shutil.copy(part, folder / part.name)
    with gzip.open(FIXTURES / "registry" / "crossref_works.jsonl.gz", "rt") as lines:
        recorded = [json.loads(line) for line in lines]
    for number, items in ((3, recorded), (4, ODD_WORKS)):
        encoded = json.dumps({"items": items}).encode()
        (folder / f"{number}.json.gz").write_bytes(gzip.compress(encoded))
    return folder


def stored_rows(folder: Path, root: Path) -> list[dict[str, Any]]:
    """Every row of the snapshot built from `folder` (with its title key), by id."""
    build(crossref.builder(), [folder], root, workers=2)
    snapshot = open_snapshot(root, "crossref")
    assert snapshot is not None
    with snapshot:
        records = snapshot._records(set(range(snapshot.manifest.records)))
    rows = sorted(records.values(), key=lambda row: row["id"])
    return json.loads(json.dumps(rows, default=str))  # dates as ISO text, as stored


def test_a_build_stores_the_rows_it_stored_before(tmp_path: Path) -> None:
    rows = stored_rows(inputs(tmp_path / "input"), tmp_path / "snapshots")
    expected = json.loads(gzip.decompress(EXPECTED.read_bytes()))
    assert len(rows) == len(expected) == 1_372
    by_id = {row["id"]: row for row in rows}
    assert len(by_id) == len(rows)
    for row in expected:  # by id: the order of rids is the index build's, not the reader's
        assert by_id[row["id"]] == row


def _recorded_titles() -> list[str]:
    titles = []
    for name in ("crossref_works", "iclr_crossref_works", "dblp_hits"):
        with gzip.open(FIXTURES / "registry" / f"{name}.jsonl.gz", "rt") as lines:
            for line in lines:
                record = json.loads(line)
                title = record.get("title") or record.get("info", {}).get("title")
                titles.extend(title if isinstance(title, list) else [title])
    return [t for t in titles if isinstance(t, str)]


def _expected_keys(titles: list[str | None]) -> list[str | None]:
    return [normalise_title(t) if t else None for t in titles]


def test_title_keys_in_arrow_are_normalise_titles_of_the_recorded_titles() -> None:
    titles: list[str | None] = [*_recorded_titles(), None, "", " ", "--", "A&B", "Ünïcode"]
    assert len(titles) > 3_000
    assert title_keys(pa.array(titles)).to_pylist() == _expected_keys(titles)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.text(alphabet=st.characters(max_codepoint=0x7F)),  # the titles keyed in Arrow
            st.text(alphabet=st.sampled_from("aZ09 -_.:;'\"<>&{}$\\\t\nÖé€ß")),
        ),
        max_size=20,
    )
)
def test_title_keys_in_arrow_are_normalise_titles_of_any_text(titles: list[str | None]) -> None:
    assert title_keys(pa.array(titles, pa.string())).to_pylist() == _expected_keys(titles)


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("10.23456789/aB%()<>[]{}:;,\"' \t\u00a0\u0661doiDOIrg:/-_"))
)
def test_a_doi_is_normalised_as_crossref_map_does(suffix: str) -> None:
    for value in (suffix, f"10.1234/{suffix}", f"10.{suffix}", f"{suffix}10.12345/x"):
        assert crossref._doi(value) == doi_of(value)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        found = stored_rows(inputs(Path(scratch) / "input"), Path(scratch) / "snapshots")
    EXPECTED.write_bytes(gzip.compress(json.dumps(found, indent=0).encode(), mtime=0))
    print(f"{len(found)} rows written to {EXPECTED}", file=sys.stderr)
