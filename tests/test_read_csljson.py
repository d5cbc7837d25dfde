"""CSL-JSON reader on real manubot and Crossref CSL-JSON, and a malformed list."""

import json
from pathlib import Path

from models.audit import Reference
from tasks.read.csljson import read

FIXTURES = Path(__file__).parent / "fixtures" / "reflists"


def test_every_item_of_real_lists_is_read() -> None:
    names = ["manubot_citation-rendering_manual-references.json", "manubot_bibliography.json"]
    paths = [FIXTURES / name for name in names]
    expected = sum(len(json.loads(p.read_text())) for p in paths)

    result = read(paths)

    assert result.errors == []
    assert len(result.references) == expected
    elife = result.references[-2]
    assert elife.ids.doi == "10.7554/elife.32822"
    assert elife.ids.pmid == "29424689" and elife.ids.pmcid == "PMC5832410"
    assert result.references[-1].provenance.entry_key == "#2"  # written without an id


def test_single_crossref_item() -> None:
    result = read([FIXTURES / "manubot_crossref-deep-review-csl.raw.json"])
    (reference,) = result.references
    assert reference.item.container_title == "Journal of The Royal Society Interface"
    assert reference.ids.doi == "10.1098/rsif.2017.0387"
    assert reference.item.ISSN == "1742-5689, 1742-5662"


def test_bad_items_are_reported_and_the_others_kept() -> None:
    path = FIXTURES / "malformed" / "bad_item.json"
    result = read([path])
    assert [r.provenance.entry_key for r in result.references] == ["good-1", "#4"]
    assert [(e.source_file, e.entry_key) for e in result.errors] == [
        (str(path), "bad-author"),
        (str(path), "#3"),
    ]
    assert "author" in result.errors[0].reason


def test_broken_json_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"id": "a", "title": "x"},\n {"id": "b", ')
    result = read([path])
    assert result.references == []
    assert len(result.errors) == 1 and result.errors[0].line == 2


def test_a_loosely_keyed_json_list_is_read_as_the_csl_it_stands_for() -> None:
    # RefChecker's extraction of an ICLR-2026 bibliography (authors as strings, `year`, `venue`,
    # `doi`, `url`), and the same list converted to CSL for tests/test_iclr_audit.py: both read
    # alike. Read as CSL alone, each entry kept only its title.
    loose = read([FIXTURES / "refchecker" / "openreview_5vdw8Qmrre.json"])
    csl = read([FIXTURES / "iclr2026" / "openreview_5vdw8Qmrre.json"])
    assert loose.errors == [] and len(loose.references) == len(csl.references) == 47

    def fields(ref: Reference) -> tuple[object, ...]:
        item = ref.item
        names = [n.family or n.literal for n in item.author or []]
        return (item.title, names, item.year(), item.container_title, ref.ids.doi, ref.ids.arxiv)

    assert [fields(r) for r in loose.references] == [fields(r) for r in csl.references]


def test_a_one_word_author_is_read_as_a_group_not_a_surname(tmp_path: Path) -> None:
    # "OpenAI" as a surname is a person the GPT-4 report's record does not list (a mismatch on
    # authors); as CSL's literal it is the group byline it is.
    path = tmp_path / "refs.json"
    path.write_text(json.dumps([{"title": "Gpt-4 technical report", "authors": ["OpenAI"]}]))
    (reference,) = read([path]).references
    assert [n.model_dump(exclude_none=True) for n in reference.item.author or []] == [
        {"literal": "OpenAI"}
    ]
