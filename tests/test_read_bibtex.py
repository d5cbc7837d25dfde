"""BibTeX reader on real libraries: IRIDIA (macros across files, crossref), d2l, manubot."""

import re
from pathlib import Path

import pytest

from models.audit import ReadResult, Reference
from tasks.read.bibtex import read_bibtex

FIXTURES = Path(__file__).parent / "fixtures" / "reflists"
IRIDIA = sorted((FIXTURES / "iridia").glob("*.bib"))
ENTRY = re.compile(r"^@(?!string|preamble|comment)\w+\s*\{\s*([^,\s]+)\s*,", re.I | re.M)
CROSSREF = re.compile(r"^\s*crossref\s*=\s*[{\"]([^}\"]+)[}\"]", re.I | re.M)


@pytest.fixture(scope="module")
def iridia() -> ReadResult:
    return read_bibtex(IRIDIA)


def by_key(result: ReadResult) -> dict[str, Reference]:
    return {r.provenance.entry_key: r for r in result.references}


def test_iridia_reads_every_citation_entry_and_leaves_out_crossref_containers(
    iridia: ReadResult,
) -> None:
    texts = [path.read_text(encoding="utf-8") for path in IRIDIA]
    keys = {k.lower() for text in texts for k in ENTRY.findall(text)}
    targets = {t.lower() for text in texts for t in CROSSREF.findall(text)}
    assert len(keys) > 3000 and targets <= keys

    assert iridia.errors == []
    read_keys = {r.provenance.entry_key.lower() for r in iridia.references}
    assert read_keys == keys - targets
    assert "cec2002" not in read_keys  # a Proceedings only cited through crossref=


def test_iridia_macros_from_other_files_and_latex_accents_are_resolved(iridia: ReadResult) -> None:
    reference = by_key(iridia)["AcoMes2014jbi"]

    assert reference.item.container_title == "Journal of Biomedical Informatics"  # journals.bib
    names = [(n.given, n.family) for n in reference.item.author or []]
    assert names[0] == ("Héctor-Gabriel", "Acosta-Mesa")
    assert names[1] == ("Fernando", "Rechy-Ramírez")
    assert names[2][1] == "Mezura-Montes"  # an @string in authors.bib, joined with #and#
    assert names[-1] == ("Rodolfo", "Hernández Jiménez")
    assert reference.item.page == "73-83"
    assert reference.ids.doi == "10.1016/j.jbi.2014.03.004"
    assert reference.provenance.source_file.endswith("articles.bib")
    assert reference.provenance.line is not None
    source_lines = Path(reference.provenance.source_file).read_text().splitlines()
    assert source_lines[reference.provenance.line - 1].startswith("@Article{AcoMes2014jbi")


def test_iridia_inproceedings_inherits_its_container_from_crossref_bib(iridia: ReadResult) -> None:
    item = by_key(iridia)["Abb2002selfpde"].item

    assert item.type == "paper-conference"
    assert item.title == "The self-adaptive Pareto differential evolution algorithm"
    assert item.container_title == (
        "Proceedings of the 2002 Congress on Evolutionary Computation (CEC'02)"
    )
    assert item.publisher == "IEEE Press"
    assert item.year() == 2002
    assert item.page == "831-836"
    assert [(n.given, n.family) for n in item.author or []] == [("Hussein A.", "Abbass")]


def test_files_are_one_library_in_any_order(iridia: ReadResult) -> None:
    backward = read_bibtex(list(reversed(IRIDIA)))
    assert {r.provenance.entry_key: r.item for r in iridia.references} == {
        r.provenance.entry_key: r.item for r in backward.references
    }


def test_d2l_and_manubot_bibliographies() -> None:
    d2l = FIXTURES / "d2l-en_d2l.bib"
    manubot = FIXTURES / "manubot_bibliography.bib"
    expected = len(ENTRY.findall(d2l.read_text())) + len(ENTRY.findall(manubot.read_text()))

    result = read_bibtex([d2l, manubot])

    assert result.errors == []
    assert len(result.references) == expected
    refs = by_key(result)
    abadi = refs["Abadi.Barham.Chen.ea.2016"].item
    assert abadi.title == "TensorFlow: A system for large-scale machine learning"
    assert abadi.author and abadi.author[0].given == "Martín"
    assert all(n.family != "al." for n in abadi.author)  # "and et al." is not an author
    elife = refs["doi:10.7554/elife.32822"]
    assert elife.ids.doi == "10.7554/elife.32822"
    assert elife.item.issued and elife.item.issued.date_parts == [[2018, 3]]


def test_broken_brace_is_reported_and_the_rest_of_the_file_is_read() -> None:
    path = FIXTURES / "malformed" / "broken_brace.bib"

    result = read_bibtex([path])

    assert [r.provenance.entry_key for r in result.references] == [
        "AcoRecMezCru2014",
        "StillRead2020",
    ]
    assert {(e.entry_key, e.source_file) for e in result.errors} == {
        ("Broken2019", str(path)),
        ("AcoRecMezCru2014", str(path)),  # the duplicate key
    }
    broken = next(e for e in result.errors if e.entry_key == "Broken2019")
    assert broken.line == 12
    still = by_key(result)["StillRead2020"].item
    assert [(n.given, n.family, n.literal) for n in still.author or []] == [
        ("Jörg", "Müller", None),
        (None, None, "others"),  # `and others` kept as the et-al marker
    ]
    assert still.issued and still.issued.date_parts == [[2020, 3]]
    assert still.container_title == "Proceedings of Something"


