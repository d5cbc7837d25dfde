"""RIS, Web of Science and MEDLINE exports through rispy, on real exports."""

import gzip
import re
from pathlib import Path

import pytest

from tasks.read.ris import read

FIXTURES = Path(__file__).parent / "fixtures" / "reflists"
MALFORMED = FIXTURES / "malformed"


def count_records(path: Path, start: str) -> int:
    text = path.read_text(encoding="utf-8-sig")
    return len(re.findall(rf"^{re.escape(start)}", text, re.M))


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("asreview_baseline_zotero.ris", "TY  - "),
        ("asreview_embase.ris", "TY  - "),
        ("asreview_ovid_psycinfo.ris", "TY  - "),
        ("asreview_ovid_zotero.ris", "TY  - "),
        ("asreview_proquest.ris", "TY  - "),
        ("asreview_pubmed_zotero.ris", "TY  - "),
        ("asreview_scopus.ris", "TY  - "),
        ("asreview_pubmed_endnote.txt", "TY  - "),
        ("asreview_web_of_science.txt", "TY  - "),
        ("rispy_example_full.ris", "TY  - "),
        ("rispy_example_utf_chars.ris", "TY  - "),
        ("rispy_example_wos.ris", "PT "),
        ("manubot_bibliography.ris", "TY  - "),
        ("manubot_bibliography.nbib", "PMID- "),
    ],
)
def test_one_reference_per_record(name: str, start: str) -> None:
    path = FIXTURES / name
    result = read([path])
    assert result.errors == []
    assert len(result.references) == count_records(path, start) > 0
    assert all(r.item.title for r in result.references)
    assert [r.provenance.entry_key.split()[0] for r in result.references] == [
        str(n) for n in range(1, len(result.references) + 1)
    ]


@pytest.mark.parametrize(
    ("name", "records"),
    [
        # The raw export has 411 records (its first TY line hides behind a UTF-8 BOM).
        ("00_IBS_permeability_scopus.ris.gz", 411),
        ("01_DEDUPLICATED_IBS_permeability_scopus.ris.gz", 409),
    ],
)
def test_ibs_permeability_scopus_exports(tmp_path: Path, name: str, records: int) -> None:
    path = tmp_path / name.removesuffix(".gz")
    path.write_bytes(gzip.decompress((FIXTURES / name).read_bytes()))
    assert count_records(path, "TY  - ") == records

    result = read([path])

    assert result.errors == []
    assert len(result.references) == records
    first = result.references[0]
    assert first.item.author and first.item.author[0].family == "Camargo Tavares"
    dois = [r.ids.doi for r in result.references if r.ids.doi]
    assert len(dois) > 0.9 * records
    assert all(doi == doi.lower() and doi.startswith("10.") for doi in dois)
    pmids = [r.ids.pmid for r in result.references if r.ids.pmid]  # Scopus keeps them in C2
    assert pmids and all(p.isdigit() for p in pmids)


def test_exports_concatenated_with_their_byte_order_marks(tmp_path: Path) -> None:
    raw = gzip.decompress((FIXTURES / "00_IBS_permeability_scopus.ris.gz").read_bytes())
    assert raw.startswith(b"\xef\xbb\xbf")
    joined = tmp_path / "joined.ris"
    joined.write_bytes(raw + raw)  # `cat a.ris b.ris`: the second BOM lands mid-file
    result = read([joined])
    assert result.errors == []
    assert len(result.references) == 2 * 411


def test_endnote_pubmed_export_keeps_pmid_doi_and_record_id() -> None:
    result = read([FIXTURES / "asreview_pubmed_endnote.txt"])
    first = result.references[0]
    assert first.provenance.entry_key == "1 (ID 369)"
    assert first.ids.pmid == "21553931"
    assert first.ids.doi == "10.2165/11586800-000000000-00000"
    assert first.item.container_title == "Clin Pharmacokinet"
    assert first.item.page == "349-69"


def test_web_of_science_tagged_and_medline() -> None:
    wos = read([FIXTURES / "rispy_example_wos.ris"]).references[0]
    assert wos.provenance.entry_key.startswith("1 (WOS:")
    assert wos.item.container_title == "BIOCHEMISTRY"
    assert wos.item.author and wos.item.author[0].family == "Parkes-Loach"
    assert wos.item.title and "light-harvesting complex" in wos.item.title  # continuation lines

    medline = read([FIXTURES / "manubot_bibliography.nbib"]).references[0]
    assert medline.provenance.entry_key == "1 (PMID 29424689)"
    assert medline.ids.pmid == "29424689"
    assert medline.ids.doi == "10.7554/elife.32822"
    assert medline.item.author and medline.item.author[0].given == "Daniel S"
    assert medline.item.issued and medline.item.issued.date_parts == [[2018, 3, 1]]


def test_record_without_ty_is_reported_and_the_others_kept() -> None:
    path = MALFORMED / "record_without_ty.ris"
    result = read([path])
    assert [r.item.title for r in result.references] == [
        "First record is fine",
        "Third record is fine",
    ]
    assert result.references[1].ids.doi == "10.1000/third"
    assert [(e.source_file, e.entry_key, e.line) for e in result.errors] == [(str(path), "2", 8)]


def test_latin1_export_is_decoded() -> None:
    item = read([MALFORMED / "latin1.ris"]).references[0].item
    assert item.title == "Étude légère des cafés"
    assert item.author and item.author[0].given == "Jürgen"


def test_an_et_al_author_line_is_kept_as_the_lists_marker(tmp_path: Path) -> None:
    path = tmp_path / "etal.ris"
    path.write_text(
        "TY  - JOUR\nAU  - Ralser, Markus\nAU  - et al.\nAU  - Heeren, Gino\n"
        "TI  - Triose phosphate isomerase deficiency\nPY  - 2006\nER  - \n",
        encoding="utf-8",
    )
    names = read([path]).references[0].item.author or []
    assert [(n.family, n.literal) for n in names] == [
        ("Ralser", None),
        ("Heeren", None),
        (None, "others"),
    ]
