"""BibTeX, RIS and CSL-JSON exports of the 46 real CSL items, read back by their own parsers."""

import json
from pathlib import Path

import bibtexparser
import pytest
import rispy
from bibtexparser.middlewares import LatexDecodingMiddleware

from models.csl import CSLItem
from tasks.render import exports
from tasks.render.exports import (
    ExportEntry,
    citation_keys,
    latex_text,
    to_bibtex,
    to_csl_json,
    to_ris,
)
from tests.reliability_data import bundled_works

FIXTURES = Path(__file__).parent / "fixtures" / "csl"


@pytest.fixture(scope="module")
def items() -> list[CSLItem]:
    data = json.loads((FIXTURES / "items.json").read_text(encoding="utf-8"))
    return [CSLItem.from_csl(record) for record in data]


SPECIAL = CSLItem.from_csl(
    {
        "id": "special",
        "type": "article-journal",
        "title": "R&D at 50% of {cost}: the_best #1 Café Müller, Straße — “quoted” 深度",
        "author": [
            {"family": "Müller", "given": "Jörg"},
            {"literal": "World Health Organization"},
            {"family": "Beethoven", "given": "Ludwig", "non-dropping-particle": "van"},
        ],
        "container-title": "Journal of R&D",
        "issued": {"date-parts": [[2023, 5, 1]]},
        "page": "10-20",
        "DOI": "10.1000/a_b%c",
        "URL": "https://example.org/x?a=1&b=2_3",
    }
)


def _parsed(text: str) -> bibtexparser.Library:
    library = bibtexparser.parse_string(text, append_middleware=[LatexDecodingMiddleware()])
    assert library.failed_blocks == []
    return library


def test_bibtex_round_trip_keeps_the_data(items: list[CSLItem]) -> None:
    library = _parsed(to_bibtex(items))
    raw = bibtexparser.parse_string(to_bibtex(items))  # URLs/DOIs are verbatim, not LaTeX
    assert len(library.entries) == len(items)
    for item, entry, verbatim in zip(items, library.entries, raw.entries, strict=True):
        fields = entry.fields_dict
        if item.title:
            assert fields["title"].value == item.title
        if item.year():
            assert fields["year"].value == str(item.year())
        if item.DOI:
            assert verbatim.fields_dict["doi"].value == item.DOI
        if item.URL:
            assert verbatim.fields_dict["url"].value == item.URL
        if item.volume:
            assert fields["volume"].value == item.volume
        families = [n.family or n.literal for n in item.author or [] if n.family or n.literal]
        for family in families:
            assert family in fields["author"].value


def test_bibtex_escapes_latex_specials_and_keeps_them_on_reading() -> None:
    text = to_bibtex([SPECIAL])
    for escaped in (r"R\&D", r"50\%", r"\{cost\}", r"the\_best", r"\#1"):
        assert escaped in text
    assert "{World Health Organization}" in text  # an organisation, not Organization, W. H.
    assert "pages = {10--20}" in text
    entry = _parsed(text).entries[0]
    assert entry.fields_dict["title"].value == SPECIAL.title
    assert entry.fields_dict["journal"].value == "Journal of R&D"
    assert entry.entry_type == "article"
    raw = bibtexparser.parse_string(text).entries[0]
    assert raw.fields_dict["doi"].value == "10.1000/a_b%c"


def test_bibtex_types(items: list[CSLItem]) -> None:
    types = {e.key: e.entry_type for e in _parsed(to_bibtex(items)).entries}
    by_id = dict(zip((i.id for i in items), citation_keys(items), strict=True))
    assert types[by_id["item-02"]] == "article"
    assert types[by_id["item-24"]] == "incollection"
    assert types[by_id["item-27"]] == "phdthesis"
    assert types[by_id["item-35"]] == "book"
    assert types[by_id["item-46"]] == "misc"


def test_citation_keys_are_the_inputs_own(items: list[CSLItem]) -> None:
    """A `\\cite{item-02}` in the user's paper must still resolve."""
    assert citation_keys(items) == [item.id for item in items]
    assert citation_keys([SPECIAL, SPECIAL]) == ["special", "speciala"]  # a repeat gets a suffix
    numbered = CSLItem.from_csl({"id": "12", "title": "Deep learning"})  # a line number: no key
    assert citation_keys([numbered]) == ["anonnddeep"]