def test_utf16_file_and_binary_file() -> None:
    utf16 = FIXTURES / "malformed" / "utf16.bib"
    binary = FIXTURES / "malformed" / "binary.bib"

    result = read_bibtex([utf16, binary])

    assert len(result.references) == 1
    item = result.references[0].item
    assert item.title == "Ubiquitous naïve café studies"
    assert item.container_title == "Acta Ökonomica"
    assert result.references[0].ids.doi == "10.1000/utf16.test"
    assert [(e.source_file, e.entry_key) for e in result.errors] == [(str(binary), None)]
    assert "unreadable" in result.errors[0].reason


RALSER = """@article{two_others,
  author = {Ralser, Markus and Heeren, Gino and others},
  title = {Triose phosphate isomerase deficiency is caused by altered dimerization--not
    catalytic inactivity--of the mutant enzymes},
  journal = {PLoS ONE}, year = {2006}, doi = {10.1371/journal.pone.0000030}}
@article{spelt_et_al, author = {Ralser, M. and et al.}, title = {T}, year = {2006}}
@article{complete, author = {Ralser, Markus and Heeren, Gino}, title = {T}, year = {2006}}
@article{only_others, author = {others}, title = {T}, year = {2006}}
"""


def test_and_others_is_kept_as_the_lists_et_al_marker(tmp_path: Path) -> None:
    path = tmp_path / "authors.bib"
    path.write_text(RALSER, encoding="utf-8")

    refs = by_key(read_bibtex([path]))

    two = refs["two_others"].item.author or []
    assert [(n.family, n.literal) for n in two] == [
        ("Ralser", None),
        ("Heeren", None),
        (None, "others"),
    ]
    assert two[-1].is_et_al() and not any(n.is_et_al() for n in two[:-1])
    spelt = refs["spelt_et_al"].item.author or []
    assert [(n.family, n.literal) for n in spelt] == [("Ralser", None), (None, "others")]
    assert not any(n.is_et_al() for n in refs["complete"].item.author or [])
    assert refs["only_others"].item.author is None  # a marker alone names nobody


SCHOLAR = FIXTURES / "scholar" / "shapes.bib"


@pytest.fixture(scope="module")
def scholar() -> ReadResult:
    return read_bibtex([SCHOLAR])


def test_an_arxiv_id_where_google_scholar_and_dblp_write_it_is_the_entrys(
    scholar: ReadResult,
) -> None:
    """`journal = {arXiv preprint arXiv:...}`, DBLP's `CoRR` + `abs/...`, `arXiv:... [cs.LG]` in
    note, howpublished and an eprint with no eprinttype: one batched arXiv lookup, not searches."""
    arxiv = {key: ref.ids.arxiv for key, ref in by_key(scholar).items()}
    assert arxiv["kadavath2022language"] == "2207.05221"
    assert arxiv["DBLP:journals/corr/VaswaniSPUJGKP17"] == "1706.03762"
    assert arxiv["hendrycks2016gelu"] == "1606.08415"
    assert arxiv["loshchilov2017decoupled"] == "1711.05101"
    assert arxiv["kingma2014adam"] == "1412.6980"
    assert arxiv["pdg2014"] is None  # `090001` beside no arXiv mark is no arXiv id


def test_howpublished_url_is_the_entrys_url(scholar: ReadResult) -> None:
    gtex = by_key(scholar)["gtex"]
    assert gtex.item.URL == "https://gtexportal.org/home/"
    assert gtex.ids.url == "gtexportal.org/home"


def test_a_field_given_twice_keeps_the_first_with_one_warning(scholar: ReadResult) -> None:
    pierog = by_key(scholar)["pierog2008lhc"]
    assert pierog.item.year() == 2008 and pierog.item.page == "149-154"
    (warning,) = [e for e in scholar.errors if e.entry_key == "pierog2008lhc"]
    assert f"{warning.where}: {warning.reason}" == (
        f"{SCHOLAR}:pierog2008lhc: warning: field 'year' given twice: the first (2008) is kept"
    )


def test_et_al_inside_an_author_field_is_and_others(scholar: ReadResult) -> None:
    names = [n.model_dump(exclude_none=True) for n in by_key(scholar)["pdg2014"].item.author or []]
    assert names == [{"family": "Olive", "given": "K. A."}, {"literal": "others"}]


def test_percent_commented_entries_are_comments_as_biber_reads_them(
    scholar: ReadResult,
) -> None:
    """biber (btparse) reads `%` to the end of the line as a comment, outside and inside an
    entry: the commented-out wolf_2019 is no row and no duplicate of the live one, the
    commented-out DOI no DOI, and the commented-out devlin_bert no row at all."""
    refs = by_key(scholar)
    assert scholar.errors == [e for e in scholar.errors if e.entry_key == "pierog2008lhc"]
    assert len(scholar.references) == 9 and "devlin_bert" not in refs
    wolf = refs["wolf_2019"]
    assert wolf.item.title == "Transformers: State-of-the-Art Natural Language Processing"
    assert wolf.item.year() == 2020 and wolf.ids.doi is None and wolf.provenance.line == 84
    assert all(ref.item.title and ref.item.author and ref.item.year() for ref in refs.values())
