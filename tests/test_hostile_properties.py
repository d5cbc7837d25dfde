"""Property tests for identifier normalisation that tests/test_identifiers.py leaves out: URL
query parameter order, and idempotence of PMID, PMCID and arXiv normalisation over their written
forms. (Dedupe's idempotence and order independence are in tests/test_dedupe_properties.py.)"""

from hypothesis import given
from hypothesis import strategies as st

from tasks.identifiers import normalize_arxiv, normalize_pmcid, normalize_pmid, normalize_url

words = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True)


@given(
    host=st.from_regex(r"[a-z]{1,10}\.(org|com)", fullmatch=True),
    path=st.lists(words, max_size=3),
    params=st.dictionaries(words, words, min_size=2, max_size=6),
    data=st.data(),
)
def test_url_query_parameter_order_does_not_matter(
    host: str, path: list[str], params: dict[str, str], data: st.DataObject
) -> None:
    pairs = list(params.items())
    shuffled = data.draw(st.permutations(pairs))
    base = f"https://{host}/" + "/".join(path)
    first = normalize_url(base + "?" + "&".join(f"{k}={v}" for k, v in pairs))
    second = normalize_url(base + "?" + "&".join(f"{k}={v}" for k, v in shuffled))
    assert first is not None and first == second
    assert normalize_url("https://" + first) == first


@given(st.integers(1, 99_999_999))
def test_pmid_forms_agree_and_normalising_is_idempotent(number: int) -> None:
    canonical = normalize_pmid(str(number))
    assert canonical == str(number)
    assert normalize_pmid(canonical) == canonical
    assert normalize_pmid(number) == canonical
    assert normalize_pmid(f"PMID: {number}") == canonical


@given(st.integers(1, 99_999_999))
def test_pmcid_forms_agree_and_normalising_is_idempotent(number: int) -> None:
    canonical = normalize_pmcid(f"PMC{number}")
    assert canonical is not None
    assert normalize_pmcid(canonical) == canonical
    assert normalize_pmcid(f"pmc{number}") == canonical


@given(st.from_regex(r"(0[7-9]|1[0-9]|2[0-4])(0[1-9]|1[0-2])\.[0-9]{4,5}(v[1-9])?", fullmatch=True))
def test_arxiv_forms_agree_and_normalising_is_idempotent(arxiv_id: str) -> None:
    canonical = normalize_arxiv(arxiv_id)
    assert canonical is not None
    assert normalize_arxiv(canonical) == canonical
    for form in (f"arXiv:{arxiv_id}", f"https://arxiv.org/abs/{arxiv_id}"):
        assert normalize_arxiv(form) == canonical