def test_made_up_citation_keys_are_readable_unique_and_stable(items: list[CSLItem]) -> None:
    entries = [ExportEntry(item) for item in items]  # the input gave no keys
    keys = citation_keys(entries)
    assert len(set(keys)) == len(keys)
    assert keys == citation_keys(entries)
    assert keys[1] == "smith2014honey"
    twice = citation_keys([ExportEntry(SPECIAL)] * 3)
    assert twice == ["muller2023rd", "muller2023rda", "muller2023rdb"]
    assert citation_keys([ExportEntry(CSLItem.from_csl({"id": "x"}))]) == ["anonnd"]
    # A made-up key never takes a key the input gave, whichever comes first.
    kept = ExportEntry(CSLItem.from_csl({"id": "a"}), key="anonnd")
    assert citation_keys([ExportEntry(CSLItem.from_csl({"id": "b"})), kept]) == [
        "anonnda",
        "anonnd",
    ]
    many = citation_keys([ExportEntry(CSLItem.from_csl({"id": str(n)})) for n in range(2000)])
    assert len(set(many)) == 2000 and many[:3] == ["anonnd", "anonnda", "anonndb"]


def test_ris_round_trip(items: list[CSLItem]) -> None:
    text = to_ris([*items, SPECIAL])
    assert text.startswith("TY  - ")  # no rispy counter line before a record
    records = rispy.loads(text)
    assert len(records) == len(items) + 1
    for item, record in zip([*items, SPECIAL], records, strict=True):
        assert record.get("title") == item.title
        assert record.get("doi") == item.DOI
        if item.year():
            assert record["year"] == str(item.year())
        assert len(record.get("authors", [])) == len(item.author or [])
    special = records[-1]
    assert special["type_of_reference"] == "JOUR"
    assert special["authors"][0] == "Müller, Jörg"
    assert (special["start_page"], special["end_page"]) == ("10", "20")
    assert special["date"] == "2023/05/01"
    assert special["urls"] == [SPECIAL.URL]


def test_csl_json_round_trip(items: list[CSLItem]) -> None:
    text = to_csl_json([*items, SPECIAL])
    again = [CSLItem.from_csl(record) for record in json.loads(text)]
    assert again == [*items, SPECIAL]
    assert "深度" in text  # written as UTF-8, not \\u escapes


def test_empty_exports() -> None:
    assert to_bibtex([]).strip() == ""
    assert rispy.loads(to_ris([])) == []
    assert json.loads(to_csl_json([])) == []


def test_et_al_marker_is_bibtex_and_others_and_no_ris_author() -> None:
    item = CSLItem.from_csl(
        {
            "id": "x",
            "type": "article-journal",
            "title": "Triose phosphate isomerase deficiency",
            "author": [{"family": "Ralser", "given": "Markus"}, {"literal": "others"}],
        }
    )
    entry = bibtexparser.parse_string(to_bibtex([item])).entries[0]
    assert entry["author"] == "Ralser, Markus and others"  # not {others}, a braced person
    assert rispy.loads(to_ris([item]))[0]["authors"] == ["Ralser, Markus"]


VERIFIED = ExportEntry(SPECIAL, key="muller2023", status="verified", reason="crossref agrees")
FORGED = CSLItem.from_csl(
    {
        "id": "evil",
        "type": "article-journal",
        "title": "Innocent title\nDO  - 10.666/evil\nER  - \n\nTY  - JOUR\r\nTI  - Forged",
        "author": [
            {"family": "Doe\nAU  - Forged, A.", "given": "J."},
            {"family": "Evil}, title={Forged", "given": "E."},
            {"literal": "Group} and {Other"},
        ],
        "URL": "https://example.org/a}, note={pwned",
        "DOI": "10.1000/x}y",
        "note": "unbalanced } brace { here",
    }
)


