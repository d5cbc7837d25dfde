"""The PDF reader on LaTeX-built papers (tests/fixtures/pdf, made by its build.py and scored
against the .bbl each build wrote), and what it says of PDFs it cannot read, through the CLI."""

import io
import json
from pathlib import Path

import polars as pl
import pytest
from pypdf import PdfWriter

from bench.pdf_read import printed, squeezed
from tasks.read.inputs import read_inputs
from tasks.read.pdf import read_pdf
from tasks.read.pdf.layout import clean
from tasks.read.pdf.references import joined
from tests.test_exit_codes import pdf_with_text, run_cli

TUNE = Path(__file__).parent / "fixtures/pdf/tune"


def test_a_numbered_list_is_read_one_row_per_printed_reference_with_page_and_label() -> None:
    pdf = TUNE / "article-plain.pdf"
    read = read_pdf(pdf)
    items = printed(pdf.with_suffix(".bbl"))
    assert len(read.references) == len(items)
    keys = [ref.provenance.entry_key for ref in read.references]
    assert keys[0].startswith("p") and keys[0].endswith(" [1]")
    assert keys[-1].endswith(f" [{len(items)}]")
    titles = json.loads(pdf.with_suffix(".json").read_text())["titles"]
    for ref, item in zip(read.references, items, strict=True):
        assert squeezed(titles[item.key]) in squeezed(ref.raw or "")


@pytest.mark.parametrize(
    "name", ["article-2col-plainnat", "ieeetran-conf", "revtex-aps", "article-biblatex-super"]
)
def test_two_columns_author_year_and_unheaded_lists_keep_their_titles(name: str) -> None:
    pdf = TUNE / f"{name}.pdf"
    read = read_pdf(pdf)
    items = printed(pdf.with_suffix(".bbl"))
    titles = json.loads(pdf.with_suffix(".json").read_text())["titles"]
    rows = [squeezed(ref.raw or "") for ref in read.references]
    found = sum(
        1 for item in items if any(squeezed(titles.get(item.key, "")) in row for row in rows)
    )
    assert found >= 0.95 * len(items)
    assert 0.95 * len(items) <= len(read.references) <= 1.05 * len(items)


def test_markers_become_claims_linked_to_their_references() -> None:
    pdf = TUNE / "article-plain.pdf"
    read = read_pdf(pdf)
    truth = json.loads(pdf.with_suffix(".json").read_text())
    claim = next(c for c in read.claims if "F001" in c.claim_text)
    cited = {ref.provenance.entry_key for ref in read.references if claim.claim_id in ref.claim_ids}
    assert len(cited) == len(truth["sentences"]["F001"])
    uncited = [e for e in read.errors if e.kind == "uncited"]
    assert len(uncited) == len(truth["uncited"])


def test_author_year_markers_are_linked_by_first_author_and_year() -> None:
    read = read_pdf(TUNE / "article-2col-plainnat.pdf")
    truth = json.loads((TUNE / "article-2col-plainnat.json").read_text())
    linked = [c for c in read.claims if any(c.claim_id in r.claim_ids for r in read.references)]
    assert len(linked) >= 0.9 * len(truth["sentences"])


def test_hyphens_ligatures_and_tex_accents_are_undone() -> None:
    assert (
        clean("e\x1ecient Ram\u00b4on Syst`eme Franc\u00b8ais")
        == "efficient Ramón Système Français"
    )
    assert joined(["an esti", "mation of"], [True, False]) == "an estimation of"
    assert joined(["energy", "based models"], [True, False]) == "energy-based models"
    assert joined(["Abdel", "Hamid"], [True, False]) == "Abdel-Hamid"


def _encrypted() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    writer.encrypt(user_password="secret", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _blank() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (_encrypted, "encrypted"),
        (_blank, "no text layer"),
        (lambda: pdf_with_text("An essay that cites nothing"), "no reference list found"),
        (lambda: pdf_with_text("References"), "yields no reference"),
        (lambda: b"%PDF-1.4\nnot really a PDF", "not a readable PDF"),
    ],
)
def test_a_pdf_that_cannot_be_read_says_why_in_one_line_exit_2(tmp_path, make, what) -> None:
    (tmp_path / "paper.pdf").write_bytes(make())
    done = run_cli("audit", "paper.pdf", "--job", "x", "--offline", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("citeaudit: error: paper.pdf: ") and what in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_pdf_among_other_inputs_is_read_like_any_other(tmp_path) -> None:
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n")
    pdf = tmp_path / "paper.bin"  # told by its content, not its name
    pdf.write_bytes((TUNE / "article-plain.pdf").read_bytes())
    read = read_inputs([tmp_path / "refs.txt", pdf])
    assert len(read.references) == 1 + len(printed(TUNE / "article-plain.bbl"))
    forced = read_inputs([pdf], format="pdf")
    assert len(forced.references) == len(printed(TUNE / "article-plain.bbl"))


def test_the_paper_itself_is_the_subject_not_a_row() -> None:
    pdf = TUNE / "revtex-aps.pdf"  # no metadata title: the first page's largest type
    read = read_pdf(pdf)
    truth = json.loads(pdf.with_suffix(".json").read_text())
    [paper] = read.subjects
    assert (paper.doi, paper.title) == (truth["doi"], truth["title"])
    assert all(ref.ids.doi != truth["doi"] for ref in read.references)
    assert read_pdf(TUNE / "article-plain.pdf").subjects[0].authors == ["Ada Fixture"]


def test_a_pdf_marker_with_no_entry_fails_the_missing_gate(tmp_path, prefect_server) -> None:
    (tmp_path / "paper.pdf").write_bytes(
        pdf_with_text(
            "A paper, doi:10.5555/paper.self",
            "Prior work showed this effect [1]. Later work (see [3]) disagreed.",
            "References",
            "[1] A. Author. A real title of a paper. Journal of Tests, 2020.",
            "[2] B. Writer. Another title never cited. Proceedings, 2019.",
        )
    )
    args = ("audit", "paper.pdf", "--job", "j", "--offline", "--styles", "apa", "--fail-on")
    gated = run_cli(*args, "missing", cwd=tmp_path)
    assert gated.returncode == 1, gated.stderr
    assert "--fail-on missing: 1 missing" in gated.stderr
    assert "paper.pdf:p1 [2]: never cited in the text of paper.pdf" in gated.stdout
    report = (tmp_path / "out/j/report.md").read_text()
    assert "The citations of a paper with no title found (DOI 10.5555/paper.self)" in report
    assert "p1 [1]" in report
    claims = pl.read_parquet(tmp_path / "out/j/claims.parquet")
    assert claims.height == 2
    citations = pl.read_parquet(tmp_path / "out/j/citations.parquet")
    assert sorted(citations["entry_key"]) == ["p1 [1]", "p1 [2]"]
