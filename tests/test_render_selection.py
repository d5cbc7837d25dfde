"""Which works a job's bibliography and exports list, under which key, with which outcome."""

import json
import re
from pathlib import Path

import bibtexparser
import rispy

from models.audit import Checked, Provenance, Reference, Status, ValidationResult
from models.csl import CSLItem
from tasks.job.render import listing
from tasks.read.bibtex import read_bibtex
from tasks.registries.crossref_map import crossref_work_to_csl
from tasks.render.citeproc import Entry, render_bibliographies
from tasks.render.exports import to_bibtex, to_csl_json, to_ris
from tasks.render.selection import bibliography_items, export_entries

FIXTURES = Path(__file__).parent / "fixtures"


def ref(cid: str, key: str, **fields: object) -> Reference:
    return Reference.model_validate(
        {
            "citation_id": cid,
            "item": CSLItem.model_validate({"id": key, **fields}),
            "provenance": Provenance(source_file="refs.bib", entry_key=key),
        }
    )


def result(cid: str, status: Status, reason: str = "", **flags: bool) -> ValidationResult:
    return ValidationResult(citation_id=cid, status=status, reason=reason, **flags)


REFS = [
    ref("c1", "tosatto2015", title="Single-molecule FRET", DOI="https://doi.org/10.1038/srep16696"),
    ref("c2", "made2023up", title="A fabricated paper"),
    ref("c3", "12", title="From a plain list"),  # a line number, not a key
    ref("c4", "gone2020", title="Not there", DOI="10.1/none"),
    ref("c5", "retracted2019", title="Retracted"),
    ref("c6", "4 (ID 369)", title="From a RIS export"),  # record 4, whose ID is 369
]
RESULTS = {
    r.citation_id: r
    for r in [
        result("c1", Status.UNVERIFIED, "could not check DOI: timeout"),
        result("c2", Status.UNMATCHED, "no confident match"),
        result("c3", Status.VERIFIED, "matched"),
        result("c4", Status.NOT_FOUND, "no such DOI"),
        result("c5", Status.VERIFIED, "agrees", retracted=True),
        result("c6", Status.VERIFIED, "matched"),
    ]
}
CHECKED = [Checked(reference=r, result=RESULTS[r.citation_id]) for r in REFS]


def test_left_out_works_and_a_doi_given_as_a_url() -> None:
    record = CSLItem.model_validate(
        {"id": "r", "title": "[A broader scope].", "original-title": "Ein breiterer Blick."}
    )
    verified = RESULTS["c3"].model_copy(update={"record": record})
    checked = [*CHECKED[:2], Checked(reference=REFS[2], result=verified), *CHECKED[3:]]
    items = bibliography_items(checked)
    assert items[2].title == "[A broader scope]." and items[2].original_title is None
    items = bibliography_items(CHECKED)
    assert [i.id for i in items] == ["c1", "c2", "c3", "c6"]  # not_found, retracted left out
    assert items[0].DOI == "10.1038/srep16696"  # never https://doi.org/https://doi.org/...


def test_exports_keep_the_input_keys_and_carry_the_outcome() -> None:
    entries = export_entries(bibliography_items(CHECKED), CHECKED)
    library = bibtexparser.parse_string(to_bibtex(entries))
    keys = [e.key for e in library.entries]
    assert keys[:2] == ["tosatto2015", "made2023up"]
    assert keys[2] == "anonndplain"  # the plain list's line gave no key: one is made
    assert keys[3] == "369"  # a RIS record keeps its own ID
    fields = library.entries[0].fields_dict
    assert fields["doi"].value == "10.1038/srep16696"
    assert fields["keywords"].value == "citeaudit:unverified"
    assert "tosatto2015: citeaudit: unverified. could not check DOI: timeout" in [
        c.comment for c in library.comments
    ]
    assert '"note": "citeaudit: unmatched. no confident match"' in to_csl_json(entries)


def test_a_merged_duplicates_keys_stay_citable(tmp_path: Path) -> None:
    """Two entries of one work (keys vaswani2017 and vaswani2017attention): references.bib lists
    the work once and keeps both keys, BibLaTeX's `ids` and a plain-BibTeX alias entry written
    before its parent; read back, it is one citation, and BibTeX's crossref gives the alias it."""
    attention = {"title": "Attention is all you need", "type": "paper-conference", "DOI": "10.5/x"}
    dupes = [ref("d1", "vaswani2017", **attention), ref("d2", "vaswani2017attention", **attention)]
    checked = [Checked(reference=r, result=result(r.citation_id, Status.VERIFIED)) for r in dupes]
    work_ids = {"d1": "w1", "d2": "w1"}
    items = bibliography_items(checked, work_ids)
    assert [i.id for i in items] == ["d1"]
    text = to_bibtex(export_entries(items, checked, work_ids))
    library = bibtexparser.parse_string(text)
    alias, entry = library.entries
    assert (alias.key, alias.entry_type, alias.fields_dict["crossref"].value) == (
        "vaswani2017attention",
        "inproceedings",
        "vaswani2017",
    )
    assert len(alias.fields) == 1 and entry.key == "vaswani2017"
    assert entry.fields_dict["ids"].value == "vaswani2017attention"
    path = tmp_path / "references.bib"
    path.write_text(text, encoding="utf-8")
    read = read_bibtex([path])
    assert read.errors == []
    assert [(r.provenance.entry_key, r.item.title) for r in read.references] == [
        ("vaswani2017", "Attention is all you need")
    ]