def test_exports_carry_the_audit_outcome_under_the_input_key() -> None:
    unmatched = ExportEntry(FORGED, key=None, status="unmatched", reason="no confident match")
    library = _parsed(to_bibtex([VERIFIED, unmatched]))
    first, second = library.entries
    assert first.key == "muller2023"
    assert first.fields_dict["keywords"].value == "citeaudit:verified"
    assert second.fields_dict["keywords"].value == "citeaudit:unmatched"
    assert [c.comment for c in library.comments] == [
        "muller2023: citeaudit: verified. crossref agrees",
        f"{second.key}: citeaudit: unmatched. no confident match",
    ]
    ris = rispy.loads(to_ris([VERIFIED, unmatched]))
    assert ris[0]["id"] == "muller2023" and ris[0]["keywords"] == ["citeaudit:verified"]
    assert ris[1]["notes"][-1] == "citeaudit: unmatched. no confident match"
    csl = json.loads(to_csl_json([VERIFIED, unmatched]))
    assert csl[0]["id"] == "muller2023" and csl[0]["note"] == "citeaudit: verified. crossref agrees"


def test_ris_values_stay_on_their_line() -> None:
    records = rispy.loads(to_ris([FORGED]))
    assert len(records) == 1
    assert "doi" in records[0] and records[0]["doi"] == "10.1000/x}y"
    assert records[0]["title"].startswith("Innocent title DO  - 10.666/evil")
    assert records[0]["authors"][0] == "Doe AU  - Forged, A., J."


def test_bibtex_braces_balanced_and_urls_escaped() -> None:
    text = to_bibtex([FORGED])
    library = bibtexparser.parse_string(text)
    assert library.failed_blocks == []
    (entry,) = library.entries
    assert set(entry.fields_dict) == {"title", "author", "doi", "url", "note"}
    assert entry.fields_dict["url"].value == "https://example.org/a%7D, note=%7Bpwned"
    assert entry.fields_dict["doi"].value == "10.1000/x%7Dy"
    raw = bibtexparser.parse_string(text, parse_stack=[]).entries[0]
    for name, value in ((f.key, f.value) for f in raw.fields):
        assert _braces_pair_up(value[1:-1]), (name, value)  # as BibTeX counts: escaped or not


def _braces_pair_up(value: str) -> bool:
    depth = 0
    for char in value:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_latex_text_writes_what_the_encoder_writes_over_the_whole_text() -> None:
    """latex_text skips the encoder for plain ASCII and sends it only the characters it rewrites:
    over every real title, abstract, name and venue of the bundled Crossref works, each ASCII
    special, and combining accents, scripts and stray braces, the output is the encoder's."""
    texts = [chr(c) + " x" for c in range(32, 127)]
    texts += [
        "Cafe\u0301 {na\u0308ive}",
        "e\u0301\u0301 x\u0327",
        "{Ω} αβγ 张伟 🙂 }{",
        "Über–Straße",
    ]
    for work in bundled_works():
        texts += work.get("title", []) + work.get("container-title", [])
        texts += [work.get("abstract", "")]
        texts += [a.get(part, "") for a in work.get("author", []) for part in ("family", "given")]
    texts = [t for t in texts if t]
    assert sum(t.isascii() for t in texts) > 1_000 and sum(not t.isascii() for t in texts) > 100
    for text in texts:
        assert latex_text(text) == exports._LATEX.unicode_to_latex(exports._balanced(text)), text


def test_an_article_number_survives_export_and_reading_back(tmp_path: Path) -> None:
    from tasks.read.inputs import read_inputs

    # Crossref's article-number is CSL's number: beside an issue (Sci. Rep.) or alone (eLife)
    numbered = [
        CSLItem.from_csl(
            {"id": "tosatto2015", "type": "article-journal", "title": "Single-molecule FRET"}
            | {"volume": "5", "issue": "1", "number": "16696", "DOI": "10.1038/srep16696"}
        ),
        CSLItem.from_csl(
            {"id": "sankar2014", "type": "article-journal", "title": "Automated histology"}
            | {"volume": "3", "number": "e01567", "DOI": "10.7554/elife.01567"}
        ),
    ]
    for name, text in (("refs.bib", to_bibtex(numbered)), ("refs.ris", to_ris(numbered))):
        (tmp_path / name).write_text(text, encoding="utf-8")
        read = read_inputs([tmp_path / name])
        assert not read.errors, read.errors
        assert [(r.item.volume, r.item.issue, r.item.number) for r in read.references] == [
            ("5", "1", "16696"),
            ("3", None, "e01567"),
        ], name
