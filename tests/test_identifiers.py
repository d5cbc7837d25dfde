"""Identifier normalisation: the written forms people use, and properties that must hold."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.csl import CSLItem
from tasks.identifiers import (
    find_identifiers,
    identifiers_of,
    is_safe_link,
    normalize_arxiv,
    normalize_doi,
    normalize_isbn,
    normalize_pmcid,
    normalize_pmid,
    normalize_url,
    without_identifiers,
)


@pytest.mark.parametrize(
    "written",
    [
        "10.1371/journal.pone.0033693",
        "doi:10.1371/journal.pone.0033693",
        "DOI: 10.1371/JOURNAL.PONE.0033693.",
        "DOI 10.1371/journal.pone.0033693;",
        "https://doi.org/10.1371/journal.pone.0033693",
        "http://dx.doi.org/10.1371/journal.pone.0033693",
        "https://doi.org/10.1371%2Fjournal.pone.0033693",
        "(https://doi.org/10.1371/journal.pone.0033693)",
        "<https://doi.org/10.1371/journal.pone.0033693>",
        "https://doi.org/10.1371/journal.pone.0033693/",
        "https://doi.org/10.1371/journal.pone.0033693#sec002",
        "https://doi.org/10.1371/journal.pone.0033693?utm_source=twitter&utm_medium=social",
        "See https://dx.doi.org/10.1371/journal.pone.0033693?via=x for the data.",
    ],
)
def test_doi_written_forms(written):
    assert normalize_doi(written) == "10.1371/journal.pone.0033693"


def test_doi_keeps_balanced_brackets():
    sici = "10.1002/(SICI)1096-9861(20010212)430:3<283::AID-CNE1031>3.0.CO;2-V"
    assert normalize_doi(sici) == sici.lower()
    assert normalize_doi("not a doi") is None


def test_other_identifiers():
    assert normalize_pmid("PMID: 21281509") == "21281509"
    assert normalize_pmid("https://pubmed.ncbi.nlm.nih.gov/21281509/") == "21281509"
    assert normalize_pmid("abc") is None
    assert normalize_pmcid("pmc 3148254") == "PMC3148254"
    assert normalize_arxiv("arXiv:1706.03762v5") == "1706.03762"
    assert normalize_arxiv("https://arxiv.org/abs/hep-th/9901001v2") == "hep-th/9901001"
    assert normalize_isbn("ISBN 0-306-40615-2") == "9780306406157"
    assert normalize_isbn("978-0-306-40615-7") == "9780306406157"
    assert normalize_isbn("978-0-306-40615-8") is None  # bad checksum


def test_urls_canonical():
    assert normalize_url("https://www.Example.org/a/?utm_source=x&q=1#top") == "example.org/a?q=1"
    assert normalize_url("http://example.org/a/") == normalize_url("https://example.org/a")
    assert normalize_url("javascript:alert(1)") is None
    assert not is_safe_link("javascript:alert(1)")
    assert is_safe_link("file:///tmp/paper.pdf")


def test_find_identifiers_in_free_text():
    ids = find_identifiers(
        "Smith J. Deep things. Nature. 2020. doi:10.1038/s41586-020-2649-2. PMID: 32939066"
    )
    assert ids.doi == "10.1038/s41586-020-2649-2"
    assert ids.pmid == "32939066"
    # "isbn" in lower case, as reference managers and BibTeX exports write it
    book = find_identifiers(
        "Hastie T. The elements of statistical learning. 2009. isbn: 0-306-40615-2"
    )
    assert book.isbn == "9780306406157"


def test_without_identifiers_leaves_only_the_citers_words():
    text = (
        "Ballard M. Kernels II. J Math Pures Appl. 2011;102(4):702-57. "
        "doi:10.1016/j.matpur.2014.02.004 https://arxiv.org/abs/1902.02534 arXiv preprint "
        "arXiv:1903.01234v2 arXiv:hep-th/9901001 PMID: 20141999 PMC2015123"
    )
    kept = without_identifiers(text).split()
    assert kept == [
        "Ballard",
        "M.",
        "Kernels",
        "II.",
        "J",
        "Math",
        "Pures",
        "Appl.",
        "2011;102(4):702-57.",
    ]


def test_identifiers_of_item_prefers_fields_and_reads_doi_urls():
    item = CSLItem(id="x", URL="https://doi.org/10.48550/arXiv.2311.16162")
    ids = identifiers_of(item)
    assert ids.doi == "10.48550/arxiv.2311.16162"
    assert ids.arxiv == "2311.16162"
    assert ids.url is None


# DOI names are case-insensitive for ASCII letters only (the DOI Handbook), so ASCII suffixes.
doi_suffix = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/",
    min_size=1,
    max_size=30,
).filter(lambda s: s[-1] not in "./")  # a DOI's trailing "." or "/" is the sentence's or URL's


@given(prefix=st.integers(1000, 99999), suffix=doi_suffix)
def test_doi_normalisation_is_idempotent_and_form_independent(prefix, suffix):
    doi = f"10.{prefix}/{suffix}"
    canonical = normalize_doi(doi)
    assert canonical is not None
    assert normalize_doi(canonical) == canonical
    for form in (f"doi:{doi}", f"https://doi.org/{doi}", f"DOI {doi.upper()}.", f"({doi})"):
        assert normalize_doi(form) == canonical


@given(st.text(max_size=200))
def test_normalisers_never_crash(text):
    for fn in (normalize_doi, normalize_pmid, normalize_pmcid, normalize_arxiv, normalize_isbn):
        fn(text)
    normalize_url(text)
    find_identifiers(text)


@given(
    st.from_regex(r"https?://(www\.)?[a-z]{1,10}\.(org|com)(/[a-z0-9]{1,8}){0,3}/?", fullmatch=True)
)
def test_url_normalisation_idempotent(url):
    once = normalize_url(url)
    assert once is not None
    assert normalize_url("https://" + once) == once