def crossref_record(safe_doi: str) -> CSLItem:
    """A real Crossref `/works/{doi}` body (tests/fixtures/registries) as our mapping reads it."""
    path = FIXTURES / "registries" / f"crossref_{safe_doi}.json"
    return crossref_work_to_csl(json.loads(path.read_text(encoding="utf-8"))["message"]).item


def verified(reference: Reference, record: CSLItem) -> Checked:
    found = result(reference.citation_id, Status.VERIFIED).model_copy(update={"record": record})
    return Checked(reference=reference, result=found)


def in_position_order(entries: list[Entry]) -> list[str]:
    return [e.text for e in sorted(entries, key=lambda e: e.position)]


def test_a_journal_articles_handling_editor_is_not_listed_a_books_editor_is() -> None:
    # PLoS ONE deposits the academic editor who handled the review as the article's Crossref
    # `editor`; Vancouver printed "Borlongan CV, editor." on the article (MLA "edited by",
    # Harvard "Edited by"). No manual cites a journal article's editors.
    article = crossref_record("10.1371_journal.pone.0033693")
    book = crossref_record("10.1039_9781788019972")
    assert article.editor and book.editor  # Crossref gives both
    refs = [
        ref("a", "sadasivan2012", title=article.title, DOI=article.DOI),
        ref("b", "pileio2020", title=book.title, DOI=book.DOI),
    ]
    items = bibliography_items([verified(refs[0], article), verified(refs[1], book)])
    assert items[0].editor is None and items[1].editor == book.editor
    for style, bib in render_bibliographies(items, ["vancouver", "mla", "harvard"]).items():
        article_text, book_text = in_position_order(bib.entries)
        assert "Borlongan" not in article_text, f"{style}: {article_text}"
        assert "Pileio" in book_text, f"{style}: {book_text}"


FRONTIERS_BIB = r"""@article{panek2017algorithm,
  title={An algorithm for template-based prediction of secondary structures
         of individual RNA sequences},
  author={P{\'a}nek, Josef and Modr{\'a}k, Martin and Schwarz, Marek},
  journal={Frontiers in genetics},
  volume={8},
  pages={147},
  year={2017},
  publisher={Frontiers Media SA}
}
"""


def test_an_article_number_the_registry_lacks_is_listed_as_the_citer_gave_it(
    tmp_path: Path,
) -> None:
    # Crossref's record of this Frontiers article has neither `page` nor `article-number`;
    # Google Scholar (as here) and PubMed give its article number as pages = {147}. Every
    # style dropped it (the issue saw IEEE's and Vancouver's); the listed entry now keeps it.
    path = tmp_path / "thesis.bib"
    path.write_text(FRONTIERS_BIB, encoding="utf-8")
    claimed = read_bibtex([path]).references[0]
    record = crossref_record("10.3389_fgene.2017.00147")
    assert record.page is None and record.number is None
    plos = crossref_record("10.1371_journal.pone.0033693")
    other = ref("p", "sadasivan2012", title=plos.title, page="1-10")
    items = bibliography_items([verified(claimed, record), verified(other, plos)])
    assert (items[0].page, items[0].title) == ("147", record.title)  # the rest is the registry's
    assert items[1].page == "e33693"  # a registry that gives a page keeps it
    for style, bib in render_bibliographies(items[:1], in_text=False).items():
        text = bib.entries[0].text.replace("fgene.2017.00147", "")  # the DOI holds it too
        assert "147" in text, f"{style}: {text}"


def test_numbered_styles_number_the_entries_in_the_order_they_are_printed() -> None:
    # Unconfirmed works are printed last, under "Could not be verified": IEEE numbered them in
    # citation order, so the verified list read [1], [3], [4] and the unconfirmed one [2].
    data = json.loads((FIXTURES / "csl" / "items.json").read_text(encoding="utf-8"))
    items = [CSLItem.from_csl(record) for record in data[:4]]
    marks = {items[1].id: "unmatched"}
    listed = listing(items, len(items), marks, ["ieee", "vancouver"])
    for style in ("ieee", "vancouver"):
        text = listed.files[f"bibliography.{style}.txt"]
        printed = re.findall(r"^(\[unmatched\] )?\[?(\d+)[\].]", text, re.MULTILINE)
        assert [int(number) for _, number in printed] == [1, 2, 3, 4], f"{style}:\n{text}"
        assert [bool(mark) for mark, _ in printed] == [False, False, False, True]


def test_a_merged_duplicates_key_is_a_record_of_its_own_in_ris_and_csl_json() -> None:
    """RIS and CSL-JSON have no aliases: the duplicate's key stays as a record of the work,
    noting the key it is the same work as (a pandoc `[@vaswani2017attention]` still resolves)."""
    attention = {"title": "Attention is all you need", "type": "paper-conference", "DOI": "10.5/x"}
    dupes = [ref("d1", "vaswani2017", **attention), ref("d2", "vaswani2017attention", **attention)]
    checked = [Checked(reference=r, result=result(r.citation_id, Status.VERIFIED)) for r in dupes]
    work_ids = {"d1": "w1", "d2": "w1"}
    entries = export_entries(bibliography_items(checked, work_ids), checked, work_ids)
    listed = json.loads(to_csl_json(entries))
    assert [(i["id"], i["title"]) for i in listed] == [
        ("vaswani2017", "Attention is all you need"),
        ("vaswani2017attention", "Attention is all you need"),
    ]
    assert "the same work as vaswani2017" in listed[1]["note"]
    records = rispy.loads(to_ris(entries))
    assert [(r["id"], r["title"]) for r in records] == [
        ("vaswani2017", "Attention is all you need"),
        ("vaswani2017attention", "Attention is all you need"),
    ]
