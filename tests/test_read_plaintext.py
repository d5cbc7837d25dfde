"""Plain-text lists of identifiers and free-text references."""

from pathlib import Path

from tasks.read.plaintext import read

LINES = """# a reading list
doi:10.7554/eLife.32822.
https://doi.org/10.1016/j.jbi.2014.03.004
DOI 10.1371/journal.pone.0000030;
https://dx.doi.org/10.1038%2Fsrep16696

PMID: 29424689
21553931
PMC5832410
arXiv:1706.03762v5
https://arxiv.org/abs/1106.5730
https://www.example.org/page?utm_source=mail
Tosatto L, et al. Single-molecule FRET studies on alpha-synuclein (2015). Sci Rep 5.
123456789
"""


def test_identifier_forms_and_free_text(tmp_path: Path) -> None:
    path = tmp_path / "list.txt"
    path.write_text(LINES)

    result = read([path])

    assert result.errors == []
    got = [(r.provenance.entry_key, r.ids.model_dump(exclude_none=True)) for r in result.references]
    assert got == [
        ("2", {"doi": "10.7554/elife.32822"}),
        ("3", {"doi": "10.1016/j.jbi.2014.03.004"}),
        ("4", {"doi": "10.1371/journal.pone.0000030"}),
        ("5", {"doi": "10.1038/srep16696"}),
        ("7", {"pmid": "29424689"}),
        ("8", {"pmid": "21553931"}),
        ("9", {"pmcid": "PMC5832410"}),
        ("10", {"arxiv": "1706.03762"}),
        ("11", {"arxiv": "1106.5730", "url": "arxiv.org/abs/1106.5730"}),
        ("12", {"url": "example.org/page"}),
        ("13", {}),
        ("14", {}),  # nine digits: not a PMID
    ]
    free = result.references[10]
    assert free.raw == LINES.splitlines()[12]
    assert free.item.year() == 2015 and free.item.title is None
    assert result.references[0].item.DOI == "10.7554/elife.32822"
    assert all(r.provenance.line == int(r.provenance.entry_key) for r in result.references)


def test_utf8_bom_is_not_part_of_the_first_line() -> None:
    path = Path(__file__).parent / "fixtures" / "reflists" / "malformed" / "utf8_bom.txt"
    (reference,) = read([path]).references
    assert reference.raw == "doi:10.1000/bom.test"
    assert reference.ids.doi == "10.1000/bom.test"
